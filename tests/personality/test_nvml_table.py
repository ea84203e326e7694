"""Every GPU model of the catalog has the NVML facts the nvidia personality publishes, with a source.

Whoever adds a board to driver/hardware/data/gpus.yaml adds its row to nvml.yaml (cuda, brand,
pci_name, bars_mib) and, for a MIG-capable board with a new MIG layout or profile shape, its
GPU-instance profile IDs; this test says which are missing.
"""

from __future__ import annotations

import pytest

from driver.errors import ConfigError
from driver.hardware import load_catalog
from driver.hardware.nvml import NvmlFacts, load_nvml_table, profile_shape
from driver.model.hardware import MigProfile

MODELS = load_catalog().models()


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_each_model_has_nvml_facts_with_a_source(model) -> None:
    table = load_nvml_table()
    facts = table.facts(model)
    assert facts.source, f"{model.name}: its nvml.yaml row names no source"
    for profile in model.mig_profiles:
        assert table.gi_profile_id(model, profile) >= 0


def test_the_gi_profile_ids_nvidia_smi_prints_for_a100_and_h100() -> None:
    """nvidia-smi mig -lgip: 1g 19, 1g+me 20, 1g with two memory slices 15, 2g 14, 3g 9, 4g 5, 7g 0."""
    table = load_nvml_table()
    by_name = {m.name: m for m in MODELS}
    for key, names in {"a100-40gb": ("1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
                       "h100-80gb-sxm5": ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb",
                                          "7g.80gb")}.items():
        model = by_name[key]
        assert [table.gi_profile_id(model, model.mig_profile(n)) for n in names] == [19, 20, 15, 14, 9, 5, 0]


def test_addressable_memory_rounds_the_bars_up_to_a_power_of_two() -> None:
    assert NvmlFacts("x", "8.0", "Nvidia", "n", (65536, 32)).addressable_memory_bytes == 128 * 2**30
    assert NvmlFacts("x", "8.0", "Nvidia", "n", (65536,)).addressable_memory_bytes == 64 * 2**30


def test_profile_shapes() -> None:
    p = MigProfile("1g.5gb+me", 1, 1, 14, 4864, 1, 1, 0, 1, 1, (0,))
    assert profile_shape(p) == "1g/1m+me"


@pytest.mark.parametrize(("row", "message"), [
    ({"cuda": "8", "brand": "Nvidia", "pci_name": "x", "bars_mib": [1]}, r"cuda: expected \"<major>.<minor>\""),
    ({"cuda": "8.0", "brand": "NVIDIA", "pci_name": "x", "bars_mib": [1]}, "brand: 'NVIDIA' is not a brand"),
    ({"cuda": "8.0", "brand": "Nvidia", "pci_name": "x", "bars_mib": []}, "bars_mib: must be a non-empty list"),
    ({"cuda": "8.0", "brand": "Nvidia", "pci_name": "x"}, "bars_mib: required field missing"),
    ({"cuda": "8.0", "brand": "Nvidia", "pci_name": "x", "bars_mib": [1], "color": "green"}, "unknown field"),
])
def test_bad_rows_in_a_driver_config_name_the_field(row, message) -> None:
    with pytest.raises(ConfigError, match=message):
        load_nvml_table({"new-board": row})


def test_a_model_without_facts_is_named() -> None:
    from dataclasses import replace

    model = replace(MODELS[0], name="secret-board")
    with pytest.raises(ConfigError, match="GPU model 'secret-board' .* has no NVML facts"):
        load_nvml_table().facts(model)
