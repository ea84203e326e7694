"""NVIDIA vGPU devices of one GPU: which offered types are published and what each instance consumes.

A type is published when the host's vGPU manager offers it (an mdev type or a `creatable_vgpu_types`
line) and its type - the last word of the name, NVIDIA's rule: `NVIDIA RTX Pro 6000 Blackwell DC-48C`
is `DC-48C` - is a vGPU type in the table of this GPU's board, which is found by PCI device ID, never
by the name: `DC-*` names are shared by the RTX PRO 6000 and the RTX PRO 4500 with other maxima, and a
DGX A100 (10de:20b0) offers `A100X-*`, never the PCIe board's `A100-*`. Only C-series (compute:
`...C`, MIG-backed also `...CME`, `CNOME`, `CMEALL`, `CGFX`) types are this driver's: the A/B/Q-series
(virtual apps, vPC, RTX workstation) types that every Turing/Ada/Blackwell host also lists (`GRID
T4-1B`, `NVIDIA L40S-2Q`, `DC-1-24QGFX`) are left out quietly, since a warning per type on every publish
pass would bury real problems. A C-series type of this board missing from the table, or another
board's type, is warned about.

- Time-sliced types (`A100X-4C`): `max_instances` devices, the table's figure (never memory //
  framebuffer: the guide's framebuffers are nominal and may exceed what nvidia-smi reports; with
  `vgpuHomogeneous: false`, NVIDIA's mixed-size mode, the guide's mixed-size maximum), capped by
  the SR-IOV VFs that offer the type on Ampere and later (one vGPU per VF). Each instance holds 1/max of
  the GPU's memory and SMs, so a full set of one type exactly fills the counter set and a full GPU never
  fits beside any of them. Group `vgpu-<type>` (homogeneous: one type per GPU, as NVIDIA's equal-size
  mode requires) or `vgpu` for all of them with `vgpuHomogeneous: false`.
- MIG-backed types (`A100X-1-5C` on a MIG 1g.5gb instance): one device per placement of the MIG
  profile, consuming exactly that placement's memory slices, SMs and engines, so they pack like MIG.
  Group `mig-vgpu`: they co-exist with each other, never with time-sliced vGPUs, the full GPU, plain
  MIG or shared devices.
- Time-sliced MIG-backed types (`DC-1-12C`: two vGPUs on each of the four 1g.24gb instances of an RTX
  PRO 6000): `vgpus_per_instance` devices per placement (`gpu-N-vgpu-dc-1-12c-<start>-<k>`), each taking
  that share of the instance's memory, SMs and engines (rounded down) and no memory slice. NVIDIA
  supports mixed MIG-backed configurations, so the instances of one GPU may run different types, one
  type per instance: driver.slices.miginstances gives every MIG-backed vGPU of such a GPU (classic ones
  too) the layout groups of its instance and a second counter set per instance that holds it to one
  type. Where those groups cannot be exact (an instance in more than two layouts) the GPU falls back to
  group `mig-vgpu-<type>`: one time-sliced MIG-backed type per GPU, alone, exact for that type and never
  promising a mix the GPU cannot run.

The device `memory` capacity is the framebuffer the VM gets (the guide's figure).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from driver.model.hardware import MigProfile, VgpuProfile
from driver.model.inventory import Gpu, MdevType
from driver.slices.common import (
    GROUP_MIG_VGPU, GROUP_VGPU, RenderContext, consumption, device, i, s, static_counters,
)
from driver.slices.gpucounters import fits_layout, instance_share, placement_counters
from driver.slices.miginstances import (
    INSTANCE_COUNTER, InstanceLayout, instance_counter_set, instance_group,
)
from driver.slices.names import mib_quantity, profile_label


@dataclass(frozen=True)
class OfferedType:
    """A vGPU type of this GPU's board that the host offers, and how many instances it can hold."""

    profile: VgpuProfile
    mdev: MdevType
    slots: int | None  # SR-IOV VFs offering it (one vGPU each); None when offered on the PF (pre-Ampere)

    def count(self, mixed_size: bool) -> int:
        """Time-sliced instances to publish: the guide's maximum for the mode (equal-size: one type per
        GPU; mixed-size: types of different sizes together, where most boards hold fewer small vGPUs),
        capped by the VFs that offer the type."""
        limit = self.profile.instances(mixed_size)
        return limit if self.slots is None else min(limit, self.slots)


# NVIDIA's type names end in the series letter: C (compute) or, MIG-backed, C plus the GPU instance's
# attribute (vgpu-device-manager ParseVGPUType: ME, NOME, MEALL, GFX for +me, -me, +me.all, +gfx).
_COMPUTE_SERIES = re.compile(r"\dC(?:ME|NOME|MEALL|GFX)?$", re.IGNORECASE)


def is_graphics_type(name: str, board_prefixes: set[str]) -> bool:
    """`T4-2B4`, `L40S-12Q`, `A40-4A` on their own board: a vGPU type of another series than C."""
    prefix, _, rest = name.strip().partition("-")
    return prefix.upper() in board_prefixes and bool(rest) and not _COMPUTE_SERIES.search(rest)


