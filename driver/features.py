"""The Kubernetes feature gates that change what this driver publishes or how allocation behaves.

Features are passed around as a value (never read from globals) so the same pure code can render
or allocate for any gate combination, e.g. to predict what a gate-off scheduler would do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from driver.errors import InputError

# Upstream gate name -> Features attribute.
GATE_FIELDS: dict[str, str] = {
    "DRAPartitionableDevices": "partitionable_devices",
    "DRADeviceCompatibilityGroups": "compatibility_groups",
    "DRAConsumableCapacity": "consumable_capacity",
    "DRASharedConsumableCapacity": "shared_consumable_capacity",
    "DRAPrioritizedList": "prioritized_list",
    "DRAAdminAccess": "admin_access",
    "DRADeviceTaints": "device_taints",
}


@dataclass(frozen=True)
class Features:
    """One boolean per upstream gate this project is about. Default: every gate on."""

    partitionable_devices: bool = True
    compatibility_groups: bool = True
    consumable_capacity: bool = True
    shared_consumable_capacity: bool = True
    prioritized_list: bool = True
    admin_access: bool = True
    device_taints: bool = True

    @classmethod
    def all_on(cls) -> Features:
        return cls()

    def with_gates(self, gates: Mapping[str, bool]) -> Features:
        """Return a copy with the given upstream gates set; unknown gate names are input errors."""
        changes = {}
        for gate, value in gates.items():
            attr = GATE_FIELDS.get(gate)
            if attr is None:
                known = ", ".join(sorted(GATE_FIELDS))
                raise InputError(f"--features: unknown feature gate {gate!r} (known: {known})")
            changes[attr] = bool(value)
        return replace(self, **changes)

    def as_gates(self) -> dict[str, bool]:
        """Upstream gate name -> enabled, in a stable order."""
        return {gate: getattr(self, attr) for gate, attr in GATE_FIELDS.items()}

    def __str__(self) -> str:
        return ",".join(f"{g}={'true' if v else 'false'}" for g, v in self.as_gates().items())


def parse_gates(text: str | None) -> dict[str, bool]:
    """Parse `G=true,H=false` (the kube-apiserver --feature-gates syntax) into a dict."""
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
            raise InputError(f"--features: expected NAME=true|false, got {item!r}")
        if name not in GATE_FIELDS:
            known = ", ".join(sorted(GATE_FIELDS))
            raise InputError(f"--features: unknown feature gate {name!r} (known: {known})")
        gates[name] = raw == "true"
    return gates


def parse_features(text: str | None, base: Features | None = None) -> Features:
    """`--features` value -> Features, starting from `base` (default: all on)."""
    return (base or Features()).with_gates(parse_gates(text))


assert {f.name for f in fields(Features)} == set(GATE_FIELDS.values())
