"""The kubelet plugin process: DRA + health socket first, registration socket second.

Socket rules (kubelet plugin watcher): `<plugins-dir>/<driver>/dra.sock` serves DRAPlugin v1 and
v1beta1 and DRAResourceHealth v1/v1beta1/v1alpha1; `<registry-dir>/<driver>-reg.sock` serves only
Registration and is created last, because the kubelet dials the endpoint as soon as it sees the
registration socket. A socket left by a crashed predecessor is removed at start, but only if it is
a socket and nobody answers on it: a live one belongs to another plugin instance with the same
kubelet directories, and replacing it would let the kubelet prepare the same device through both,
so it is a start-up error (`check_sockets`, also run by `fake-dra run` as soon as it owns the state
directory). A socket is bound under a hidden name and then hard-linked into place, which never
replaces anything (`_bind`); ours are removed on shutdown, and only if they are still ours (same
inode). Sockets are 0600 (created under umask 077); directories we create are 0750 whatever the umask.
Shutdown is two steps around the state's drain (driver.state.ownership): `stop_serving()` closes
the registration socket and refuses new calls while running ones go on; `finish_stop()` aborts
what is left and removes the DRA socket, before the state directory is released.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import socket
import stat
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import grpc

from driver.errors import InputError
from driver.fsutil import make_dirs
from driver.plugin.gen import pluginregistration_v1_pb2_grpc as reg_grpc
from driver.plugin.metrics import PluginMetrics
from driver.plugin.protos import DRA as _DRA
from driver.plugin.protos import HEALTH as _HEALTH
from driver.plugin.services import (
    DRA_VERSIONS,
    HEALTH_VERSIONS,
    MAX_HEALTH_STREAMS,
    HealthHub,
    RegistrationServicer,
    dra_servicer,
    health_servicer,
)
from driver.state.ownership import startup_io
from driver.state.prepare import DeviceState
from driver.state.types import DeviceHealthStatus

log = logging.getLogger("fake-dra.plugin")
UNIX_PATH_MAX = 107  # sun_path is 108 bytes including the terminating NUL


def supported_versions() -> list[str]:
    """What GetInfo advertises: DRA services newest first, then the health services."""
    return [f"{v}.DRAPlugin" for v in DRA_VERSIONS] + [f"{v}.DRAResourceHealth" for v in HEALTH_VERSIONS]


@dataclass(frozen=True)
class SocketPaths:
    dra: Path
    registration: Path

    @classmethod
    def for_driver(cls, plugins_dir: str | os.PathLike[str], registry_dir: str | os.PathLike[str],
                   driver_name: str, origins: Mapping[str, str] | None = None) -> SocketPaths:
        """The sockets of `driver_name`; InputError when a path exceeds the AF_UNIX limit. `origins`
        (flag -> sentence) says how a directory nobody gave by its flag came about and what to
        change instead; without one the message names the flag."""
        paths = cls(Path(plugins_dir).absolute() / driver_name / "dra.sock",
                    Path(registry_dir).absolute() / f"{driver_name}-reg.sock")
        for flag, path in (("--kubelet-plugins-dir", paths.dra), ("--kubelet-registry-dir", paths.registration)):
            n = len(os.fsencode(path))
            if n <= UNIX_PATH_MAX:
                continue
            problem = f"socket path {path} is {n} bytes, over the AF_UNIX limit of {UNIX_PATH_MAX}"
            origin = (origins or {}).get(flag)
            raise InputError(f"{problem}: {origin}" if origin else f"{flag}: {problem}; use a shorter directory")
        return paths


def socket_is_live(path: Path, timeout_s: float = 1.0) -> bool:
    """True when a process accepts connections on the unix socket `path` (connect, then hang up)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        try:
            sock.connect(str(path))
        except (ConnectionRefusedError, FileNotFoundError):
            return False  # nobody listens: left by a process that is gone
        except TimeoutError:
            return True  # a full accept backlog: someone is there
        except OSError as exc:
            raise InputError(f"cannot tell whether socket {path} is in use: {exc.strerror or exc}") from None
        return True


