"""MIG-backed vGPUs of several types on one GPU, one type per GPU instance: counters and groups that say so exactly.

NVIDIA's time-sliced MIG-backed vGPUs (vGPU 19+, RTX PRO Blackwell: `DC-1-12C`, two on each 1g.24gb
instance) share a GPU instance with others of their type, and NVIDIA supports "homogeneous and mixed
MIG-backed virtual GPU configurations": the instances of one GPU may each run another type, classic
one-vGPU-per-instance types (`DC-2-48C`) included. Counters alone cannot say this: two vGPUs sharing
an instance take less than the instance each, so a partly used instance leaves room that an
overlapping instance of another size would fit into, and two types on one instance (which must not
be) take the same shares as two vGPUs of one type (which may). So on such a GPU every MIG-backed
vGPU device carries two consumesCounters entries:

- On the GPU's counter set, its share of memory, SMs and engines (as before) and, as compatibility
  groups, the *layouts* its GPU instance belongs to: a layout is a maximal set of instance regions
  (memory-slice start and width) that fit on the GPU together, named after the widths in slice order
  (`mig-vgpu-1111`, `mig-vgpu-211`, `mig-vgpu-22`, `mig-vgpu-4` on a four-slice GPU; a `0` is a free
  slice). The scheduler's rolling intersection then admits a set of vGPUs exactly when their
  instances lie in one layout, i.e. fit together. Exact only while every region lies in at most two
  layouts (the API's limit of two groups): `instance_layout` returns None otherwise, and the GPU
  keeps the one-type-per-GPU model (driver.slices.vgpu).
- On the counter set of its GPU instance's start (`gpu-N-gi-<start>-counters`), `vgpus`: its share of the
  instance (the counter holds the least common multiple of the types' vGPUs per instance, a type with
  k per instance takes 1/k of it), with its type as the only group, so one instance runs one type.
  Instances that start together (a 1g and a 2g at slice 0) overlap, so sharing one counter set
  refuses nothing the layouts admit; and a type's k vGPUs fill the counter exactly, so it never
  refuses what the groups admit either.

Plain MIG devices, the full GPU, time-sliced and shared devices keep groups no layout shares, so
MIG-backed vGPUs still never co-exist with them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from driver.model.hardware import GpuModel, MigProfile, VgpuProfile
from driver.slices.gpucounters import ENGINES, fits_layout
from driver.slices.names import profile_label

INSTANCE_COUNTER = "vgpus"
MAX_LAYOUT_GROUPS = 2  # compatibilityGroups per consumesCounters entry (resource.k8s.io/v1)

Region = tuple[int, int]  # (first memory slice, memory slices)


def instance_counter_set(gpu_index: int, start: int) -> str:
    return f"gpu-{gpu_index}-gi-{start}-counters"


@dataclass(frozen=True)
class InstanceLayout:
    """How the MIG-backed vGPU devices of one GPU are kept to one type per fitting GPU instance."""

    groups: dict[Region, tuple[str, ...]]  # layout groups of each instance region
    units: int  # the `vgpus` counter of each GPU instance's counter set
    most_vgpus: int  # the most MIG-backed vGPUs that can run at once (for the VF counter)

    def starts(self) -> list[int]:
        return sorted({start for start, _ in self.groups})

    def share(self, profile: VgpuProfile) -> str:
        return str(self.units // profile.vgpus_per_instance)


def _regions(model: GpuModel, profiles: list[VgpuProfile]) -> dict[Region, list[MigProfile]]:
    """Each instance region the offered MIG-backed types can use, with the MIG profiles on it."""
    out: dict[Region, list[MigProfile]] = {}
    for vgpu in profiles:
        mig = model.mig_profile(vgpu.mig_profile or "")
        if mig is None:
            continue
        for start in mig.placements:
            if fits_layout(model, mig, start):
                out.setdefault((start, mig.memory_slices), []).append(mig)
    return out


def _needs(profiles: list[MigProfile]) -> dict[str, int]:
    """The most any profile of a region takes of each GPU counter (whichever variant the instance is)."""
    dims = {"memory": "memory_mib", "multiprocessors": "multiprocessors", **dict(ENGINES)}
    return {counter: max(getattr(p, attr) for p in profiles) for counter, attr in dims.items()}


def _layouts(model: GpuModel, regions: dict[Region, list[MigProfile]]) -> list[tuple[Region, ...]]:
    """Maximal sets of regions that fit together: disjoint slices, and memory, SMs and engines within
    the GPU's for any variant on each region (so the counters never refuse what a layout admits)."""
    totals = {"memory": model.memory_mib, "multiprocessors": model.multiprocessors,
              **{counter: getattr(model, attr) for counter, attr in ENGINES}}
    needs = {region: _needs(profiles) for region, profiles in regions.items()}
    order = sorted(regions)
    fitting: list[tuple[Region, ...]] = []

    def walk(i: int, chosen: tuple[Region, ...], used_slices: frozenset[int], used: dict[str, int]) -> None:
        fitting.append(chosen)
        for j in range(i, len(order)):
            start, width = order[j]
            span = frozenset(range(start, start + width))
            after = {c: used[c] + needs[order[j]][c] for c in used}
            if span & used_slices or any(after[c] > totals[c] for c in after):
                continue
            walk(j + 1, chosen + (order[j],), used_slices | span, after)

    walk(0, (), frozenset(), dict.fromkeys(totals, 0))
    sets = [frozenset(f) for f in fitting]
    return [f for f, s in zip(fitting, sets, strict=True) if f and not any(s < other for other in sets)]


def _layout_name(model: GpuModel, layout: tuple[Region, ...]) -> str:
    widths, slice_ = [], 0
    for start, width in sorted(layout):
        widths.extend("0" * (start - slice_))
        widths.append(str(width))
        slice_ = start + width
    widths.extend("0" * (model.mig_memory_slices - slice_))
    return "mig-vgpu-" + "".join(widths)


def instance_layout(model: GpuModel, profiles: list[VgpuProfile]) -> InstanceLayout | None:
    """The layout groups for the offered MIG-backed types of one GPU, when some of them share instances
    (time-sliced MIG-backed) and the groups can say exactly which instances fit together; else None."""
    mig_backed = [p for p in profiles if p.mig_backed and model.mig_profile(p.mig_profile or "") is not None]
    if not model.mig_capable or not any(p.time_sliced_mig_backed for p in mig_backed):
        return None
    regions = _regions(model, mig_backed)
    layouts = _layouts(model, regions)
    groups: dict[Region, list[str]] = {region: [] for region in regions}
    for layout in layouts:
        for region in layout:
            groups[region].append(_layout_name(model, layout))
    if any(not names or len(names) > MAX_LAYOUT_GROUPS for names in groups.values()):
        return None
    per_region = {
        region: max(p.vgpus_per_instance for p in mig_backed
                    if (m := model.mig_profile(p.mig_profile or "")) is not None and m in profs)
        for region, profs in regions.items()
    }
    return InstanceLayout(
        groups={region: tuple(sorted(names)) for region, names in groups.items()},
        units=math.lcm(*(p.vgpus_per_instance for p in mig_backed)),
        most_vgpus=max(sum(per_region[r] for r in layout) for layout in layouts),
    )


def instance_group(profile: VgpuProfile) -> str:
    """The only group on a GPU instance's counter set: the type running there."""
    return profile_label(profile.name)
