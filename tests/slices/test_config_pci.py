"""`slices.perGpu` keys may be PCI addresses, typed the way people copy them (nvidia-smi, lspci, upper case)."""

from __future__ import annotations

import pytest
from builders import demo_like

from driver.errors import ConfigError
from driver.features import Features
from driver.slices import SliceConfig, render_pool

NO_GROUPS = Features(compatibility_groups=False)


def _types(config: dict, prefix: str) -> list[str]:
    pool = render_pool(demo_like(), NO_GROUPS, node_name="node-1", driver_name="fake-dra.example.com",
                       config=SliceConfig.from_dict(config))
    return sorted({d["attributes"]["type"]["string"] for n, d in pool.devices().items() if n.startswith(prefix)})


@pytest.mark.parametrize("key", ["0000:08:00.0", "00000000:08:00.0", "0000:08:00.0".upper(), "08:00.0"])
def test_per_gpu_by_pci_address_in_any_typed_form(key):
    # demo_like(): gpu-0 at 0000:07:00.0, gpu-1 at 0000:08:00.0
    assert _types({"perGpu": {key: "vgpu:A100-4C"}}, "gpu-1") == ["gpu", "vgpu"]
    assert _types({"perGpu": {key: "vgpu:A100-4C"}}, "gpu-0") == ["gpu", "mig"]


def test_address_wins_over_index_and_the_error_path_names_the_address():
    cfg = SliceConfig.from_dict({"perGpu": {"1": "full", "0000:08:00.0": "mig"}})
    assert cfg.mode_for(1, "a100-40gb", "0000:08:00.0") == ("mig", "slices.perGpu[0000:08:00.0]")
    assert cfg.mode_for(1, "a100-40gb", "0000:09:00.0") == ("full", "slices.perGpu[1]")


@pytest.mark.parametrize("raw,needle", [
    ({420.0: "mig"}, r"key 420.0 is a number.*quote PCI addresses"),  # YAML's reading of 0000:07:00.0
    ({"0000:07:00": "mig"}, r"invalid key '0000:07:00': expected a GPU index or a PCI address"),
    ({"gpu-zero": "mig"}, r"invalid key 'gpu-zero'"),
])
def test_bad_keys(raw, needle):
    with pytest.raises(ConfigError, match=needle):
        SliceConfig.from_dict({"perGpu": raw})
