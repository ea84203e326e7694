"""Flags shared by several sub-commands and the checks every command makes before doing work.

Each flag also reads FAKE_DRA_<FLAG>; the variables are derived from the finished parser by
driver.commands._envflags (docs/cli.md), so nothing here reads them.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from driver import DEFAULT_DRIVER_NAME
from driver.errors import InputError
from driver.features import Features, parse_features
from driver.model.dnsnames import is_dns_subdomain


def add_flag(parser: argparse.ArgumentParser, flag: str, default: str | None, help: str, **kw) -> None:
    """A string flag (its FAKE_DRA_<FLAG> variable is added by the CLI for every flag)."""
    parser.add_argument(flag, default=default, help=help, **kw)


def add_sysfs_root(parser: argparse.ArgumentParser) -> None:
    add_flag(parser, "--sysfs-root", "/sys", "root of the sysfs tree to discover (default /sys)")


def add_driver_name(parser: argparse.ArgumentParser) -> None:
    add_flag(parser, "--driver-name", None, f"DRA driver name (default {DEFAULT_DRIVER_NAME}, or the --personality's "
             "own; with a personality of two drivers, only the one named)")


def add_features(parser: argparse.ArgumentParser) -> None:
    add_flag(
        parser,
        "--features",
        None,
        "feature gates G=true|false,... using Kubernetes 1.37 names (overrides detection; default: every gate "
        "on except DRASharedConsumableCapacity, which 1.37 does not have)",
    )


def add_node_name(parser: argparse.ArgumentParser, required_default: str | None = None) -> None:
    add_flag(parser, "--node-name", os.environ.get("NODE_NAME", required_default), "node name (default $NODE_NAME)")


LOCAL_STATE_HINT = "$XDG_STATE_HOME/fake-dra/nodes/<node>"


def add_api_flags(parser: argparse.ArgumentParser) -> None:
    """Where the Kubernetes objects live: an API server, or the local object store."""
    add_flag(parser, "--kubeconfig", os.environ.get("KUBECONFIG"),
             "kubeconfig (default $KUBECONFIG); absent: in-cluster, else the local object store")
    add_flag(parser, "--store", None, "local object store directory used when no API server is configured "
             "(default $XDG_STATE_HOME/fake-dra/store)")


def add_node_flags(parser: argparse.ArgumentParser) -> None:
    """Flags of the long-running commands (`run`, `publish`): the node, its hardware, the API."""
    add_sysfs_root(parser)
    add_node_name(parser)
    add_driver_name(parser)
    add_features(parser)
    add_api_flags(parser)
    add_flag(parser, "--driver-config", None, "driver config file (extra GPU models, single-mode choice, NVIDIA's "
             "knobs, ...)")
    add_personality(parser)


def add_personality(parser: argparse.ArgumentParser) -> None:
    from driver.personality import DEFAULT_PERSONALITY, PERSONALITIES

    add_flag(parser, "--personality", None, f"present the hardware as this driver would: {', '.join(PERSONALITIES)} "
             f"(default {DEFAULT_PERSONALITY}); docs/personalities.md")


def add_kubelet_dirs(parser: argparse.ArgumentParser, *, sockets_only: bool = False) -> None:
    """Where the kubelet plugin puts its sockets (`run`, `probe`), CDI specs and checkpoint (`run`)."""
    where = ("default: under --kubelet-root, /var/lib/kubelet in a cluster, else the local state directory "
             f"{LOCAL_STATE_HINT}")
    add_flag(parser, "--kubelet-root", None,
             "the kubelet's root directory (a real node: /var/lib/kubelet); plugin sockets go under it. Without "
             "it and outside a cluster nothing is created under /var/lib/kubelet or /var/run/cdi")
    add_flag(parser, "--kubelet-plugins-dir", None, f"kubelet plugins directory ({where}/plugins)")
    add_flag(parser, "--kubelet-registry-dir", None, f"kubelet plugin registry directory ({where}/plugins_registry)")
    if sockets_only:
        return
    add_flag(parser, "--cdi-root", None,
             f"directory for CDI spec files (default: /var/run/cdi in a cluster or with --kubelet-root, else {LOCAL_STATE_HINT}/cdi)")
    add_flag(parser, "--state-dir", None, "checkpoint directory (default <kubelet-plugins-dir>/<driver-name>)")


def features_from(args: argparse.Namespace) -> Features:
    return parse_features(getattr(args, "features", None))


def require_node_name(args: argparse.Namespace) -> str:
    """--node-name (or $NODE_NAME), checked here so the message names the flag and, through the
    boundary, FAKE_DRA_NODE_NAME when the value came from it (the slice renderer cannot)."""
    name = getattr(args, "node_name", None)
    if not name:
        raise InputError("--node-name is required (or set $NODE_NAME / $FAKE_DRA_NODE_NAME)")
    if not is_dns_subdomain(name):
        raise InputError(f"--node-name: {name!r} is not a valid node name (a DNS subdomain: lower-case letters, "
                         "digits, '-' and '.'; it also names the node's pool)")
    return name


def require_driver_name(args: argparse.Namespace) -> str:
    """--driver-name, checked (unset: fake-dra's default name, also set on `args`)."""
    name = getattr(args, "driver_name", None) or DEFAULT_DRIVER_NAME
    args.driver_name = name
    if not is_dns_subdomain(name, 63):
        raise InputError(f"--driver-name: {name!r} is not a DNS subdomain of at most 63 characters")
    return name


def existing_dir(path: str, flag: str) -> Path:
    p = Path(path)
    if not p.is_dir():
        raise InputError(f"{flag}: {path} does not exist or is not a directory")
    return p


# Sections of the driver config file read by the areas that own them (hardware: driver.hardware,
# slices: driver.slices, nvidia and sriov: those personalities). Others are tolerated with a warning
# so a newer config still loads; a personality warns about known sections it does not read.
DRIVER_CONFIG_SECTIONS = ("hardware", "slices", "nvidia", "sriov", "example")


def load_driver_config(path: str | None) -> dict:
    """The driver config YAML file as a dict ({} when `path` is None/empty or the file is empty).

    ConfigError (exit 2) naming the path when the file is missing, unreadable, not YAML, not a mapping,
    or a known section is not a mapping.
    """
    import logging

    from driver.errors import ConfigError
    from driver.yamlio import load_one

    if not path:
        return {}
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"driver config {path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"driver config {path}: not UTF-8 text (byte at offset {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"driver config {path}: unreadable ({exc.strerror or exc})") from None
    try:
        data = load_one(text, f"driver config {path}")
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"driver config {path}: top level must be a mapping with sections "
            f"{', '.join(DRIVER_CONFIG_SECTIONS)}; got {type(data).__name__}"
        )
    for section in DRIVER_CONFIG_SECTIONS:
        value = data.get(section)
        if value is not None and not isinstance(value, dict):
            raise ConfigError(f"driver config {path}: section {section!r} must be a mapping, got {type(value).__name__}")
    for section in sorted(set(data) - set(DRIVER_CONFIG_SECTIONS)):
        logging.getLogger("fake-dra.config").warning(
            f"driver config {path}: unknown section {section!r} ignored", extra={"path": str(path)}
        )
    return data


def seconds(value: object, flag: str) -> float:
    """A duration flag as a finite float, else InputError naming the flag. float() takes "nan" and
    "inf": a NaN interval turns every timed wait into a busy loop (it never compares as elapsed) and
    an infinite one removes the bound the flag exists for (and fails in time arithmetic)."""
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"{flag}: expected seconds, got {value!r}") from None
    if not math.isfinite(out):
        raise InputError(f"{flag}: expected a finite number of seconds, got {value!r}")
    return out


