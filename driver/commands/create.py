"""`fake-dra create -f FILE|DIR|-`: create objects in the local object store, as kubectl create does.

    fake-dra create -f pod.yaml                 create every object in the file
    fake-dra create -f pods/ -o name            a directory (-R: below it too); print pod/<name>

Beside `apply`, for what only `create` does: an object with `metadata.generateName` and no name is
named as kube-apiserver names it (the prefix, cut to 58 characters, plus five random characters of
`bcdfghjklmnpqrstvwxz2456789`; driver.store.names), so manifests written for `kubectl create`, such
as kube-scheduler's own benchmark templates, load unchanged. An object whose name is taken is
refused with kube-apiserver's AlreadyExists (`apply` updates it instead); so is one with neither a
name nor generateName. Every document is checked first, as by `apply` (the 1.37 schema, strictly,
and the store's admission), and each is limited as the request kubectl sends for it would be
(kube-apiserver's 3 MiB request body); then all are written, or none: unlike kubectl, which
creates the others and reports the failures, one refusal leaves the store unchanged.
Exit 0; 1 when a name is taken; 2 for invalid input.
"""

from __future__ import annotations

import argparse
import copy
import sys
from typing import Any

from driver.commands import _objects, _store
from driver.errors import ConflictError, InputError
from driver.store.apply import commit, plan
from driver.store.names import generate_name

GENERATE_ATTEMPTS = 8  # kube-apiserver retries a generated name that collides (RetryGenerateName)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "create", help="create objects in the local object store (kubectl create; generateName)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.intermixed = True  # flags anywhere, as kubectl parses them (driver.cli._Parser)
    _store.add_filename_flags(parser, "create (one or more objects each)")
    parser.add_argument("-o", "--output", choices=["text", "yaml", "json", "name"], default="text",
                        help="text (default): one line per object; yaml/json: the stored objects")
    _store.add_namespace_flag(parser)
    _store.add_store_flag(parser)
    parser.set_defaults(func=run)


def _named(documents: list[tuple[str, int, Any]]) -> list[tuple[str, int, Any]]:
    """The documents, each with a name: generateName's when it has none (copies; the input stays)."""
    from driver import schema

    out = []
    for source, index, doc in documents:
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        if isinstance(meta, dict) and not meta.get("name"):
            prefix = meta.get("generateName")
            if not prefix:
                where = schema.document_label(source, index, doc)
                raise InputError(f"{where}: metadata.name: Required value: name or generateName is required")
            if not isinstance(prefix, str):
                raise InputError(f"{schema.document_label(source, index, doc)}: metadata.generateName: must be a string")
            doc = copy.copy(doc)
            doc["metadata"] = {**meta, "name": generate_name(prefix)}
        out.append((source, index, doc))
    return out


def _plan_new(store, documents: list[tuple[str, int, Any]], args: argparse.Namespace):
    """Plan every document as a new object: a taken generated name is drawn again, a taken given
    name is kube-apiserver's AlreadyExists."""
    from driver import schema
    from driver.publish.backend import LocalGateConfig

    gates = LocalGateConfig.load(store.root)
    for _ in range(GENERATE_ATTEMPTS):
        named = _named(documents)
        planned = plan(store, named, namespace=_store.namespace(args), explicit_namespace=args.namespace is not None,
                       features=gates.apiserver_features(), gate_hint=gates.gate_hint(store.root))
        taken = [(p, doc_of) for p, doc_of in zip(planned, documents) if p.current is not None]
        if not taken:
            return planned
        for p, (source, index, doc) in taken:
            if (doc.get("metadata") or {}).get("name"):  # a name given, not drawn: kube-apiserver's 409
                raise ConflictError(f'{schema.document_label(source, index, doc)}: {p.kind.resource} "{p.name}" already '
                                    "exists (AlreadyExists: `fake-dra apply` updates an object, `fake-dra delete` "
                                    "removes it); nothing was created")
    raise ConflictError(f"generateName: no free name after {GENERATE_ATTEMPTS} tries; nothing was created")


def run(args: argparse.Namespace) -> int:
    documents = _store.read_documents(args, "create")
    store = _store.open_store(args, write=True)
    _plan_new(store, documents, args)  # a dry pass: bad input is refused before the store is touched
    with store.locked():
        created = commit(store, _plan_new(store, documents, args))
    if args.output in ("yaml", "json"):
        objs = [a.obj for a in created]
        sys.stdout.write(_objects.dump(objs[0] if len(objs) == 1 else _objects.as_list(objs), args.output))
        return 0
    for a in created:
        print(a.planned.ref if args.output == "name" else f"{a.planned.ref} created")
    return 0
