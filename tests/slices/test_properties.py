"""Property tests: counters + groups alone keep incompatible devices apart, for any selection.

Uses the shared rule implementation (driver.allocator.rules.validate_combination) that the
allocator and the plugin's prepare-time revalidation use, so the slices and the rules agree.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from builders import demo_like
from conftest import fits, memory_slices, of_type, placed

from driver.allocator.rules import validate_combination
from driver.features import Features
from driver.slices import render_pool

DRIVER = "fake-dra.example.com"
POOL = render_pool(demo_like(), Features(), node_name="node-1", driver_name=DRIVER)
NO_GROUPS_POOL = render_pool(demo_like(), Features(compatibility_groups=False), node_name="node-1", driver_name=DRIVER)
GPU0_MIGS = sorted(n for n in of_type(POOL, "mig") if n.startswith("gpu-0-"))
GPU1 = sorted(n for n in POOL.devices() if n == "gpu-1" or n.startswith("gpu-1-"))
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def mode(name: str) -> str:
    kind = POOL.devices()[name]["attributes"]["type"]["string"]
    if kind == "vgpu":
        return "vgpu:" + POOL.devices()[name]["attributes"]["profile"]["string"]
    return kind


@SETTINGS
@given(st.lists(st.sampled_from(GPU0_MIGS), min_size=2, max_size=7, unique=True))
def test_mig_sets_that_fit_never_overlap(names):
    if fits(POOL, names):
        seen: set[str] = set()
        for name in names:
            slices = memory_slices(POOL.devices()[name])
            assert not (seen & slices), names
            seen |= slices


@SETTINGS
@given(st.lists(st.sampled_from(GPU1), min_size=2, max_size=6, unique=True))
def test_accepted_combinations_use_one_mode_per_gpu(names):
    """Whatever validate_combination accepts on one GPU is a single partitioning mode (time-slicing
    and MPS are two modes: MPS runs the GPU in EXCLUSIVE_PROCESS mode), never the full GPU with
    anything else."""
    violations = validate_combination(list(POOL.slices), placed(POOL, names), Features())
    if not violations:
        modes = {POOL.devices()[n]["attributes"].get("sharing", {}).get("string") or mode(n) for n in names}
        assert len(modes) == 1, names
        assert "gpu" not in modes


@SETTINGS
@given(st.lists(st.sampled_from(sorted(NO_GROUPS_POOL.devices())), min_size=2, max_size=6, unique=True))
def test_without_groups_counters_alone_exclude_the_full_gpu(names):
    violations = validate_combination(list(NO_GROUPS_POOL.slices), placed(NO_GROUPS_POOL, names), Features(compatibility_groups=False))
    for index in (0, 1):
        on_gpu = [n for n in names if n == f"gpu-{index}" or n.startswith(f"gpu-{index}-")]
        if f"gpu-{index}" in on_gpu and len(on_gpu) > 1:
            assert violations, names


def test_rules_reject_overlap_and_mode_mixing_with_messages():
    def kinds(names):
        return {v.kind for v in validate_combination(list(POOL.slices), placed(POOL, names), Features())}

    assert kinds(["gpu-0-mig-1g5gb-0", "gpu-0-mig-1g10gb-0"]) == {"counters"}
    assert "groups" in kinds(["gpu-1-mig-1g5gb-0", "gpu-1-vgpu-a100-4c-0"])
    assert "groups" in kinds(["gpu-1-vgpu-a100-4c-0", "gpu-1-vgpu-a100-8c-0"])  # homogeneity rule
    assert kinds(["gpu-0-timeslicing", "gpu-0-mps"]) == {"groups", "counters"}  # never one GPU
    assert kinds(["gpu-0-mig-1g5gb-0", "gpu-0-mig-1g5gb-1", "gpu-1-vgpu-a100-4c-0"]) == set()
