"""Driver-config `hardware:` overrides: additions, field overrides, inheritance, and every error path."""

from __future__ import annotations

import pytest

from driver.errors import ConfigError
from driver.hardware import load_catalog
from driver.hardware.merge import deep_merge, resolve_inherits


def test_deep_merge_rules() -> None:
    base = {"a": 1, "m": {"x": 1, "y": 2}, "l": [1, 2]}
    assert deep_merge(base, {"m": {"y": 3, "z": 4}, "l": [9], "a": None}) == {"m": {"x": 1, "y": 3, "z": 4}, "l": [9]}
    assert base == {"a": 1, "m": {"x": 1, "y": 2}, "l": [1, 2]}  # inputs untouched


def test_inherits_list_applies_in_order_then_self() -> None:
    entries = {"a": {"v": 1, "w": 1}, "b": {"v": 2}, "c": {"inherits": ["a", "b"], "x": 3}}
    assert resolve_inherits(entries, "t")["c"] == {"v": 2, "w": 1, "x": 3}


def test_add_simulated_model_inheriting_an_existing_one() -> None:
    catalog = load_catalog({
        "gpus": {
            "a100-sim": {
                "inherits": "a100-40gb",
                "device_id": 0xBEEF,
                "product_name": "Simulated A100",
                "vgpu": None,  # null deletes the inherited vGPU table
            }
        }
    })
    sim = catalog.gpu(0xBEEF)
    assert sim.name == "a100-sim" and sim.product_name == "Simulated A100"
    assert sim.mig_profiles == catalog.gpu(0x20B0).mig_profiles
    assert sim.vgpu_profiles == ()
    assert catalog.gpu(0x20B0) is not None  # the original stays


def test_override_field_of_existing_model() -> None:
    catalog = load_catalog({"gpus": {"t4": {"memory_mib": 15360, "vgpu": {"profiles": ["15C", "5C"], "board_gb": 15}}}})
    t4 = catalog.gpu(0x1EB8)
    assert t4.memory_mib == 15360
    assert [(p.name, p.max_instances) for p in t4.vgpu_profiles] == [("T4-15C", 1), ("T4-5C", 3)]


def test_new_layout_and_explicit_vgpu_profiles() -> None:
    catalog = load_catalog({
        "mig_layouts": {"2-slice": {"memory_slices": 2, "shapes": {"1g": {"compute_slices": 1, "memory_slices": 1, "placements": [0, 1]},
                                                                   "2g": {"compute_slices": 2, "memory_slices": 2, "placements": [0]}}}},
        "gpus": {"tiny": {
            "device_id": 0x1234, "product_name": "Tiny", "architecture": "Test", "memory_mib": 2048,
            "multiprocessors": 4, "copy_engines": 2,
            "mig": {"layout": "2-slice", "profiles": {"1g.1gb": {"shape": "1g", "sms": 2, "mib": 1024, "ce": 1},
                                                       "2g.2gb": {"shape": "2g", "sms": 4, "mib": 2048, "ce": 2}}},
            "vgpu": {"profiles": [{"name": "Tiny-1C", "framebuffer_mib": 1024, "max_instances": 2}]},
        }},
        "nics": {"1d0f:efa1": {"name": "efa", "product_name": "Elastic Fabric Adapter"}},
    })
    tiny = catalog.gpu(0x1234)
    assert tiny.mig_memory_slices == 2 and [p.name for p in tiny.mig_profiles] == ["2g.2gb", "1g.1gb"]
    assert tiny.vgpu_profiles[0].name == "Tiny-1C"
    assert catalog.nics[(0x1D0F, 0xEFA1)].name == "efa"