def positive_seconds(value: object, flag: str) -> float:
    """A duration flag: a positive, finite number of seconds, else InputError naming the flag."""
    out = seconds(value, flag)
    if out <= 0:
        raise InputError(f"{flag}: must be positive, got {value!r}")
    return out


def in_cluster() -> bool:
    """Running in a pod with a service-account token (the API server is then the default backend)."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and Path(
        "/var/run/secrets/kubernetes.io/serviceaccount/token").is_file()


# --- where things go when no directory flag says -------------------------------------------------

def state_home() -> Path:
    """$XDG_STATE_HOME (when absolute, as the XDG spec requires), else ~/.local/state."""
    base = os.environ.get("XDG_STATE_HOME", "")
    return Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state"


def default_store_dir() -> Path:
    """The local object store shared by every local node: it plays the API server."""
    return state_home() / "fake-dra" / "store"


def local_node_dir(node: str) -> Path:
    """The one directory a node's local `run` keeps its sockets, CDI specs and checkpoint in."""
    if not node or "/" in node or node in (".", "..") or "\0" in node:
        raise InputError(f"--node-name: {node!r} cannot name a directory (expected a DNS subdomain)")
    return state_home() / "fake-dra" / "nodes" / node


@dataclass(frozen=True)
class NodeDirs:
    """Where the kubelet plugin lives; `local_root` is the local state directory when any default
    was taken from it (None in a cluster, with --kubelet-root, or when every flag was given)."""

    plugins: Path
    registry: Path
    cdi: Path
    state: Path
    origin: str  # "--kubelet-root", "in-cluster" or "local": where the defaults came from
    local_root: Path | None = None
    # Socket directory flag -> how its directory came about when the flag was not given, and what to
    # change instead (the socket length check names these rather than a flag the user never typed).
    defaults: dict[str, str] = field(default_factory=dict)

    def flags(self) -> list[tuple[str, Path]]:
        return [("--kubelet-plugins-dir", self.plugins), ("--kubelet-registry-dir", self.registry),
                ("--cdi-root", self.cdi), ("--state-dir", self.state)]


