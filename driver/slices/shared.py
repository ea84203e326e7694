"""Shared GPU devices (time-slicing, MPS): many claims on one GPU, never more memory than it has.

Each is one `allowMultipleAllocations` device with a consumable `memory` capacity (its shares sum to at
most the GPU's memory) that also draws from the GPU's counter set, so the GPU cannot promise the same
memory twice:

- `DRASharedConsumableCapacity` on (KEP-5941, newest shape): the device's `memory` counter is
  `valueFrom: {capacityName: <driver>/memory}`: each share takes what its claim asks for from the GPU's
  `memory` counter, which carries a `requestPolicy` (default one step, steps of
  `slices.timeshareMemoryStep`, at most the GPU's memory rounded down to a step).
- off: a static consumption of the whole `memory` counter. The scheduler charges a
  multi-allocatable device's counters for its first share only (upstream), and the device's capacity
  bounds the sum of its shares, so nothing can over-commit: one shared device owns the GPU's memory.

Both also take every multiprocessor statically, so a shared device never fits beside the full GPU, a
MIG partition, a vGPU or the other shared device even where compatibility groups are not enforced.

MPS runs the GPU in EXCLUSIVE_PROCESS compute mode (NVIDIA MPS documentation): MPS and plain
time-slicing cannot serve one GPU together, so they have separate compatibility groups (`timeslicing`,
`mps`) and separate single modes when groups are off.
"""

from __future__ import annotations

from driver.model.inventory import Gpu
from driver.slices.common import GROUP_MPS, GROUP_TIMESLICING, RenderContext, consumption, device, s, static_counters
from driver.slices.config import MODE_MPS, MODE_TIMESLICING
from driver.slices.names import mib_quantity

DEVICE_SUFFIX = {MODE_TIMESLICING: "timeslicing", MODE_MPS: "mps"}
GROUP_OF = {MODE_TIMESLICING: GROUP_TIMESLICING, MODE_MPS: GROUP_MPS}


def memory_policy(gpu: Gpu, ctx: RenderContext) -> dict | None:
    """The requestPolicy of a shared device's memory (and, with valueFrom, of the GPU's memory
    counter); None when the GPU is too small to offer even two steps."""
    step = ctx.config.timeshare_memory_step_mib
    memory = gpu.model.memory_mib
    if memory < 2 * step:
        # The apiserver requires min + step <= capacity; such a GPU is too small to share this way.
        return None
    top = (memory // step) * step  # validRange.max must be min + k*step and <= the capacity
    return {
        "default": mib_quantity(step),
        "validRange": {"min": mib_quantity(step), "max": mib_quantity(top), "step": mib_quantity(step)},
    }


def value_from(ctx: RenderContext) -> bool:
    return ctx.features.shared_consumable_capacity


def shared_devices(gpu: Gpu, kinds: tuple[str, ...], ctx: RenderContext, common: dict, parent: str, cs: str,
                   groups_on: bool) -> list[dict]:
    """One device per kind (`time-slicing`, `mps`) for this GPU; [] when the GPU is too small."""
    policy = memory_policy(gpu, ctx)
    if policy is None or not kinds:
        return []
    model = gpu.model
    if value_from(ctx):
        memory = {"valueFrom": {"capacityName": f"{ctx.driver_name}/memory"}}
    else:
        memory = {"value": mib_quantity(model.memory_mib)}
    used = {"memory": memory, **static_counters({"multiprocessors": str(model.multiprocessors)})}
    devices = []
    for kind in kinds:
        name = f"gpu-{gpu.index}-{DEVICE_SUFFIX[kind]}"
        attrs = {
            **common,
            "type": s("timeshare"),
            "sharing": s(kind),
            "uuid": s(ctx.uuid(gpu.pci.address, name)),
            "parentUUID": s(parent),
        }
        capacity = {"memory": {"value": mib_quantity(model.memory_mib), "requestPolicy": policy}}
        groups = [GROUP_OF[kind]] if groups_on else None
        devices.append(device(name, attrs, capacity, [consumption(cs, used, groups)], allow_multiple=True))
    return devices
