"""Inventory + Features + SliceConfig -> the node's pool of ResourceSlice specs (pure).

Layout of one pool (name = node name):
  1. counter slices: `sharedCounters` only, at most 8 counter sets each (GPU sets, then NIC sets);
  2. device slices: `devices` only, at most 64 devices each when any device in the slice consumes
     counters, has taints or list-valued attributes, 128 otherwise.
Counters and devices are never in one slice (rejected since Kubernetes 1.35). Every slice selects
the node with `nodeName` and nothing else. Slice specs carry no generation / resourceSliceCount:
the publisher owns those (and object names); `to_resource_slices` fills them for local output.
Output is a pure function of the inputs with a fixed order, so two renders are byte-identical.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from driver.errors import InputError
from driver.features import Features
from driver.model.inventory import Inventory
from driver.slices.common import Rendered, RenderContext
from driver.slices.config import SliceConfig
from driver.slices.gpu import render_gpu
from driver.slices.names import NODE_IDENTITIES, Identities, is_dns_label, is_dns_subdomain
from driver.slices.nic import render_nic

MAX_COUNTER_SETS_PER_SLICE = 8
MAX_COUNTERS_PER_SET = 32
MAX_DEVICES_PER_SLICE = 128
MAX_DEVICES_WITH_COUNTERS = 64
MAX_CONSUMES_COUNTERS = 2
MAX_GROUPS = 2
MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_STRING_LEN = 64

API_VERSION = "resource.k8s.io/v1"


@dataclass(frozen=True)
class Pool:
    """The desired content of one node's pool: ResourceSlice specs in publishing order."""

    name: str
    slices: tuple[dict, ...]
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def devices(self) -> dict[str, dict]:
        """Device name -> device dict, across all slices, in publishing order."""
        return {d["name"]: d for spec in self.slices for d in spec.get("devices", ())}

    def counter_sets(self) -> dict[str, dict]:
        """Counter set name -> CounterSet dict, across all slices."""
        return {c["name"]: c for spec in self.slices for c in spec.get("sharedCounters", ())}


def _needs_small_slice(dev: dict) -> bool:
    if dev.get("consumesCounters") or dev.get("taints"):
        return True
    return any(len(v) == 1 and next(iter(v)) in ("bools", "ints", "strings", "versions")
               for v in dev.get("attributes", {}).values())


def chunk_devices(devices: list[dict]) -> list[list[dict]]:
    """Split devices greedily in order; a chunk holding any 'heavy' device stops at 64."""
    chunks: list[list[dict]] = []
    current: list[dict] = []
    heavy = False
    for dev in devices:
        dev_heavy = _needs_small_slice(dev)
        limit = MAX_DEVICES_WITH_COUNTERS if (heavy or dev_heavy) else MAX_DEVICES_PER_SLICE
        if len(current) + 1 > limit:
            # Adding this device would break the limit that would then apply: start a new slice.
            chunks.append(current)
            current, heavy = [], False
        current.append(dev)
        heavy = heavy or dev_heavy
    if current:
        chunks.append(current)
    return chunks


def _chunks(items: list, size: int) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def render_pool(
    inventory: Inventory,
    features: Features,
    *,
    node_name: str,
    driver_name: str,
    config: SliceConfig = SliceConfig(),
    identities: Identities = NODE_IDENTITIES,
) -> Pool:
    """Render the node's pool. InputError for a bad node or driver name, ConfigError for a
    single-mode choice the hardware cannot honour; skipped hardware ends up in Pool.warnings.
    `identities` derives the node's device UUIDs (names.Identities; only fleets pass another)."""
    if not node_name or not is_dns_subdomain(node_name):
        raise InputError(f"node name {node_name!r} is not a valid DNS subdomain (it is the pool name)")
    if not driver_name or not is_dns_subdomain(driver_name, 63):
        raise InputError(f"driver name {driver_name!r} is not a DNS subdomain of at most 63 characters")
    ctx = RenderContext(node_name=node_name, driver_name=driver_name, features=features, config=config,
                        identities=identities)
    total = Rendered()
    for gpu in sorted(inventory.gpus, key=lambda g: g.index):
        total.extend(render_gpu(gpu, ctx))
    for nic in sorted(inventory.nics, key=lambda n: n.index):
        total.extend(render_nic(nic, ctx))
    for entry in config.publish_pfs:
        if not any(entry in (n.pci.address, n.interface) for n in inventory.nics):
            total.warnings.append(f"slices.publishPFs: {entry!r} matches no network function on this node")
    _drop_unnamable(total)
    _check_unique(total)
    _clip_strings(total)

    base = {"driver": driver_name, "pool": {"name": node_name}, "nodeName": node_name}
    slices: list[dict] = []
    for sets in _chunks(total.counter_sets, MAX_COUNTER_SETS_PER_SLICE):
        slices.append({**base, "pool": dict(base["pool"]), "sharedCounters": sets})
    for devs in chunk_devices(total.devices):
        slices.append({**base, "pool": dict(base["pool"]), "devices": devs})
    if not slices:
        # An empty pool is still published as one empty slice, so consumers see the node's
        # pool is complete and has nothing (instead of "not published yet").
        slices.append({**base, "pool": dict(base["pool"])})
    return Pool(name=node_name, slices=tuple(slices), warnings=tuple(total.warnings))