def node_dirs(args: argparse.Namespace, driver_name: str, node: str | None, *, sockets_only: bool = False) -> NodeDirs:
    """Resolve --kubelet-root/--kubelet-plugins-dir/--kubelet-registry-dir/--cdi-root/--state-dir.

    Defaults: under --kubelet-root when given (CDI in /var/run/cdi); the kubelet's own paths in a
    cluster (service-account token present); otherwise one local state directory per node
    (`$XDG_STATE_HOME/fake-dra/nodes/<node>`), so a laptop run never creates /var/lib/kubelet or
    /var/run/cdi behind the user's back. `sockets_only` (probe): only the socket directories matter.
    """
    given = {"plugins": getattr(args, "kubelet_plugins_dir", None),
             "registry": getattr(args, "kubelet_registry_dir", None), "cdi": getattr(args, "cdi_root", None)}
    needed = ("plugins", "registry") if sockets_only else ("plugins", "registry", "cdi")
    kubelet_root = getattr(args, "kubelet_root", None)
    local: Path | None = None
    if kubelet_root:
        origin, base, cdi_default = "--kubelet-root", Path(kubelet_root), Path("/var/run/cdi")
    elif in_cluster():
        origin, base, cdi_default = "in-cluster", Path("/var/lib/kubelet"), Path("/var/run/cdi")
    else:
        origin = "local"
        if all(given[k] for k in needed):
            base = cdi_default = None  # every needed directory was given: no local state directory
        else:
            if not node:
                raise InputError("--node-name is required to find this node's local state directory "
                                 f"({LOCAL_STATE_HINT}); or give --kubelet-root")
            local = base = local_node_dir(node)
            cdi_default = local / "cdi"

    def pick(key: str, default: Path | None) -> Path:
        value = given[key] or default
        return Path(value) if value is not None else Path(".")  # "." only for a directory not needed

    plugins = pick("plugins", base / "plugins" if base else None)
    state = getattr(args, "state_dir", None)
    flags = {"plugins": "--kubelet-plugins-dir", "registry": "--kubelet-registry-dir"}
    return NodeDirs(
        plugins=plugins,
        registry=pick("registry", base / "plugins_registry" if base else None),
        cdi=pick("cdi", cdi_default),
        state=Path(state) if state else plugins / driver_name,
        origin=origin,
        local_root=local,
        defaults={flags[k]: _default_origin(origin, base, flags[k]) for k in ("plugins", "registry")
                  if not given[k] and base},
    )