BAD = [
    ({"gpus": {"t4": {"memry_mib": 1}}}, "hardware.gpus.t4: unknown field(s) ['memry_mib']"),
    ({"gpus": {"t4": {"memory_mib": "lots"}}}, "hardware.gpus.t4.memory_mib: must be an integer"),
    ({"gpus": {"t4": {"memory_mib": 0}}}, "hardware.gpus.t4.memory_mib: must be >= 1"),
    ({"gpus": {"x": {"inherits": "t4", "device_id": 0x1EB8}}}, "hardware.gpus.x.device_id: 0x1eb8 already used by model 't4'"),
    ({"gpus": {"x": {"inherits": "nope"}}}, "hardware.gpus.x.inherits: unknown model 'nope'"),
    ({"gpus": {"x": {"inherits": "y"}, "y": {"inherits": "x"}}}, "inheritance cycle"),
    ({"gpus": {"x": {"inherits": "t4"}}}, "hardware.gpus.x.device_id"),  # duplicate of t4's ID
    ({"gpus": {"x": {"device_id": 0x9999}}}, "hardware.gpus.x.product_name: required field missing"),
    ({"gpus": {"x": {"device_id": 0x10000, "product_name": "p"}}}, "hardware.gpus.x.device_id: must be in [0, 65535]"),
    ({"gpus": {"x": "text"}}, "hardware.gpus.x: must be a mapping"),
    ({"gpus": {"a100-40gb": {"mig": {"layout": "9-slice"}}}}, "hardware.gpus.a100-40gb.mig.layout: unknown MIG layout '9-slice'"),
    ({"gpus": {"a100-40gb": {"mig": {"profiles": {"1g.5gb": {"shape": "5g"}}}}}},
     "hardware.gpus.a100-40gb.mig.profiles.1g.5gb.shape: unknown shape '5g'"),
    ({"gpus": {"a100-40gb": {"mig": {"profiles": {"1g.5gb": {"sms": 500}}}}}},
     "hardware.gpus.a100-40gb.mig.profiles.1g.5gb.sms: 500 exceeds the GPU's multiprocessors (108)"),
    ({"gpus": {"a100-40gb": {"mig": {"profiles": {"1g.5gb": {"colour": 1}}}}}},
     "hardware.gpus.a100-40gb.mig.profiles.1g.5gb: unknown field(s) ['colour']"),
    ({"mig_layouts": {"8-slice": {"shapes": {"2g": {"placements": [0, 4, 2]}}}}},
     "hardware.mig_layouts.8-slice.shapes.2g.placements: must be strictly increasing"),
    ({"mig_layouts": {"8-slice": {"shapes": {"2g": {"placements": [0, 7]}}}}},
     "hardware.mig_layouts.8-slice.shapes.2g.placements: start 7 + 2 memory slice(s) exceeds the 8 memory slices"),
    ({"mig_layouts": {"8-slice": {"shapes": {"2g": {"placements": []}}}}}, "placements: must be a non-empty list"),
    ({"gpus": {"t4": {"vgpu": {"profiles": ["16Q"]}}}}, "hardware.gpus.t4.vgpu.profiles[0]: '16Q' is not a C-series suffix"),
    ({"gpus": {"t4": {"vgpu": {"profiles": ["32C"], "board_gb": 16}}}},
     "hardware.gpus.t4.vgpu.profiles[0]: 32C framebuffer exceeds board_gb 16"),
    ({"gpus": {"t4": {"vgpu": {"profiles": ["32C"]}}}}, "hardware.gpus.t4.vgpu.board_gb: required field missing"),
    ({"gpus": {"t4": {"vgpu": {"prefix": None, "profiles": ["4C"], "board_gb": 16}}}},
     "hardware.gpus.t4.vgpu.prefix: required field missing"),
    ({"gpus": {"t4": {"vgpu": {"profiles": ["4C", "4C"], "board_gb": 16}}}}, "duplicate vGPU profile names"),
    ({"gpus": {"t4": {"vgpu": {"profiles": [{"type": "4C", "framebuffer_mib": 4096, "max_instances": 4,
                                             "max_mixed": 5}]}}}},
     "hardware.gpus.t4.vgpu.profiles[0].max_mixed: 5 is more than max_instances 4"),
    ({"gpus": {"t4": {"vgpu": {"profiles": [{"type": "4C", "framebuffer_mib": 4096, "max_instances": 4,
                                             "max_mixed": 0}]}}}},
     "hardware.gpus.t4.vgpu.profiles[0].max_mixed: must be >= 1"),
    ({"gpus": {"t4": {"vgpu": {"mixed_size": "no"}}}}, "hardware.gpus.t4.vgpu.mixed_size: expected true or false"),
    ({"gpus": {"a30": {"vgpu": {"mig_backed": [{"type": "1-6C", "mig": "1g.6gb", "framebuffer_mib": 6144,
                                                "max_instances": 4, "max_mixed": 4}]}}}},
     "hardware.gpus.a30.vgpu.mig_backed[0]: unknown field(s) ['max_mixed']"),
    ({"gpus": {"t4": {"vgpu": {"profiles": [{"name": "T4-X", "framebuffer_mib": 16384, "max_instances": 2}]}}}},
     "hardware.gpus.t4.vgpu.profiles[0]: 2 x 16384 MiB exceeds the board's vGPU framebuffer (16384 MiB)"),
    ({"gpus": {"x": {"device_id": 0x9998, "product_name": "X", "architecture": "A", "memory_mib": 1024,
                     "multiprocessors": 1, "vgpu": {"profiles": [{"name": "X-2C", "framebuffer_mib": 2048,
                                                                 "max_instances": 1}]}}}},
     "hardware.gpus.x.vgpu.profiles[0]: 1 x 2048 MiB exceeds the GPU's memory_mib (1024 MiB)"),
    ({"gpus": {"t4": {"vgpu": {"profiles": [{"type": "4C", "name": "T4-4C", "framebuffer_mib": 1, "max_instances": 1}]}}}},
     "hardware.gpus.t4.vgpu.profiles[0]: set exactly one of type"),
    ({"gpus": {"t4": {"vgpu": {"profiles": [{"type": "4C", "framebuffer_mib": 1, "max_instances": 1, "mig": "1g"}]}}}},
     "hardware.gpus.t4.vgpu.profiles[0]: unknown field(s) ['mig']"),
    ({"gpus": {"t4": {"vgpu": {"mig_backed": [{"type": "1-4C", "mig": "1g.4gb", "framebuffer_mib": 4096, "max_instances": 1}]}}}},
     "hardware.gpus.t4.vgpu.mig_backed[0].mig: '1g.4gb' is not a MIG profile of this GPU; known: none"),
    ({"gpus": {"a100-40gb": {"vgpu": {"mig_backed": [{"type": "1-5C", "mig": "1g.5gb", "framebuffer_mib": 5120, "max_instances": 0}]}}}},
     "hardware.gpus.a100-40gb.vgpu.mig_backed[0].max_instances: must be >= 1, got 0"),
    ({"gpus": {"a100-40gb": {"vgpu": {"mig_backed": [{"type": "1-5C", "framebuffer_mib": 5120, "max_instances": 1}]}}}},
     "hardware.gpus.a100-40gb.vgpu.mig_backed[0].mig: required field missing"),
    ({"gpus": {"a100-40gb": {"vgpu": {"mig_backed": ["1-5C"]}}}}, "hardware.gpus.a100-40gb.vgpu.mig_backed[0]: must be a mapping"),
    ({"gpus": {"a100-40gb": {"vgpu": {"mig_backed": [{"type": "7-80C", "mig": "7g.40gb", "framebuffer_mib": 81920, "max_instances": 1}]}}}},
     "hardware.gpus.a100-40gb.vgpu.mig_backed[0]: 81920 MiB exceeds the board's vGPU framebuffer (40960 MiB)"),
    ({"gpus": {"t4": {"vgpu": {"mig_backed": "x"}}}}, "hardware.gpus.t4.vgpu.mig_backed: must be a list"),
    ({"gpus": {"t4": {"source": []}}}, "hardware.gpus.t4.source: must name at least one source"),
    ({"gpus": {"t4": {"source": [3]}}}, "hardware.gpus.t4.source: must be a non-empty string"),
    ({"gpus": {"t4": {"unconfirmed": 1}}}, "hardware.gpus.t4.unconfirmed: must be a non-empty string"),
    ({"sources": {"lab": ""}}, "hardware.sources.lab: must be a non-empty string"),
    ({"sources": ["lab"]}, "hardware.sources: must be a mapping, got list"),
    ({"nics": {"mellanox": {"name": "x", "product_name": "y"}}}, "hardware.nics.mellanox: key must be '<vendor>:<device>'"),
    ({"nics": {"15b3:abcd": {"name": "x"}}}, "hardware.nics.15b3:abcd.product_name: required field missing"),
    ({"gpu": {}}, "hardware: unknown section(s) ['gpu']"),
    ({"gpus": ["t4"]}, "hardware.gpus: must be a mapping, got list"),
    ({"gpus": {1: {}}}, "hardware.gpus: keys must be strings, got 1"),
    ({"nics": {0x15b3: {}}}, "hardware.nics: keys must be strings, got 5555"),
    ({"gpus": {"a16": {"subsystem": "14a9"}}}, "hardware.gpus.a16.subsystem: '14a9' is not a '<vendor>:<device>' subsystem"),
    ({"gpus": {"a16": {"subsystem": 0x14A9}}}, "hardware.gpus.a16.subsystem: 5289 is not a '<vendor>:<device>'"),
    ({"gpus": {"a16": {"subsystem": []}}}, "hardware.gpus.a16.subsystem: must name at least one"),
    ({"gpus": {"a16": {"subsystem": ["10de:14a9", "10DE:14A9"]}}}, "hardware.gpus.a16.subsystem: duplicate subsystem"),
    ({"gpus": {"a2x": {"inherits": "a2"}}},
     "hardware.gpus.a2x.subsystem: 0x25b6 with subsystem 10de:157e already used by model 'a2'"),
    # Time-sliced MIG-backed rows: per_instance vGPUs on every placement make the guide's maximum.
    ({"gpus": {"a30": {"vgpu": {"mig_backed": [{"type": "1-3C", "mig": "1g.6gb", "framebuffer_mib": 3072,
                                                "max_instances": 9, "per_instance": 2}]}}}},
     "hardware.gpus.a30.vgpu.mig_backed[0].per_instance: 2 vGPUs on each of the 4 GPU instances of MIG profile "
     "1g.6gb make 8, not max_instances 9"),
    ({"gpus": {"a30": {"vgpu": {"mig_backed": [{"type": "1-3C", "mig": "1g.6gb", "framebuffer_mib": 3072,
                                                "max_instances": 8, "per_instance": 0}]}}}},
     "hardware.gpus.a30.vgpu.mig_backed[0].per_instance: must be >= 1, got 0"),
    ({"gpus": {"a30": {"vgpu": {"profiles": [{"type": "3C", "framebuffer_mib": 3072, "max_instances": 8,
                                             "per_instance": 2}]}}}},
     "hardware.gpus.a30.vgpu.profiles[0]: unknown field(s) ['per_instance']"),
]


