"""DeviceTaintRules (resource.k8s.io/v1, GA in 1.37): taints that apply to devices as if their slice listed them.

A rule names one taint and a selector of devices by driver, pool and device name. kube-scheduler
never reads rules itself: its informers hand the allocator ResourceSlices that the device-taint
tracker has already patched, each selected device carrying the rule's taint after its own
(k8s.io/dynamic-resource-allocation resourceslice/tracker, tracker.go `applyPatches`: a set
`driver` or `pool` that differs from the slice's skips the slice, a set `device` that differs
skips the device, and the taint is appended with the rule's key, value, effect and timeAdded).
The scheduler plugin reads those slices (`ResourceSlices().ListWithDeviceTaintRules` in
pkg/scheduler/framework/plugins/dynamicresources), and the device taint eviction controller
matches rules the same way (pkg/controller/devicetainteviction, `ruleMatchesDevice`).

So here a rule is looked up by device key when a taint check needs it: a parsed slice stays
valid when rules change, and a rule costs nothing for the devices it does not select.

Selector semantics follow the 1.37 API type (k8s.io/api resource/v1 DeviceTaintSelector): every set
field must match, the empty selector `{}` matches every device, and a rule without a selector
matches none: the 1.37 type's documentation says "Without a selector, no devices are matched", and
the eviction controller's `ruleMatchesDevice` returns false for a nil selector. (Older tracker code,
and the comment of scheduler_perf's v1alpha3 template `devicetaintrule.yaml`, read a missing
selector as "all devices"; the 1.37 line does not.)

Rules apply while `DRADeviceTaints` and `DRADeviceTaintRules` are on (both GA in 1.37); the tracker
is not started otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from driver.errors import InputError
from driver.model.dnsnames import is_dns_label, is_dns_subdomain

EFFECTS = ("NoExecute", "NoSchedule", "None")  # k8s.io/api resource/v1 DeviceTaintEffect
BLOCKING = ("NoSchedule", "NoExecute")  # an unknown effect is treated like None (the API type says so)
MAX_CONDITIONS = 8  # DeviceTaintRuleStatus.conditions: "Must have 8 or fewer entries"

_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def is_label_name(text: Any) -> bool:
    """A qualified name as label keys and taint keys use: [prefix/]name, the prefix a DNS subdomain
    (apimachinery validation.IsQualifiedName)."""
    if not isinstance(text, str) or not text:
        return False
    prefix, _, name = text.rpartition("/")
    if "/" in text and (not prefix or not is_dns_subdomain(prefix)):
        return False
    return bool(_LABEL_NAME.match(name))


def is_label_value(text: Any) -> bool:
    """apimachinery validation.IsValidLabelValue: empty, or a name of at most 63 characters."""
    return isinstance(text, str) and (text == "" or bool(_LABEL_NAME.match(text)))


def is_pool_name(text: Any) -> bool:
    """A resource pool name: DNS subdomains separated by '/' (pkg/apis/resource/validation
    validatePoolName), at most 253 characters."""
    return isinstance(text, str) and 0 < len(text) <= 253 and all(is_dns_subdomain(p) for p in text.split("/"))


@dataclass(frozen=True)
class RuleTaint:
    """One rule's taint as the allocator sees it on a selected device."""

    rule: str  # the DeviceTaintRule's name
    taint: Mapping[str, Any]  # {key, value, effect, timeAdded} as the rule states it
    driver: str | None
    pool: str | None
    device: str | None

    def selects(self, driver: str, pool: str, device: str) -> bool:
        return ((self.driver is None or self.driver == driver) and (self.pool is None or self.pool == pool)
                and (self.device is None or self.device == device))

    @property
    def effect(self) -> str:
        return str(self.taint.get("effect") or "")

    def describe(self) -> str:
        """`key=value:Effect` as kubectl prints taints."""
        value = self.taint.get("value")
        return f"{self.taint.get('key')}{'=' + str(value) if value else ''}:{self.effect}"


