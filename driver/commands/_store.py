"""Flags and helpers shared by the commands that read and write the local object store (get, apply,
delete, probe --prepare): where the store is and which namespace a name lives in, kubectl-style."""

from __future__ import annotations

import argparse
from pathlib import Path

from driver.commands import common
from driver.errors import InputError
from driver.store.objectstore import ObjectStore

DEFAULT_NAMESPACE = "default"


def add_store_flag(parser: argparse.ArgumentParser) -> None:
    common.add_flag(parser, "--store", None,
                    "local object store directory (default $XDG_STATE_HOME/fake-dra/store, the one `run` uses)")


def add_namespace_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--namespace", default=common.env_default("--namespace", None),
                        help=f"namespace of namespaced objects (default {DEFAULT_NAMESPACE}) "
                             f"(env {common.env_var('--namespace')})")


def namespace(args: argparse.Namespace) -> str:
    return getattr(args, "namespace", None) or DEFAULT_NAMESPACE


def open_store(args: argparse.Namespace) -> ObjectStore:
    """The store named by --store (or the default `run` uses); refused when the path is not a directory."""
    from driver.commands.publish import default_store_dir

    root = Path(args.store) if getattr(args, "store", None) else default_store_dir()
    if root.exists() and not root.is_dir():
        raise InputError(f"--store: {root} is not a directory")
    return ObjectStore(root)
