"""Any driver-config `hardware:` section either loads into a valid catalog or fails with ConfigError.

Junk values are thrown at every field of the tables; a TypeError/KeyError/AttributeError escaping
load_catalog would surface to users as a traceback instead of a message naming the field.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driver.errors import ConfigError
from driver.hardware import load_catalog

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 70000), st.text(max_size=6), st.floats(allow_nan=False, width=16)
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.text(max_size=5), st.integers(0, 9)), inner, max_size=3),
    ),
    max_leaves=6,
)
GPU_FIELDS = ["device_id", "product_name", "architecture", "memory_mib", "multiprocessors", "copy_engines",
              "decoders", "mig", "vgpu", "inherits", "source", "subsystem"]
PROFILE_FIELDS = ["shape", "sms", "mib", "ce", "dec", "jpeg", "ofa"]


def _check(overrides) -> None:
    try:
        catalog = load_catalog(overrides)
    except ConfigError as exc:
        assert str(exc).startswith("hardware")
        return
    for model in catalog.models():
        for p in model.mig_profiles:
            assert all(s + p.memory_slices <= model.mig_memory_slices for s in p.placements)
            assert p.memory_mib <= model.memory_mib


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(GPU_FIELDS), values, st.sampled_from(["a100-40gb", "t4", "new-gpu"]))
def test_junk_in_any_gpu_field(field, value, model) -> None:
    _check({"gpus": {model: {field: value}}})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PROFILE_FIELDS), values)
def test_junk_in_mig_profile_fields(field, value) -> None:
    _check({"gpus": {"a100-40gb": {"mig": {"profiles": {"1g.5gb": {field: value}}}}}})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["memory_slices", "shapes", "compute_slices", "placements"]), values)
def test_junk_in_layouts(field, value) -> None:
    if field in ("compute_slices", "placements"):
        _check({"mig_layouts": {"8-slice": {"shapes": {"2g": {field: value}}}}})
    else:
        _check({"mig_layouts": {"8-slice": {field: value}}})


@settings(max_examples=60, deadline=None)
@given(values, values)
def test_junk_sections(gpus, nics) -> None:
    _check({"gpus": gpus, "nics": nics})


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(-2, 9), min_size=1, max_size=5), st.integers(1, 8))
def test_placements_are_validated_against_the_slice_count(placements, size) -> None:
    overrides = {"mig_layouts": {"8-slice": {"shapes": {"2g": {"memory_slices": size, "placements": placements}}}}}
    fits = placements == sorted(set(placements)) and all(0 <= p and p + size <= 8 for p in placements)
    try:
        catalog = load_catalog(overrides)
    except ConfigError:
        assert not fits
        return
    assert fits
    assert catalog.gpu(0x20B0).mig_profiles[[p.name for p in catalog.gpu(0x20B0).mig_profiles].index("2g.10gb")].placements == tuple(placements)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.one_of(st.text(max_size=4), st.integers(0, 3)), values, max_size=4),
       st.sampled_from(["top", "gpu", "vgpu", "mig"]))
def test_mixed_key_types_anywhere(junk, where) -> None:
    wrap = {
        "top": lambda j: j,
        "gpu": lambda j: {"gpus": {"t4": j}},
        "vgpu": lambda j: {"gpus": {"t4": {"vgpu": j}}},
        "mig": lambda j: {"gpus": {"a100-40gb": {"mig": j}}},
    }[where]
    _check(wrap(junk))
