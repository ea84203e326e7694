"""Real hosts (tests/hardware_truth/hosts.py, built by our own sysfs writer) against what a driver author
expects: devices per type and GPU, memory as nvidia-smi reports it, compatibility groups, what must not be
published, no noise in the warnings, and slices the 1.37 apiserver accepts.
"""

from __future__ import annotations

from collections import Counter

import pytest
import truth_hosts as hosts
from truth import (
    FEATURES, GATE_MIXES, MiB, all_warnings, attr, by_type, fits_together, groups, per_gpu_profiles,
    published_addresses, qty, render, validate_137,
)

from driver.features import Features

GiB = 1024 * MiB

# Placements per MIG profile of the 8-slice GA100/GH100 layout (MIG user guide placement diagrams):
# 1g: 7 (starts 0-6), 1g+me: 7 starts (one at a time: a single OFA), 1g.20gb/1g-2m: 4, 2g: 3, 3g: 2,
# 4g: 1, 7g: 1.
H100_MIG = {"1g.10gb": 7, "1g.10gb+me": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1}
A100_80_MIG = dict(H100_MIG)

# C-series maxima per GPU from NVIDIA's vGPU guide (Virtual GPU Types for Supported GPUs).
A100DX_TS = {"A100DX-4C": 20, "A100DX-8C": 10, "A100DX-10C": 8, "A100DX-16C": 5, "A100DX-20C": 4,
             "A100DX-40C": 2, "A100DX-80C": 1}
A100DX_MIG_BACKED = {"A100DX-1-10C": 7, "A100DX-1-10CME": 7, "A100DX-2-20C": 3, "A100DX-3-40C": 2,
                     "A100DX-4-40C": 1, "A100DX-7-80C": 1}  # one device per placement of the MIG profile
H100XM_TS = {f"H100XM-{t}": n for t, n in hosts.H100XM_TS}
L40S_C = {"L40S-48C": 1, "L40S-24C": 2, "L40S-16C": 3, "L40S-12C": 4, "L40S-8C": 6, "L40S-6C": 8, "L40S-4C": 12}
L4_C = {"L4-24C": 1, "L4-12C": 2, "L4-8C": 3, "L4-6C": 4, "L4-4C": 6}
T4_C = {"T4-16C": 1, "T4-8C": 2, "T4-4C": 4}


# --- DGX H100 ------------------------------------------------------------------------------------------

