"""Flags and helpers shared by the commands that read and write the local object store (get, apply,
delete, probe --prepare): where the store is, which namespace a name lives in and how `-f` is read,
kubectl-style."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from driver.commands import common
from driver.errors import InputError
from driver.fsutil import decode_text
from driver.slices.names import is_dns_label
from driver.store.objectstore import ObjectStore

DEFAULT_NAMESPACE = "default"


def add_store_flag(parser: argparse.ArgumentParser) -> None:
    common.add_flag(parser, "--store", None,
                    "local object store directory (default $XDG_STATE_HOME/fake-dra/store, the one `run` uses)")


def add_namespace_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--namespace", default=None,
                        help=f"namespace of namespaced objects (default {DEFAULT_NAMESPACE})")


def namespace(args: argparse.Namespace) -> str:
    """-n/--namespace, checked here so the message names the flag (and FAKE_DRA_NAMESPACE)."""
    value = getattr(args, "namespace", None) or DEFAULT_NAMESPACE
    if not is_dns_label(value):
        raise InputError(f"--namespace: {value!r} is not a valid namespace (a DNS label: at most 63 lower-case "
                         "letters, digits and '-')")
    return value


def open_store(args: argparse.Namespace, *, write: bool) -> ObjectStore:
    """The store named by --store (or the default `run` uses), checked like every output path when
    the command writes to it (common.store_dir)."""
    return ObjectStore(common.store_dir(args, write=write))


def read_manifest(path: str) -> str:
    """The text of one `-f` argument (`-` is stdin); InputError naming it when it cannot be read or
    is not UTF-8 text."""
    try:
        if path == "-":
            # The bytes, decoded here: under a C/POSIX locale Python decodes stdin with
            # surrogateescape, and a bad byte reached the YAML parser as "#xdcff".
            raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
            return raw if isinstance(raw, str) else decode_text(raw, "-f - (standard input)")
        return decode_text(Path(path).read_bytes(), f"-f {path}")
    except UnicodeDecodeError:  # a text stream that decodes itself
        raise InputError(f"-f {path}: not UTF-8 text") from None
    except IsADirectoryError:
        raise InputError(f"-f {path}: is a directory; give a YAML file") from None
    except OSError as exc:
        raise InputError(f"-f {path}: cannot read: {exc.strerror or exc}") from None
