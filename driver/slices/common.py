"""Shared pieces of GPU and NIC rendering: the render context and device/attribute builders.

Attributes follow docs/architecture.md §2 (Rendering): the driver's own domain, unqualified names,
typed values; the one standard attribute is `resource.kubernetes.io/pcieRoot`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from driver.features import Features
from driver.model.inventory import PciDevice
from driver.slices.config import SliceConfig
from driver.slices.names import NODE_IDENTITIES, Identities

PCIE_ROOT_ATTRIBUTE = "resource.kubernetes.io/pcieRoot"

# Compatibility groups (KEP-5963). Every device on a GPU counter set declares one, so no device is
# ever "group-less" next to a grouped sibling (which the scheduler would refuse to co-allocate).
GROUP_FULL = "full"
GROUP_MIG = "mig"
GROUP_MIG_VGPU = "mig-vgpu"  # MIG-backed vGPUs: with each other only
GROUP_VGPU = "vgpu"  # used for every time-sliced vGPU when vgpuHomogeneous is false
# Time-slicing and MPS (EXCLUSIVE_PROCESS compute mode) never share a GPU: one group each.
GROUP_TIMESLICING = "timeslicing"
GROUP_MPS = "mps"


@dataclass(frozen=True)
class RenderContext:
    node_name: str
    driver_name: str
    features: Features
    config: SliceConfig
    identities: Identities = NODE_IDENTITIES

    def uuid(self, pci_address: str, device_name: str) -> str:
        """The stable UUID of a device of this node (see names.Identities)."""
        return self.identities.uuid(self.node_name, pci_address, device_name)


@dataclass
class Rendered:
    """What one physical device contributes to the pool."""

    counter_sets: list[dict] = field(default_factory=list)
    devices: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def extend(self, other: Rendered) -> None:
        self.counter_sets.extend(other.counter_sets)
        self.devices.extend(other.devices)
        self.warnings.extend(other.warnings)


def s(value: str) -> dict:
    return {"string": value}


def i(value: int) -> dict:
    return {"int": value}


def b(value: bool) -> dict:
    return {"bool": value}


def location_attributes(pci: PciDevice) -> dict[str, dict]:
    """pciBusID, numaNode (only when known) and the standard pcieRoot (only when resolvable)."""
    attrs: dict[str, dict] = {"pciBusID": s(pci.address)}
    if pci.numa_node is not None and pci.numa_node >= 0:
        attrs["numaNode"] = i(pci.numa_node)
    if pci.pcie_root:
        attrs[PCIE_ROOT_ATTRIBUTE] = s(pci.pcie_root)
    return attrs


def consumption(counter_set: str, counters: dict[str, Any], groups: list[str] | None) -> dict:
    """One consumesCounters entry; counters map name -> {"value": q} or {"valueFrom": {...}}."""
    entry: dict[str, Any] = {"counterSet": counter_set}
    if groups:
        entry["compatibilityGroups"] = list(groups)
    entry["counters"] = counters
    return entry


def static_counters(values: dict[str, str]) -> dict[str, dict]:
    return {name: {"value": q} for name, q in values.items()}


def device(
    name: str,
    attributes: dict[str, dict],
    capacity: dict[str, dict] | None = None,
    consumes: list[dict] | None = None,
    allow_multiple: bool = False,
) -> dict:
    """A Device dict with a fixed key order (byte-identical output).

    Deep-copied so no two devices share a nested dict: callers may mutate one device safely and
    YAML output never grows anchors/aliases.
    """
    attributes, capacity, consumes = _copy(attributes), _copy(capacity), _copy(consumes)
    dev: dict[str, Any] = {"name": name}
    if allow_multiple:
        dev["allowMultipleAllocations"] = True
    dev["attributes"] = dict(sorted(attributes.items()))
    if capacity:
        dev["capacity"] = dict(sorted(capacity.items()))
    if consumes:
        dev["consumesCounters"] = consumes
    return dev


def _copy(value: Any) -> Any:
    """Deep copy of plain JSON-like data (dicts, lists, scalars); far cheaper than copy.deepcopy."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
