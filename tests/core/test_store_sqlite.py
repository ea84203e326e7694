"""The local store's promises on its SQLite backend (issue 25): transactions, several processes, a
kill inside a transaction, a full disk, indexes, the watch, the allocation guard, size limits."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading

import pytest

from driver.errors import ConflictError, InputError, NotFoundError
from driver.store import ObjectStore
from driver.store.objectstore import MAX_OBJECT_BYTES
from driver.store.watch import ADDED, BOOKMARK, DELETED, MODIFIED, Expired
from tests.storeutil import connect

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pod(name, ns="default", node=None, labels=None, owner=None, phase=None):
    meta = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "o", "uid": owner}]
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    if node:
        obj["spec"]["nodeName"] = node
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def claim(name, devices=(), ns="default", shared=False, admin=False):
    results = [{"request": "r", "driver": "d.example.com", "pool": "n1", "device": d,
                **({"shareID": f"{name}-{i}"} if shared else {}), **({"adminAccess": True} if admin else {})}
               for i, d in enumerate(devices)]
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": ns},
           "spec": {"devices": {}}}
    if results:
        obj["status"] = {"allocation": {"devices": {"results": results}}}
    return obj


def names(objs):
    return [o["metadata"]["name"] for o in objs]


# ---- transactions ----------------------------------------------------------------------------

def test_a_failed_transaction_writes_nothing_and_a_failed_savepoint_only_its_own(tmp_path):
    store = ObjectStore(tmp_path)
    store.create("pods", pod("before"))
    with pytest.raises(RuntimeError):
        with store.batch():
            store.create("pods", pod("a"))
            store.delete("pods", "default", "before")
            raise RuntimeError("cut short")
    assert store.names("pods", "default") == ["before"]
    with store.batch():
        store.create("pods", pod("b"))
        with pytest.raises(ConflictError):
            with store.locked():
                store.create("pods", pod("c"))
                store.create("pods", pod("b"))  # exists: this savepoint is undone, c with it
    assert store.names("pods", "default") == ["b", "before"]
    rvs = [int(o["metadata"]["resourceVersion"]) for o in store.list("pods", "default")]
    assert int(store.current_resource_version()) >= max(rvs)


def test_reads_inside_a_transaction_see_its_writes_and_others_see_them_at_commit(tmp_path):
    store = ObjectStore(tmp_path)
    other = ObjectStore(tmp_path)
    seen = []
    with store.batch():
        store.create("pods", pod("a"))
        assert store.names("pods", "default") == ["a"]
        t = threading.Thread(target=lambda: seen.append(other.names("pods", "default")))
        t.start()
        t.join(30)
    assert seen == [[]]  # another reader never sees a transaction half done
    assert other.names("pods", "default") == ["a"]


def test_threads_of_one_process_queue_without_polling_and_lose_no_write(tmp_path):
    store = ObjectStore(tmp_path)
    errors = []

    def writer(i: int) -> None:
        try:
            for j in range(20):
                store.create("pods", pod(f"p-{i}-{j}"))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    objs = store.list("pods", "default")
    assert len(objs) == 160
    assert len({o["metadata"]["resourceVersion"] for o in objs}) == 160


WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    from driver.store import ObjectStore
    store = ObjectStore(sys.argv[2])
    for j in range(int(sys.argv[4])):
        with store.batch():
            store.create("pods", {"apiVersion": "v1", "kind": "Pod",
                                  "metadata": {"name": f"{sys.argv[3]}-{j}", "namespace": "default"}})
""")


def test_two_writer_processes_at_once(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, ROOT, str(tmp_path), f"w{i}", "40"]) for i in range(2)]
    for p in procs:
        assert p.wait(120) == 0
    objs = ObjectStore(tmp_path).list("pods", "default")
    assert len(objs) == 80 and len({o["metadata"]["resourceVersion"] for o in objs}) == 80