@pytest.mark.parametrize(("overrides", "message"), BAD, ids=[m[:50] for _, m in BAD])
def test_bad_overrides_name_model_and_field(overrides, message) -> None:
    with pytest.raises(ConfigError) as info:
        load_catalog(overrides)
    assert message in str(info.value)


def test_overrides_cite_sources_by_key_or_in_prose() -> None:
    catalog = load_catalog({
        "sources": {"lab": "our lab's nvidia-smi capture, 2026-05"},
        "gpus": {"t4": {"source": ["lab", "vendor sheet"], "unconfirmed": "engine counts guessed",
                        "vgpu": {"profiles": [{"type": "2C", "framebuffer_mib": 2048, "max_instances": 8,
                                               "source": "lab"}]}}},
    })
    t4 = catalog.gpu(0x1EB8)
    assert t4.source == "our lab's nvidia-smi capture, 2026-05; vendor sheet"
    assert [(v.name, v.source) for v in t4.vgpu_profiles] == [("T4-2C", "our lab's nvidia-smi capture, 2026-05")]
    from driver.hardware.catalog import unconfirmed_rows

    assert "t4: engine counts guessed" in unconfirmed_rows(catalog)


def test_unconfirmed_rows_are_one_line_per_model_with_equal_reasons_together() -> None:
    from driver.hardware.catalog import unconfirmed_rows

    catalog = load_catalog({"gpus": {"a30": {
        "unconfirmed": "lab board",
        "mig": {"profiles": {"1g.6gb": {"unconfirmed": "guessed"}, "2g.12gb": {"unconfirmed": "guessed"},
                             "4g.24gb": {"unconfirmed": "other"}}},
        "vgpu": {"profiles": [{"type": "4C", "framebuffer_mib": 4096, "max_instances": 6, "unconfirmed": "max?"}]},
    }}})
    (row,) = [r for r in unconfirmed_rows(catalog) if r.startswith("a30:")]
    assert row == "a30: lab board; MIG 4g.24gb: other; MIG 2g.12gb, 1g.6gb: guessed; vGPU A30-4C: max?"


