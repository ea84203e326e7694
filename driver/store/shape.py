"""Reading one stored row back as an object, or an error for that object alone.

Rows the store wrote itself were admitted (schema-checked or written by fake-dra's own code), and
carry the CRC-32 of their JSON. A row whose CRC does not match was changed behind the store's
back (a hand edit with the sqlite3 shell, a damaged page): it is read as kube-apiserver decodes
what etcd holds, strictly, against the 1.37 schema of its kind, so a Node whose metadata is a list
is an error naming that Node, not a crash of whichever command reads it next (issue 29). Every
row, checked or not, must be a JSON object whose metadata agrees with the key it is stored under.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from driver.errors import InputError
from driver.features import Features
from driver.store.codec import deeper_than
from driver.yamlio import MAX_NESTING

# etcd's default --max-request-bytes (1.5 MiB), which every object kube-apiserver stores must fit.
MAX_OBJECT_BYTES = 1536 * 1024
# Only what every reader assumes of every object; each kind's schema says the rest.
_MAPS = ("labels", "annotations")


def label(resource: str, namespace: str | None, name: str) -> str:
    return f"{resource} {namespace}/{name}" if namespace else f"{resource} {name}"


def decode(resource: str, namespace: str | None, name: str, crc: Any, value: Any, db: Path) -> dict[str, Any]:
    """The object of a stored row; InputError naming it when the row cannot be one."""
    where = f"local store {db}: {label(resource, namespace, name)}"
    if not isinstance(value, str):
        raise InputError(f"{where}: its stored value is not text ({type(value).__name__})")
    checked = isinstance(crc, int) and zlib.crc32(value.encode()) == crc
    if not checked and len(value) > MAX_OBJECT_BYTES:
        raise InputError(f"{where}: {len(value):,} characters, larger than the {MAX_OBJECT_BYTES:,} bytes an object "
                         "may have; changed outside the store")
    try:
        obj = json.loads(value)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{where}: its stored JSON does not parse ({str(exc)[:120]})") from None
    check(resource, namespace, name, obj, where, strict=not checked)
    return obj


_META_KEY = '"metadata":'
_DECODER = json.JSONDecoder()


def head(resource: str, namespace: str | None, name: str, crc: Any, value: Any, db: Path) -> dict[str, Any]:
    """apiVersion, kind and metadata of a stored row, without parsing the rest: what deleting,
    listing names or following owners needs of a 30 KB slice. The store writes those keys first;
    any other row (changed outside the store, or in another order) is decoded whole."""
    if isinstance(value, str) and isinstance(crc, int):
        at = value.find(_META_KEY, 0, 400)
        if at > 0 and value[at - 1] in "{," and zlib.crc32(value.encode()) == crc:
            try:
                prefix = json.loads(value[:at - 1] + "}") if at > 1 else {}
                meta, _ = _DECODER.raw_decode(value, at + len(_META_KEY))
            except ValueError:
                pass
            else:
                if isinstance(prefix, dict) and isinstance(meta, dict) and meta.get("name") == name:
                    return {**prefix, "metadata": meta}
    obj = decode(resource, namespace, name, crc, value, db)
    return {**{k: obj[k] for k in ("apiVersion", "kind") if k in obj}, "metadata": obj["metadata"]}


def check(resource: str, namespace: str | None, name: str, obj: Any, where: str, *, strict: bool = True) -> None:
    """InputError (prefixed with `where`) unless `obj` is an object whose metadata agrees with its
    key; `strict`: also as kube-apiserver decodes it (nesting, the strict schema of its kind)."""
    if not isinstance(obj, dict):
        raise InputError(f"{where}: does not hold an object (a JSON {type(obj).__name__})")
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise InputError(f"{where}: metadata: expected an object, got {type(meta).__name__}")
    if meta.get("name") != name:
        raise InputError(f"{where}: metadata.name {meta.get('name')!r} is not the name it is stored under")
    if (meta.get("namespace") or None) != namespace:
        raise InputError(f"{where}: metadata.namespace {meta.get('namespace')!r} is not the namespace it is stored under")
    for key in _MAPS:
        value_map = meta.get(key)
        if value_map is not None and not (isinstance(value_map, Mapping)
                                          and all(isinstance(v, str) for v in value_map.values())):
            raise InputError(f"{where}: metadata.{key}: expected a map of strings")
    if strict:
        _strict(resource, obj, where)


def _strict(resource: str, obj: dict[str, Any], where: str) -> None:
    """A row changed outside the store: the checks kube-apiserver's decoding makes."""
    if deeper_than(obj, MAX_NESTING):
        raise InputError(f"{where}: nests more than {MAX_NESTING} levels deep")
    from driver import schema
    from driver.store.kinds import by_plural

    kind = by_plural(resource)
    if kind is None or kind.kind not in schema.served():
        return
    problems = schema.errors(obj, kind.kind, Features.all_on())
    if problems:
        shown = "; ".join(str(p) for p in problems[:3])
        raise InputError(f"{where}: changed outside the store and not a valid {kind.kind}: {shown}")
