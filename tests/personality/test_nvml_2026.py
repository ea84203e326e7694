"""NVML's view of the boards of late 2026, held against captures and NVIDIA's code, not our output.

Sources (cited in driver/hardware/data/nvml.yaml `sources:`):
- `nvidia-smi mig -lgip` / `-lgipp` / `-lgi` on 8x RTX PRO 6000 Blackwell Server Edition (kubesimplify
  blog, driver 610.43.02): GI profile IDs 14, 21, 47, 65, 67, 5, 35, 64, 66, 0, 32; placements on a
  12-unit grid ({0,3,6,9}:3, {0,6}:6, {0}:12); four 1g.24gb at 0:3, 3:3, 6:3, 9:3.
- `nvidia-smi mig -cgi 19 ...` on a GH200 480GB: MIG 1g.12gb is ID 19, placements 0:1 .. 6:1.
- `nvidia-smi -q` on GH200 480GB hosts: Product Brand NVIDIA, Addressing Mode ATS; gpud's GB200 NVL72
  fixture: Product Brand NVIDIA.
- Compute capabilities: NVIDIA's MIG guide "Supported GPUs", JAX's GPU spec table, public runs.
- go-nvlib v0.12.0 (vendored by NVIDIA's DRA driver at 95932046): getMigMemorySizeGB names profiles;
  its embedded pci.ids (2025.07.11) is what the distroless plugin image names VFIO devices from.
- dra-driver-nvidia-gpu mig.go ToCanonicalName `gpu-%d-mig-%s-%d-%d` (NVML placement start),
  partitions.go memory-slice counters over [Placement.Start, Start+Size), nvlib.go memSliceCount =
  the largest placement size, deviceinfo.go memorySlice<i> capacities.
"""

from __future__ import annotations

import math
from importlib import resources

import pytest
import yaml

from driver.errors import ConfigError
from driver.hardware import load_catalog
from driver.hardware.nvml import load_nvml_table, profile_shape

from .nodes import devices, node

MODELS = {m.name: m for m in load_catalog().models()}
DYNAMIC = {"nvidia": {"featureGates": {"DynamicMIG": True}}}
RTX_PRO_6000 = ("rtx-pro-6000-bse", "rtx-pro-6000-ws", "rtx-pro-6000-maxq")
# nvidia-smi mig -lgip on an RTX PRO 6000 Blackwell Server Edition: profile -> ID.
LGIP_RTX_PRO_6000 = {"1g.24gb": 14, "1g.24gb+me": 21, "1g.24gb+gfx": 47, "1g.24gb+me.all": 65, "1g.24gb-me": 67,
                     "2g.48gb": 5, "2g.48gb+gfx": 35, "2g.48gb+me.all": 64, "2g.48gb-me": 66,
                     "4g.96gb": 0, "4g.96gb+gfx": 32}


def _gi_ids(model_key: str) -> dict[str, int]:
    model, table = MODELS[model_key], load_nvml_table()
    return {p.name: table.gi_profile_id(model, p) for p in model.mig_profiles}


@pytest.mark.parametrize("key", RTX_PRO_6000)
def test_rtx_pro_6000_gi_profile_ids_are_the_lgip_capture(key) -> None:
    assert _gi_ids(key) == LGIP_RTX_PRO_6000


def test_gh200_and_blackwell_sxm_share_the_8_slice_ids() -> None:
    """GH200: 1g.12gb is ID 19 (-cgi 19 capture); the other shapes share the A100/H100 IDs."""
    assert _gi_ids("gh200")["1g.12gb"] == 19
    for key, names in {"gh200": ("1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"),
                       "b200": ("1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb")}.items():
        ids = _gi_ids(key)
        assert [ids[n] for n in names] == [19, 20, 15, 14, 9, 5, 0]


def test_rtx_pro_4500_ids_are_those_of_a_half_and_the_whole_gpu() -> None:
    """Unconfirmed by a capture: a 2-slice GPU's 1g is half of it (ID 5 on A30/A100/RTX PRO 6000), its 2g the whole (0)."""
    assert _gi_ids("rtx-pro-4500") == {"1g.16gb": 5, "1g.16gb+gfx": 35, "1g.16gb+me.all": 64, "1g.16gb-me": 66,
                                       "2g.32gb": 0, "2g.32gb+gfx": 32}


def test_profile_shapes_keep_nvlibs_suffixes() -> None:
    profiles = {p.name: p for p in MODELS["rtx-pro-6000-bse"].mig_profiles}
    assert [profile_shape(profiles[n]) for n in ("1g.24gb-me", "1g.24gb+me.all", "2g.48gb+gfx", "4g.96gb")] == \
        ["1g/1m-me", "1g/1m+me.all", "2g/2m+gfx", "4g/4m"]