def test_mig_backed_rows_in_a_config() -> None:
    catalog = load_catalog({"gpus": {"a30": {"vgpu": {"profiles": [], "mig_backed": [
        {"name": "Lab-1-6C", "mig": "1g.6gb", "framebuffer_mib": 6144, "max_instances": 4, "unconfirmed": "lab"}]}}}})
    (row,) = catalog.gpu(0x20B7).vgpu_profiles
    assert (row.name, row.mig_profile, row.mig_backed, row.unconfirmed) == ("Lab-1-6C", "1g.6gb", True, "lab")


def test_time_sliced_mig_backed_rows_in_a_config() -> None:
    """Several vGPUs on one GPU instance (NVIDIA's time-sliced MIG-backed mode), here on an A30."""
    catalog = load_catalog({"gpus": {"a30": {"vgpu": {"profiles": [], "mig_backed": [
        {"name": "Lab-1-3C", "mig": "1g.6gb", "framebuffer_mib": 3072, "max_instances": 8, "per_instance": 2},
        {"name": "Lab-1-6C", "mig": "1g.6gb", "framebuffer_mib": 6144, "max_instances": 4}]}}}})
    shared, alone = catalog.gpu(0x20B7).vgpu_profiles
    assert (shared.vgpus_per_instance, shared.time_sliced_mig_backed) == (2, True)
    assert (alone.vgpus_per_instance, alone.time_sliced_mig_backed) == (1, False)


