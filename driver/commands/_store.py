"""Flags and helpers shared by the commands that read and write the local object store (get, apply,
delete, probe --prepare): where the store is, which namespace a name lives in and how `-f` is read,
kubectl-style."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from driver.commands import common
from driver.errors import InputError, NotFoundError
from driver.fsutil import decode_text
from driver.slices.names import is_dns_label
from driver.store.fields import FieldSelector, FieldSelectorRefused, parse_field_selector
from driver.store.kinds import Kind
from driver.store.labels import Selector, parse_selector
from driver.store.objectstore import ObjectStore

DEFAULT_NAMESPACE = "default"
MANIFEST_EXTENSIONS = (".json", ".yaml", ".yml")  # what kubectl reads from a directory


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


# Field selector terms the store's indexes answer (driver.store.indexes), as kube-apiserver's watch
# cache indexes pods and slices by spec.nodeName: the term is pushed down, the rest still matched.
_INDEXED_FIELDS = {("pods", "spec.nodeName"): "node", ("pods", "status.phase"): "phase",
                   ("resourceslices", "spec.nodeName"): "node", ("resourceslices", "spec.driver"): "driver"}
_METADATA_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


def fetch(store: ObjectStore, kind: Kind, args: argparse.Namespace,
          not_found: Callable[[str | None, str], str] | None = None, *,
          metadata_only: bool = False) -> list[dict[str, Any]]:
    """The objects `get` and `describe` show: args.names in the namespace, or every object of the
    kind (`-A`: in every namespace) that args.label_selector matches. A missing name is a
    NotFoundError in kubectl's words, or `not_found(namespace, name)`'s. `metadata_only`: the
    caller reads only apiVersion, kind and metadata (`get -o name`), so when the selectors need no
    more, objects come back with the rest unparsed (a 5,000-node fleet's slices are 1 GB)."""
    ns = namespace(args) if kind.namespaced else None
    fields = field_selector(args, kind)
    if not args.names:
        every = bool(args.all_namespaces and kind.namespaced)
        index: dict[str, str | tuple[str, ...]] = {
            key: value for (plural, field), key in _INDEXED_FIELDS.items()
            if plural == kind.plural and (value := fields.equals(field))}  # "" (unset) is not indexed
        index.update(args.label_selector.index_terms())  # as the apiserver's watch cache, read by label
        if metadata_only and all(t.field in _METADATA_FIELDS for t in fields.terms):
            found = store.heads(kind.plural, ns, all_namespaces=every, index=index or None)
        else:
            found = store.list(kind.plural, ns, all_namespaces=every, index=index or None)
        return [obj for obj in found if args.label_selector.matches(obj) and fields.matches(obj)]
    if args.all_namespaces and kind.namespaced:
        raise InputError("a resource cannot be retrieved by name across all namespaces (drop -A or the NAME)")
    out = []
    for name in args.names:
        try:
            out.append(store.get(kind.plural, ns, name))
        except NotFoundError:
            where = f' in namespace "{ns}"' if ns else ""
            message = not_found(ns, name) if not_found else f'{kind.resource} "{name}" not found{where}'
            raise NotFoundError(message) from None
    return out


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
    except IsADirectoryError:  # expand_filenames turns directories into their files
        raise InputError(f"-f {path}: is a directory") from None
    except OSError as exc:
        raise InputError(f"-f {path}: cannot read: {exc.strerror or exc}") from None


def read_documents(args: argparse.Namespace, verb: str) -> list[tuple[str, int, Any]]:
    """The (source, document number, object) of every `-f` file (directories expanded, `-R`),
    refused as kubectl would before anything is written: no file, no objects, a Fleet (pointed at
    `fake-dra fleet`), an object over the request size limit. `verb`: apply, create or delete."""
    from driver.store.apply import load_documents

    if not args.filename:
        raise InputError("-f FILE is required (a YAML or JSON file, a directory of them, or '-' for stdin)")
    documents: list[tuple[str, int, Any]] = []
    for path in expand_filenames(args.filename, args.recursive):
        source = "stdin" if path == "-" else path
        documents.extend((source, index, doc) for index, doc in load_documents(read_manifest(path), source))
    if not documents:
        raise InputError(f"-f {', '.join(args.filename)}: no objects found")
    refuse_fleets(documents, verb)
    check_request_sizes(documents)
    return documents


MAX_REQUEST_BYTES = 3 * 1024 * 1024  # kube-apiserver's request body limit (MaxRequestBodyBytes)


def check_request_sizes(documents: list[tuple[str, int, Any]]) -> None:
    """Each object as kubectl sends it, on its own request: one above kube-apiserver's request body
    limit is refused with its words, naming the document (the file as a whole has no such limit)."""
    import json

    from driver import schema

    for source, index, doc in documents:
        size = len(json.dumps(doc, separators=(",", ":"), default=str).encode())
        if size > MAX_REQUEST_BYTES:
            raise InputError(f"{schema.document_label(source, index, doc)}: Request entity too large: limit is "
                             f"{MAX_REQUEST_BYTES} (this object is {size} bytes of JSON; kubectl sends each "
                             "object as a request of its own)")


FLEET_KIND, FLEET_VERBS = "Fleet", {"apply": "fleet apply", "create": "fleet apply", "delete": "fleet delete"}


def refuse_fleets(documents: list[tuple[str, int, Any]], verb: str) -> None:
    """A Fleet in `apply`/`create`/`delete -f` is fake-dra's own kind: say which command takes it
    (kubectl would answer "no matches for kind Fleet")."""
    from driver import schema

    for source, index, doc in documents:
        if isinstance(doc, dict) and doc.get("kind") == FLEET_KIND:
            where = schema.document_label(source, index, doc)
            path = "-" if source == "stdin" else source
            raise InputError(f"{where}: a Fleet is not an object the store keeps: `fake-dra {FLEET_VERBS[verb]} -f "
                             f"{path}` {'removes' if verb == 'delete' else 'makes'} its Nodes and their ResourceSlices "
                             "(docs/fleet.md)")


def add_filename_flags(parser: argparse.ArgumentParser, verb: str) -> None:
    """-f FILE|DIR|- (repeatable) and -R, as kubectl takes them."""
    parser.add_argument("-f", "--filename", action="append", default=[], metavar="FILE",
                        help=f"YAML or JSON file to {verb} ('-' for stdin; a directory: every .json, .yaml and "
                             ".yml file in it, sorted; repeatable)")
    parser.add_argument("-R", "--recursive", action="store_true",
                        help="-f DIR: also the files in its subdirectories")


def add_selector_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-l", "--selector", default=None, metavar="SELECTOR",
                        help="only objects whose labels match (kubectl's syntax: key=value, key!=value, "
                             "'key in (a,b)', 'key notin (a,b)', key, !key; comma-separated, all must hold)")