def offered_types(gpu: Gpu) -> tuple[list[OfferedType], list[str]]:
    """Offered types of the GPU's board in table order, plus a warning per unknown offered type
    (graphics-series types of this board are not published and not warned about)."""
    by_name = {p.name.upper(): p for p in gpu.model.vgpu_profiles}
    board_prefixes = {p.name.split("-", 1)[0].upper() for p in gpu.model.vgpu_profiles}
    found: dict[str, OfferedType] = {}
    warnings = []
    for mdev in gpu.mdev_types:
        profile = by_name.get(mdev.profile.upper())
        if profile is None and is_graphics_type(mdev.profile, board_prefixes):
            continue
        if profile is None:
            warnings.append(
                f"gpu-{gpu.index} ({gpu.pci.address}): vGPU type {mdev.type_id} {mdev.name!r} is not a "
                f"vGPU type of {gpu.model.name}{_table_hint(gpu, mdev.profile)}; not published"
            )
            continue
        on_pf = gpu.pci.address in mdev.parents or not mdev.parents
        found.setdefault(profile.name, OfferedType(profile, mdev, None if on_pf else len(mdev.parents)))
    order = [p.name for p in gpu.model.vgpu_profiles]
    return [found[n] for n in order if n in found], warnings


def _table_hint(gpu: Gpu, profile: str) -> str:
    """Why a type is not this board's: another board's name, or a name this board's table lacks."""
    prefixes = sorted({p.name.split("-", 1)[0] for p in gpu.model.vgpu_profiles})
    board = f"10de:{gpu.model.device_id:04x}"
    if not prefixes:
        return f" ({board} has no vGPU table)"
    if profile.split("-", 1)[0].upper() in {p.upper() for p in prefixes}:
        return f" (not in the vGPU table of {board})"
    return f" (this board's types are {', '.join(p + '-*' for p in prefixes)})"


# One vGPU per SR-IOV VF (Ampere and later): a counter of the GPU's VFs, one per vGPU device, when the
# VFs are fewer than the vGPUs the other counters let co-exist.
VF_COUNTER = "vgpu-vfs"


def vf_slots(gpu: Gpu, offered: list[OfferedType], mixed: bool,
             instances: InstanceLayout | None = None) -> int | None:
    """How many VFs carry this GPU's vGPU types, when that number can bind; else None.

    Per-type caps already hold one type to its VFs; what they miss is types that co-exist: MIG-backed
    types (at most one per compute slice together) and, in mixed-size mode, time-sliced types of
    different sizes (each holds 1/max of the memory, so together at most the largest max). With all VFs
    enabled neither exceeds them (A100: 16 VFs, 10 A100X-4C, 7 MIG slices); an operator who enables
    fewer VFs would otherwise be promised vGPUs that have no VF to run on.
    """
    vfs = {p for o in offered for p in o.mdev.parents if p != gpu.pci.address}
    if not vfs:
        return None  # types on the PF (pre-Ampere): no VF per vGPU
    most = 0
    if any(o.profile.mig_backed for o in offered):
        most = max((p.compute_slices for p in gpu.model.mig_profiles), default=0)
    # A time-sliced MIG-backed type runs its whole maximum at once (DC-1-8C: 12 on an RTX PRO 6000), and
    # with one type per instance the fullest instances of the fullest layout hold the most.
    most = max([most] + [o.profile.max_instances for o in offered if o.profile.time_sliced_mig_backed])
    if instances is not None:
        most = max(most, instances.most_vgpus)
    if mixed:
        most = max([most] + [o.profile.max_instances for o in offered if not o.profile.mig_backed])
    return len(vfs) if len(vfs) < most else None


@dataclass(frozen=True)
class VgpuParent:
    """What every vGPU device of one GPU shares: attributes, parent UUID, counter set (and whether it
    has the VF counter every vGPU device then takes one of), and the GPU-instance layout that keeps its
    MIG-backed vGPUs to one type per instance (None: one time-sliced MIG-backed type per GPU)."""

    common: dict
    parent_uuid: str
    counter_set: str
    vf_counter: bool = False
    instances: InstanceLayout | None = None

    def counters(self, amounts: dict[str, str]) -> dict[str, dict]:
        return static_counters({**amounts, VF_COUNTER: "1"} if self.vf_counter else amounts)


def mixed_size(gpu: Gpu, ctx: RenderContext) -> bool:
    """Time-sliced types of different sizes may share this GPU: the config allows it
    (`vgpuHomogeneous: false`) and the board has NVIDIA's mixed-size mode (the T4 has not)."""
    return not ctx.config.vgpu_homogeneous and gpu.model.vgpu_mixed_size


