"""Flags shared by several sub-commands (DESIGN.md §5), each also read from a FAKE_DRA_* variable."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from driver import DEFAULT_DRIVER_NAME
from driver.errors import InputError
from driver.features import Features, parse_features


def env_var(flag: str) -> str:
    """The environment variable behind `--some-flag`: FAKE_DRA_SOME_FLAG."""
    return "FAKE_DRA_" + flag.lstrip("-").replace("-", "_").upper()


def env_default(flag: str, default: str | None) -> str | None:
    """Default of `--some-flag` from $FAKE_DRA_SOME_FLAG when set."""
    return os.environ.get(env_var(flag), default)


def add_flag(parser: argparse.ArgumentParser, flag: str, default: str | None, help: str, **kw) -> None:
    parser.add_argument(flag, default=env_default(flag, default), help=f"{help} (env {env_var(flag)})", **kw)


def add_sysfs_root(parser: argparse.ArgumentParser) -> None:
    add_flag(parser, "--sysfs-root", "/sys", "root of the sysfs tree to discover (default /sys)")


def add_driver_name(parser: argparse.ArgumentParser) -> None:
    add_flag(parser, "--driver-name", DEFAULT_DRIVER_NAME, f"DRA driver name (default {DEFAULT_DRIVER_NAME})")


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


def add_node_flags(parser: argparse.ArgumentParser) -> None:
    """Flags of the long-running commands (`run`, `publish`)."""
    add_sysfs_root(parser)
    add_node_name(parser)
    add_driver_name(parser)
    add_features(parser)
    add_flag(parser, "--kubeconfig", os.environ.get("KUBECONFIG"), "kubeconfig; absent: in-cluster or the local store")
    add_flag(parser, "--store", None, "local object store directory used when no API server is configured")
    add_flag(parser, "--kubelet-plugins-dir", "/var/lib/kubelet/plugins", "kubelet plugins directory")
    add_flag(parser, "--kubelet-registry-dir", "/var/lib/kubelet/plugins_registry", "kubelet plugin registry directory")
    add_flag(parser, "--cdi-root", "/var/run/cdi", "directory for CDI spec files")
    add_flag(parser, "--state-dir", None, "checkpoint directory (default <kubelet-plugins-dir>/<driver-name>)")
    add_flag(parser, "--driver-config", None, "driver config file (extra GPU models, single-mode choice, ...)")


def features_from(args: argparse.Namespace) -> Features:
    return parse_features(getattr(args, "features", None))


def require_node_name(args: argparse.Namespace) -> str:
    name = getattr(args, "node_name", None)
    if not name:
        raise InputError("--node-name is required (or set $NODE_NAME / $FAKE_DRA_NODE_NAME)")
    return name


def existing_dir(path: str, flag: str) -> Path:
    p = Path(path)
    if not p.is_dir():
        raise InputError(f"{flag}: {path} does not exist or is not a directory")
    return p


# Sections of the driver config file read by the areas that own them (hardware: driver.hardware,
# slices: driver.slices). Others are tolerated with a warning so a newer config still loads.
DRIVER_CONFIG_SECTIONS = ("hardware", "slices")


def load_driver_config(path: str | None) -> dict:
    """The driver config YAML file as a dict ({} when `path` is None/empty or the file is empty).

    ConfigError (exit 2) naming the path when the file is missing, unreadable, not YAML, not a mapping,
    or a known section is not a mapping.
    """
    import logging

    import yaml

    from driver.errors import ConfigError

    if not path:
        return {}
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"driver config {path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"driver config {path}: unreadable ({exc})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"driver config {path}: invalid YAML{at}: {problem}") from None
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


def positive_seconds(value: object, flag: str) -> float:
    """A duration flag: a positive number of seconds, else InputError naming the flag."""
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"{flag}: expected seconds, got {value!r}") from None
    if out <= 0:
        raise InputError(f"{flag}: must be positive, got {value!r}")
    return out


def in_cluster() -> bool:
    """Running in a pod with a service-account token (the API server is then the default backend)."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and Path(
        "/var/run/secrets/kubernetes.io/serviceaccount/token").is_file()