@pytest.mark.parametrize(("keys", "cuda"), [
    (("b200", "b200-168gb", "gb200"), "10.0.0"),
    (("b300", "gb300", "gb300-31c3"), "10.3.0"),
    (RTX_PRO_6000 + ("rtx-pro-4500", "rtx-pro-4500-se"), "12.0.0"),
    (("gh200", "gh200-144gb", "h20", "h20b", "h20-nvl16", "h20-141gb", "h100-94gb-sxm5", "h100-96gb"), "9.0.0"),
])
def test_cuda_compute_capabilities(keys, cuda) -> None:
    table = load_nvml_table()
    assert {table.facts(MODELS[k]).cuda_version for k in keys} == {cuda}


def test_grace_gpus_address_host_memory_by_ats_and_others_publish_no_mode() -> None:
    table = load_nvml_table()
    assert {k: table.facts(MODELS[k]).addressing_mode for k in ("gh200", "gh200-144gb", "gb200", "gb300", "b200",
                                                                 "rtx-pro-6000-bse", "h20")} == \
        {"gh200": "ATS", "gh200-144gb": "ATS", "gb200": "ATS", "gb300": "ATS", "b200": None,
         "rtx-pro-6000-bse": None, "h20": None}


def test_brands_of_the_captures() -> None:
    """nvidia-smi -q Product Brand: NVIDIA on GH200 and GB200 -> go-nvlib "Nvidia"."""
    table = load_nvml_table()
    assert {table.facts(MODELS[k]).brand for k in ("gh200", "gb200")} == {"Nvidia"}


def test_vfio_names_come_from_go_nvlibs_embedded_pci_ids() -> None:
    """The plugin image has no pci.ids: go-nvlib v0.12.0's copy names 2901, 2bb5, 2342 as pci.ids does and
    lacks 2909, 230c, 2c3a, 3182, 31c2, 31c3 (nvpci UnknownDeviceString)."""
    table = load_nvml_table()
    names = {k: table.facts(MODELS[k]).pci_name for k in MODELS}
    assert names["b200"] == "GB100 [B200]"
    assert names["rtx-pro-6000-bse"] == "GB202GL [RTX PRO 6000 Blackwell Server Edition]"
    assert names["gh200"] == "GH100 [GH200 120GB / 480GB]"
    assert names["h20-nvl16-230e"] == "GH100 [H20 NVL16]"
    unknown = {MODELS[k].device_id for k, name in names.items() if name == "UNKNOWN_DEVICE"}
    assert unknown == {0x2909, 0x230C, 0x2C3A, 0x3182, 0x31C2, 0x31C3}


def test_go_nvlib_names_every_catalog_mig_profile_as_the_catalog_does() -> None:
    """NVIDIA's device names carry go-nvlib's profile name (getMigMemorySizeGB: the instance's share of
    memory rounded up to eighths, times the GPU's memory rounded up to GiB); mig-parted's configs and
    nvidia-smi use the same names, so the catalog's must come out of it."""
    for model in MODELS.values():
        total = model.memory_mib * 2**20
        for p in model.mig_profiles:
            share = math.ceil(p.memory_mib * 2**20 / total * 8) / 8
            gb = math.floor(share * math.ceil(total / 2**30) + 0.5)
            assert p.name.split(".")[1].startswith(f"{gb}gb"), f"{model.name} {p.name}: go-nvlib says {gb}gb"


def test_rtx_pro_6000_dynamic_mig_names_and_counters_use_nvmls_12_unit_grid() -> None:
    """-lgipp: 1g at {0,3,6,9}:3, 2g at {0,6}:6, 4g at {0}:12, so NVIDIA names gpu-0-mig-1g24gb-14-3 and
    counts twelve memory-slice counters (memSliceCount = the largest placement size)."""
    slices, _ = node("rtxpro6000", DYNAMIC, gpus=1)
    devs = devices(slices)
    mig = sorted(n for n in devs if n.startswith("gpu-0-mig-"))
    assert [n for n in mig if "-14-" in n or "-5-" in n or n.endswith("-0-0")] == \
        ["gpu-0-mig-1g24gb-14-0", "gpu-0-mig-1g24gb-14-3", "gpu-0-mig-1g24gb-14-6", "gpu-0-mig-1g24gb-14-9",
         "gpu-0-mig-2g48gb-5-0", "gpu-0-mig-2g48gb-5-6", "gpu-0-mig-4g96gb-0-0"]
    assert "gpu-0-mig-1g24gb-me-67-9" in mig and "gpu-0-mig-2g48gb-meall-64-6" in mig

    def slices_of(name: str) -> list[int]:
        counters = devs[name]["consumesCounters"][0]["counters"]
        return sorted(int(c.rsplit("-", 1)[1]) for c in counters if c.startswith("memory-slice-"))
    assert slices_of("gpu-0-mig-1g24gb-14-3") == [3, 4, 5]
    assert slices_of("gpu-0-mig-2g48gb-5-6") == list(range(6, 12))
    assert slices_of("gpu-0") == list(range(12))
    counter_set = next(s for s in slices if s["spec"].get("sharedCounters"))["spec"]["sharedCounters"][0]
    assert sorted(c for c in counter_set["counters"] if c.startswith("memory-slice-")) == \
        sorted(f"memory-slice-{i}" for i in range(12))


