"""One physical GPU -> its counter set and every device that can be carved from it.

Devices (all on the counter set `gpu-N-counters`, see driver.slices.gpucounters):

- `gpu-N`                        the full GPU; consumes every counter fully; group `full`.
- `gpu-N-mig-<profile>-<start>`  one per valid MIG placement; consumes its memory slices and engines;
                                 group `mig` (MIG only co-exists with MIG).
- `gpu-N-vgpu-<type>-<k|start>`  vGPU instances of the types the host offers (driver.slices.vgpu):
                                 time-sliced (group `vgpu-<type>`) and MIG-backed (group `mig-vgpu`;
                                 where several vGPUs share a GPU instance, the instance's layout groups
                                 and a counter set `gpu-N-gi-<start>-counters` per instance, see
                                 driver.slices.miginstances).
- `gpu-N-timeslicing`, `gpu-N-mps` shared devices (driver.slices.shared); groups `timeslicing`, `mps`.

A GPU whose vGPU types sit on fewer SR-IOV VFs than the vGPUs that could otherwise co-exist gets one
more counter, `vgpu-vfs` (one per VF), that every vGPU device takes one of (driver.slices.vgpu.vf_slots).

With compatibility groups off, the scheduler cannot keep modes apart, so only the full GPU and one
configured mode are published (the full GPU excludes every other device through counters). With
partitionable devices off only the full GPU is published, without counters.
"""

from __future__ import annotations

from dataclasses import dataclass

from driver.errors import ConfigError
from driver.model.hardware import MigProfile
from driver.model.inventory import Gpu
from driver.slices.common import (
    GROUP_FULL,
    GROUP_MIG,
    Rendered,
    RenderContext,
    b,
    consumption,
    device,
    i,
    location_attributes,
    s,
    static_counters,
)
from driver.slices.config import MODE_AUTO, MODE_FULL, MODE_MIG, MODE_MPS, MODE_TIMESLICING, VGPU_PREFIX
from driver.slices.gpucounters import counter_set_name, fits_layout, gpu_counters, placement_counters
from driver.slices.miginstances import INSTANCE_COUNTER, instance_counter_set, instance_layout
from driver.slices.names import mib_quantity, profile_label
from driver.slices.shared import memory_policy, shared_devices, value_from
from driver.slices.vgpu import (
    VF_COUNTER,
    OfferedType,
    VgpuParent,
    mixed_size,
    offered_types,
    vf_slots,
    vgpu_devices,
    vgpu_group,
)

__all__ = ["counter_set_name", "gpu_counters", "render_gpu"]


@dataclass(frozen=True)
class _Plan:
    """Which kinds of devices one GPU publishes besides the full GPU."""

    mig: bool
    vgpus: tuple[OfferedType, ...]
    shared: tuple[str, ...]  # time-slicing and/or mps


def _resolve_single_mode(gpu: Gpu, ctx: RenderContext, offered: list[OfferedType]) -> str:
    """The one mode published beside the full GPU when groups are off; ConfigError if impossible."""
    mode, where = ctx.config.mode_for(gpu.index, gpu.model.name, gpu.pci.address)
    if mode == MODE_AUTO:
        return MODE_MIG if gpu.model.mig_capable else MODE_FULL
    if mode == MODE_MIG and not gpu.model.mig_capable:
        raise ConfigError(f"{where}: mode 'mig' for gpu-{gpu.index} ({gpu.model.name}), which does not support MIG")
    if mode.startswith(VGPU_PREFIX):
        wanted = mode[len(VGPU_PREFIX):].upper()
        if not any(o.profile.name.upper() == wanted for o in offered):
            have = ", ".join(o.profile.name for o in offered) or "none"
            raise ConfigError(
                f"{where}: mode {mode!r} for gpu-{gpu.index} ({gpu.model.name}): vGPU type not offered by "
                f"this GPU (available: {have})"
            )
    return mode


def _plan(gpu: Gpu, ctx: RenderContext, offered: list[OfferedType], out: Rendered) -> _Plan:
    if ctx.features.compatibility_groups:
        plan = _Plan(gpu.model.mig_capable, tuple(offered), ctx.config.timeshare_modes)
    else:
        mode = _resolve_single_mode(gpu, ctx, offered)
        wanted = mode[len(VGPU_PREFIX):].upper() if mode.startswith(VGPU_PREFIX) else None
        plan = _Plan(
            mode == MODE_MIG,
            tuple(o for o in offered if o.profile.name.upper() == wanted),
            (mode,) if mode in (MODE_TIMESLICING, MODE_MPS) else (),
        )
    if plan.shared and not ctx.features.consumable_capacity:
        if not ctx.features.compatibility_groups:
            out.warnings.append(f"gpu-{gpu.index}: mode {plan.shared[0]!r} needs DRAConsumableCapacity; "
                                "publishing the full GPU only")
        plan = _Plan(plan.mig, plan.vgpus, ())
    return plan


