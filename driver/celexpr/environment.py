"""The DRA CEL environment: compile device selectors once, evaluate them against devices.

Mirrors k8s.io/dynamic-resource-allocation/cel: the only variable is `device` with `driver`,
`attributes` and `capacity` (maps domain -> identifier -> value, unqualified names in the driver's
domain), plus `allowMultipleAllocations`. Looking up an unknown *domain* yields an empty map (so
`device.attributes["other.com"].x` is a "no such key" runtime error, not a domain error), looking up
a missing attribute is a runtime error, and the result must be a bool. Upstream treats a runtime
error as an error for the whole claim, not as "device does not match"; callers get
`CelRuntimeError` and decide.

Differences from cel-go, because the `cel` library parses but does not type-check: unknown
functions and unbound variables are rejected at compile time by inspecting the program's references;
type errors surface at evaluation time. The empty-map default for unknown domains is provided for
domains written as string literals in the expression (the way selectors are written in practice).
`cel.bind` is not available in the library.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from driver.celexpr.fastpath import Declined, FastNoSuchKey, compile_fast
from driver.celexpr.values import FUNCTIONS, SEMVER_KEY, CelValueError, quantity_value, semver_value
from driver.errors import InputError
from driver.model.quantity import parse_quantity

_STRING_LITERAL = re.compile(r"""'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)\"""")
_BINDER = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_]\w*)\s*,")

_CORE_FUNCTIONS = {
    "size", "contains", "startsWith", "endsWith", "matches", "has", "all", "exists", "exists_one",
    "map", "filter", "int", "uint", "double", "string", "bytes", "bool", "type", "dyn", "timestamp",
    "duration", "min", "max",
}
_STDLIB = ["core", "strings", "lists", "sets", "math"]


@lru_cache(maxsize=1)
def _library() -> tuple[Any, Any]:
    """The CEL evaluator (the library's compiled core) and its standard-library extensions.

    Imported on first use, and without the package's `__init__`: `import cel` also loads the
    library's interactive shell (`cel.cli`: prompt_toolkit, rich, typer), 0.1-1 s that no process
    here needs. The package module is registered unexecuted so that `cel.cel` (the evaluator) and
    `cel.stdlib` (pure functions) import as usual; it re-exports the evaluator's names as the real
    `__init__` does and loads `cel.cli` only if something asks for it.
    """
    import importlib
    import importlib.util
    import sys

    package = sys.modules.get("cel")
    if package is None:
        spec = importlib.util.find_spec("cel")
        if spec is None:
            raise ModuleNotFoundError("No module named 'cel'", name="cel")
        package = importlib.util.module_from_spec(spec)
        sys.modules["cel"] = package
        try:
            core = importlib.import_module("cel.cel")
            stdlib = importlib.import_module("cel.stdlib")
        except BaseException:
            for name in ("cel", "cel.cel", "cel.stdlib"):
                sys.modules.pop(name, None)
            raise
        for name in getattr(core, "__all__", None) or [n for n in dir(core) if not n.startswith("_")]:
            setattr(package, name, getattr(core, name))
        package.stdlib = stdlib  # type: ignore[attr-defined]

        def _lazy(name: str) -> Any:
            if name == "cli":
                return importlib.import_module("cel.cli")
            raise AttributeError(f"module 'cel' has no attribute {name!r}")

        package.__getattr__ = _lazy  # type: ignore[attr-defined]
        return core, stdlib
    return importlib.import_module("cel.cel"), importlib.import_module("cel.stdlib")


@lru_cache(maxsize=1)
def _known_functions() -> frozenset[str]:
    cel, stdlib = _library()
    ctx = cel.Context()
    stdlib.add_stdlib_to_context(ctx, _STDLIB)
    return frozenset(_CORE_FUNCTIONS | set(ctx.functions) | set(FUNCTIONS))


class CelRuntimeError(Exception):
    """Evaluating a selector failed for a device (missing attribute, type error, ...)."""


