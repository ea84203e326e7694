"""driver.flock describing a lock holder from a given /proc/locks text: visible, out-of-namespace, gone, unknown."""

from __future__ import annotations

import os
import socket

import pytest

from driver import flock


@pytest.fixture
def lock_fd(tmp_path):
    fd = os.open(tmp_path / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    yield fd
    os.close(fd)


def _key(fd: int) -> str:
    st = os.fstat(fd)
    return f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"


def _table(tmp_path, *lines: str):
    path = tmp_path / "locks"
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def _free_pid() -> int:
    """A PID with no process behind it (taken from the top of the range, checked)."""
    for pid in range(4_194_303, 0, -1):
        if not os.path.exists(f"/proc/{pid}"):
            return pid
    raise AssertionError("no free PID")


def test_holder_outside_the_pid_namespace_is_named_from_the_lock_file(tmp_path, lock_fd):
    assert flock.try_lock(lock_fd)
    flock.record_holder(lock_fd)
    # Another container's holder: the kernel shows PID 0 for it in our namespace.
    table = _table(tmp_path, "1: POSIX  ADVISORY  WRITE 77 00:00:1 0 EOF",
                   f"2: FLOCK  ADVISORY  WRITE 0 {_key(lock_fd)} 0 EOF")
    assert flock.holder_pids(lock_fd, table) == [0]
    assert flock.describe_holder(lock_fd, table) == (
        f"a process outside this PID namespace or gone (the lock file says pid={os.getpid()} "
        f"host={socket.gethostname()})")


def test_holder_gone_from_the_table_is_named_from_the_lock_file(tmp_path, lock_fd):
    os.write(lock_fd, b"pid=4242 host=pod-a\n")
    table = _table(tmp_path, "1: FLOCK  ADVISORY  WRITE 4242 00:00:999999999 0 EOF")  # another file's lock
    assert flock.holder_pids(lock_fd, table) == []
    assert flock.describe_holder(lock_fd, table) == \
        "a process outside this PID namespace or gone (the lock file says pid=4242 host=pod-a)"


def test_holder_neither_seen_nor_recorded_is_an_unknown_process(tmp_path, lock_fd):
    unknown = "an unknown process (not in /proc/locks; in another PID namespace?)"
    assert flock.describe_holder(lock_fd, _table(tmp_path, f"1: FLOCK  ADVISORY  WRITE 0 {_key(lock_fd)} 0 EOF")) == unknown
    assert flock.describe_holder(lock_fd, _table(tmp_path)) == unknown
    assert flock.describe_holder(lock_fd, str(tmp_path / "no-such-table")) == unknown


def test_a_waiter_line_and_a_posix_lock_on_the_same_file_are_not_holders(tmp_path, lock_fd):
    key = _key(lock_fd)
    table = _table(tmp_path, f"1: -> FLOCK  ADVISORY  WRITE 555 {key} 0 EOF",
                   f"2: POSIX  ADVISORY  WRITE 556 {key} 0 EOF")
    assert flock.holder_pids(lock_fd, table) == []
    assert flock.describe_holder(lock_fd, table).startswith("an unknown process")


def test_a_visible_holder_whose_process_is_gone_is_named_by_pid_only(tmp_path, lock_fd):
    pid = _free_pid()
    os.write(lock_fd, b"pid=7 host=elsewhere\n")
    table = _table(tmp_path, f"1: FLOCK  ADVISORY  WRITE {pid} {_key(lock_fd)} 0 EOF")
    assert flock.describe_holder(lock_fd, table) == f"PID {pid}; the lock file says pid=7 host=elsewhere"


def test_a_visible_holder_matching_its_record_is_named_with_its_command_line(tmp_path, lock_fd):
    os.write(lock_fd, f"pid={os.getpid()} host=h\n".encode())
    table = _table(tmp_path, f"1: FLOCK  ADVISORY  WRITE {os.getpid()} {_key(lock_fd)} 0 EOF")
    text = flock.describe_holder(lock_fd, table)
    assert text.startswith(f"PID {os.getpid()} (") and "lock file says" not in text
