"""The local object store behaves like the API server where the driver relies on it."""

import pytest

from driver.errors import ConflictError, InputError, NotFoundError
from driver.store import ObjectStore
from tests.storeutil import plant_row, raw_row


def claim(name="c1", ns="default"):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": ns}, "spec": {"devices": {}}}


def test_one_database_file_and_resource_version_increase(tmp_path):
    store = ObjectStore(tmp_path)
    a = store.create("resourceclaims", claim())
    b = store.create("resourceslices", {"metadata": {"name": "n1-gpu-0"}, "spec": {}})
    assert (tmp_path / "store.db").is_file() and not (tmp_path / "resourceclaims").exists()
    assert raw_row(tmp_path, "resourceslices", None, "n1-gpu-0")[0] == int(b["metadata"]["resourceVersion"])
    assert int(b["metadata"]["resourceVersion"]) > int(a["metadata"]["resourceVersion"])
    a["spec"]["devices"] = {"requests": []}
    c = store.update("resourceclaims", a)
    assert int(c["metadata"]["resourceVersion"]) > int(b["metadata"]["resourceVersion"])
    assert store.get("resourceclaims", "default", "c1")["spec"]["devices"] == {"requests": []}
    assert c["metadata"]["uid"] == a["metadata"]["uid"]


def test_stale_resource_version_conflicts(tmp_path):
    store = ObjectStore(tmp_path)
    a = store.create("resourceclaims", claim())
    store.update("resourceclaims", a)
    with pytest.raises(ConflictError, match="stale"):
        store.update("resourceclaims", a)
    with pytest.raises(ConflictError):
        store.create("resourceclaims", claim())


def test_missing_and_hostile_names(tmp_path):
    store = ObjectStore(tmp_path)
    with pytest.raises(NotFoundError, match="resourceclaims default/nope"):
        store.get("resourceclaims", "default", "nope")
    for bad in ("../etc", "a/b", "", "A", "c1\n"):
        with pytest.raises(InputError, match="invalid name"):
            store.get("resourceclaims", "default", bad)
    with pytest.raises(InputError, match="invalid namespace"):
        store.list("resourceclaims", "..")


def test_a_garbled_row_names_its_object(tmp_path):
    store = ObjectStore(tmp_path)
    store.create("resourceclaims", claim())
    plant_row(tmp_path, "resourceclaims", "default", "c1", "{ not json")
    with pytest.raises(InputError, match=r"store.db: resourceclaims default/c1: its stored JSON does not parse"):
        store.get("resourceclaims", "default", "c1")


def test_delete_and_list_all_namespaces(tmp_path):
    store = ObjectStore(tmp_path)
    store.create("resourceclaims", claim("a", "ns1"))
    store.create("resourceclaims", claim("b", "ns2"))
    assert [o["metadata"]["name"] for o in store.list("resourceclaims", all_namespaces=True)] == ["a", "b"]
    store.delete("resourceclaims", "ns1", "a")
    assert [o["metadata"]["name"] for o in store.list("resourceclaims", all_namespaces=True)] == ["b"]
    with pytest.raises(NotFoundError):
        store.delete("resourceclaims", "ns1", "a")


def test_generate_name(tmp_path):
    store = ObjectStore(tmp_path)
    obj = store.create("resourceslices", {"metadata": {"generateName": "n1-fake-dra-"}})
    assert obj["metadata"]["name"].startswith("n1-fake-dra-")
    with pytest.raises(InputError, match="generateName"):
        store.create("resourceslices", {"metadata": {}})


@pytest.mark.parametrize("mask", [0o000, 0o077])
def test_the_store_has_fixed_modes_whatever_the_umask(tmp_path, mask):
    import os
    import stat

    root = tmp_path / "parent" / "store"
    old = os.umask(mask)
    try:
        ObjectStore(root).create("resourceclaims", claim())
    finally:
        os.umask(old)
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    assert [oct(mode(d)) for d in (root.parent, root)] == [oct(0o755)] * 2
    assert mode(root / "store.db") == 0o644


@pytest.mark.parametrize("content", ["{ not json", b"\xff\xfe binary", "[1, 2]", "[" * 5000 + "]" * 5000,
                                     '{"metadata": [1, 2]}', '{"metadata": {"name": "other"}}',
                                     '{"metadata": {"name": "b", "namespace": "default", "labels": {"a": 1}}}', None, 42],
                         ids=["not-json", "binary", "not-an-object", "nested-5000", "metadata-a-list", "other-name",
                              "label-not-a-string", "null", "a-number"])