def render_gpu(gpu: Gpu, ctx: RenderContext) -> Rendered:
    out = Rendered()
    model, prefix = gpu.model, f"gpu-{gpu.index}"
    gpu_uuid = "GPU-" + ctx.uuid(gpu.pci.address, prefix)
    common = {"productName": s(model.product_name), "index": i(gpu.index), **location_attributes(gpu.pci)}
    if model.architecture:
        common["architecture"] = s(model.architecture)
    full_attrs = {
        **common,
        "type": s("gpu"),
        "uuid": s(gpu_uuid),
        "migCapable": b(model.mig_capable),
        "vgpuCapable": b(gpu.vgpu_capable),
    }
    full_capacity = {"memory": {"value": mib_quantity(model.memory_mib)},
                     "multiprocessors": {"value": str(model.multiprocessors)}}
    if not ctx.features.partitionable_devices:
        out.devices.append(device(prefix, full_attrs, full_capacity))
        return out

    offered, warns = offered_types(gpu)
    out.warnings.extend(warns)
    plan = _plan(gpu, ctx, offered, out)
    groups_on = ctx.features.compatibility_groups

    cs = counter_set_name(gpu.index)
    counters = gpu_counters(model)
    counter_set = static_counters(counters)
    policy = memory_policy(gpu, ctx)
    if plan.shared and value_from(ctx) and policy is not None:
        # Shares draw their memory from this counter (valueFrom); the policy rounds what they ask for.
        counter_set["memory"]["requestPolicy"] = policy
    # One type per GPU instance for MIG-backed vGPUs, when groups can say so (driver.slices.miginstances).
    layout = instance_layout(model, [o.profile for o in plan.vgpus]) if groups_on else None
    slots = vf_slots(gpu, list(plan.vgpus), mixed_size(gpu, ctx), layout)
    if slots is not None:
        counter_set[VF_COUNTER] = {"value": str(slots)}  # the full GPU does not take VFs
    out.counter_sets.append({"name": cs, "counters": counter_set})
    for start in layout.starts() if layout is not None else ():
        out.counter_sets.append({"name": instance_counter_set(gpu.index, start),
                                 "counters": static_counters({INSTANCE_COUNTER: str(layout.units)})})

    def groups(name: str) -> list[str] | None:
        return [name] if groups_on else None

    out.devices.append(device(prefix, full_attrs, full_capacity,
                              [consumption(cs, static_counters(counters), groups(GROUP_FULL))]))
    if plan.mig:
        for profile in model.mig_profiles:
            out.devices.extend(_mig_devices(gpu, profile, ctx, common, gpu_uuid, cs, groups(GROUP_MIG), out))
    parent = VgpuParent(common, gpu_uuid, cs, vf_counter=slots is not None, instances=layout)
    for offer in plan.vgpus:
        group = groups(vgpu_group(offer.profile, homogeneous=not mixed_size(gpu, ctx)))
        out.devices.extend(vgpu_devices(gpu, offer, ctx, parent, group, out.warnings))
    out.devices.extend(shared_devices(gpu, plan.shared, ctx, common, gpu_uuid, cs, groups_on))
    return out


def _mig_devices(gpu: Gpu, profile: MigProfile, ctx: RenderContext, common: dict, parent: str, cs: str,
                 groups: list[str] | None, out: Rendered) -> list[dict]:
    model, devices = gpu.model, []
    label = profile_label(profile.name)
    for start in profile.placements:
        if not fits_layout(model, profile, start):
            out.warnings.append(f"gpu-{gpu.index}: MIG profile {profile.name} placement {start} does not fit "
                                f"{model.mig_memory_slices} memory slices of {model.name}; skipped")
            continue
        name = f"gpu-{gpu.index}-mig-{label}-{start}"
        attrs = {
            **common,
            "type": s("mig"),
            "uuid": s("MIG-" + ctx.uuid(gpu.pci.address, name)),
            "parentUUID": s(parent),
            "profile": s(profile.name),
            "memorySliceStart": i(start),
            "memorySlices": i(profile.memory_slices),
        }
        capacity = {"memory": {"value": mib_quantity(profile.memory_mib)},
                    "multiprocessors": {"value": str(profile.multiprocessors)}}
        devices.append(device(name, attrs, capacity,
                              [consumption(cs, static_counters(placement_counters(profile, start)), groups)]))
    return devices