def _check_unique(total: Rendered) -> None:
    seen: set[str] = set()
    for dev in total.devices:
        if dev["name"] in seen:  # two inventory entries with the same index: a discovery bug
            raise InputError(f"inventory yields device {dev['name']!r} twice (duplicate GPU/NIC index)")
        seen.add(dev["name"])
    seen.clear()
    for cs in total.counter_sets:
        if cs["name"] in seen:
            raise InputError(f"inventory yields counter set {cs['name']!r} twice (duplicate GPU/NIC index)")
        seen.add(cs["name"])


def _drop_unnamable(total: Rendered) -> None:
    """A device whose name or group is not a DNS label (a config-file profile with a very long or
    odd name) would make the apiserver reject its whole slice: leave it out and say so."""
    kept = []
    for dev in total.devices:
        groups = [g for e in dev.get("consumesCounters", ()) for g in e.get("compatibilityGroups", ())]
        bad = [n for n in (dev["name"], *groups) if not is_dns_label(n)]
        if bad:
            total.warnings.append(f"{dev['name']}: {bad[0]!r} is not a DNS label (<= 63 characters); device not published")
            continue
        kept.append(dev)
    total.devices = kept


def _clip_strings(total: Rendered) -> None:
    """String attributes longer than the API's 64 characters (e.g. a product name from a config
    file) are cut, with a warning, instead of making the whole pool unpublishable."""
    for dev in total.devices:
        for name, value in dev["attributes"].items():
            text = value.get("string")
            if text is not None and len(text) > MAX_STRING_LEN:
                value["string"] = text[:MAX_STRING_LEN]
                total.warnings.append(f"{dev['name']}: attribute {name} cut to {MAX_STRING_LEN} characters")


# Slice object names: `<hex index>-<driver>-<node>`. One rule for the publisher (which decodes the
# index to map slices back to positions) and for `fake-dra slices`, so what a user previews is what
# `publish`/`run` write. The index leads so names sort in pool order and stay unique per position.
INDEX_MIN_LENGTH = 5
_NAME_MAX = 253


def index_length(count: int) -> int:
    """Hex digits of the index for a pool of `count` slices (at least INDEX_MIN_LENGTH)."""
    return max(INDEX_MIN_LENGTH, len(format(max(count - 1, 0), "x")))


def slice_name(index: int, count: int, driver: str, node: str) -> str:
    """`<hex index>-<driver>-<node>`; shortened with a hash suffix if over 253 characters."""
    prefix = format(index, f"0{index_length(count)}x")
    rest = f"{driver}-{node}"
    name = f"{prefix}-{rest}"
    if len(name) > _NAME_MAX:
        digest = hashlib.sha256(rest.encode()).hexdigest()[:10]
        keep = _NAME_MAX - len(prefix) - len(digest) - 2
        name = f"{prefix}-{rest[:keep].rstrip('-.')}-{digest}"
    return name


def to_resource_slices(pool: Pool, generation: int = 1) -> list[dict]:
    """Full ResourceSlice objects for the pool at `generation` (local mode, CLI and schema tests)."""
    if generation < 0:
        raise InputError(f"pool generation must not be negative, got {generation}")
    objects = []
    for index, spec in enumerate(pool.slices):
        full_spec = dict(spec)
        full_spec["pool"] = {**spec["pool"], "generation": generation, "resourceSliceCount": len(pool.slices)}
        name = slice_name(index, len(pool.slices), spec["driver"], spec["nodeName"])
        objects.append({"apiVersion": API_VERSION, "kind": "ResourceSlice", "metadata": {"name": name},
                        "spec": full_spec})
    return objects
