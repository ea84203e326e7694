"""`fake-dra store status|export DIR|import DIR`: look at the local object store, or move objects in and out.

    fake-dra store status            where the store is, its revision, objects per kind, its size
    fake-dra store export DIR        every object as a file, DIR/<resource>/<namespace>/<name>.yaml
                                     (`_cluster` for cluster-scoped objects), for people who grep
    fake-dra store import DIR        the objects of such a directory (an export, or a store of an
                                     earlier release) into the store, in one transaction

The store is one SQLite database (STORE/store.db, docs/store.md). A store directory still in the
layout of earlier releases is imported automatically the first time a command opens it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from driver.commands import _store
from driver.errors import InputError

ACTIONS = ("status", "export", "import")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "store", help="the local object store: status, export to files, import files",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=ACTIONS, help="status, export or import")
    parser.add_argument("directory", nargs="?", metavar="DIR", help="export: where to write; import: what to read")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text", help="status: text or json")
    _store.add_store_flag(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from driver.store import legacy

    if args.action == "status":
        if args.directory:
            raise InputError("store status takes no DIR")
        return _status(args)
    if not args.directory:
        raise InputError(f"store {args.action}: DIR is required (e.g. `fake-dra store {args.action} ./objects`)")
    if args.action == "export":
        store = _store.open_store(args, write=False)
        written = legacy.export_layout(store, Path(args.directory))
        print(f"exported {written} objects to {args.directory}")
        return 0
    source = Path(args.directory)
    if not source.is_dir():
        raise InputError(f"store import: {source} is not a directory")
    if not legacy.has_layout(source):
        raise InputError(f"store import: {source} holds no <resource>/<namespace>/<name>.yaml files of a kind the "
                         "store keeps")
    store = _store.open_store(args, write=True)
    report = legacy.import_layout(store, source)
    print(f"imported {report.imported} objects from {source}" +
          (f"; {len(report.refused)} refused (named above)" if report.refused else ""))
    return 1 if report.refused else 0


def _status(args: argparse.Namespace) -> int:
    store = _store.open_store(args, write=False)
    counts = {r: store.count(r) for r in store.resources()}
    size = sum(os.path.getsize(p) for p in (store.db_path, store.db_path.with_name(store.db_path.name + "-wal"))
               if p.is_file())
    status = {"store": str(store.root), "database": str(store.db_path), "revision": int(store.current_resource_version()),
              "compactedRevision": store.compacted_revision(), "bytes": size, "objects": counts}
    if args.output == "json":
        json.dump(status, sys.stdout, indent=2)
        print()
        return 0
    print(f"store      {status['store']}")
    print(f"database   {status['database']} ({size / 1048576:.1f} MiB)")
    print(f"revision   {status['revision']} (change log from {status['compactedRevision'] + 1})")
    for resource, n in counts.items():
        print(f"{resource:<22} {n}")
    return 0