KILLED = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, sys.argv[1])
    from driver.store import ObjectStore
    store = ObjectStore(sys.argv[2])
    with store.batch():
        for j in range(50):
            store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"k-{j}", "namespace": "default"}})
        print("inside", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
""")


def test_kill_9_inside_a_transaction_leaves_the_store_as_it_was(tmp_path):
    store = ObjectStore(tmp_path)
    store.create("pods", pod("kept"))
    before = store.current_resource_version()
    proc = subprocess.run([sys.executable, "-c", KILLED, ROOT, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL and "inside" in proc.stdout
    fresh = ObjectStore(tmp_path)
    assert fresh.names("pods", "default") == ["kept"]
    assert fresh.current_resource_version() == before
    made = fresh.create("pods", pod("after"))  # the lock and the database work afterwards
    assert int(made["metadata"]["resourceVersion"]) > int(before)


def test_a_full_disk_rolls_the_transaction_back_and_says_so(tmp_path):
    store = ObjectStore(tmp_path)
    store.create("pods", pod("kept"))
    store.close()
    conn = connect(tmp_path)
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()
    big = {"x": "y" * 200_000}

    def fill():
        # SQLite's page limit stands in for a full filesystem: the same SQLITE_FULL error.
        store._db.connection(create=True).execute(f"PRAGMA max_page_count={pages + 20}")
        with store.batch():
            for i in range(50):
                p = pod(f"big-{i}")
                p["metadata"]["annotations"] = big
                store.create("pods", p)

    with pytest.raises(InputError, match=r"store.db: no space left on the device while writing; the transaction was "
                                         r"rolled back, so the store holds what it held before"):
        fill()
    store.close()
    assert ObjectStore(tmp_path).names("pods", "default") == ["kept"]


def test_an_object_larger_than_the_apiserver_stores_is_refused_at_write(tmp_path):
    """Issue 29 item 4: the directory store wrote objects larger than it read back."""
    store = ObjectStore(tmp_path)
    p = pod("huge")
    p["metadata"]["annotations"] = {"a": "x" * (MAX_OBJECT_BYTES + 10)}
    with pytest.raises(InputError, match=r"pods default/huge: the object is [\d,]+ bytes of JSON, more than the "
                                         r"1,572,864 bytes \(1.5 MiB\) kube-apiserver stores per object"):
        store.create("pods", p)
    assert store.names("pods", "default") == []


def test_the_database_is_not_a_database(tmp_path):
    (tmp_path / "store.db").write_bytes(b"\0garbage" * 1000)
    with pytest.raises(InputError, match=r"store.db: the database is damaged or not a fake-dra store"):
        ObjectStore(tmp_path).list("pods", all_namespaces=True)


def test_a_store_of_a_newer_schema_is_refused(tmp_path):
    store = ObjectStore(tmp_path)
    store.create("pods", pod("a"))
    store.close()
    conn = connect(tmp_path)
    conn.execute("UPDATE meta SET value='99' WHERE key='schema'")
    conn.close()
    with pytest.raises(InputError, match=r"written by a newer fake-dra \(store schema 99"):
        ObjectStore(tmp_path).get("pods", "default", "a")


def test_reading_a_store_nobody_wrote_creates_nothing(tmp_path):
    store = ObjectStore(tmp_path / "absent")
    assert store.list("pods", all_namespaces=True) == [] and store.current_resource_version() == "0"
    with pytest.raises(NotFoundError):
        store.get("pods", "default", "x")
    assert not (tmp_path / "absent").exists()


# ---- indexes ---------------------------------------------------------------------------------

def test_indexes_answer_without_reading_other_objects(tmp_path):
    store = ObjectStore(tmp_path)
    store.create("pods", pod("a", node="n1", labels={"app": "x"}, owner="u1", phase="Running"))
    store.create("pods", pod("b", node="n2", labels={"app": "y"}, owner="u1"))
    store.create("pods", pod("c", ns="other", node="n1", labels={"app": "x"}))
    store.create("resourceslices", {"metadata": {"name": "s1", "ownerReferences": [{"kind": "Node", "name": "n1",
                                                                                     "uid": "node-uid"}]},
                                    "spec": {"driver": "d", "nodeName": "n1"}})
    assert names(store.find("pods", "node", "n1")) == ["a", "c"]
    assert names(store.find("pods", "node", "n1", namespace="default")) == ["a"]
    assert names(store.find("pods", "phase", "Running")) == ["a"]
    assert names(store.list("pods", all_namespaces=True, index={"label/app": ["x", "y"]})) == ["a", "b", "c"]
    assert names(store.list("pods", all_namespaces=True, index={"label/app": None, "node": "n2"})) == ["b"]
    assert store.dependents("u1") == [("pods", "default", "a"), ("pods", "default", "b")]
    assert store.dependents("node-uid") == [("resourceslices", None, "s1")]
    assert names(store.find("resourceslices", "node", "n1")) == ["s1"]
    moved = store.get("pods", "default", "a")
    moved["spec"]["nodeName"] = "n3"
    store.update("pods", moved)
    assert names(store.find("pods", "node", "n1")) == ["c"]
    store.delete("pods", "other", "c")
    assert store.find("pods", "node", "n1") == [] and store.keys("pods", all_namespaces=True) == [
        ("default", "a"), ("default", "b")]



def _vm_steps(store, read):
    """SQLite virtual-machine steps `read()` costs on this thread's connection (a count, not a time)."""
    steps = [0]

    def count():
        steps[0] += 1
        return 0

    conn = store._conn(write=False)
    conn.set_progress_handler(count, 10)
    try:
        read()
    finally:
        conn.set_progress_handler(None, 0)
    return steps[0]


def test_an_index_read_costs_what_it_returns_not_the_size_of_the_kind(tmp_path):
    """A node's slices by (node, driver): with 100 or 1,000 nodes of slices the lookup does the same
    work (SQLite left to plan it alone walked every slice and the driver's whole list per call)."""
    steps = {}
    for nodes in (100, 1000):  # both above the 256 entries a condition is counted to
        store = ObjectStore(tmp_path / str(nodes))
        with store.batch():
            for n in range(nodes):
                for i in range(3):
                    store.create("resourceslices", {"metadata": {"name": f"n{n}-s{i}", "labels": {"app": "x"}},
                                                    "spec": {"driver": "d", "nodeName": f"n{n}"}})
        read = lambda: store.keys("resourceslices", index={"driver": "d", "node": "n7"})  # noqa: E731
        assert read() == [(None, "n7-s0"), (None, "n7-s1"), (None, "n7-s2")]
        steps[nodes] = _vm_steps(store, read)
        assert names(store.list("resourceslices", index={"node": ["n3", "n7"], "label/app": None})) == [
            "n3-s0", "n3-s1", "n3-s2", "n7-s0", "n7-s1", "n7-s2"]
        assert store.list("resourceslices", index={"node": []}) == []
    assert steps[1000] <= 1.2 * steps[100], steps


def test_an_object_with_two_entries_of_one_key_is_listed_once(tmp_path):
    store = ObjectStore(tmp_path)
    obj = pod("a")
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "o", "uid": "u1"},
                                          {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u2"}]
    store.create("pods", obj)
    assert names(store.list("pods", "default", index={"owner": ["u1", "u2"]})) == ["a"]
    assert names(store.list("pods", "default", index={"owner": None})) == ["a"]


# ---- watch -----------------------------------------------------------------------------------

def test_changes_by_revision_latest_state_and_tombstones(tmp_path):
    store = ObjectStore(tmp_path)
    a = store.create("pods", pod("a"))
    start = int(a["metadata"]["resourceVersion"])
    store.create("pods", pod("b"))
    b = store.get("pods", "default", "b")
    store.update("pods", {**b, "status": {"phase": "Running"}})
    store.delete("pods", "default", "a")
    store.create("nodes", {"metadata": {"name": "n"}})
    changes, last = store.changes(start, resources=["pods"])
    assert [(c.type, c.name) for c in changes] == [(MODIFIED, "b"), (DELETED, "a")]  # b's ADDED carried by its MODIFIED
    assert changes[0].object["status"] == {"phase": "Running"}
    assert changes[1].object["metadata"]["uid"] == a["metadata"]["uid"]
    assert last == int(store.current_resource_version())
    assert store.changes(last)[0] == []


def test_a_watch_wakes_at_once_for_this_process_and_soon_for_another(tmp_path):
    store = ObjectStore(tmp_path)
    store.create("pods", pod("first"))
    since = int(store.current_resource_version())
    got: list = []
    done = threading.Event()

    def watch():
        for change in store.watch(since, ["pods"], timeout_s=60, stop=done):
            got.append((change.type, change.name))
            if len(got) == 2:
                done.set()

    t = threading.Thread(target=watch)
    t.start()
    ObjectStore(tmp_path).create("pods", pod("same-process"))
    subprocess.run([sys.executable, "-c", WRITER, ROOT, str(tmp_path), "other", "1"], check=True, timeout=60)
    t.join(60)
    assert got == [(ADDED, "same-process"), (ADDED, "other-0")]


def test_a_quiet_watch_yields_bookmarks_and_ends_at_its_timeout(tmp_path):
    store = ObjectStore(tmp_path)
    store.create("pods", pod("a"))
    rv = int(store.current_resource_version())
    seen = list(store.watch(rv, timeout_s=0.5, bookmark_s=0.1, poll_s=0.02))
    assert seen and all(c.type == BOOKMARK and c.revision == rv for c in seen)


def test_a_watch_from_a_compacted_revision_is_too_old(tmp_path, monkeypatch):
    import driver.store.objectstore as objectstore

    monkeypatch.setattr(objectstore, "COMPACT_EVERY", 10)
    monkeypatch.setattr(objectstore, "KEEP_CHANGES", 20)
    store = ObjectStore(tmp_path)
    for i in range(45):
        store.create("pods", pod(f"p{i}"))
    assert store.compacted_revision() > 0
    with pytest.raises(Expired, match=r"too old resource version: 1 \(\d+\)"):
        store.changes(1)
    with store.snapshot() as rv:  # list again, then watch from the list's revision
        assert len(store.list("pods", "default")) == 45
    assert store.changes(rv) == ([], rv)


# ---- allocation guard --------------------------------------------------------------------------

def test_an_exclusive_write_refuses_a_device_another_claim_holds(tmp_path):
    store = ObjectStore(tmp_path)
    store.create("resourceclaims", claim("first", ["gpu-0"]), exclusive=True)
    with pytest.raises(ConflictError, match=r"default/second: device d.example.com/n1/gpu-0 is already allocated to "
                                            r"resourceclaim default/first"):
        store.create("resourceclaims", claim("second", ["gpu-1", "gpu-0"]), exclusive=True)
    assert store.names("resourceclaims", "default") == ["first"]
    store.create("resourceclaims", claim("admin", ["gpu-0"], admin=True), exclusive=True)  # adminAccess overlaps
    store.create("resourceclaims", claim("s1", ["nic-0"], shared=True), exclusive=True)
    store.create("resourceclaims", claim("s2", ["nic-0"], shared=True), exclusive=True)  # two shares of one device
    store.create("resourceclaims", claim("by-hand", ["gpu-0"]))  # apply writes what it is given, as the apiserver
    assert store.allocated_devices("d.example.com", "n1") == {"gpu-0", "nic-0"}
    store.delete("resourceclaims", "default", "first")
    store.delete("resourceclaims", "default", "by-hand")
    store.create("resourceclaims", claim("second", ["gpu-1", "gpu-0"]), exclusive=True)


def test_pool_revisions_tell_a_scheduler_its_read_is_stale(tmp_path):
    store = ObjectStore(tmp_path)
    store.create("resourceclaims", claim("a", ["gpu-0"]))
    known = store.pool_revisions()
    assert set(known) == {"d.example.com/n1"}
    with store.locked():
        store.check_pools(known, ["d.example.com/n1", "d.example.com/other"])
    store.create("resourceclaims", claim("b", ["gpu-1"]))  # someone else allocates from the pool
    with pytest.raises(ConflictError, match=r"pool d.example.com/n1: allocated from at revision \d+ by another writer"):
        with store.locked():
            store.check_pools(known, ["d.example.com/n1"])
    store.delete("resourceclaims", "default", "b")  # freeing devices never invalidates a read
    with store.locked():
        store.check_pools(store.pool_revisions(), ["d.example.com/n1"])


def test_raw_rows_are_compact_json_with_their_revision(tmp_path):
    store = ObjectStore(tmp_path)
    made = store.create("pods", pod("a"))
    store.close()
    rv, value = connect(tmp_path).execute("SELECT rv, value FROM objects WHERE name='a'").fetchone()
    assert rv == int(made["metadata"]["resourceVersion"]) and json.loads(value) == made
    assert ", " not in value and ": " not in value
    with pytest.raises(sqlite3.IntegrityError):  # one object per key, whatever writes the table
        connect(tmp_path).execute("INSERT INTO objects(resource, namespace, name, rv, value) VALUES "
                                  "('pods', 'default', 'a', 1, '{}')")
