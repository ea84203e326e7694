"""The local object store behaves like the API server where the driver relies on it."""

import pytest

from driver.errors import ConflictError, InputError, NotFoundError
from driver.store import ObjectStore
from waiting import GENEROUS_S


def claim(name="c1", ns="default"):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": ns}, "spec": {"devices": {}}}


def test_layout_and_resource_version_increase(tmp_path):
    store = ObjectStore(tmp_path)
    a = store.create("resourceclaims", claim())
    assert (tmp_path / "resourceclaims" / "default" / "c1.yaml").is_file()
    b = store.create("resourceslices", {"metadata": {"name": "n1-gpu-0"}, "spec": {}})
    assert (tmp_path / "resourceslices" / "_cluster" / "n1-gpu-0.yaml").is_file()
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


def test_garbled_file_names_path(tmp_path):
    store = ObjectStore(tmp_path)
    store.create("resourceclaims", claim())
    (tmp_path / "resourceclaims" / "default" / "c1.yaml").write_text("{ not yaml")
    with pytest.raises(InputError, match="c1.yaml"):
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
def test_directories_have_fixed_modes_whatever_the_umask(tmp_path, mask):
    import os
    import stat

    root = tmp_path / "parent" / "store"
    old = os.umask(mask)
    try:
        ObjectStore(root).create("resourceclaims", claim())
    finally:
        os.umask(old)
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    dirs = [root.parent, root, root / "resourceclaims", root / "resourceclaims" / "default"]
    assert [oct(mode(d)) for d in dirs] == [oct(0o755)] * 4
    assert mode(root / "resourceclaims" / "default" / "c1.yaml") == 0o644


@pytest.mark.parametrize("content", [b"{ not yaml", b"\xff\xfe binary", b"- a list\n", b"[" * 5000 + b"]" * 5000],
                         ids=["not-yaml", "not-utf8", "not-an-object", "nested-5000"])
def test_list_leaves_out_a_broken_file_and_names_it(tmp_path, caplog, content):
    store = ObjectStore(tmp_path)
    for name in ("a", "b", "c"):
        store.create("resourceclaims", claim(name))
    bad = tmp_path / "resourceclaims" / "default" / "b.yaml"
    bad.write_bytes(content)
    assert [o["metadata"]["name"] for o in store.list("resourceclaims", "default")] == ["a", "c"]
    assert [o["metadata"]["name"] for o in store.list("resourceclaims", all_namespaces=True)] == ["a", "c"]
    assert str(bad) in caplog.text and "leaving out" in caplog.text
    with pytest.raises(InputError, match="b.yaml"):
        store.get("resourceclaims", "default", "b")


@pytest.mark.parametrize("kind", ["fifo", "symlink-to-fifo", "char-device"])
def test_a_file_that_is_not_regular_is_an_error_and_never_blocks(tmp_path, kind):
    """A FIFO in the store used to block the reading thread forever: with the plugin's two
    state-gate slots, two such claims stopped every prepare (the good claims timed out too)."""
    import os
    import threading

    from driver.state.sources import StoreClaimSource

    store = ObjectStore(tmp_path)
    store.create("resourceclaims", claim("a"))
    path = tmp_path / "resourceclaims" / "default" / "b.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink-to-fifo":
        os.mkfifo(tmp_path / "pipe")
        path.symlink_to(tmp_path / "pipe")
    else:
        path.symlink_to("/dev/null")
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            StoreClaimSource(store).get_claim("default", "b")
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - inspected below
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(GENEROUS_S)
    if reader.is_alive():  # unblock the stuck reader so the test process can exit
        with open(path, "wb"):
            pass
        pytest.fail("reading a claim stored as a FIFO blocked")
    assert isinstance(outcome[0], InputError) and "b.yaml is not a regular file" in str(outcome[0])
    assert "resourceclaim default/b" in str(outcome[0])
    with pytest.raises(InputError, match="not a regular file"):
        store.get("resourceclaims", "default", "b")
    assert [o["metadata"]["name"] for o in store.list("resourceclaims", "default")] == ["a"]


def test_a_directory_in_place_of_an_object_still_says_so(tmp_path):
    store = ObjectStore(tmp_path)
    (tmp_path / "resourceclaims" / "default" / "d.yaml").mkdir(parents=True)
    with pytest.raises(InputError, match="cannot read .*d.yaml: Is a directory"):
        store.get("resourceclaims", "default", "d")


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