def parse_rule(obj: Mapping[str, Any]) -> RuleTaint | None:
    """The taint and selector of a DeviceTaintRule (None when it selects nothing); InputError naming
    the field for what kube-apiserver's validation refuses (pkg/apis/resource/validation
    ValidateDeviceTaintRule: the taint key a label name, the value a label value, the effect one of
    None/NoSchedule/NoExecute; the selector's driver a DNS subdomain, pool a pool name, device a DNS
    label; at most 8 status conditions)."""
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    where = f"DeviceTaintRule {name}"
    if not name:
        raise InputError("DeviceTaintRule: metadata.name: required")
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise InputError(f"{where}: spec: required")
    taint = spec.get("taint")
    if not isinstance(taint, Mapping):
        raise InputError(f"{where}: spec.taint: required")
    key = taint.get("key")
    if not key:
        raise InputError(f"{where}: spec.taint.key: required")
    if not is_label_name(key):
        raise InputError(f"{where}: spec.taint.key: {key!r} must be a label name ([prefix/]name, the name at most 63 "
                         "characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit)")
    value = taint.get("value")
    if value is not None and not is_label_value(value):
        raise InputError(f"{where}: spec.taint.value: {value!r} must be a label value (at most 63 characters)")
    effect = taint.get("effect")
    if not effect:
        raise InputError(f"{where}: spec.taint.effect: required")
    if effect not in EFFECTS:
        raise InputError(f'{where}: spec.taint.effect: Unsupported value: "{effect}": supported values: '
                         + ", ".join(f'"{e}"' for e in EFFECTS))
    conditions = (obj.get("status") or {}).get("conditions") or ()
    if len(conditions) > MAX_CONDITIONS:
        raise InputError(f"{where}: status.conditions: Too many: {len(conditions)}: must have at most {MAX_CONDITIONS} items")
    selector = spec.get("deviceSelector")
    if selector is None:
        return None
    if not isinstance(selector, Mapping):
        raise InputError(f"{where}: spec.deviceSelector: must be an object with driver, pool and/or device")
    driver, pool, device = selector.get("driver"), selector.get("pool"), selector.get("device")
    if driver is not None and not is_dns_subdomain(driver):
        raise InputError(f"{where}: spec.deviceSelector.driver: {driver!r} must be a DNS subdomain")
    if pool is not None and not is_pool_name(pool):
        raise InputError(f"{where}: spec.deviceSelector.pool: {pool!r} must be a resource pool name "
                         "(DNS subdomains separated by '/')")
    if device is not None and not is_dns_label(device):
        raise InputError(f"{where}: spec.deviceSelector.device: {device!r} must be a DNS label")
    return RuleTaint(str(name), dict(taint), driver, pool, device)


class TaintRules:
    """The DeviceTaintRules of a cluster, indexed for "which rule taints does this device get?".

    Rules naming driver, pool and device are found by key; the others (usually few: a whole pool, a
    driver, every device) are checked one by one. Taints come in rule-name order (upstream lists
    rules from an informer, whose order is unspecified; a fixed order makes reasons reproducible).
    """

    def __init__(self, rules: Iterable[RuleTaint] = ()):
        self.by_name: dict[str, RuleTaint] = {}
        self._exact: dict[tuple[str, str, str], list[RuleTaint]] = {}
        self._pool: dict[tuple[str, str], list[RuleTaint]] = {}
        self._pool_name: dict[str, list[RuleTaint]] = {}
        self._wide: list[RuleTaint] = []
        for rule in rules:
            self.by_name[rule.rule] = rule
        self._index()

    def _index(self) -> None:
        # A fleet's fault rules name driver and pool (and maybe a device): found by key, so a taint
        # check costs the rules of the device's pool, not every rule of the cluster.
        self._exact, self._pool, self._pool_name, self._wide = {}, {}, {}, []
        for name in sorted(self.by_name):
            rule = self.by_name[name]
            if rule.driver is not None and rule.pool is not None and rule.device is not None:
                self._exact.setdefault((rule.driver, rule.pool, rule.device), []).append(rule)
            elif rule.driver is not None and rule.pool is not None:
                self._pool.setdefault((rule.driver, rule.pool), []).append(rule)
            elif rule.pool is not None:
                self._pool_name.setdefault(rule.pool, []).append(rule)
            else:
                self._wide.append(rule)

    def __len__(self) -> int:
        return len(self.by_name)

    def __bool__(self) -> bool:
        return bool(self.by_name)

    def set(self, obj: Mapping[str, Any]) -> None:
        """Add or replace one rule object (a rule selecting nothing is remembered as absent)."""
        name = str((obj.get("metadata") or {}).get("name"))
        parsed = parse_rule(obj)
        self.by_name.pop(name, None)
        if parsed is not None:
            self.by_name[name] = parsed
        self._index()

    def remove(self, name: str) -> None:
        if self.by_name.pop(name, None) is not None:
            self._index()

    def for_device(self, driver: str, pool: str, device: str) -> list[RuleTaint]:
        """The rule taints a device carries, in rule-name order."""
        hits = [r for r in self._wide if r.selects(driver, pool, device)]
        parts = [hits]
        for found in (self._pool.get((driver, pool)), self._pool_name.get(pool), self._exact.get((driver, pool, device))):
            if found:
                parts.append([r for r in found if r.selects(driver, pool, device)])
        if len(parts) == 1:
            return hits
        return sorted((r for part in parts for r in part), key=lambda r: r.rule)


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Whether one DeviceToleration tolerates one taint (k8s.io/dynamic-resource-allocation
    resourceclaim `ToleratesTaint`, the node rule: an empty effect matches every effect, an empty
    key with Exists matches every key, Equal compares values, Exists ignores them)."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("key") and toleration.get("key") != taint.get("key"):
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def first_untolerated(taints: Iterable[Mapping[str, Any]], tolerations: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The first NoSchedule/NoExecute taint no toleration tolerates (the allocator's rule: structured
    allocator `allocateDevice` skips a device with such a taint; None and unknown effects do not block)."""
    tolerations = tuple(tolerations)
    for taint in taints:
        if taint.get("effect") in BLOCKING and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None