def test_overrides_must_be_a_mapping() -> None:
    with pytest.raises(ConfigError, match="hardware: must be a mapping"):
        load_catalog(["gpus"])  # type: ignore[arg-type]


def test_subsystem_variants_in_a_config() -> None:
    """An OEM board of a shared device ID gets its own model by subsystem; a plain model of the same
    device ID becomes the fallback for every other subsystem."""
    catalog = load_catalog({"gpus": {
        "a16-oem": {"inherits": "a16", "subsystem": ["1028:1234", "103c:1234"], "product_name": "OEM A16"},
        "ga107-other": {"inherits": "_ga107", "product_name": "Some GA107 board"},
    }})
    assert catalog.gpu(0x25B6, (0x1028, 0x1234)).product_name == "OEM A16"
    assert catalog.gpu(0x25B6, (0x103C, 0x1234)).product_name == "OEM A16"
    assert catalog.gpu(0x25B6, (0x10DE, 0x14A9)).product_name == "NVIDIA A16"
    assert catalog.gpu(0x25B6, (0x10DE, 0x0001)).product_name == "Some GA107 board"
    assert catalog.gpu(0x25B6).product_name == "Some GA107 board"
    assert [m.name for m in catalog.variants_of(0x25B6)] == ["a16-oem", "a16-oem", "a16", "a2"]
    assert sum(m.name == "a16-oem" for m in catalog.models()) == 1
