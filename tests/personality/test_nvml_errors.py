"""Malformed NVML-fact overrides (`nvidia.models`) and unknown GPU-instance profile IDs fail naming the row and field."""

from __future__ import annotations

from dataclasses import replace

import pytest

from driver.errors import ConfigError
from driver.hardware import load_catalog
from driver.hardware.nvml import load_nvml_table

ROW = {"cuda": "8.0", "brand": "Nvidia", "pci_name": "GA100 [A100 SXM4 40GB]", "bars_mib": [65536, 32]}
MODELS = {m.name: m for m in load_catalog().models()}


@pytest.mark.parametrize(("overrides", "message"), [
    (["a100-40gb"], "nvidia.models: must be a mapping of GPU model key -> NVML facts, got list"),
    ("a100-40gb", "nvidia.models: must be a mapping of GPU model key -> NVML facts, got str"),
    ({"a100-40gb": "8.0"}, "nvidia.models.a100-40gb: must be a mapping, got str"),
    ({"new-board": [ROW]}, "nvidia.models.new-board: must be a mapping, got list"),
    ({"new-board": {**ROW, "pci_name": ""}}, "nvidia.models.new-board.pci_name: must be a non-empty string, got ''"),
    ({"new-board": {**ROW, "pci_name": "  "}}, "nvidia.models.new-board.pci_name: must be a non-empty string, got '  '"),
    ({"new-board": {**ROW, "pci_name": 2330}}, "nvidia.models.new-board.pci_name: must be a non-empty string, got 2330"),
    ({"new-board": {**ROW, "addressing_mode": "ats"}},
     "nvidia.models.new-board.addressing_mode: expected one of HMM, ATS, None, got 'ats'"),
    ({"a100-40gb": {"addressing_mode": False}},  # merged over the built-in row: still named by the override's key
     "nvidia.models.a100-40gb.addressing_mode: expected one of HMM, ATS, None, got False"),
    ({"new-board": {**ROW, "gi_profile_ids": {"1g.5gb": -1}}},
     "nvidia.models.new-board.gi_profile_ids: must map MIG profile names to non-negative integers, got {'1g.5gb': -1}"),
    ({"new-board": {**ROW, "gi_profile_ids": {"1g.5gb": True}}}, "new-board.gi_profile_ids: must map MIG profile names"),
    ({"new-board": {**ROW, "gi_profile_ids": {"1g.5gb": "19"}}}, "new-board.gi_profile_ids: must map MIG profile names"),
    ({"new-board": {**ROW, "gi_profile_ids": []}}, "new-board.gi_profile_ids: must map MIG profile names"),
    ({"new-board": {**ROW, "gi_profile_ids": 0}}, "new-board.gi_profile_ids: must map MIG profile names"),
    ({"new-board": {**ROW, "gi_profile_ids": [19, 20]}},
     "nvidia.models.new-board.gi_profile_ids: must map MIG profile names to non-negative integers, got [19, 20]"),
])
def test_bad_overrides_name_the_row_and_field(overrides, message) -> None:
    with pytest.raises(ConfigError) as err:
        load_nvml_table(overrides)
    assert message in str(err.value)


def test_a_valid_override_loads() -> None:
    """The control for the cases above: the same row with good values is accepted."""
    facts = load_nvml_table({"new-board": {**ROW, "addressing_mode": "ATS", "gi_profile_ids": {"1g.5gb": 19}}}).models
    assert facts["new-board"].addressing_mode == "ATS" and facts["new-board"].gi_profile_ids == {"1g.5gb": 19}


@pytest.mark.parametrize(("change", "message"), [
    # a MIG layout the table has no IDs for (a board with 6 memory slices)
    (lambda m: replace(m, mig_memory_slices=6),
     "GPU model 'a100-40gb': no NVML GPU-instance profile ID for MIG profile '1g.5gb' (shape 1g/1m on 6 memory "
     "slices); add gi_profile_ids"),
    # a profile shape the 8-slice layout lacks (3 compute slices on 1 memory slice)
    (lambda m: replace(m, mig_profiles=tuple(replace(p, compute_slices=3) if p.name == "1g.5gb" else p
                                             for p in m.mig_profiles)),
     "GPU model 'a100-40gb': no NVML GPU-instance profile ID for MIG profile '1g.5gb' (shape 3g/1m on 8 memory "
     "slices)"),
])
def test_a_profile_without_a_gi_profile_id_is_named(change, message) -> None:
    model = change(MODELS["a100-40gb"])
    profile = model.mig_profile("1g.5gb")
    with pytest.raises(ConfigError) as err:
        load_nvml_table().gi_profile_id(model, profile)
    assert message in str(err.value)
    # an explicit ID in the model's row is the way out the message names
    table = load_nvml_table({"a100-40gb": {"gi_profile_ids": {"1g.5gb": 19}}})
    assert table.gi_profile_id(model, profile) == 19
