"""One physical GPU -> its counter set and every device that can be carved from it.

The counter set is the GPU's "bag of resources" (KEP-4815): memory, multiprocessors, the engine
counts and one counter per MIG memory slice, so counters alone forbid two MIG placements that
share a memory slice. Devices:

- `gpu-N`                      the full GPU; consumes every counter fully; group `full`.
- `gpu-N-mig-<profile>-<start>` one per valid MIG placement; consumes its memory slices and
                               engines; group `mig` (MIG only co-exists with MIG).
- `gpu-N-vgpu-<profile>-<k>`   vGPU instances for each mdev type of the GPU that names a known
                               profile of its model; consumes framebuffer memory and a pro-rata
                               share of SMs; group `vgpu-<profile>`.
- `gpu-N-timeslicing`, `gpu-N-mps` shared devices (allowMultipleAllocations + consumable memory
                               capacity); they split the SMs so both fit together; group `shared`.

vGPU homogeneity rule (modelled, configurable): NVIDIA's time-sliced vGPU requires every vGPU on
one physical GPU to be the same type on most GPUs (mixed-size mode is opt-in on newer ones), and
the sysfs `available_instances` of the other types drops to 0 once one type is in use. So each
profile gets its own group and two different profiles can never share a GPU. With
`vgpuHomogeneous: false` all profiles share the group `vgpu` and counters alone bound the mix.

With compatibility groups off, the scheduler cannot keep modes apart, so only the full GPU and
one configured mode are published (the full GPU excludes every other device through counters).
With partitionable devices off only the full GPU is published, without counters.
"""

from __future__ import annotations

