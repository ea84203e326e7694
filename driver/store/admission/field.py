"""Field errors as kube-apiserver words them (k8s.io/apimachinery pkg/util/validation/field).

Every rule of the admission package reports a `FieldError`; `str(error)` is exactly what
`field.Error.Error()` prints: `<path>: <Type>: <value>: <detail>`, e.g.
`spec.containers[0].resources.claims[0].name: Not found: "x": must be one of the names in
pod.spec.resourceClaims: gpu`. The value is rendered as `ErrorBody` does: strings Go-quoted (`%q`),
numbers and booleans bare, anything else as compact JSON; Required, Forbidden, Too long and Too
short show no value. Paths are plain strings built with `child`, `index` and `key` (field.Path's
`Child`, `Index`, `Key`: `a.b`, `a[0]`, `a[k]`).

`invalid_message` joins a list the way kubectl prints an Invalid status: `The Pod "x" is invalid:
<error>` for one error, `[<e1>, <e2>]` for several (duplicates dropped, as `ToAggregate` does).
"""

from __future__ import annotations

import copy
import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OMIT = object()  # field.OmitValueType: the error shows no value

REQUIRED = "Required value"
INVALID = "Invalid value"
NOT_SUPPORTED = "Unsupported value"
NOT_FOUND = "Not found"
DUPLICATE = "Duplicate value"
FORBIDDEN = "Forbidden"
TOO_LONG = "Too long"
TOO_MANY = "Too many"
_NO_VALUE = {REQUIRED, FORBIDDEN, TOO_LONG}
SHOWN = 10  # errors one message lists before "and N more"


def copy_json(value: Any) -> Any:
    """A deep copy of decoded YAML/JSON (dicts, lists, scalars): several times faster than
    copy.deepcopy, which matters for a file of hundreds of ResourceSlices."""
    cls = value.__class__
    if cls is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if cls is list:
        return [copy_json(v) for v in value]
    if cls in (str, int, float, bool) or value is None:
        return value
    if isinstance(value, Mapping):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [copy_json(v) for v in value]
    return copy.deepcopy(value)


def child(path: str, *names: str) -> str:
    for name in names:
        path = f"{path}.{name}" if path else name
    return path


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    return f"{path}[{k}]"


def go_quote(text: str) -> str:
    """Go's strconv.Quote: the form `%q` prints a string in."""
    out = ['"']
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch in "\a\b\f\n\r\t\v":
            out.append("\\" + "abfnrtv"["\a\b\f\n\r\t\v".index(ch)])
        elif ch == " " or (ch.isprintable() and unicodedata.category(ch)[0] != "Z"):
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def render(value: Any) -> str:
    """A bad value as ErrorBody renders it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    text = json.dumps(value, separators=(",", ":"), sort_keys=isinstance(value, dict), ensure_ascii=False, default=str)
    # encoding/json escapes these for HTML safety.
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@dataclass(frozen=True)
class FieldError:
    type: str  # "Required value", "Invalid value", ... (field.ErrorType.String())
    field: str  # spec.containers[0].name
    value: Any = OMIT
    detail: str = ""

    def body(self) -> str:
        text = self.type
        if self.type not in _NO_VALUE and self.value is not OMIT:
            text = f"{text}: {render(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(REQUIRED, path, detail=detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(INVALID, path, value, detail)


def not_supported(path: str, value: Any, valid: list[str] | tuple[str, ...]) -> FieldError:
    detail = "supported values: " + ", ".join(go_quote(str(v)) for v in valid) if valid else ""
    return FieldError(NOT_SUPPORTED, path, value, detail)


def not_found(path: str, value: Any, detail: str = "") -> FieldError:
    return FieldError(NOT_FOUND, path, value, detail)


def duplicate(path: str, value: Any, detail: str = "") -> FieldError:
    return FieldError(DUPLICATE, path, value, detail)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(FORBIDDEN, path, detail=detail)


def too_long(path: str, max_length: int) -> FieldError:
    unit = "byte" if max_length == 1 else "bytes"
    return FieldError(TOO_LONG, path, detail=f"may not be more than {max_length} {unit}")


def too_many(path: str, actual: int, maximum: int) -> FieldError:
    unit = "item" if maximum == 1 else "items"
    return FieldError(TOO_MANY, path, actual, f"must have at most {maximum} {unit}")


def invalid_each(path: str, value: Any, messages: list[str]) -> list[FieldError]:
    """One Invalid error per message of a name check (the `for _, msg := range ...` idiom)."""
    return [invalid(path, value, m) for m in messages]


def invalid_message(kind: str, name: str, errors: list[FieldError]) -> str:
    """`The Pod "x" is invalid: ...` as kubectl prints a 422 (kubectl's StandardErrorMessage)."""
    seen: list[str] = []
    for error in errors:
        text = str(error)
        if text not in seen:
            seen.append(text)
    shown = seen[:SHOWN]
    body = shown[0] if len(seen) == 1 else "[" + ", ".join(shown) + (
        f", and {len(seen) - SHOWN} more" if len(seen) > SHOWN else "") + "]"
    return f"The {kind} {go_quote(name)} is invalid: {body}"
