"""ResourceClaim / DeviceClass input checking and parsing into what the search needs.

Every shape error becomes an InputError naming the object and the field path, e.g.
`ResourceClaim default/c1: spec.devices.requests[0].exactly.selectors[1].cel.expression: ...`.
Selectors are compiled here (once, cached by expression) so a bad expression is reported before
any search starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from fractions import Fraction
from typing import Any

from driver.celexpr import Selector, compile_selector
from driver.errors import InputError
from driver.model.dnsnames import is_c_identifier, is_dns_subdomain
from driver.model.quantity import parse_quantity

MAX_RESULTS = 32  # resourceapi.AllocationResultsMaxSize


def claim_label(claim: Mapping[str, Any]) -> str:
    meta = claim.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or '?'}"


@dataclass(frozen=True)
class DeviceClass:
    name: str
    selectors: tuple[Selector, ...]
    config: tuple[Mapping[str, Any], ...]


def parse_class(obj: Mapping[str, Any]) -> DeviceClass:
    name = (obj.get("metadata") or {}).get("name")
    if not name:
        raise InputError("DeviceClass: metadata.name: required")
    spec = obj.get("spec") or {}
    selectors = _parse_selectors(spec.get("selectors"), f"DeviceClass {name}: spec.selectors")
    return DeviceClass(str(name), selectors, tuple(spec.get("config") or ()))


def _parse_selectors(raw: Sequence[Any] | None, where: str) -> tuple[Selector, ...]:
    """Compile the CEL selectors of a class or request; `where` is the path of the selectors list."""
    selectors = []
    for i, sel in enumerate(raw or ()):
        at = f"{where}[{i}].cel.expression"
        expr = ((sel or {}).get("cel") or {}).get("expression")
        if not isinstance(expr, str):
            # upstream: "CEL expression empty (unsupported selector type?)"
            raise InputError(f"{at}: required (only CEL selectors are supported; CEL expression empty (unsupported selector type?))")
        selectors.append(compile_selector(expr, at))
    return tuple(selectors)


@dataclass(frozen=True)
class Request:
    """One request or firstAvailable subrequest, as the search sees it."""

    name: str  # "req" or "req/sub" (the name used in results)
    top: str  # the top-level request name (constraints may name either)
    class_name: str
    selectors: tuple[Selector, ...]
    mode: str  # ExactCount | All
    count: int
    admin_access: bool
    has_admin_access: bool
    tolerations: tuple[Mapping[str, Any], ...]
    capacity: Mapping[str, Fraction] | None  # raw key -> amount; None when no capacity requests
    where: str
    # KEP-6080 derivedAttributes: (name, compiled expression), evaluated per candidate device for the
    # constraints that name them (derived.py).
    derived: tuple[tuple[str, Selector], ...] = ()

    @cached_property
    def selector_exprs(self) -> tuple[str, ...]:
        return tuple(s.expression for s in self.selectors)


@dataclass(frozen=True)
class Constraint:
    kind: str  # matchAttribute | distinctAttribute
    attribute: str
    requests: frozenset[str]  # empty = all requests

    def applies(self, request: Request) -> bool:
        return not self.requests or request.top in self.requests or request.name in self.requests

    def describe(self) -> str:
        scope = f" over requests {', '.join(sorted(self.requests))}" if self.requests else ""
        return f"constraint {self.kind} {self.attribute}{scope}"


@dataclass(frozen=True)
class Claim:
    label: str
    obj: Mapping[str, Any]
    requests: tuple[tuple[Request, ...], ...]  # per top-level request: the alternatives, in order
    constraints: tuple[Constraint, ...]
    has_first_available: bool = False


def _parse_exact(raw: Mapping[str, Any], name: str, top: str, where: str) -> Request:
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: must be an object")
    class_name = raw.get("deviceClassName")
    if not class_name:
        raise InputError(f"{where}.deviceClassName: required (missing device class name)")
    selectors = _parse_selectors(raw.get("selectors"), f"{where}.selectors")
    mode = raw.get("allocationMode") or "ExactCount"
    if mode not in ("ExactCount", "All"):
        raise InputError(f"{where}.allocationMode: must be ExactCount or All, got {mode!r} (unsupported count mode {mode})")
    count = raw.get("count", 1) if mode == "ExactCount" else 0
    if mode == "ExactCount" and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise InputError(f"{where}.count: must be a positive integer, got {count!r}")
    capacity = None
    cap = raw.get("capacity")
    if cap is not None:
        requests = (cap or {}).get("requests") or {}
        if not isinstance(requests, Mapping):
            raise InputError(f"{where}.capacity.requests: must be a map of name to quantity")
        capacity = {}
        for key, value in requests.items():
            try:
                capacity[str(key)] = parse_quantity(value)
            except InputError as exc:
                raise InputError(f"{where}.capacity.requests[{key}]: {exc}") from None
    tolerations = tuple(raw.get("tolerations") or ())
    for i, tol in enumerate(tolerations):
        op = tol.get("operator", "Equal")
        if op not in ("Equal", "Exists"):
            raise InputError(f"{where}.tolerations[{i}].operator: must be Equal or Exists, got {op!r}")
    return Request(
        name=name, top=top, class_name=str(class_name), selectors=selectors, mode=mode, count=int(count),
        admin_access=bool(raw.get("adminAccess")), has_admin_access=raw.get("adminAccess") is not None,
        tolerations=tolerations, capacity=capacity, where=where,
        derived=_parse_derived(raw.get("derivedAttributes"), f"{where}.derivedAttributes"),
    )


MAX_DERIVED = 32  # ExactDeviceRequest.derivedAttributes: "The maximum number of derived attributes is 32."


def _parse_derived(raw: Any, where: str) -> tuple[tuple[str, Selector], ...]:
    """KEP-6080 derivedAttributes of a request (k8s.io/api resource/v1 DeviceDerivedAttribute): at
    most 32, names unique, each `<DNS subdomain>/<C identifier>`, expressions compiled as selectors
    are (the same environment with its single `device` variable)."""
    if not raw:
        return ()
    if not isinstance(raw, list):
        raise InputError(f"{where}: must be a list")
    if len(raw) > MAX_DERIVED:
        raise InputError(f"{where}: Too many: {len(raw)}: must have at most {MAX_DERIVED} items")
    out: list[tuple[str, Selector]] = []
    for i, entry in enumerate(raw):
        at = f"{where}[{i}]"
        name = (entry or {}).get("name") if isinstance(entry, Mapping) else None
        if not name:
            raise InputError(f"{at}.name: required")
        domain, sep, ident = str(name).partition("/")
        if not sep or not is_dns_subdomain(domain) or not is_c_identifier(ident) or len(ident) > 32:
            raise InputError(f"{at}.name: {name!r} must be a DNS subdomain, a '/', and a C identifier of at most 32 "
                             "characters (e.g. derived/numaNode)")
        if any(n == name for n, _ in out):
            raise InputError(f"{at}.name: Duplicate value: {name!r}")
        expression = entry.get("expression")
        if not isinstance(expression, str) or not expression.strip():
            raise InputError(f"{at}.expression: required")
        out.append((str(name), compile_selector(expression, f"{at}.expression")))
    return tuple(out)


def parse_claim(obj: Mapping[str, Any]) -> Claim:
    label = claim_label(obj)
    base = f"ResourceClaim {label}: spec.devices"
    devices = (obj.get("spec") or {}).get("devices")
    if not isinstance(devices, Mapping):
        raise InputError(f"{base}: required")
    raw_requests = devices.get("requests") or []
    if not isinstance(raw_requests, list):
        raise InputError(f"{base}.requests: must be a list")
    requests = []
    names: set[str] = set()
    first_available = False
    for i, req in enumerate(raw_requests):
        where = f"{base}.requests[{i}]"
        name = (req or {}).get("name")
        if not name:
            raise InputError(f"{where}.name: required")
        if name in names:
            raise InputError(f"{where}.name: duplicate request name {name!r}")
        names.add(name)
        exactly, subs = req.get("exactly"), req.get("firstAvailable")
        if (exactly is None) == (subs is None):
            # Older shape: exactly's fields inline on the request (resource.k8s.io/v1beta1).
            if exactly is None and subs is None and req.get("deviceClassName"):
                requests.append((_parse_exact(req, name, name, where),))
                continue
            raise InputError(f"{where}: set exactly one of exactly and firstAvailable")
        if exactly is not None:
            requests.append((_parse_exact(exactly, name, name, f"{where}.exactly"),))
            continue
        if not isinstance(subs, list) or not subs:
            raise InputError(f"{where}.firstAvailable: must be a non-empty list")
        first_available = True
        alternatives = []
        for j, sub in enumerate(subs):
            at = f"{where}.firstAvailable[{j}]"
            sub_name = (sub or {}).get("name")
            if not sub_name:
                raise InputError(f"{at}.name: required")
            alternatives.append(_parse_exact(sub, f"{name}/{sub_name}", name, at))
        requests.append(tuple(alternatives))
    constraints = []
    for i, con in enumerate(devices.get("constraints") or ()):
        where = f"{base}.constraints[{i}]"
        kinds = [k for k in ("matchAttribute", "distinctAttribute") if (con or {}).get(k)]
        if len(kinds) != 1:
            what = "empty constraint (unsupported constraint type?)" if not kinds else "both are set"
            raise InputError(f"{where}: set exactly one of matchAttribute and distinctAttribute ({what})")
        attribute = str(con[kinds[0]])
        if "/" not in attribute:
            raise InputError(f"{where}.{kinds[0]}: must be a fully qualified name (domain/name), got {attribute!r}")
        scope = frozenset(str(r) for r in con.get("requests") or ())
        unknown = sorted(r for r in scope if r.split("/")[0] not in names)
        if unknown:
            raise InputError(f"{where}.requests: unknown request {unknown[0]!r}")
        constraints.append(Constraint(kinds[0], attribute, scope))
    _check_derived_used(requests, constraints, raw_requests, base)
    return Claim(label, obj, tuple(requests), tuple(constraints), first_available)


def _check_derived_used(requests: Sequence[tuple[Request, ...]], constraints: Sequence[Constraint],
                        raw_requests: Sequence[Any], base: str) -> None:
    """Every derived attribute must be named by a matchAttribute or distinctAttribute constraint that
    applies to its request (DeviceDerivedAttribute.name: "It is not valid to define a derived attribute
    that isn't used in at least one constraint"); kube-apiserver refuses the claim otherwise."""
    for i, alternatives in enumerate(requests):
        for j, req in enumerate(alternatives):
            for k, (name, _) in enumerate(req.derived):
                if not any(c.attribute == name and c.applies(req) for c in constraints):
                    raw = raw_requests[i] or {}
                    at = f"{base}.requests[{i}]" + (f".firstAvailable[{j}]" if raw.get("firstAvailable") else ".exactly")
                    raise InputError(f"{at}.derivedAttributes[{k}].name: {name!r} is not used by any matchAttribute or "
                                     "distinctAttribute constraint of this request")


def allocated_results(obj: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """Results of an already allocated claim, checked for the fields accounting needs."""
    results = ((((obj.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")) or []
    for i, r in enumerate(results):
        if type(r) is dict and r.get("driver") and r.get("pool") and r.get("device"):
            continue  # the usual result, checked without the Mapping ABC
        for key in ("driver", "pool", "device"):
            if not isinstance(r, Mapping) or not r.get(key):
                raise InputError(f"ResourceClaim {claim_label(obj)}: status.allocation.devices.results[{i}].{key}: required")
    return results
