"""The Kubernetes feature gates that change what this driver publishes or how allocation behaves.

Features are passed around as a value (never read from globals) so the same pure code can render
or allocate for any gate combination, e.g. to predict what a gate-off scheduler would do.

`KNOWN_GATES` is the DRA-related part of Kubernetes' gate table, release by release: for each gate
its state in 1.37 (the release this project targets) and in every release of `KUBERNETES_VERSIONS`
(1.36, 1.37 and the coming 1.38), with the source of each row (`pkg/features/kube_features.go`
versioned specs, the merged PRs that change them, and for 1.38 the enhancement plans, marked as
planned). It also holds the one gate this project models that no release has:
`DRASharedConsumableCapacity` (KEP-5941, unmerged). Every name in it is accepted by `--features` and
the local store's gate file; only the ones with a `Features` field change behaviour here, the rest
are recorded so a `--features` value copied from a cluster's configuration is accepted as a whole.
`gates_of(version)` and `version_gate_errors(gates, version)` answer "may a cluster configuration
of that release name this gate?": kind configs, the Helm chart and gate detection ask them, because
a component given a gate its release does not have refuses to start (1.38 removed
`DynamicResourceAllocation`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from driver.errors import InputError


@dataclass(frozen=True)
class GateSpec:
    """One feature gate in one Kubernetes minor release (its versioned feature spec there)."""

    stage: str             # "alpha", "beta" or "GA"
    default: bool
    locked: bool = False   # LockToDefault: kube components refuse to start with the other value
    planned: bool = False  # from an enhancement (KEP) plan, not yet from a released gate table


@dataclass(frozen=True)
class Gate:
    """One upstream feature gate: its Kubernetes 1.37 state (the release this project targets) and
    its state in every minor release of `KUBERNETES_VERSIONS`."""

    name: str
    default: bool          # default in 1.37 (for the project-only gate: the project's default)
    stage: str             # "GA", "beta", "alpha", or "not in 1.37"
    locked: bool = False   # LockToDefault in 1.37
    attr: str | None = None  # the Features field when the gate changes what this project does
    versions: tuple[tuple[str, GateSpec | None], ...] = ()  # minor -> spec; None: not a gate there
    source: str = ""       # where the versions column comes from

    def spec(self, version: str) -> GateSpec | None:
        """This gate in Kubernetes `version` (a minor such as "1.38"); None when that release has no such gate."""
        return dict(self.versions).get(version)


# The releases the tables below describe; TARGET_VERSION is the one fake-dra is built against.
KUBERNETES_VERSIONS: tuple[str, ...] = ("1.36", "1.37", "1.38")
TARGET_VERSION = "1.37"

_A, _B, _GA = "alpha", "beta", "GA"
# Sources. 1.36 and 1.37: the versioned feature specs (defaultVersionedKubernetesFeatureGates) of
# kubernetes/kubernetes pkg/features/kube_features.go and the scheduler's copy of the DRA gates on
# the 1.37 line; each entry there lists (version, default, stage, lockToDefault). 1.38 (not
# released when this was written): merged kubernetes PRs first, then enhancement plans (planned=True).
_K8S = "kubernetes/kubernetes pkg/features/kube_features.go (versioned specs)"
_GATE_TABLE: tuple[tuple[str, bool, str, bool, str | None, tuple[GateSpec | None, GateSpec | None, GateSpec | None], str], ...] = (
    # name, 1.37 default, 1.37 stage, 1.37 locked, Features field, (1.36, 1.37, 1.38), source
    ("DynamicResourceAllocation", True, _GA, True, None,
     (GateSpec(_GA, True, True), GateSpec(_GA, True, True), None),
     f"{_K8S}: GA 1.34, locked 1.35; removed in 1.38 by kubernetes/kubernetes#141946 (issue #134459)"),
    ("DRAAdminAccess", True, _GA, True, "admin_access",
     (GateSpec(_GA, True, True), GateSpec(_GA, True, True), GateSpec(_GA, True, True)),
     f"{_K8S}: GA and locked in 1.36, removal planned for 1.39"),
    ("DRAPrioritizedList", True, _GA, True, "prioritized_list",
     (GateSpec(_GA, True), GateSpec(_GA, True, True), GateSpec(_GA, True, True)),
     f"{_K8S}: GA 1.36, locked 1.37, removal planned for 1.40"),
    ("DRAResourceClaimDeviceStatus", True, _GA, True, "device_status",
     (GateSpec(_B, True), GateSpec(_GA, True, True), GateSpec(_GA, True, True)),
     f"{_K8S}: beta 1.33, GA and locked 1.37"),
    ("DRAExtendedResource", True, _GA, True, None,
     (GateSpec(_B, True), GateSpec(_GA, True, True), GateSpec(_GA, True, True)),
     f"{_K8S}: beta 1.36, GA and locked 1.37, removal planned for 1.40"),
    ("DRADeviceTaints", True, _GA, False, "device_taints",
     (GateSpec(_B, True), GateSpec(_GA, True), GateSpec(_GA, True, True)),
     f"{_K8S}: beta 1.36, GA 1.37 (not locked); locked in 1.38 by kubernetes/kubernetes#140256"),
    ("DRADeviceTaintRules", True, _GA, False, "device_taint_rules",
     (GateSpec(_B, False), GateSpec(_GA, True), GateSpec(_GA, True, True)),
     f"{_K8S}: beta off 1.36 (beta API), GA 1.37 (not locked); locked in 1.38 by kubernetes/kubernetes#140256"),
    ("DRAPartitionableDevices", True, _B, False, "partitionable_devices",
     (GateSpec(_B, True), GateSpec(_B, True), GateSpec(_B, True)),
     f"{_K8S}: beta 1.36; GA proposed for 1.38 (kubernetes/enhancements#6381, open)"),
    ("DRAConsumableCapacity", True, _B, False, "consumable_capacity",
     (GateSpec(_B, True), GateSpec(_B, True), GateSpec(_B, True)),
     f"{_K8S}: beta 1.36; GA proposed for 1.38 (kubernetes/enhancements#6375, open)"),
    ("DRADeviceBindingConditions", True, _B, False, "binding_conditions",
     (GateSpec(_B, True), GateSpec(_B, True), GateSpec(_GA, True, planned=True)),
     f"{_K8S}: beta 1.36; GA in 1.38 per the KEP (kubernetes/enhancements#6005, merged)"),
    # Two 1.37 entries: beta off, and beta on with MinCompatibilityVersion 1.37. A 1.37 binary's
    # default compatibility version is 1.36, so off; a 1.38 binary's is 1.37, so on.
    ("DRAFractionalCapacityRange", False, _B, False, "fractional_capacity_range",
     (None, GateSpec(_B, False), GateSpec(_B, True)),
     f"{_K8S}: new in 1.37 (kubernetes/kubernetes#140161), beta off; on from compatibility version 1.37"),
    ("DRASchedulerFilterTimeout", True, _B, False, None,
     (GateSpec(_B, True), GateSpec(_B, True), GateSpec(_B, True)), f"{_K8S}: beta on since 1.34"),
    ("DRAResourceClaimGranularStatusAuthorization", True, _B, False, None,
     (GateSpec(_B, True), GateSpec(_B, True), GateSpec(_B, True)),
     f"{_K8S}: new in 1.36 as beta, on (kubernetes/kubernetes#134947)"),
    ("DRAWorkloadResourceClaims", False, _B, False, None,
     (GateSpec(_A, False), GateSpec(_B, False), GateSpec(_B, False)),
     f"{_K8S}: alpha 1.36, beta off 1.37 (kubernetes/kubernetes#140334)"),
    ("GenericWorkload", False, _B, False, None,
     (GateSpec(_A, False), GateSpec(_B, False), GateSpec(_B, False)), f"{_K8S}: alpha 1.35, beta off 1.37"),
    ("DRADeviceCompatibilityGroups", False, _A, False, "compatibility_groups",
     (None, GateSpec(_A, False), GateSpec(_A, False)),
     f"{_K8S}: new alpha in 1.37 (kubernetes/kubernetes#139795); the KEP targets beta in 1.38, no PR yet"),
    ("DRAListTypeAttributes", False, _A, False, "list_type_attributes",
     (GateSpec(_A, False), GateSpec(_A, False), GateSpec(_B, True, planned=True)),
     f"{_K8S}: alpha 1.36; beta proposed for 1.38 (kubernetes/enhancements#6354, open)"),
    ("DRADerivedAttributes", False, _A, False, "derived_attributes",
     (None, GateSpec(_A, False), GateSpec(_A, False)), f"{_K8S}: new alpha in 1.37 (KEP-6080)"),
    ("DRANodeAllocatableResources", False, _A, False, None,
     (GateSpec(_A, False), GateSpec(_A, False), GateSpec(_A, False)),
     f"{_K8S}: alpha 1.36; beta proposed for 1.38 (kubernetes/enhancements#6324, open)"),
    ("DRAOptionalNodeOperations", False, _A, False, None,
     (None, GateSpec(_A, False), GateSpec(_B, True, planned=True)),
     f"{_K8S}: new alpha in 1.37 (kubernetes/kubernetes#139933); beta proposed for 1.38 (kubernetes/enhancements#6372, open)"),
    ("ResourceHealthStatus", True, _B, False, None,
     (GateSpec(_B, True), GateSpec(_B, True), GateSpec(_B, True)),
     f"{_K8S}: alpha 1.31, beta on in 1.36 (kubernetes/enhancements#5689, kubernetes.io 1.36 release blog)"),
    ("DRASharedConsumableCapacity", False, "not in 1.37", False, "shared_consumable_capacity",
     (None, None, None),
     "KEP-5941: code unmerged (kubernetes/kubernetes#140084), alpha retargeted to 1.38; a project-only gate here"),
)

_GATES: tuple[Gate, ...] = tuple(
    Gate(name, default, stage, locked, attr, tuple(zip(KUBERNETES_VERSIONS, specs)), source)
    for name, default, stage, locked, attr, specs, source in _GATE_TABLE
)

KNOWN_GATES: dict[str, Gate] = {g.name: g for g in _GATES}

# Upstream gate name -> Features attribute, for the gates that change behaviour here.
GATE_FIELDS: dict[str, str] = {g.name: g.attr for g in _GATES if g.attr}

# Gates that are not part of Kubernetes 1.37: a kind/kubeadm config naming them stops the components.
NOT_IN_1_37: frozenset[str] = frozenset(g.name for g in _GATES if g.stage == "not in 1.37")

# Gates this project models that no Kubernetes release has: accepted by --features, never by a cluster.
PROJECT_ONLY_GATES: frozenset[str] = frozenset(g.name for g in _GATES if not any(s for _v, s in g.versions))


def kube_minor(text: str, where: str = "Kubernetes version") -> str:
    """"v1.38.0-alpha.1+abc", "1.38.2" or "1.38" -> "1.38"; InputError for anything else."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?", text.strip())
    if not m:
        raise InputError(f"{where}: {text!r} is not a Kubernetes version such as 1.37 or v1.37.2")
    return f"{int(m.group(1))}.{int(m.group(2))}"


def gates_of(version: str, where: str = "Kubernetes version") -> dict[str, GateSpec]:
    """The DRA gates Kubernetes `version` has (project-only gates excluded), by name, in table order."""
    minor = kube_minor(version, where)
    if minor not in KUBERNETES_VERSIONS:
        raise InputError(f"{where}: no gate table for Kubernetes {minor} (known: {', '.join(KUBERNETES_VERSIONS)})")
    return {g.name: spec for g in _GATES if (spec := g.spec(minor)) is not None}


def version_gate_errors(gates: Mapping[str, bool], version: str) -> list[str]:
    """Why each of `gates` cannot be given to Kubernetes `version`'s components: a gate that release
    does not have (they refuse to start on an unknown gate) or a locked gate set to the other value."""
    have = gates_of(version)
    minor = kube_minor(version)
    out = []
    for name, value in gates.items():
        spec = have.get(name)
        if spec is None:
            gate = KNOWN_GATES.get(name)
            why = gate.source if gate else "not a DRA feature gate"
            out.append(f"{name}: not a feature gate of Kubernetes {minor} ({why})")
        elif spec.locked and bool(value) is not spec.default:
            out.append(f"{name}: locked to {str(spec.default).lower()} in Kubernetes {minor}")
    return out


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
