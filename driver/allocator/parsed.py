"""A ResourceSlice as the allocator reads it: checked once, devices and counter sets parsed once.

A scheduler keeps its informers' slice objects between cycles, so it may keep what is derived from
them too; `ParsedSlice` is that derived form. It is immutable once parsed (devices lazily, on the
first use by some node's pools), and `driver.allocator.cluster.ClusterView` keeps one per slice
object and generation. `check_slice` holds the field checks every slice gets when it enters,
used by this node or not, so bad input is reported whichever node is asked about.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from driver.allocator.devices import Counter, DeviceInfo, is_mapping, parse_counter_sets, parse_device, parse_devices
from driver.errors import InputError


class ParsedSlice:
    """A checked ResourceSlice: identity fields read once, devices parsed on first use."""

    __slots__ = ("name", "key", "spec", "driver", "pool_name", "generation", "count", "node_name", "has_counters",
                 "_devices", "_one", "_counter_sets", "_groups", "_refs", "_conditions")

    def __init__(self, name: str, spec: Mapping[str, Any], key: str | None = None):
        self.name = name
        self.key = key or name  # unique in its store (names may repeat in hand-made lists)
        self.spec = spec
        pool = spec["pool"]
        self.driver: str = spec["driver"]
        self.pool_name: str = pool["name"]
        self.generation = int(pool.get("generation", 0))
        self.count = int(pool.get("resourceSliceCount", 0) or 0)
        self.node_name: str | None = spec.get("nodeName") or None
        self.has_counters = bool(spec.get("sharedCounters"))
        self._devices: tuple[DeviceInfo, ...] | None = None
        self._one: dict[int, DeviceInfo] | None = None  # devices parsed one by one (`device`)
        self._counter_sets: dict[str, dict[str, Counter]] | None = None
        self._groups: bool | None = None
        self._refs: dict[str, frozenset[str]] | None = None
        self._conditions: bool | None = None

    @property
    def devices(self) -> tuple[DeviceInfo, ...]:
        if self._devices is None:
            one = self._one
            if not self.spec.get("devices"):
                self._devices = ()
            elif not one:
                self._devices = tuple(parse_devices(self.spec, self.name))
            else:  # keep the devices parsed one by one: callers may hold them
                self._devices = tuple(one.get(i) or parse_device(self.spec, i, self.name)
                                      for i in range(len(self.spec["devices"])))
        return self._devices

    def device(self, index: int) -> DeviceInfo:
        """One device, parsed alone unless all are (a usage report parses only held devices); the
        same object `devices` holds."""
        if self._devices is not None:
            return self._devices[index]
        if self._one is None:
            self._one = {}
        found = self._one.get(index)
        if found is None:
            found = self._one[index] = parse_device(self.spec, index, self.name)
        return found

    @property
    def counter_sets(self) -> dict[str, dict[str, Counter]]:
        if self._counter_sets is None:
            self._counter_sets = parse_counter_sets(self.spec, self.name)
        return self._counter_sets

    @property
    def declares_groups(self) -> bool:
        if self._groups is None:
            self._groups = any(
                c.get("compatibilityGroups") for d in self.spec.get("devices") or () for c in (d.get("consumesCounters") or ())
            )
        return self._groups

    @property
    def consumed_refs(self) -> dict[str, frozenset[str]]:
        """Counter set -> the counters any device of the slice consumes from it (for pool validation)."""
        if self._refs is None:
            maps: dict[str, list[Mapping[str, Any]]] = {}  # counter set -> the maps naming its counters
            for dev in self.devices:
                for cons in dev.consumes:
                    found = maps.get(cons.counter_set)
                    if found is None:
                        found = maps[cons.counter_set] = []
                    found.append(cons.static)
                    if cons.value_from:
                        found.append(cons.value_from)
            self._refs = {cs: frozenset().union(*found) for cs, found in maps.items()}
        return self._refs

    @property
    def binding_conditions(self) -> bool:
        """Whether a device sets bindingConditions (its pool is then searched last)."""
        if self._conditions is None:
            self._conditions = any(dev.binding_conditions is not None for dev in self.devices)
        return self._conditions

    @property
    def pool_id(self) -> tuple[str, str]:
        return (self.driver, self.pool_name)


def slice_name(obj: Mapping[str, Any], index: int) -> str:
    """metadata.name, or `slice-N` for a bare spec (e.g. from driver.slices.render_pool)."""
    return (obj.get("metadata") or {}).get("name") or f"slice-{index}"


def slice_spec(obj: Mapping[str, Any]) -> Any:
    return obj.get("spec") if "spec" in obj else obj


def check_slice(name: str, spec: Any) -> None:
    """The fields pool gathering relies on; InputError naming the slice and field otherwise."""
    if not is_mapping(spec):
        raise InputError(f"ResourceSlice {name}: spec: required")
    if not spec.get("driver"):
        raise InputError(f"ResourceSlice {name}: spec.driver: required")
    pool = spec.get("pool")
    if not is_mapping(pool) or not pool.get("name"):
        raise InputError(f"ResourceSlice {name}: spec.pool.name: required")
    for key in ("generation", "resourceSliceCount"):
        value = pool.get(key, 0)
        if type(value) is not int and (isinstance(value, bool) or not isinstance(value, int)) or value < 0:
            raise InputError(f"ResourceSlice {name}: spec.pool.{key}: must be a non-negative integer, got {value!r}")
    devices = spec.get("devices")
    if devices is not None and type(devices) is not list and not isinstance(devices, list):
        raise InputError(f"ResourceSlice {name}: spec.devices: must be a list")


def is_bare(spec: Mapping[str, Any]) -> bool:
    pool = spec["pool"]
    return "resourceSliceCount" not in pool or "generation" not in pool


def fill_bare(specs: Sequence[tuple[str, Mapping[str, Any]]]) -> list[tuple[str, Mapping[str, Any]]]:
    """Bare specs carry no generation/count: the slices given together for a pool are the whole pool."""
    if not any(is_bare(spec) for _, spec in specs):
        return list(specs)
    sizes: dict[tuple[str, str], int] = defaultdict(int)
    for _, spec in specs:
        sizes[(spec["driver"], spec["pool"]["name"])] += 1
    out = []
    for name, spec in specs:
        if is_bare(spec):
            pool = spec["pool"]
            filled = {"generation": 0, "resourceSliceCount": sizes[(spec["driver"], pool["name"])], **pool}
            spec = {**spec, "pool": filled}
        out.append((name, spec))
    return out


def index_slices(slices: Sequence[Mapping[str, Any]]) -> list[ParsedSlice]:
    """ParsedSlices from ResourceSlice objects (or bare specs), each checked, counter sets parsed."""
    named = []
    for i, obj in enumerate(slices):
        name, spec = slice_name(obj, i), slice_spec(obj)
        check_slice(name, spec)
        named.append((name, spec))
    parsed = [ParsedSlice(name, spec) for name, spec in fill_bare(named)]
    for ps in parsed:
        if ps.has_counters:
            _ = ps.counter_sets  # parsed (and so checked) once, also for slices no node uses
    return parsed