def test_dgx_h100_devices_memory_and_what_stays_hidden(tmp_path):
    inventory, pool = render(tmp_path, hosts.dgx_h100())
    types = by_type(pool)
    gpus = types["gpu"]
    assert sorted(attr(d, "pciBusID") for d in gpus) == sorted(hosts.H100_GPUS)
    for dev in gpus:
        # nvidia-smi on bare metal: 81559MiB, not the nominal 81920.
        assert qty(dev["capacity"]["memory"]["value"]) == 81559 * MiB
        assert attr(dev, "productName") == "NVIDIA H100 80GB HBM3"
        assert attr(dev, "resource.kubernetes.io/pcieRoot").startswith("pci0000:")
    for address, profiles in per_gpu_profiles(types["mig"]).items():
        assert dict(profiles) == H100_MIG, address
    mig = {attr(d, "profile"): d for d in types["mig"] if attr(d, "pciBusID") == hosts.H100_GPUS[0]}
    # nvidia-smi mig -lgip sizes on H100 differ slightly between drivers (1g.10gb 9.62 or 9.75 GiB,
    # 3g/4g.40gb 39.25 or 39.50, 7g.80gb 79.25): within those, and never above the whole GPU.
    assert 9.5 * GiB <= qty(mig["1g.10gb"]["capacity"]["memory"]["value"]) <= 10 * GiB
    assert 39.25 * GiB <= qty(mig["3g.40gb"]["capacity"]["memory"]["value"]) <= 39.5 * GiB
    assert qty(mig["7g.80gb"]["capacity"]["memory"]["value"]) == 79.25 * GiB
    assert "vgpu" not in types  # no vGPU manager on this host
    # NVSwitches (10de:22a3, a bridge), the BMC's VGA, the InfiniBand compute ports and the storage
    # ports without VFs are the host's: none is published. The storage PF with 8 VFs publishes its VFs.
    hidden = {f"0000:0{5 + k}:00.0" for k in range(4)} | {"0000:02:00.0", "0000:29:00.0", "0000:29:00.1",
                                                           "0000:aa:00.1", "0000:e1:00.0"}
    hidden |= {f"0000:{int(b[5:7], 16) - 3:02x}:00.0" for b in hosts.H100_GPUS}
    assert not hidden & published_addresses(pool) - {"0000:aa:00.0"}
    vfs = types["vf"]
    assert len(vfs) == 8 and {attr(v, "pfPciBusID") for v in vfs} == {"0000:aa:00.0"}
    assert {qty(v["capacity"]["bandwidth"]["value"]) for v in vfs} == {200_000 * 10**6 // 8}
    assert "nic" not in types
    assert all_warnings(inventory, pool) == []


def test_h100_mig_counters_allow_what_nvidia_smi_allows(tmp_path):
    _, pool = render(tmp_path, hosts.dgx_h100())
    names = set(pool.devices())
    ones = [f"gpu-0-mig-1g10gb-{s}" for s in range(7)]
    assert set(ones) <= names
    assert fits_together(pool, ones)  # 7 x 1g.10gb: "Instances 7/7"
    me = [n for n in names if n.startswith("gpu-0-mig-1g10gbme-")]
    assert len(me) == 7 and not fits_together(pool, me[:2])  # "1g.10gb+me ... 1/1"
    assert fits_together(pool, ["gpu-0-mig-4g40gb-0", "gpu-0-mig-3g40gb-4"])
    assert not fits_together(pool, ["gpu-0-mig-7g80gb-0", "gpu-0-mig-1g10gb-0"])
    assert not fits_together(pool, ["gpu-0", "gpu-0-mig-1g10gb-6"])
    assert fits_together(pool, ["gpu-0", "gpu-1"])


# --- HGX A100 80GB vGPU host (mdev on VFs) -------------------------------------------------------------

def test_hgx_a100_80gb_vgpu_types_per_gpu(tmp_path):
    inventory, pool = render(tmp_path, hosts.hgx_a100_80gb_vgpu())
    types = by_type(pool)
    assert len(inventory.gpus) == 8 and len(types["gpu"]) == 8  # 148 GPU VFs are not GPUs
    got = per_gpu_profiles(types["vgpu"])
    for address in hosts.HGX_A100_GPUS:
        want = {**A100DX_TS, **A100DX_MIG_BACKED}
        if address == hosts.HGX_A100_GPUS[0]:
            # 8 VFs enabled: one vGPU per VF, so no time-sliced type has more than 8 instances there.
            want.update({name: min(n, 8) for name, n in A100DX_TS.items()})
        assert dict(got[address]) == want, address
    for dev in types["gpu"]:
        assert qty(dev["capacity"]["memory"]["value"]) == 81920 * MiB
    devices = pool.devices()
    four = devices["gpu-1-vgpu-a100dx-4c-0"]
    assert qty(four["capacity"]["memory"]["value"]) == 4096 * MiB  # the framebuffer the VM gets
    assert attr(four, "mdevType") == "nvidia-615"
    # NVSwitches 10de:1af1 and the BMC are not devices.
    assert not {f"0000:{0xc4 + k:02x}:00.0" for k in range(6)} & published_addresses(pool)
    assert "0000:63:00.0" not in published_addresses(pool)
    assert all_warnings(inventory, pool) == []


def test_vgpu_groups_keep_modes_apart(tmp_path):
    _, pool = render(tmp_path, hosts.hgx_a100_80gb_vgpu())
    devices = pool.devices()
    assert groups(devices["gpu-1"]) == [["full"]]
    assert groups(devices["gpu-1-mig-1g10gb-0"]) == [["mig"]]
    assert groups(devices["gpu-1-vgpu-a100dx-4c-0"]) == [["vgpu-a100dx-4c"]]
    assert groups(devices["gpu-1-vgpu-a100dx-8c-0"]) == [["vgpu-a100dx-8c"]]
    assert groups(devices["gpu-1-vgpu-a100dx-1-10c-0"]) == [["mig-vgpu"]]
    assert groups(devices["gpu-1-vgpu-a100dx-7-80c-0"]) == [["mig-vgpu"]]
    assert groups(devices["gpu-1-timeslicing"]) == [["timeslicing"]]
    assert groups(devices["gpu-1-mps"]) == [["mps"]]
    # A full set of one time-sliced type fills the GPU exactly; MIG-backed vGPUs pack like MIG.
    assert fits_together(pool, [f"gpu-1-vgpu-a100dx-4c-{k}" for k in range(20)])
    assert not fits_together(pool, [f"gpu-1-vgpu-a100dx-4c-{k}" for k in range(20)] + ["gpu-1-vgpu-a100dx-8c-0"])
    assert fits_together(pool, [f"gpu-1-vgpu-a100dx-1-10c-{s}" for s in range(7)])
    assert not fits_together(pool, ["gpu-1-vgpu-a100dx-7-80c-0", "gpu-1-vgpu-a100dx-1-10c-0"])


def test_groups_off_publish_no_groups_and_one_mode(tmp_path):
    features = Features(compatibility_groups=False, shared_consumable_capacity=False)
    _, pool = render(tmp_path, hosts.hgx_a100_80gb_vgpu(), features)
    assert all(groups(d) in ([], [[]]) for d in pool.devices().values())
    assert Counter(attr(d, "type") for d in pool.devices().values()) == {"gpu": 8, "mig": 200}


# --- HGX H100 on the vendor-specific VFIO framework ----------------------------------------------------

def test_vendor_vfio_hosts_both_line_forms_and_busy_vfs(tmp_path):
    inventory, pool = render(tmp_path, hosts.hgx_h100_vendor_vfio())
    got = per_gpu_profiles(by_type(pool)["vgpu"])
    gpu0, gpu1, gpu2, gpu3 = hosts.H100_GPUS[:4]
    assert dict(got[gpu0]) == H100XM_TS
    # "ID Name" without the colon is what NVIDIA's own parser (vgpu-device-manager) also accepts.
    assert dict(got.get(gpu1, {})) == H100XM_TS
    # Three VFs already hold an H100XM-4C: only that type is still creatable on the other 29 VFs.
    assert dict(got[gpu2]) == {"H100XM-4C": 20}
    assert dict(got[gpu3]) == H100XM_TS
    assert all_warnings(inventory, pool) == []


# --- Ada PCIe host: L40S (mdev on VFs) and L4 (vendor VFIO) --------------------------------------------

def test_ada_host_publishes_only_compute_types(tmp_path):
    inventory, pool = render(tmp_path, hosts.ada_vgpu_host())
    types = by_type(pool)
    got = per_gpu_profiles(types["vgpu"])
    assert dict(got["0000:3b:00.0"]) == L40S_C and dict(got["0000:86:00.0"]) == L40S_C
    assert dict(got["0000:5e:00.0"]) == L4_C and dict(got["0000:d8:00.0"]) == L4_C
    memory = {attr(d, "productName"): qty(d["capacity"]["memory"]["value"]) for d in types["gpu"]}
    assert memory == {"NVIDIA L40S": 46068 * MiB, "NVIDIA L4": 23034 * MiB}
    assert "mig" not in types  # Ada has no MIG
    # The B/Q/A (graphics) types every Ada board also offers are not this driver's, and not a problem:
    # no warning per type on every publish pass.
    assert all_warnings(inventory, pool) == []


# --- T4: mdev types on the PF ---------------------------------------------------------------------------

def test_t4_host_types_on_the_pf(tmp_path):
    inventory, pool = render(tmp_path, hosts.t4_host())
    types = by_type(pool)
    got = per_gpu_profiles(types["vgpu"])
    assert len(got) == 4 and all(dict(c) == T4_C for c in got.values())
    assert {qty(d["capacity"]["memory"]["value"]) for d in types["gpu"]} == {15360 * MiB}
    sixteen = pool.devices()["gpu-0-vgpu-t4-16c-0"]
    assert attr(sixteen, "mdevType") == "nvidia-321" and qty(sixteen["capacity"]["memory"]["value"]) == 16 * GiB
    assert all_warnings(inventory, pool) == []


# --- Mixed server ---------------------------------------------------------------------------------------

def test_mixed_server(tmp_path):
    inventory, pool = render(tmp_path, hosts.mixed_server())
    types = by_type(pool)
    assert sorted(attr(d, "pciBusID") for d in types["gpu"]) == ["0000:17:00.0", "0000:ca:00.0"]
    numa = {attr(d, "pciBusID"): attr(d, "numaNode") for d in types["gpu"]}
    assert numa == {"0000:17:00.0": 0, "0000:ca:00.0": None}  # numa_node -1: unknown, not published
    for address, profiles in per_gpu_profiles(types["mig"]).items():
        assert dict(profiles) == A100_80_MIG, address
    mig = {attr(d, "profile"): qty(d["capacity"]["memory"]["value"]) for d in types["mig"]
           if attr(d, "pciBusID") == "0000:17:00.0"}
    # nvidia-smi mig -lgip on A100 80GB: 1g.10gb 9.50 GiB (k8s-device-plugin label gpu.memory=9728),
    # 1g.20gb/2g.20gb 19.50, 3g/4g.40gb 39.25 (some drivers 39.50), 7g.80gb 78.50-79.12 by driver.
    assert mig["1g.10gb"] == 9728 * MiB and mig["2g.20gb"] == 19.5 * GiB
    assert 39.25 * GiB <= mig["4g.40gb"] <= 39.5 * GiB and 78.5 * GiB <= mig["7g.80gb"] <= 79.25 * GiB
    vfs = types["vf"]
    assert len(vfs) == 4 and {attr(v, "pfPciBusID") for v in vfs} == {"0000:4b:00.0"}
    assert {qty(v["capacity"]["bandwidth"]["value"]) for v in vfs} == {25_000 * 10**6 // 4}
    # Storage (no SR-IOV), the down port without VFs, the I350 management port, BMC, NVMe behind VMD.
    assert not {"0000:31:00.0", "0000:31:00.1", "0000:4b:00.1", "0000:05:00.0", "0000:03:00.0",
                "10000:01:00.0"} & published_addresses(pool)
    assert "nic" not in types
    assert all_warnings(inventory, pool) == []


# --- Every host, every gate combination: valid 1.37 ResourceSlices --------------------------------------

HOSTS = ["dgx_h100", "hgx_a100_80gb_vgpu", "hgx_h100_vendor_vfio", "ada_vgpu_host", "t4_host", "mixed_server",
         "nic_zoo", "hgx_h200_busy"]


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("features", GATE_MIXES)
def test_every_slice_validates_against_the_137_schema(tmp_path, host, features):
    _, pool = render(tmp_path, getattr(hosts, host)(), features)
    validate_137(pool)


def test_features_default_matches_the_137_schema_shape():
    assert FEATURES.shared_consumable_capacity is False


def test_nic_product_names_are_the_pci_ids_names(tmp_path):
    inventory, pool = render(tmp_path, hosts.nic_zoo())
    names = {attr(v, "pfPciBusID"): attr(v, "productName") for v in by_type(pool)["vf"]}
    assert names == {
        "0000:c1:00.0": "MT43244 BlueField-3 integrated ConnectX-7 network controller",
        "0000:41:00.0": "MT2894 Family [ConnectX-6 Lx]",
        "0000:61:00.0": "BCM57508 NetXtreme-E 10Gb/25Gb/40Gb/50Gb/100Gb/200Gb Ethernet",
        "0000:81:00.0": "Ethernet Controller X710 for 10GbE SFP+",
    }
    assert len(by_type(pool)["vf"]) == 10 and all_warnings(inventory, pool) == []


def test_vendor_vfio_vgpus_in_use_keep_their_devices(tmp_path):
    # The driver's own running vGPUs must stay published (a claim holds them): a busy VF still offers
    # its type, named by what the free VFs list.
    inventory, pool = render(tmp_path, hosts.hgx_h200_busy())
    got = per_gpu_profiles(by_type(pool)["vgpu"])
    assert dict(got["0000:1b:00.0"]) == {"H200X-4C": 32}
    # A full GPU lists nothing anywhere: the type id alone cannot be named from sysfs, which is said.
    assert "0000:43:00.0" not in got
    assert [w for w in inventory.warnings if "vGPU type id 1427 is in use on 32 VF(s)" in w]