@dataclass(frozen=True)
class Selector:
    """A compiled selector expression."""

    expression: str
    program: Any
    domains: tuple[str, ...]  # string literals: candidate domains that default to an empty map
    fast: Any = None  # direct evaluator for simple conjunctions (fastpath.py), same semantics
    fast_raw: Any = None  # the same, reading the published device instead of the CEL variable

    def matches_published(self, driver: str, raw: Mapping[str, Any]) -> bool | None:
        """Evaluate against a device as published, without building its CEL variable; None when
        only the CEL variable can decide (call `matches`). Only for devices whose attributes are
        all plain scalars (`plain_attributes`), so no conversion error is skipped."""
        if self.fast_raw is None:
            return None
        try:
            return self.fast_raw(driver, raw)
        except FastNoSuchKey as exc:
            raise CelRuntimeError(f"no such key: {exc.args[0]}") from None
        except Declined:
            return None

    def matches(self, device: Mapping[str, Any]) -> bool:
        """Evaluate against a `device` variable built by `device_variable`."""
        if self.fast is not None:
            try:
                return self.fast(device)
            except FastNoSuchKey as exc:
                raise CelRuntimeError(f"no such key: {exc.args[0]}") from None
            except Declined:
                pass
        result = self.evaluate(device)
        if not isinstance(result, bool):
            raise CelRuntimeError(f"must evaluate to bool, got {type(result).__name__} {result!r}")
        return result

    def evaluate(self, device: Mapping[str, Any]) -> Any:
        """The expression's value for a `device` variable (any CEL type; CelRuntimeError on errors).
        KEP-6080 derived attributes use it: their expressions yield the attribute's value."""
        variable = device
        missing = [d for d in self.domains if d not in device["attributes"] or d not in device["capacity"]]
        if missing:
            variable = dict(device)
            variable["attributes"] = {**{d: {} for d in missing}, **device["attributes"]}
            variable["capacity"] = {**{d: {} for d in missing}, **device["capacity"]}
        ctx = _context()
        ctx.add_variable("device", variable)
        try:
            return self.program.execute(ctx)
        except KeyError as exc:
            raise CelRuntimeError(f"no such key: {exc.args[0] if exc.args else exc}") from None
        except (CelValueError, ValueError, TypeError, RuntimeError, ZeroDivisionError, OverflowError) as exc:
            raise CelRuntimeError(_clean(str(exc))) from None


def attribute_of_value(value: Any, lists: bool = True) -> dict[str, Any]:
    """A CEL value as a ResourceSlice attribute value (`{"int": 3}`, `{"strings": [...]}`, ...).

    KEP-6080: a derived attribute's expression must yield a string, int, bool or semver, or (with
    DRAListTypeAttributes, `lists`) a non-empty list of one of them; anything else makes the
    evaluation fail for that device (k8s.io/api resource/v1 DeviceDerivedAttribute.expression)."""
    scalar = _scalar_attribute(value)
    if scalar is not None:
        return scalar
    if isinstance(value, (list, tuple)):
        if not lists:
            raise CelRuntimeError("evaluated to a list, which needs DRAListTypeAttributes")
        items = [_scalar_attribute(v) for v in value]
        if not items:
            raise CelRuntimeError("evaluated to an empty list (a list attribute needs at least one element)")
        if any(i is None for i in items) or len({next(iter(i)) for i in items}) != 1:  # type: ignore[arg-type]
            raise CelRuntimeError(f"evaluated to {value!r}: a list must hold strings, ints, bools or semvers of one type")
        kind = next(iter(items[0]))  # type: ignore[arg-type]
        return {kind + "s": [i[kind] for i in items]}  # type: ignore[index]
    raise CelRuntimeError(f"must evaluate to a string, int, bool or semver (or a list of them), got "
                          f"{type(value).__name__} {value!r}")


def _scalar_attribute(value: Any) -> dict[str, Any] | None:
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": int(value)}
    if isinstance(value, str):
        return {"string": str(value)}
    if isinstance(value, Mapping) and SEMVER_KEY in value and len(value) == 1:
        return {"version": str(value[SEMVER_KEY])}
    return None


_local = threading.local()

# The library logs every failing Python callback before raising; we turn the raised error into a
# CelRuntimeError that names the claim and device, so the log line would only duplicate it.
logging.getLogger("cel").setLevel(logging.CRITICAL)