def _default_origin(origin: str, base: Path, flag: str) -> str:
    """Why a defaulted directory is where it is, and what to give instead (for error messages)."""
    if origin == "local":
        xdg = os.environ.get("XDG_STATE_HOME", "")
        home = f"XDG_STATE_HOME={xdg}" if os.path.isabs(xdg) else "XDG_STATE_HOME is not set, so ~/.local/state"
        return (f"it is under the local state directory {base} ({LOCAL_STATE_HINT}; {home}); pass --kubelet-root "
                f"(or {flag}) with a shorter directory, or set a shorter XDG_STATE_HOME")
    if origin == "--kubelet-root":
        return f"it is under --kubelet-root {base}; give a shorter --kubelet-root (or {flag})"
    return f"it is under the kubelet's {base}; pass {flag} with a shorter directory"


# --- output paths: checked before the work starts -------------------------------------------------

def _probe_writable(directory: Path, flag: str, path: object) -> None:
    """Create and remove a file in `directory`: the only check that holds for root too (access()
    says yes to root on /proc, and nothing but a write tells a read-only bind mount)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".fake-dra-write-check-", dir=directory)
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot write in {directory}: {exc.strerror or exc}") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)


def _nearest_existing(path: Path) -> Path:
    for candidate in [path, *path.parents]:
        if os.path.lexists(candidate):
            return candidate
    return Path(".")


def output_dir(path: str | os.PathLike[str], flag: str, *, must_be_empty: bool = False) -> Path:
    """A directory the command creates (with parents) or writes into, checked before any work:
    InputError naming `flag` and the path when it is a file, not empty (`must_be_empty`), or in a
    place nobody can write (/proc, /sys, a read-only mount, someone else's directory)."""
    p = Path(path)
    existing = _nearest_existing(p.absolute())
    if existing == p.absolute():
        if not p.is_dir():
            raise InputError(f"{flag} {path}: exists and is not a directory")
        if must_be_empty:
            try:
                empty = not any(p.iterdir())
            except OSError as exc:
                raise InputError(f"{flag} {path}: cannot list it: {exc.strerror or exc}") from None
            if not empty:
                raise InputError(f"{flag} {path}: directory is not empty")
        _probe_writable(p, flag, path)
        return p
    if not existing.is_dir():
        raise InputError(f"{flag} {path}: {existing} is not a directory")
    _probe_writable(existing, flag, path)
    return p


def output_file(path: str | os.PathLike[str], flag: str) -> Path:
    """A file the command writes at the end (a report): checked before the work starts. Its
    directory must exist (it is never created: a typo must not grow a directory tree)."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{flag} {path}: is a directory; give a file name")
    parent = p.parent
    if not parent.exists():
        raise InputError(f"{flag} {path}: directory {parent} does not exist (it is not created)")
    if not parent.is_dir():
        raise InputError(f"{flag} {path}: {parent} is not a directory")
    if os.path.lexists(p):
        try:
            with open(p, "ab"):  # append mode: checks write permission without truncating
                pass
        except OSError as exc:
            raise InputError(f"{flag} {path}: cannot write it: {exc.strerror or exc}") from None
        return p
    _probe_writable(parent, flag, path)
    return p


def input_file(path: str | os.PathLike[str], flag: str) -> Path:
    """A file the command reads (now or later, like a rotated token): it must exist and open."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{flag} {path}: is a directory; give a file")
    try:
        with open(p, "rb"):
            pass
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot read: {exc.strerror or exc}") from None
    return p


def store_dir(args: argparse.Namespace, *, write: bool) -> Path:
    """--store (or its default), checked: a directory or absent; writable when the command writes."""
    root = Path(getattr(args, "store", None) or default_store_dir())
    if write:
        return output_dir(root, "--store")
    if os.path.lexists(root) and not root.is_dir():
        raise InputError(f"--store {root}: exists and is not a directory")
    return root


class Progress:
    """`<prefix> 400/1000 nodes, 131 nodes/s` on stderr at most every 2 s while long work runs; keeps
    the last count (for an "interrupted after N of M" line)."""

    def __init__(self, prefix: str, unit: str) -> None:
        self.prefix, self.unit = prefix, unit
        self.started = self.last = time.monotonic()
        self.done = self.total = 0

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        now = time.monotonic()
        if now - self.last >= 2.0 and done < total:
            self.last = now
            rate = done / max(now - self.started, 1e-9)
            print(f"{self.prefix} {done}/{total} {self.unit}, {rate:.0f} {self.unit}/s", file=sys.stderr, flush=True)