def selector(args: argparse.Namespace) -> Selector:
    return parse_selector(getattr(args, "selector", None), "--selector")


def add_field_selector_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--field-selector", default=None, metavar="SELECTOR",
                        help="only objects whose fields match (kube-apiserver's: field=value, field==value, "
                             "field!=value, comma-separated, all must hold; e.g. spec.nodeName=node-1, "
                             "status.phase!=Running); which fields each kind takes: docs/cli.md")


def group_version_resource(kind: Kind) -> str:
    """schema.GroupVersionResource's String(), as kubectl quotes it in selector errors."""
    return f"{kind.group}/{kind.version}, Resource={kind.plural}"


def field_selector(args: argparse.Namespace, kind: Kind) -> FieldSelector:
    """--field-selector parsed and checked against `kind` (driver.store.fields); the refusal is
    kube-apiserver's BadRequest as kubectl prints it."""
    text = getattr(args, "field_selector", None)
    try:
        parsed = parse_field_selector(text)
    except InputError as exc:
        raise InputError(f"--field-selector {text!r}: {exc}") from None
    try:
        return parsed.for_kind(kind)
    except FieldSelectorRefused as exc:
        raise InputError(f'--field-selector: Unable to find "{group_version_resource(kind)}" that match label selector '
                         f'"{getattr(args, "selector", None) or ""}", field selector "{text}": {exc}') from None


def check_selectors_without_names(args: argparse.Namespace) -> None:
    """kubectl refuses NAMEs together with -l or --field-selector."""
    if getattr(args, "names", None) and (getattr(args, "selector", None) or getattr(args, "field_selector", None)):
        flag = "--selector" if getattr(args, "selector", None) else "--field-selector"
        raise InputError(f"{flag}: give either NAMEs or a selector, not both (as kubectl)")


def expand_filenames(paths: list[str], recursive: bool) -> list[str]:
    """-f arguments as the files to read, in order: a directory gives its .json/.yaml/.yml files in
    lexical order of names (with -R its subdirectories' too, where their names fall), as kubectl's
    file visitor walks it (filepath.Walk); anything else stays as given."""
    out: list[str] = []
    for path in paths:
        if path == "-" or not os.path.isdir(path):
            out.append(path)
            continue
        found = _manifests_in(path, recursive)
        if not found:
            below = " or below it" if recursive else ""
            hint = "" if recursive else "; -R reads its subdirectories"
            raise InputError(f"-f {path}: no {', '.join(MANIFEST_EXTENSIONS)} files in it{below} (kubectl reads "
                             f"only those from a directory{hint})")
        out.extend(found)
    return out


def _manifests_in(directory: str, recursive: bool) -> list[str]:
    out = []
    for name in sorted(os.listdir(directory)):  # an OSError names the path at the CLI boundary
        full = os.path.join(directory, name)
        if os.path.isdir(full):
            if recursive:
                out.extend(_manifests_in(full, recursive))
        elif name.endswith(MANIFEST_EXTENSIONS):
            out.append(full)
    return out