_CALLBACK_ERROR = re.compile(r"Python function call failed: \w+: (.*?)(?:\. Check function arguments.*)?$", re.S)


def _clean(message: str) -> str:
    match = _CALLBACK_ERROR.search(message)
    return match.group(1) if match else message


def _context() -> Any:
    ctx = getattr(_local, "ctx", None)
    if ctx is None:
        cel, stdlib = _library()
        ctx = cel.Context()
        stdlib.add_stdlib_to_context(ctx, _STDLIB)
        for name, fn in FUNCTIONS.items():
            ctx.add_function(name, fn)
        _local.ctx = ctx
    return ctx


@lru_cache(maxsize=4096)
def _compile(expression: str) -> Selector | str:
    """Compiled selector, or the error text (cached too, so a bad expression is parsed once)."""
    if not expression.strip():
        return "expression is empty"
    try:
        program = _library()[0].compile(expression)
    except (ValueError, RuntimeError) as exc:
        text = str(exc).replace(f"Failed to parse expression '{expression}': ", "")
        return f"compilation failed: {text}"
    unknown = sorted(
        f for f in program.functions() if not f.startswith(("_", "!", "@")) and f not in _known_functions()
    )
    if unknown:
        return f"compilation failed: undeclared reference to function(s) {', '.join(unknown)}"
    binders = set(_BINDER.findall(expression))
    unbound = sorted(v for v in program.variables() if v != "device" and v not in binders)
    if unbound:
        return f"compilation failed: undeclared reference to {', '.join(unbound)} (only `device` is defined)"
    literals = tuple(sorted({a or b for a, b in _STRING_LITERAL.findall(expression) if (a or b)}))
    fast = compile_fast(expression)
    return Selector(expression, program, literals, *(fast or (None, None)))


def compile_selector(expression: str, where: str) -> Selector:
    """Compile (cached) a selector; InputError names `where` (object and field path) on failure."""
    result = _compile(expression)
    if isinstance(result, str):
        raise InputError(f"{where}: {result}")
    return result


def _split_name(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


_LIST_ELEMENTS = (("ints", int), ("bools", bool), ("strings", str))  # list attribute -> element type


def _attribute_value(value: Mapping[str, Any]) -> Any:
    if "int" in value:
        return int(value["int"])
    if "bool" in value:
        return bool(value["bool"])
    if "string" in value:
        return str(value["string"])
    if "version" in value:
        try:
            return semver_value(str(value["version"]))
        except (CelValueError, ValueError):
            raise CelRuntimeError(f"invalid semantic version {value['version']!r}") from None
    if "versions" in value and value["versions"]:
        try:
            return [semver_value(str(v)) for v in value["versions"]]
        except (CelValueError, ValueError):
            raise CelRuntimeError(f"invalid semantic version in {value['versions']!r}") from None
    for key, element in _LIST_ELEMENTS:
        if value.get(key):
            return [element(v) for v in value[key]]
    raise CelRuntimeError(f"unsupported attribute value {dict(value)!r} (needs one of bool, int, string, version, "
                          "or a non-empty bools, ints, strings, versions list)")


def device_variable(driver: str, device: Mapping[str, Any]) -> dict[str, Any]:
    """The CEL `device` variable for a ResourceSlice device (v1 JSON shape)."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in (device.get("attributes") or {}).items():
        domain, ident = _split_name(str(name), driver)
        try:
            attributes.setdefault(domain, {})[ident] = _attribute_value(value or {})
        except CelRuntimeError as exc:
            raise CelRuntimeError(f"attributes[{name}]: {exc}") from None
    capacity: dict[str, dict[str, Any]] = {}
    for name, cap in (device.get("capacity") or {}).items():
        domain, ident = _split_name(str(name), driver)
        capacity.setdefault(domain, {})[ident] = quantity_value(parse_quantity((cap or {}).get("value", 0)))
    return {
        "driver": driver,
        "attributes": attributes,
        "capacity": capacity,
        "allowMultipleAllocations": bool(device.get("allowMultipleAllocations")),
    }
