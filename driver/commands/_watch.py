"""`fake-dra get -w`: the list, then every change to what it lists, as `kubectl get --watch` prints them.

kubectl (staging/src/k8s.io/kubectl/pkg/cmd/get/get.go, watch) lists, prints, then watches from the
list's resourceVersion and prints each event's object: a table row under the header it printed
first (`--watch-only` prints no list, the header comes with the first event), a name, or a whole
object per event for yaml and json (yaml documents separated by `---`). A deleted object is printed
once more as it was last seen. The watch ends when the server closes it; here it goes on until
interrupted, or `--request-timeout` passes (kubectl's global flag, which bounds the watch request).

The store's watch (driver.store.watch) gives each object's latest state in revision order; a log
compacted past the list's revision ("too old resource version") lists again and goes on, as
kubectl's reflector would.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Mapping
from typing import Any

from driver.commands import _objects, _store
from driver.errors import InputError
from driver.store import ObjectStore
from driver.store.kinds import Kind
from driver.store.watch import BOOKMARK, DELETED, Expired

WATCH_OUTPUTS = ("table", "wide", "name", "yaml", "json")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def request_timeout(text: str) -> float:
    """kubectl's --request-timeout: a number of seconds or a duration (1s, 2m, 500ms); 0: none."""
    found = _DURATION.match(text.strip())
    if not found:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: a number of seconds or a duration such as 5s, 2m")
    return float(found.group(1)) * _UNIT_S[found.group(2)]


def check(args: argparse.Namespace, kinds: list[Kind]) -> None:
    """What kubectl refuses with --watch: several kinds, --sort-by, the template printers."""
    if len(kinds) != 1:
        raise InputError("--watch: watch is only supported on individual resources and resource collections, "
                         f"but {len(kinds)} resources were found")
    if args.output not in WATCH_OUTPUTS:
        raise InputError(f"--watch: -o {args.output.split('=', 1)[0]} is not supported with --watch "
                         f"(use one of {', '.join(WATCH_OUTPUTS)})")
    if args.sort_by is not None:
        raise InputError("--watch: --sort-by cannot be used with --watch (kubectl sorts only a list)")


def run(store: ObjectStore, kind: Kind, args: argparse.Namespace) -> int:
    printer = _Printer(kind, args)
    deadline = time.monotonic() + args.request_timeout if args.request_timeout else None
    with store.snapshot() as revision:
        listed = _store.fetch(store, kind, args)
    if not args.watch_only:
        printer.print(listed)
    wanted = set(args.names)
    ns = _store.namespace(args) if kind.namespaced and not args.all_namespaces else None
    fields = _store.field_selector(args, kind)
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return 0
        try:
            for change in store.watch(revision, [kind.plural], timeout_s=left):
                if deadline is not None and time.monotonic() >= deadline:
                    return 0
                revision = change.revision
                if change.type == BOOKMARK or change.object is None:
                    continue
                obj = change.object
                if (ns is not None and change.namespace != ns) or (wanted and change.name not in wanted):
                    continue
                if not args.label_selector.matches(obj) or (change.type != DELETED and not fields.matches(obj)):
                    continue
                printer.print([obj])
        except Expired:
            with store.snapshot() as revision:
                printer.print(_store.fetch(store, kind, args))


class _Printer:
    def __init__(self, kind: Kind, args: argparse.Namespace) -> None:
        self.kind, self.args = kind, args
        self.header_printed = bool(args.no_headers)
        self.documents = 0

    def print(self, objects: list[Mapping[str, Any]]) -> None:
        if not objects:
            return
        args, out = self.args, sys.stdout
        if args.output == "name":
            out.write("".join(_objects.object_name(self.kind, o) + "\n" for o in objects))
        elif args.output in ("yaml", "json"):
            for obj in objects:
                if args.output == "yaml" and self.documents:
                    out.write("---\n")
                out.write(_objects.dump(dict(obj), args.output))
                self.documents += 1
        else:
            table = _objects.render_table(self.kind, objects, wide=args.output == "wide",
                                          all_namespaces=args.all_namespaces, show_labels=args.show_labels,
                                          no_headers=self.header_printed)
            self.header_printed = True
            out.write(table + "\n")
        out.flush()