def test_rtx_pro_6000_static_mig_devices_take_nvidia_smi_starts() -> None:
    """-lgi of four 1g.24gb: placements 0:3, 3:3, 6:3, 9:3; memorySlice<i> over the placement."""
    slices, _ = node("rtxpro6000", {"nvidia": {"migDevices": {0: ["1g.24gb@0", "1g.24gb@3", "2g.48gb@6"]}}}, gpus=1)
    devs = devices(slices)
    assert sorted(n for n in devs if n.startswith("gpu-0")) == \
        ["gpu-0-mig-1g24gb-14-0", "gpu-0-mig-1g24gb-14-3", "gpu-0-mig-2g48gb-5-6"]
    assert sorted(c for c in devs["gpu-0-mig-1g24gb-14-3"]["capacity"] if c.startswith("memorySlice")) == \
        ["memorySlice3", "memorySlice4", "memorySlice5"]


@pytest.mark.parametrize(("mig", "message"), [
    (["1g.24gb@1"], r"1g.24gb cannot start at memory slice 1 on NVIDIA RTX PRO 6000 Blackwell Server Edition "
                    r"\(placements: 0, 3, 6, 9\)"),
    (["2g.48gb@0", "1g.24gb@3"], r"\[1\]: 1g.24gb@3 overlaps 2g.48gb@0 on memory slice 3"),
])
def test_rtx_pro_6000_static_mig_errors_speak_nvmls_units(mig, message) -> None:
    with pytest.raises(ConfigError, match=message):
        node("rtxpro6000", {"nvidia": {"migDevices": {0: mig}}}, gpus=1)


def test_gh200_gpus_publish_ats_and_names_in_memory_slices() -> None:
    slices, _ = node("gh200", DYNAMIC)
    devs = devices(slices)
    assert devs["gpu-0"]["attributes"]["addressingMode"] == {"string": "ATS"}
    assert devs["gpu-0-mig-1g12gb-19-6"]["attributes"]["addressingMode"] == {"string": "ATS"}
    assert "gpu-0-mig-7g96gb-0-0" in devs


def test_a_host_says_its_addressing_mode() -> None:
    """NVIDIA's plugin publishes whatever NVML answers but NOT_SUPPORTED (nvlib.go): HMM on an x86 host with
    HMM, nothing where NVML does not support the call, even on a Grace GPU."""
    slices, _ = node("hgx-b200", {"nvidia": {"addressingMode": "HMM", "migDevices": {0: ["1g.23gb@0"]}}}, gpus=2)
    devs = devices(slices)
    assert devs["gpu-1"]["attributes"]["addressingMode"] == {"string": "HMM"}
    assert devs["gpu-0-mig-1g23gb-19-0"]["attributes"]["addressingMode"] == {"string": "HMM"}
    assert "addressingMode" not in devices(node("hgx-b200", gpus=1)[0])["gpu-0"]["attributes"]
    quiet = devices(node("gh200", {"nvidia": {"addressingMode": "NotSupported"}})[0])
    assert "addressingMode" not in quiet["gpu-0"]["attributes"]


def test_a_bad_addressing_mode_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"nvidia.addressingMode: expected one of HMM, ATS, None, NotSupported, "
                                          r"got 'hmm'"):
        node("gh200", {"nvidia": {"addressingMode": "hmm"}})


@pytest.mark.parametrize("units", [0, -3, True, "3"])
def test_bad_placement_units_name_the_field(units) -> None:
    row = {"cuda": "12.0", "brand": "NvidiaRTX", "pci_name": "x", "bars_mib": [1], "placement_units": units}
    with pytest.raises(ConfigError, match=r"nvidia.models.new-board.placement_units: must be a positive integer"):
        load_nvml_table({"new-board": row})


def test_every_builtin_row_cites_known_sources() -> None:
    raw = yaml.safe_load(resources.files("driver.hardware.data").joinpath("nvml.yaml").read_text(encoding="utf-8"))
    known = set(raw["sources"])
    for key, row in raw["models"].items():
        cited = row["source"] if isinstance(row["source"], list) else [row["source"]]
        assert set(cited) <= known, f"{key}: unknown source(s) {sorted(set(cited) - known)}"
