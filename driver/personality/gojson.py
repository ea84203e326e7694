"""Decoding opaque parameters the way a Go driver's strict runtime.Decoder does, with its messages.

Why: NVIDIA's and the SR-IOV driver's opaque configs are Go structs decoded by apimachinery's JSON
serializer with `Strict: true` (TypeMeta first, then sigs.k8s.io/json: case-sensitive field names,
every unknown field reported). A manifest that the real plugin refuses must be refused here with the
same words, or people learn the wrong lesson from the fake. Only the shapes those configs use are
modelled: strings (named string types included), ints, bools, resource.Quantity, string-keyed maps
and nested structs; JSON null leaves a field unset, as Go does for pointers.

Messages (k8s.io/apimachinery runtime/serializer/json, encoding/json, resource.Quantity):
  Object 'Kind' is missing in '<json>'
  Object 'apiVersion' is missing in '<json>'
  no kind "<Kind>" is registered for version "<group/version>" in scheme "<scheme>"
  json: cannot unmarshal <json type> into Go struct field <Struct>.<path> of type <Go type>
  quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'
  strict decoding error: unknown field "<path>", unknown field "<path>"
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from driver.errors import InputError
from driver.model.quantity import format_quantity, parse_quantity

QUANTITY_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


class DecodeError(Exception):
    """The decoder's error text, exactly as the Go driver would report it."""


@dataclass(frozen=True)
class Scalar:
    """A Go scalar field: `kind` one of string, int, bool, quantity; `go` its Go type name."""

    kind: str
    go: str


@dataclass(frozen=True)
class MapOf:
    """A Go map[string]<value> (the only map shape these configs use)."""

    value: Scalar
    go: str


@dataclass(frozen=True)
class Struct:
    """A Go struct: JSON field name -> field type; `go` is the struct's type name in messages."""

    go: str
    fields: Mapping[str, Any] = field(default_factory=dict)


STRING = Scalar("string", "string")
INT = Scalar("int", "int")
BOOL = Scalar("bool", "bool")
QUANTITY = Scalar("quantity", "resource.Quantity")


def compact(value: Any) -> str:
    """JSON as the API server hands a RawExtension to the driver (compact, keys in given order)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


class _Decoder:
    def __init__(self) -> None:
        self.unknown: list[str] = []
        self.type_error: str | None = None

    def struct(self, spec: Struct, data: Mapping[str, Any], path: str, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in data.items():
            if key in skip:
                continue
            here = f"{path}.{key}" if path else key
            ftype = spec.fields.get(key)
            if ftype is None:
                self.unknown.append(here)
                continue
            decoded = self.value(ftype, value, here, spec)
            if decoded is not None:
                out[key] = decoded
        return out

    def _mismatch(self, value: Any, owner: Struct, path: str, go: str) -> None:
        if self.type_error is None:
            # encoding/json names the number it could not fit into an integer field ("number 1.5").
            number = f" {value}" if isinstance(value, float) and go == "int" else ""
            self.type_error = (f"json: cannot unmarshal {_json_type(value)}{number} into Go struct field "
                               f"{owner.go}.{path} of type {go}")

    def value(self, ftype: Any, value: Any, path: str, owner: Struct) -> Any:
        if value is None:
            return None  # null: the field stays unset
        if isinstance(ftype, Struct):
            if not isinstance(value, Mapping):
                self._mismatch(value, owner, path, ftype.go)
                return None
            return self.struct(ftype, value, path)
        if isinstance(ftype, MapOf):
            if not isinstance(value, Mapping):
                self._mismatch(value, owner, path, ftype.go)
                return None
            return {str(k): v for k, v in ((k, self.value(ftype.value, v, f"{path}.{k}", owner)) for k, v in value.items())
                    if v is not None}
        return self.scalar(ftype, value, path, owner)

    def scalar(self, ftype: Scalar, value: Any, path: str, owner: Struct) -> Any:
        if ftype.kind == "quantity":
            text = value if isinstance(value, str) else compact(value)
            try:
                return format_quantity(parse_quantity(text.strip()), like=text.strip())
            except InputError:
                if self.type_error is None:
                    self.type_error = QUANTITY_ERROR
                return None
        ok = {"string": isinstance(value, str),
              "bool": isinstance(value, bool),
              "int": isinstance(value, int) and not isinstance(value, bool)}[ftype.kind]
        if not ok:
            self._mismatch(value, owner, path, ftype.go)
            return None
        return value


@dataclass(frozen=True)
class Scheme:
    """The kinds one API group/version registers: kind -> its struct (None: registered but not
    modelled field by field, decoded leniently), and the scheme's name for messages."""

    group_version: str
    kinds: Mapping[str, Struct | None]
    name: str

    def decode(self, parameters: Any) -> tuple[str, dict[str, Any]]:
        """(kind, decoded fields without apiVersion/kind); DecodeError with the Go message."""
        if not isinstance(parameters, Mapping):
            # The serializer reads TypeMeta out of whatever JSON it is given; a non-object has none.
            raise DecodeError(f"Object 'Kind' is missing in '{compact(parameters)}'")
        kind, version = parameters.get("kind"), parameters.get("apiVersion")
        if not isinstance(kind, str) or not kind:
            raise DecodeError(f"Object 'Kind' is missing in '{compact(parameters)}'")
        if not isinstance(version, str) or not version:
            raise DecodeError(f"Object 'apiVersion' is missing in '{compact(parameters)}'")
        if version != self.group_version or kind not in self.kinds:
            raise DecodeError(f"no kind \"{kind}\" is registered for version \"{version}\" in scheme \"{self.name}\"")
        spec = self.kinds[kind]
        if spec is None:
            return kind, {k: v for k, v in parameters.items() if k not in ("apiVersion", "kind")}
        decoder = _Decoder()
        out = decoder.struct(spec, parameters, "", skip=frozenset({"apiVersion", "kind"}))
        if decoder.type_error is not None:
            raise DecodeError(decoder.type_error)
        if decoder.unknown:
            raise DecodeError("strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in decoder.unknown))
        return kind, out