def test_list_leaves_out_a_broken_row_and_names_it(tmp_path, caplog, content):
    store = ObjectStore(tmp_path)
    for name in ("a", "b", "c"):
        store.create("resourceclaims", claim(name))
    plant_row(tmp_path, "resourceclaims", "default", "b", content)
    assert [o["metadata"]["name"] for o in store.list("resourceclaims", "default")] == ["a", "c"]
    assert [o["metadata"]["name"] for o in store.list("resourceclaims", all_namespaces=True)] == ["a", "c"]
    assert "resourceclaims default/b" in caplog.text and "leaving out" in caplog.text
    with pytest.raises(InputError, match="resourceclaims default/b"):
        store.get("resourceclaims", "default", "b")
    store.delete("resourceclaims", "default", "b")  # an unreadable object can still be deleted
    assert store.names("resourceclaims", "default") == ["a", "c"]


def test_a_row_changed_outside_the_store_is_read_as_the_apiserver_decodes_it(tmp_path):
    """Issue 29 item 3: a valid JSON object of the wrong shape crashed whichever command read it."""
    store = ObjectStore(tmp_path)
    store.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    plant_row(tmp_path, "nodes", None, "n1", '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, '
                                             '"spec": {"taints": "none"}}')
    with pytest.raises(InputError, match=r"nodes n1: changed outside the store and not a valid Node: spec.taints"):
        store.get("nodes", None, "n1")
    plant_row(tmp_path, "nodes", None, "n1", '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}')
    assert store.get("nodes", None, "n1")["metadata"]["name"] == "n1"  # valid, though written by hand


@pytest.mark.parametrize("what", ["store.db", "store.db-wal", "store.db-shm"])
def test_a_symlink_in_the_store_is_never_followed(tmp_path, what):
    """Issue 29 item 7: the directory store followed links out of its directory."""
    import os

    store = ObjectStore(tmp_path / "s")
    store.create("resourceclaims", claim("a"))
    store.close()
    target = tmp_path / "elsewhere"
    target.write_text("secret\n")
    path = tmp_path / "s" / what
    if os.path.lexists(path):
        os.rename(path, tmp_path / "moved")
    path.symlink_to(target)
    with pytest.raises(InputError, match=f"{what} is a symbolic link; the store never follows links"):
        ObjectStore(tmp_path / "s").get("resourceclaims", "default", "a")
    assert target.read_text() == "secret\n"


def test_a_fifo_in_place_of_the_database_never_blocks(tmp_path):
    import os

    os.mkfifo(tmp_path / "store.db")
    with pytest.raises(InputError, match="store.db is not a regular file"):
        ObjectStore(tmp_path).list("pods", all_namespaces=True)


def test_the_writer_lock_can_be_waited_for_with_a_timeout(tmp_path):
    import fcntl
    import time

    store = ObjectStore(tmp_path)
    obj = store.create("resourceclaims", claim("a"))
    with open(tmp_path / ".lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        started = time.monotonic()
        with pytest.raises(InputError, match=r"its writer lock .*\.lock has been held by PID \d+ .* for more than 0.2 s"):
            store.update("resourceclaims", obj, lock_timeout_s=0.2)
        assert 0.2 <= time.monotonic() - started < 2
    assert store.update("resourceclaims", obj, lock_timeout_s=0.2)["metadata"]["resourceVersion"] != obj["metadata"]["resourceVersion"]


def test_every_writer_lock_wait_is_bounded_and_names_the_holder(tmp_path):
    # Issue 18 item 4: create/delete (apply, delete, run's start) waited for ever, silently.
    import fcntl
    import subprocess
    import sys
    import time

    store = ObjectStore(tmp_path)
    store.create("resourceclaims", claim("a"))
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a+'); "
                               "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
                               str(tmp_path / ".lock")], stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"held\n"
        started = time.monotonic()
        with pytest.raises(InputError) as err:
            with store.locked(timeout_s=0.3):
                pass
        assert time.monotonic() - started < 3
        assert f"PID {holder.pid} (" in str(err.value) and str(tmp_path / ".lock") in str(err.value)
        import driver.store.objectstore as objectstore

        assert objectstore.LOCK_WAIT_S < 60  # the default bound of create, update and delete
    finally:
        holder.kill()
        holder.wait()
    assert fcntl  # the lock is free again: the store works
    store.delete("resourceclaims", "default", "a")


def test_the_lock_file_is_0600_whatever_the_umask_and_never_a_link(tmp_path):
    # Issue 18 item 9: 0666 under umask 000, so any local user could flock it and stall the store.
    import os

    old = os.umask(0)
    try:
        store = ObjectStore(tmp_path / "s")
        store.create("resourceclaims", claim("a"))
    finally:
        os.umask(old)
    assert (tmp_path / "s" / ".lock").stat().st_mode & 0o777 == 0o600
    (tmp_path / "s" / ".lock").chmod(0o666)  # from an older release: tightened on the next write
    store.delete("resourceclaims", "default", "a")
    assert (tmp_path / "s" / ".lock").stat().st_mode & 0o777 == 0o600
    (tmp_path / "s" / ".lock").unlink()
    (tmp_path / "s" / ".lock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(InputError, match=r"lock file .*\.lock is a symbolic link"):
        store.create("resourceclaims", claim("b"))
    assert not (tmp_path / "elsewhere").exists()