def _check_socket(path: Path) -> bool:
    """True when a stale socket is at `path`; InputError when it is live or not a socket."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise InputError(f"socket path {path}: {exc.strerror or exc}") from None
    if not stat.S_ISSOCK(mode):
        raise InputError(f"{path} exists and is not a socket; refusing to replace it")
    if socket_is_live(path):
        raise InputError(f"socket {path} is in use by another running process (a second plugin instance with the "
                         "same kubelet directories?); stop it first or give this one other directories")
    return True


def check_sockets(paths: SocketPaths) -> None:
    """Start-up check: neither socket may be served by another live process."""
    for path in (paths.dra, paths.registration):
        _check_socket(path)


def _remove_stale(path: Path) -> None:
    if _check_socket(path):
        path.unlink()
        log.info("removed stale socket", extra={"path": str(path)})


def _place(staged: Path, path: Path) -> None:
    """Give the staged socket its real name without ever replacing one (FileExistsError)."""
    try:
        os.link(staged, path)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP):
            raise
        # A filesystem without hard links: rename, after checking once more that the name is free.
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, "exists", str(path)) from None
        os.rename(staged, path)


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        st = path.lstat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _unlink_if(path: Path, inode: tuple[int, int] | None) -> None:
    """Remove our socket, never a successor's that took the path meanwhile."""
    if inode is not None and _inode(path) == inode:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _staging_name(path: Path) -> Path:
    """A hidden name beside `path` that nobody uses: random, not the PID, which two containers
    sharing the registry directory both have as 1 (gRPC would unlink the other's staged socket and
    that process would then place ours under its name). At most as long as `path`'s name
    ("dra.sock": a dot and 7 hex digits, 2^28 names), so the AF_UNIX limit checked for the final
    path holds for it too."""
    width = max(1, min(7, len(path.name) - 1))
    while True:
        staged = path.with_name("." + secrets.token_hex(4)[:width])
        if not os.path.lexists(staged):
            return staged


@contextlib.contextmanager
def _private_umask() -> Iterator[None]:
    old = os.umask(0o077)  # the socket inode is created with this mask: never world-accessible
    try:
        yield
    finally:
        os.umask(old)


