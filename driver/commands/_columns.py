"""`get`'s column and order options, as kubectl implements them (k8s.io/kubectl pkg/cmd/get).

- `-o custom-columns=HEADER:PATH,...` (customcolumn.go NewCustomColumnsPrinterFromSpec): each PATH a
  relaxed JSONPath (`.metadata.name`, `metadata.name` or `{.metadata.name}`, RelaxedJSONPathExpression);
  a cell lists every value the path finds, joined by `,`, `<none>` when it finds none; values print
  as Go's fmt.Sprint prints them (a map as `map[k:v]`, a list as `[a b]`).
- `--sort-by=PATH` (sorter.go): objects ordered by the first value PATH finds in each; an object
  without one sorts first; strings that are both quantities compare as quantities (`10Gi` > `9Gi`),
  other strings lexically, numbers numerically; booleans, maps and lists cannot be sorted. No object
  having the field is an error in kubectl's words.
- `--show-labels` (cli-runtime's printers: labels.FormatLabels): a LABELS column last, `k=v,...`
  sorted by key, `<none>` when there are none.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from driver.commands._jsonpath import Action, JsonPathError, evaluate, parse
from driver.errors import InputError

CUSTOM_COLUMNS = "custom-columns="
_RELAXED = re.compile(r"^\{\.?([^{}]+)\}$|^\.?([^{}]+)$")


def relaxed_path(text: str) -> str:
    """kubectl's RelaxedJSONPathExpression: `a.b`, `.a.b`, `{a.b}` and `{.a.b}` all mean `{.a.b}`."""
    if not text:
        return text
    match = _RELAXED.match(text)
    if match is None:
        raise InputError("unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' "
                         "or '{.name1.name2}'")
    return "{." + (match.group(1) or match.group(2)) + "}"


def find(path: str, obj: Any) -> list[Any]:
    """Every value the actions of a (relaxed) JSONPath select in `obj`, missing keys allowed."""
    values: list[Any] = []
    for node in parse(path):
        if isinstance(node, Action):
            values.extend(evaluate(node.ops, [obj]))
    return values


def go_text(value: Any) -> str:
    """A decoded JSON value as Go's fmt.Sprint prints it."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, float):
        return repr(value) if not value.is_integer() or abs(value) >= 1e21 else str(int(value))
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{k}:{go_text(v)}" for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))) + "]"
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(go_text(v) for v in value) + "]"
    return str(value)


@dataclass(frozen=True)
class Column:
    header: str
    path: str  # a JSONPath template, `{.a.b}`


def parse_custom_columns(spec: str) -> list[Column]:
    """`HEADER:PATH,...` -> columns; InputError in kubectl's words for a malformed spec."""
    if not spec:
        raise InputError("custom-columns format specified but no custom columns given")
    columns = []
    for part in spec.split(","):
        header, colon, path = part.partition(":")
        if not colon:
            raise InputError(f"unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>")
        template = relaxed_path(path)
        try:
            parse(template)
        except JsonPathError as exc:
            raise InputError(f"custom-columns {part!r}: {exc}") from None
        columns.append(Column(header, template))
    return columns


def custom_row(columns: Sequence[Column], obj: Mapping[str, Any]) -> list[str]:
    cells = []
    for column in columns:
        try:
            values = find(column.path, obj)
        except JsonPathError as exc:
            raise InputError(f"custom-columns {column.header}:{column.path}: {exc}") from None
        cells.append(",".join(go_text(v) for v in values) if values else "<none>")
    return cells


def format_labels(obj: Mapping[str, Any]) -> str:
    labels = ((obj.get("metadata") or {}).get("labels")) or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"


def _quantity(text: str) -> Fraction | None:
    from driver.model.quantity import parse_quantity

    try:
        return parse_quantity(text)
    except InputError:
        return None


def _go_kind(value: Any) -> str:
    """The Go kind a decoded JSON value has, as sorter.go names an unsortable one."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Mapping):
        return "map"
    if isinstance(value, (list, tuple)):
        return "slice"
    return type(value).__name__


def _less(a: Any, b: Any, path: str) -> bool:
    """sorter.go's isLess for values decoded from JSON (its reflect.Interface branch)."""
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (str, int, float)):
        raise InputError(f"--sort-by {path}: field is an unsortable type: {_go_kind(a)}")
    if isinstance(a, str) and isinstance(b, str):
        qa, qb = _quantity(a), _quantity(b)
        if qa is not None and qb is not None:
            return qa < qb
        return a < b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and type(a) is type(b):
        return a < b
    raise InputError(f"--sort-by {path}: cannot compare {go_text(a)!r} with {go_text(b)!r} "
                     f"({type(a).__name__} and {type(b).__name__})")


def sort_objects(objects: Sequence[Mapping[str, Any]], field: str) -> list[Mapping[str, Any]]:
    """Objects ordered by the first value `field` (a relaxed JSONPath) finds in each (module docstring)."""
    path = relaxed_path(field)
    try:
        keys = [find(path, o) for o in objects]
    except JsonPathError as exc:
        raise InputError(f"--sort-by {field!r}: {exc}") from None
    if objects and not any(keys):
        raise InputError(f'couldn\'t find any field with path "{path}" in the list of objects')

    def compare(i: int, j: int) -> int:
        if not keys[i]:
            return 0 if not keys[j] else -1
        if not keys[j]:
            return 1
        if _less(keys[i][0], keys[j][0], path):
            return -1
        return 1 if _less(keys[j][0], keys[i][0], path) else 0

    order = sorted(range(len(objects)), key=functools.cmp_to_key(compare))
    return [objects[i] for i in order]