from driver.errors import ConfigError
from driver.model.hardware import GpuModel, MigProfile, VgpuProfile
from driver.model.inventory import Gpu, MdevType
from driver.slices.common import (
    GROUP_FULL,
    GROUP_MIG,
    GROUP_SHARED,
    GROUP_VGPU,
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
from driver.slices.config import MODE_AUTO, MODE_FULL, MODE_MIG, MODE_TIMESHARE, VGPU_PREFIX
from driver.slices.names import mib_quantity, profile_label, stable_uuid

# Engine dimensions: (counter name, GpuModel/MigProfile attribute).
ENGINES = (
    ("copy-engines", "copy_engines"),
    ("decoders", "decoders"),
    ("encoders", "encoders"),
    ("jpeg-engines", "jpeg_engines"),
    ("ofa-engines", "ofa_engines"),
)
TIMESHARE_DEVICE = {"time-slicing": "timeslicing", "mps": "mps"}


def counter_set_name(gpu_index: int) -> str:
    return f"gpu-{gpu_index}-counters"


def memory_slice_counter(k: int) -> str:
    return f"memory-slice-{k}"


def matched_vgpu_profiles(gpu: Gpu) -> tuple[list[tuple[VgpuProfile, MdevType]], list[str]]:
    """mdev types of the GPU that name a known vGPU profile of its model (table order)."""
    by_name = {p.name.upper(): p for p in gpu.model.vgpu_profiles}
    found: dict[str, tuple[VgpuProfile, MdevType]] = {}
    warnings = []
    for mdev in gpu.mdev_types:
        profile = by_name.get(mdev.profile.upper())
        if profile is None:
            warnings.append(
                f"gpu-{gpu.index} ({gpu.pci.address}): mdev type {mdev.type_id} {mdev.name!r} "
                f"is not a known vGPU profile of {gpu.model.name}; not published"
            )
            continue
        found.setdefault(profile.name, (profile, mdev))
    order = [p.name for p in gpu.model.vgpu_profiles]
    return [found[n] for n in order if n in found], warnings


def _engine_counters(model: GpuModel) -> list[str]:
    """Engine counters worth publishing: the GPU has some, or some MIG profile needs some."""
    names = []
    for counter, attr in ENGINES:
        if getattr(model, attr) > 0 or any(getattr(p, attr) > 0 for p in model.mig_profiles):
            names.append(counter)
    return names


def gpu_counters(model: GpuModel) -> dict[str, str]:
    counters = {"memory": mib_quantity(model.memory_mib), "multiprocessors": str(model.multiprocessors)}
    attr_of = dict(ENGINES)
    for counter in _engine_counters(model):
        counters[counter] = str(getattr(model, attr_of[counter]))
    if model.mig_capable:
        for k in range(model.mig_memory_slices):
            counters[memory_slice_counter(k)] = "1"
    return counters


def _resolve_single_mode(gpu: Gpu, ctx: RenderContext, vgpus: list[tuple[VgpuProfile, MdevType]]) -> str:
    """The one mode published beside the full GPU when groups are off; ConfigError if impossible."""
    mode, where = ctx.config.mode_for(gpu.index, gpu.model.name, gpu.pci.address)
    if mode == MODE_AUTO:
        return MODE_MIG if gpu.model.mig_capable else MODE_FULL
    if mode == MODE_MIG and not gpu.model.mig_capable:
        raise ConfigError(f"{where}: mode 'mig' for gpu-{gpu.index} ({gpu.model.name}), which does not support MIG")
    if mode.startswith(VGPU_PREFIX):
        wanted = mode[len(VGPU_PREFIX):].upper()
        if not any(p.name.upper() == wanted for p, _ in vgpus):
            have = ", ".join(p.name for p, _ in vgpus) or "none"
            raise ConfigError(
                f"{where}: mode {mode!r} for gpu-{gpu.index} ({gpu.model.name}): profile not offered by "
                f"this GPU's mdev types (available: {have})"
            )
    return mode


def render_gpu(gpu: Gpu, ctx: RenderContext) -> Rendered:
    out = Rendered()
    model, prefix = gpu.model, f"gpu-{gpu.index}"
    gpu_uuid = "GPU-" + stable_uuid(ctx.node_name, gpu.pci.address, prefix)
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
    features = ctx.features
    if not features.partitionable_devices:
        out.devices.append(device(prefix, full_attrs, full_capacity))
        return out

    vgpus, warns = matched_vgpu_profiles(gpu)
    out.warnings.extend(warns)
    groups_on = features.compatibility_groups
    if groups_on:
        want_mig, want_vgpu, want_ts = model.mig_capable, [p for p, _ in vgpus], True
    else:
        mode = _resolve_single_mode(gpu, ctx, vgpus)
        want_mig = mode == MODE_MIG
        want_vgpu = [p for p, _ in vgpus if mode.startswith(VGPU_PREFIX) and p.name.upper() == mode[len(VGPU_PREFIX):].upper()]
        want_ts = mode == MODE_TIMESHARE
    if want_ts and not features.consumable_capacity:
        if not groups_on:
            out.warnings.append(f"{prefix}: mode 'timeshare' needs DRAConsumableCapacity; publishing the full GPU only")
        want_ts = False

    cs = counter_set_name(gpu.index)
    counters = gpu_counters(model)
    out.counter_sets.append({"name": cs, "counters": static_counters(counters)})

    def groups(name: str) -> list[str] | None:
        return [name] if groups_on else None

    out.devices.append(device(prefix, full_attrs, full_capacity,
                              [consumption(cs, static_counters(counters), groups(GROUP_FULL))]))
    if want_mig:
        for profile in model.mig_profiles:
            out.devices.extend(_mig_devices(gpu, profile, ctx, common, gpu_uuid, cs, groups(GROUP_MIG), out))
    mdev_of = {p.name: m for p, m in vgpus}
    for profile in want_vgpu:
        group = GROUP_VGPU if not ctx.config.vgpu_homogeneous else f"vgpu-{profile_label(profile.name)}"
        out.devices.extend(_vgpu_devices(gpu, profile, mdev_of[profile.name], ctx, common, gpu_uuid, cs,
                                         groups(group), out))
    if want_ts:
        out.devices.extend(_timeshare_devices(gpu, ctx, common, gpu_uuid, cs, groups(GROUP_SHARED)))
    return out


def _mig_devices(gpu: Gpu, profile: MigProfile, ctx: RenderContext, common: dict, parent: str, cs: str,
                 groups: list[str] | None, out: Rendered) -> list[dict]:
    model, devices = gpu.model, []
    label = profile_label(profile.name)
    for start in profile.placements:
        if start < 0 or start + profile.memory_slices > model.mig_memory_slices:
            out.warnings.append(f"gpu-{gpu.index}: MIG profile {profile.name} placement {start} does not fit "
                                f"{model.mig_memory_slices} memory slices of {model.name}; skipped")
            continue
        name = f"gpu-{gpu.index}-mig-{label}-{start}"
        used = {"memory": mib_quantity(profile.memory_mib), "multiprocessors": str(profile.multiprocessors)}
        for counter, attr in ENGINES:
            if getattr(profile, attr) > 0:
                used[counter] = str(getattr(profile, attr))
        for k in range(start, start + profile.memory_slices):
            used[memory_slice_counter(k)] = "1"
        attrs = {
            **common,
            "type": s("mig"),
            "uuid": s("MIG-" + stable_uuid(ctx.node_name, gpu.pci.address, name)),
            "parentUUID": s(parent),
            "profile": s(profile.name),
            "memorySliceStart": i(start),
            "memorySlices": i(profile.memory_slices),
        }
        capacity = {"memory": {"value": mib_quantity(profile.memory_mib)},
                    "multiprocessors": {"value": str(profile.multiprocessors)}}
        devices.append(device(name, attrs, capacity, [consumption(cs, static_counters(used), groups)]))
    return devices


def _vgpu_devices(gpu: Gpu, profile: VgpuProfile, mdev: MdevType, ctx: RenderContext, common: dict,
                  parent: str, cs: str, groups: list[str] | None, out: Rendered) -> list[dict]:
    model = gpu.model
    if profile.framebuffer_mib <= 0:
        out.warnings.append(f"gpu-{gpu.index}: vGPU profile {profile.name} has no framebuffer size; skipped")
        return []
    count = min(profile.max_instances, model.memory_mib // profile.framebuffer_mib)
    # Time-sliced vGPUs share all SMs; charging a pro-rata share keeps them out of MIG's budget
    # and lets counters alone stop a full GPU from being handed out next to them.
    sm_share = max(1, model.multiprocessors * profile.framebuffer_mib // model.memory_mib)
    used = static_counters({"memory": mib_quantity(profile.framebuffer_mib), "multiprocessors": str(sm_share)})
    label, devices = profile_label(profile.name), []
    for k in range(count):
        name = f"gpu-{gpu.index}-vgpu-{label}-{k}"
        attrs = {
            **common,
            "type": s("vgpu"),
            "uuid": s(stable_uuid(ctx.node_name, gpu.pci.address, name)),
            "parentUUID": s(parent),
            "profile": s(profile.name),
            "mdevType": s(mdev.type_id),
        }
        devices.append(device(name, attrs, {"memory": {"value": mib_quantity(profile.framebuffer_mib)}},
                              [consumption(cs, used, groups)]))
    return devices


def _timeshare_devices(gpu: Gpu, ctx: RenderContext, common: dict, parent: str, cs: str,
                       groups: list[str] | None) -> list[dict]:
    model, kinds = gpu.model, ctx.config.timeshare_modes
    if not kinds:
        return []
    step = ctx.config.timeshare_memory_step_mib
    if model.memory_mib < 2 * step:
        # The apiserver requires min + step <= capacity; such a GPU is too small to share this way.
        return []
    top = (model.memory_mib // step) * step  # validRange.max must be min + k*step and <= the capacity
    policy = {
        "default": mib_quantity(step),
        "validRange": {"min": mib_quantity(step), "max": mib_quantity(top), "step": mib_quantity(step)},
    }
    # The shared devices split the SMs so they fit together and a full GPU never fits beside them.
    sms = model.multiprocessors
    shares = [sms // len(kinds)] * len(kinds)
    shares[0] += sms - sum(shares)
    devices = []
    for kind, share in zip(kinds, shares):
        name = f"gpu-{gpu.index}-{TIMESHARE_DEVICE[kind]}"
        attrs = {
            **common,
            "type": s("timeshare"),
            "sharing": s(kind),
            "uuid": s(stable_uuid(ctx.node_name, gpu.pci.address, name)),
            "parentUUID": s(parent),
        }
        capacity = {"memory": {"value": mib_quantity(model.memory_mib), "requestPolicy": policy}}
        used = static_counters({"multiprocessors": str(max(share, 1))})
        devices.append(device(name, attrs, capacity, [consumption(cs, used, groups)], allow_multiple=True))
    return devices
