"""A physical GPU's counter set and what one MIG placement takes from it.

The counter set is the GPU's "bag of resources" (KEP-4815): memory (as nvidia-smi reports it),
multiprocessors, the engine counts and one counter per MIG memory slice, so counters alone forbid two
placements that share a memory slice. Kept apart from the device builders because MIG devices and
MIG-backed vGPUs consume exactly the same amounts for the same placement.
"""

from __future__ import annotations

from driver.model.hardware import GpuModel, MigProfile
from driver.slices.names import mib_quantity

# Engine dimensions: (counter name, GpuModel/MigProfile attribute).
ENGINES = (
    ("copy-engines", "copy_engines"),
    ("decoders", "decoders"),
    ("encoders", "encoders"),
    ("jpeg-engines", "jpeg_engines"),
    ("ofa-engines", "ofa_engines"),
)


def counter_set_name(gpu_index: int) -> str:
    return f"gpu-{gpu_index}-counters"


def memory_slice_counter(k: int) -> str:
    return f"memory-slice-{k}"


def _engine_counters(model: GpuModel) -> list[str]:
    """Engine counters worth publishing: the GPU has some, or some MIG profile needs some."""
    names = []
    for counter, attr in ENGINES:
        if getattr(model, attr) > 0 or any(getattr(p, attr) > 0 for p in model.mig_profiles):
            names.append(counter)
    return names


def gpu_counters(model: GpuModel) -> dict[str, str]:
    """Counter name -> total quantity of one GPU of this model."""
    counters = {"memory": mib_quantity(model.memory_mib), "multiprocessors": str(model.multiprocessors)}
    attr_of = dict(ENGINES)
    for counter in _engine_counters(model):
        counters[counter] = str(getattr(model, attr_of[counter]))
    if model.mig_capable:
        for k in range(model.mig_memory_slices):
            counters[memory_slice_counter(k)] = "1"
    return counters


def placement_counters(profile: MigProfile, start: int) -> dict[str, str]:
    """What the MIG placement of `profile` at memory slice `start` takes from its GPU's counter set."""
    used = {"memory": mib_quantity(profile.memory_mib), "multiprocessors": str(profile.multiprocessors)}
    for counter, attr in ENGINES:
        if getattr(profile, attr) > 0:
            used[counter] = str(getattr(profile, attr))
    for k in range(start, start + profile.memory_slices):
        used[memory_slice_counter(k)] = "1"
    return used


def instance_share(profile: MigProfile, vgpus: int) -> dict[str, str]:
    """What one of `vgpus` time-sliced vGPUs on a GPU instance of `profile` takes: its share of the
    instance's memory, SMs and engines, rounded down so that all of them together never take more
    than the instance, and no memory slice (several of them share the instance's slices)."""
    used = {"memory": mib_quantity(profile.memory_mib // vgpus)}
    for counter, attr in (("multiprocessors", "multiprocessors"), *ENGINES):
        if getattr(profile, attr) // vgpus > 0:
            used[counter] = str(getattr(profile, attr) // vgpus)
    return used


def fits_layout(model: GpuModel, profile: MigProfile, start: int) -> bool:
    return 0 <= start and start + profile.memory_slices <= model.mig_memory_slices