class PluginServer:
    def __init__(self, *, driver_name: str, paths: SocketPaths, state: DeviceState,
                 health: Callable[[], list[DeviceHealthStatus]], metrics: PluginMetrics,
                 health_interval_s: float = 5.0, max_workers: int = 32) -> None:
        self.driver_name = driver_name
        self.paths = paths
        self.state = state
        self.metrics = metrics
        self._health = health
        self.hub = HealthHub(health_interval_s)
        # Many worker threads (long-lived health streams each hold one; claim reads wait on the API
        # in others), but only a few work on the state at once: driver.state.ownership.StateGate.
        self._max_workers = max_workers
        self._streams = threading.BoundedSemaphore(MAX_HEALTH_STREAMS)
        self._dra: grpc.Server | None = None
        self._reg: grpc.Server | None = None
        self._inodes: dict[Path, tuple[int, int] | None] = {}
        self._stopped: threading.Event | None = None
        self._stop = threading.Event()
        self._health_thread: threading.Thread | None = None
        self.registration: RegistrationServicer | None = None

    def start(self) -> None:
        self._publish_health()  # the first stream message must already be complete
        for flag, path in (("--kubelet-plugins-dir", self.paths.dra), ("--kubelet-registry-dir", self.paths.registration)):
            with startup_io(f"{flag} socket directory", path.parent):
                make_dirs(path.parent, 0o750)
        _remove_stale(self.paths.dra)
        _remove_stale(self.paths.registration)

        # Health streams hold a thread each for their lifetime: they get MAX_HEALTH_STREAMS threads
        # of their own on top of the DRA workers, so open streams never starve prepare.
        pool = futures.ThreadPoolExecutor(max_workers=self._max_workers + MAX_HEALTH_STREAMS, thread_name_prefix="dra")
        self._dra = grpc.server(pool)
        for version, (pb2, grpc_mod) in _DRA.items():
            grpc_mod.add_DRAPluginServicer_to_server(dra_servicer(pb2, grpc_mod, version, self.state, self.metrics),
                                                     self._dra)
        for version, (pb2, grpc_mod) in _HEALTH.items():
            grpc_mod.add_DRAResourceHealthServicer_to_server(
                health_servicer(pb2, grpc_mod, version, self.hub, self.metrics, self._streams), self._dra)
        self._bind(self._dra, self.paths.dra)

        self._health_thread = threading.Thread(target=self._health_loop, name="health", daemon=True)
        self._health_thread.start()

        self.registration = RegistrationServicer(self.driver_name, str(self.paths.dra), supported_versions(), self.metrics)
        self._reg = grpc.server(futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="reg"))
        reg_grpc.add_RegistrationServicer_to_server(self.registration, self._reg)
        self._bind(self._reg, self.paths.registration)
        log.info("kubelet plugin serving", extra={"dra_socket": str(self.paths.dra),
                                                  "registration_socket": str(self.paths.registration),
                                                  "versions": supported_versions()})

    def _bind(self, server: grpc.Server, path: Path) -> None:
        """Serve on `path`, placed atomically and only if nobody else placed a socket there.

        gRPC unlinks whatever is at its socket path, before binding and again at shutdown. So it
        binds a hidden staging name (the kubelet's plugin watcher ignores names starting with a
        dot; never longer than the final name, for the AF_UNIX limit), and the socket is then
        hard-linked to its real name: link() fails if that name was taken meanwhile (a racing
        instance) instead of replacing it, and gRPC's own unlink later hits only the staging name.
        """
        staged = _staging_name(path)
        with _private_umask():
            if server.add_insecure_port(f"unix://{staged}") == 0:
                raise InputError(f"cannot listen on unix socket {staged} (for {path})")
            server.start()
        try:
            os.chmod(staged, 0o600)
            _place(staged, path)
        except FileExistsError:
            server.stop(0)
            raise InputError(f"socket {path} was created by another process while this one started "
                             "(a second plugin instance with the same kubelet directories?)") from None
        except OSError as exc:
            server.stop(0)
            raise InputError(f"cannot place socket {path}: {exc.strerror or exc}") from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                staged.unlink()
        self._inodes[path] = _inode(path)

    def _publish_health(self) -> None:
        try:
            devices = self._health()
        except Exception:  # noqa: BLE001 - keep streaming the last list rather than dying
            log.exception("health check failed")
            return
        counts: dict[str, int] = {"HEALTHY": 0, "UNHEALTHY": 0, "UNKNOWN": 0}
        for d in devices:
            counts[d.health] = counts.get(d.health, 0) + 1
        for health, n in counts.items():
            self.metrics.health.labels(health).set(n)
        self.hub.publish(devices)

    def _health_loop(self) -> None:
        while not self._stop.wait(self.hub.interval_s):
            self._publish_health()

    def stop_serving(self, abort_after_s: float) -> None:
        """Unregister (registration socket first) and refuse new DRA calls; running calls go on
        (gRPC aborts those still running after abort_after_s). Health streams end."""
        self._stop.set()
        if self._reg is not None:
            self._reg.stop(0).wait()
        _unlink_if(self.paths.registration, self._inodes.get(self.paths.registration))
        self.hub.stop()
        if self._dra is not None:
            self._stopped = self._dra.stop(abort_after_s)

    def finish_stop(self, flush_s: float = 1.0) -> None:
        """Abort whatever is left and remove the DRA socket (before the state is released: a
        successor must never find our socket, nor we remove its). Answers of calls that just
        returned get up to flush_s to reach the kubelet first."""
        if self._dra is not None:
            if self._stopped is not None:
                self._stopped.wait(flush_s)
            self._dra.stop(0).wait()
        _unlink_if(self.paths.dra, self._inodes.get(self.paths.dra))
        log.info("kubelet plugin stopped")
