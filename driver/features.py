"""The Kubernetes feature gates that change what this driver publishes or how allocation behaves.

Features are passed around as a value (never read from globals) so the same pure code can render
or allocate for any gate combination, e.g. to predict what a gate-off scheduler would do.

`KNOWN_GATES` is the DRA-related part of Kubernetes 1.37's gate table (kube-scheduler's and
kube-apiserver's versioned feature specs, `pkg/features/kube_features.go` on the 1.37 line), plus the
one gate this project models that 1.37 does not have: `DRASharedConsumableCapacity` (KEP-5941,
unmerged). Every name in it is accepted by `--features` and the local store's gate file; only the
ones with a `Features` field change behaviour here, the rest are recorded so a `--features` value
copied from a cluster's configuration is accepted as a whole.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from driver.errors import InputError


@dataclass(frozen=True)
class Gate:
    """One upstream feature gate as Kubernetes 1.37 ships it."""

    name: str
    default: bool          # default in 1.37 (for the project-only gate: the project's default)
    stage: str             # "GA", "beta", "alpha", or "not in 1.37"
    locked: bool = False   # LockToDefault: kube components refuse to start with the other value
    attr: str | None = None  # the Features field when the gate changes what this project does


_GATES: tuple[Gate, ...] = (
    Gate("DynamicResourceAllocation", True, "GA", locked=True),
    Gate("DRAAdminAccess", True, "GA", locked=True, attr="admin_access"),
    Gate("DRAPrioritizedList", True, "GA", locked=True, attr="prioritized_list"),
    Gate("DRAResourceClaimDeviceStatus", True, "GA", locked=True, attr="device_status"),
    Gate("DRAExtendedResource", True, "GA", locked=True),
    Gate("DRADeviceTaints", True, "GA", attr="device_taints"),
    Gate("DRADeviceTaintRules", True, "GA", attr="device_taint_rules"),
    Gate("DRAPartitionableDevices", True, "beta", attr="partitionable_devices"),
    Gate("DRAConsumableCapacity", True, "beta", attr="consumable_capacity"),
    Gate("DRADeviceBindingConditions", True, "beta", attr="binding_conditions"),
    # Added in 1.37 by kubernetes PR #140161 (milli-unit validRange arithmetic for consumable
    # capacity) and off by default there: kubernetes issue #140594 plans "on-by-default" for 1.38.
    Gate("DRAFractionalCapacityRange", False, "alpha", attr="fractional_capacity_range"),
    Gate("DRASchedulerFilterTimeout", True, "beta"),
    Gate("DRAResourceClaimGranularStatusAuthorization", True, "beta"),
    Gate("DRAWorkloadResourceClaims", False, "beta"),
    Gate("GenericWorkload", False, "beta"),
    Gate("DRADeviceCompatibilityGroups", False, "alpha", attr="compatibility_groups"),
    Gate("DRAListTypeAttributes", False, "alpha", attr="list_type_attributes"),
    Gate("DRADerivedAttributes", False, "alpha", attr="derived_attributes"),
    Gate("DRANodeAllocatableResources", False, "alpha"),
    Gate("DRAOptionalNodeOperations", False, "alpha"),
    Gate("ResourceHealthStatus", False, "alpha"),
    Gate("DRASharedConsumableCapacity", False, "not in 1.37", attr="shared_consumable_capacity"),
)

KNOWN_GATES: dict[str, Gate] = {g.name: g for g in _GATES}

# Upstream gate name -> Features attribute, for the gates that change behaviour here.
GATE_FIELDS: dict[str, str] = {g.name: g.attr for g in _GATES if g.attr}

# Gates that are not part of Kubernetes 1.37: a kind/kubeadm config naming them stops the components.
NOT_IN_1_37: frozenset[str] = frozenset(g.name for g in _GATES if g.stage == "not in 1.37")


def unknown_gate_error(name: str, where: str = "--features") -> InputError:
    """The error for a gate name that is not a Kubernetes 1.37 DRA gate, suggesting the closest one."""
    close = difflib.get_close_matches(name, list(KNOWN_GATES), n=1, cutoff=0.6)
    if not close:  # case slips ("drapartitionabledevices") are the commonest typo
        close = [g for g in KNOWN_GATES if g.lower() == name.lower()]
    hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(sorted(KNOWN_GATES))})"
    return InputError(f"{where}: unknown feature gate {name!r}: not a DRA feature gate of Kubernetes 1.37{hint}")


@dataclass(frozen=True)
class Features:
    """One boolean per upstream gate that changes what this project does.

    Default: every gate on except those Kubernetes 1.37 does not have (`DRASharedConsumableCapacity`),
    so what the project publishes by default is accepted by a 1.37 cluster. That one is *unset*
    (None) rather than off: publishing treats unset as off, while the allocator (`for_scheduler`)
    follows the slices it is given, because only a cluster whose apiserver has the gate can hold
    slices that carry its fields (a 1.37 apiserver drops `valueFrom` and counter `requestPolicy`). Alpha gates the project is
    about (compatibility groups, list-typed attributes, fractional capacity ranges, derived attributes) are on: the bundled
    kind config enables them.
    `other` records accepted gates that change nothing here, as sorted (name, enabled) pairs.
    """

    partitionable_devices: bool = True
    compatibility_groups: bool = True
    consumable_capacity: bool = True
    shared_consumable_capacity: bool | None = None  # None: unset (see above)
    prioritized_list: bool = True
    admin_access: bool = True
    device_taints: bool = True
    device_taint_rules: bool = True
    binding_conditions: bool = True
    device_status: bool = True
    list_type_attributes: bool = True
    fractional_capacity_range: bool = True
    derived_attributes: bool = True
    other: tuple[tuple[str, bool], ...] = ()

    @classmethod
    def all_on(cls) -> Features:
        """Every modelled gate on, the project-only KEP-5941 gate included."""
        return cls(shared_consumable_capacity=True)

    def for_scheduler(self) -> Features:
        """The gates as the allocator applies them: an unset KEP-5941 gate is on.

        Slices with `valueFrom` consumption or a counter `requestPolicy` come from an apiserver that
        has the gate (a 1.37 one drops those fields on write), so the scheduler beside it is taken to
        have it too; on slices without those fields the gate changes nothing. Set
        `DRASharedConsumableCapacity=false` explicitly for a scheduler that lacks it (version skew:
        such a scheduler counts a `valueFrom`-only consumption as zero).
        """
        if self.shared_consumable_capacity is None:
            return replace(self, shared_consumable_capacity=True)
        return self

    def with_gates(self, gates: Mapping[str, bool], where: str = "--features") -> Features:
        """Return a copy with the given upstream gates set; names not in KNOWN_GATES are input errors."""
        changes: dict[str, object] = {}
        other = dict(self.other)
        for gate, value in gates.items():
            if gate not in KNOWN_GATES:
                raise unknown_gate_error(gate, where)
            attr = GATE_FIELDS.get(gate)
            if attr is None:
                other[gate] = bool(value)
            else:
                changes[attr] = bool(value)
        if other != dict(self.other):
            changes["other"] = tuple(sorted(other.items()))
        return replace(self, **changes)  # type: ignore[arg-type]

    def enabled(self, gate: str) -> bool:
        """Whether an upstream gate is on: its field, an explicitly set value, or its 1.37 default."""
        attr = GATE_FIELDS.get(gate)
        if attr is not None:
            return bool(getattr(self, attr))
        if gate not in KNOWN_GATES:
            raise unknown_gate_error(gate)
        return dict(self.other).get(gate, KNOWN_GATES[gate].default)

    def as_gates(self) -> dict[str, bool]:
        """Upstream gate name -> enabled for the behaviour-changing gates (stable order), then `other`."""
        out = {gate: bool(getattr(self, attr)) for gate, attr in GATE_FIELDS.items()}
        out.update(self.other)
        return out

    def __str__(self) -> str:
        """The `--features` text of this value (an unset gate is left out, so it stays unset)."""
        unset = {g for g, attr in GATE_FIELDS.items() if getattr(self, attr) is None}
        return ",".join(f"{g}={'true' if v else 'false'}" for g, v in self.as_gates().items() if g not in unset)


def parse_gates(text: str | None, where: str = "--features") -> dict[str, bool]:
    """Parse `G=true,H=false` (the kube-apiserver --feature-gates syntax) into a dict.

    Every name must be a Kubernetes 1.37 DRA gate (or the project's KEP-5941 gate); a typo is an
    InputError naming `where` and suggesting the closest known name.
    """
    gates: dict[str, bool] = {}
    if not text:
        return gates
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name, raw = name.strip(), raw.strip().lower()
        if not sep or raw not in ("true", "false"):
            raise InputError(f"{where}: expected NAME=true|false, got {item!r}")
        if name not in KNOWN_GATES:
            raise unknown_gate_error(name, where)
        gates[name] = raw == "true"
    return gates


def parse_features(text: str | None, base: Features | None = None, where: str = "--features") -> Features:
    """`--features` value -> Features, starting from `base` (default: `Features()`)."""
    return (base or Features()).with_gates(parse_gates(text, where), where)


assert {f.name for f in fields(Features)} - {"other"} == set(GATE_FIELDS.values())