def vgpu_group(profile: VgpuProfile, homogeneous: bool) -> str:
    if profile.time_sliced_mig_backed:
        return f"{GROUP_MIG_VGPU}-{profile_label(profile.name)}"  # one such type per GPU, alone
    if profile.mig_backed:
        return GROUP_MIG_VGPU
    return f"vgpu-{profile_label(profile.name)}" if homogeneous else GROUP_VGPU


def vgpu_devices(gpu: Gpu, offered: OfferedType, ctx: RenderContext, parent: VgpuParent,
                 groups: list[str] | None, warnings: list[str]) -> list[dict]:
    if offered.profile.framebuffer_mib <= 0 or offered.profile.max_instances <= 0:
        # The catalog never builds such a row; a hand-made model might.
        warnings.append(f"gpu-{gpu.index}: vGPU profile {offered.profile.name} has no framebuffer size or no "
                        "instances; skipped")
        return []
    if offered.profile.mig_backed:
        return _mig_backed(gpu, offered, ctx, parent, groups, warnings)
    return _time_sliced(gpu, offered, ctx, parent, groups)


def _attrs(gpu: Gpu, offered: OfferedType, ctx: RenderContext, parent: VgpuParent, name: str) -> dict:
    return {
        **parent.common,
        "type": s("vgpu"),
        "uuid": s(ctx.uuid(gpu.pci.address, name)),
        "parentUUID": s(parent.parent_uuid),
        "profile": s(offered.profile.name),
        "mdevType": s(offered.mdev.type_id),
    }


def _time_sliced(gpu: Gpu, offered: OfferedType, ctx: RenderContext, parent: VgpuParent,
                 groups: list[str] | None) -> list[dict]:
    model, profile = gpu.model, offered.profile
    # 1/max of the GPU each: max instances of one type fill the counter set exactly, whatever the
    # nominal framebuffer says (H200X-141C's 144384 MiB is more than the 143771 MiB nvidia-smi reports).
    share = {"memory": mib_quantity(model.memory_mib // profile.max_instances),
             "multiprocessors": str(max(1, model.multiprocessors // profile.max_instances))}
    used = parent.counters(share)
    label, devices = profile_label(profile.name), []
    for k in range(offered.count(mixed_size(gpu, ctx))):
        name = f"gpu-{gpu.index}-vgpu-{label}-{k}"
        devices.append(device(name, _attrs(gpu, offered, ctx, parent, name),
                              {"memory": {"value": mib_quantity(profile.framebuffer_mib)}},
                              [consumption(parent.counter_set, used, groups)]))
    return devices


def _mig_backed(gpu: Gpu, offered: OfferedType, ctx: RenderContext, parent: VgpuParent,
                groups: list[str] | None, warnings: list[str]) -> list[dict]:
    model, profile = gpu.model, offered.profile
    mig = model.mig_profile(profile.mig_profile or "")
    if mig is None or not model.mig_capable:
        warnings.append(f"gpu-{gpu.index}: MIG-backed vGPU type {profile.name} needs MIG profile "
                        f"{profile.mig_profile}, which {model.name} does not have; not published")
        return []
    label, devices = profile_label(profile.name), []
    per_instance = profile.vgpus_per_instance
    for start in mig.placements:
        if not fits_layout(model, mig, start):
            continue  # reported once for the MIG profile itself
        # One vGPU per instance takes the placement; several share it, each with its share and no
        # memory slice (their groups keep overlapping instances and other types away, see above).
        used = placement_counters(mig, start) if per_instance == 1 else instance_share(mig, per_instance)
        consumes = _instance_consumption(gpu, profile, mig, start, parent, used, groups)
        suffixes = [f"{start}"] if per_instance == 1 else [f"{start}-{k}" for k in range(per_instance)]
        for suffix in suffixes:
            name = f"gpu-{gpu.index}-vgpu-{label}-{suffix}"
            attrs = {**_attrs(gpu, offered, ctx, parent, name), "migProfile": s(mig.name),
                     "memorySliceStart": i(start), "memorySlices": i(mig.memory_slices)}
            if per_instance > 1:
                attrs["vgpusPerInstance"] = i(per_instance)
            devices.append(device(name, attrs, {"memory": {"value": mib_quantity(profile.framebuffer_mib)}},
                                  consumes))
    return devices


def _instance_consumption(gpu: Gpu, profile: VgpuProfile, mig: MigProfile, start: int, parent: VgpuParent,
                          used: dict[str, str], groups: list[str] | None) -> list[dict]:
    """The consumesCounters of a MIG-backed vGPU on the instance at `start`: the GPU's counter set with
    `groups`, or, with a GPU-instance layout, with its instance's layout groups plus its share of the
    instance's own counter set, where its type is the group."""
    layout = parent.instances
    if layout is None or groups is None:
        return [consumption(parent.counter_set, parent.counters(used), groups)]
    return [
        consumption(parent.counter_set, parent.counters(used), list(layout.groups[(start, mig.memory_slices)])),
        consumption(instance_counter_set(gpu.index, start), static_counters({INSTANCE_COUNTER: layout.share(profile)}),
                    [instance_group(profile)]),
    ]
