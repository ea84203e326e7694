"""Hosts of late 2026 (truth_2026.py: HGX B200, RTX PRO 6000 Blackwell bare metal and vGPU host, two-superchip
GH200, L40S inference node) against what a driver author expects from NVIDIA's documents and real captures:
every GPU published with nvidia-smi's name and memory, MIG devices per profile as the guide lists them, vGPU types
by the last word of the host's name matched against the board's table, Grace's PCI domains in pciBusID and
pcieRoot, what must stay the host's (InfiniBand compute and NVSwitch-management functions, storage ports), no
warnings, and slices the 1.37 apiserver accepts under every gate mix.
"""

from __future__ import annotations

from collections import Counter

import pytest
import truth_2026 as hosts
from truth import (
    GATE_MIXES, MiB, all_warnings, attr, by_type, fits_together, groups, per_gpu_profiles, published_addresses, qty,
    render, validate_137,
)
from truth_sysfs import D3, Fn

GiB = 1024 * MiB

# MIG guide "Supported MIG Profiles", B200 180GB: instances per profile = its placements on the 8 memory slices.
B200_MIG = {"1g.23gb": 7, "1g.23gb+me": 7, "1g.45gb": 4, "2g.45gb": 3, "3g.90gb": 2, "4g.90gb": 1, "7g.180gb": 1}
# "H100 96GB (H100 on GH200)".
GH200_MIG = {"1g.12gb": 7, "1g.12gb+me": 7, "1g.24gb": 4, "2g.24gb": 3, "3g.48gb": 2, "4g.48gb": 1, "7g.96gb": 1}
# RTX PRO 6000 (all editions): four quarter slices [lgipp]; +gfx, +me.all and -me are their own profiles.
RTX_MIG = {"1g.24gb": 4, "1g.24gb+me": 4, "1g.24gb+gfx": 4, "1g.24gb+me.all": 4, "1g.24gb-me": 4,
           "2g.48gb": 2, "2g.48gb+gfx": 2, "2g.48gb+me.all": 2, "2g.48gb-me": 2, "4g.96gb": 1, "4g.96gb+gfx": 1}


def _cap(dev: dict, name: str):
    return qty(dev["capacity"][name]["value"])


def _by_address(devs: list[dict]) -> dict[str, dict]:
    return {attr(d, "pciBusID"): d for d in devs}


# --- HGX B200 -----------------------------------------------------------------------------------------

def test_hgx_b200_gpus_mig_and_what_stays_the_hosts(tmp_path):
    inventory, pool = render(tmp_path, hosts.hgx_b200())
    types = by_type(pool)
    gpus = _by_address(types["gpu"])
    assert sorted(gpus) == hosts.B200_GPUS
    for i, address in enumerate(hosts.B200_GPUS):
        dev = gpus[address]
        assert attr(dev, "productName") == "NVIDIA B200"
        assert (_cap(dev, "memory"), _cap(dev, "multiprocessors")) == (183359 * MiB, 148)
        assert attr(dev, "numaNode") == (0 if i < 4 else 1)
    for address, profiles in per_gpu_profiles(types["mig"]).items():
        assert dict(profiles) == B200_MIG, address
    # 7 x 1g.23gb (the guide's "7"), 4g.90gb beside 3g.90gb; the whole GPU excludes every instance.
    assert fits_together(pool, [f"gpu-0-mig-1g23gb-{s}" for s in range(7)])
    assert fits_together(pool, ["gpu-0-mig-4g90gb-0", "gpu-0-mig-3g90gb-4"])
    assert not fits_together(pool, ["gpu-0-mig-1g23gbme-0", "gpu-0-mig-1g23gbme-1"])  # one +me per GPU
    assert not fits_together(pool, ["gpu-0", "gpu-0-mig-1g23gb-6"])
    # InfiniBand compute NICs and the NVSwitch-management functions NVLSM runs on are never NICs; the
    # BlueField port with VFs publishes its 8 VFs, its other port and the BMC nothing.
    hidden = set(hosts.B200_LPF) | {f"0000:{int(b[5:7], 16) - 3:02x}:00.0" for b in hosts.B200_GPUS}
    hidden |= {"0000:aa:00.1", "0000:02:00.0", "0000:e1:00.0"}
    assert not hidden & published_addresses(pool)
    assert {attr(v, "pfPciBusID") for v in types["vf"]} == {"0000:aa:00.0"} and len(types["vf"]) == 8
    assert "nic" not in types
    assert all_warnings(inventory, pool) == []


# --- RTX PRO 6000 Blackwell Server Edition ----------------------------------------------------------------

def test_rtx_pro_6000_mig_with_gb20x_variants_and_encoders(tmp_path):
    inventory, pool = render(tmp_path, hosts.rtx_pro_6000_server())
    types = by_type(pool)
    for dev in types["gpu"]:
        assert attr(dev, "productName") == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
        assert (_cap(dev, "memory"), _cap(dev, "multiprocessors")) == (97887 * MiB, 188)
    for address, profiles in per_gpu_profiles(types["mig"]).items():
        assert dict(profiles) == RTX_MIG, address
    mig = {attr(d, "profile"): d for d in types["mig"] if attr(d, "pciBusID") == hosts.RTX_GPUS[0][0]}
    # -lgip: 23.62 GiB (a 1g.24gb device shows 24192 MiB), 47.38, 95.12 GiB; SMs 46/94/188.
    assert {p: (_cap(d, "memory") / MiB, _cap(d, "multiprocessors")) for p, d in mig.items()
            if p in ("1g.24gb", "2g.48gb", "4g.96gb")} == {
        "1g.24gb": (24192, 46), "2g.48gb": (48512, 94), "4g.96gb": (97408, 188)}
    # MIG splits the four NVENC: a counter; +me.all takes all four, -me none.
    counters = next(cs for spec in pool.slices for cs in spec.get("sharedCounters", ())
                    if cs["name"] == "gpu-0-counters")["counters"]
    assert counters["encoders"] == {"value": "4"}
    taken = {name: e["counters"].get("encoders", {}).get("value") for name in
             ("gpu-0-mig-1g24gb-0", "gpu-0-mig-1g24gbmeall-0", "gpu-0-mig-1g24gb-me-0")
             for e in pool.devices()[name]["consumesCounters"]}
    assert taken == {"gpu-0-mig-1g24gb-0": "1", "gpu-0-mig-1g24gbmeall-0": "4", "gpu-0-mig-1g24gb-me-0": None}
    assert fits_together(pool, [f"gpu-0-mig-1g24gb-{s}" for s in range(4)])
    assert fits_together(pool, ["gpu-0-mig-1g24gbmeall-0"] + [f"gpu-0-mig-1g24gb-me-{s}" for s in (1, 2, 3)])
    assert not fits_together(pool, ["gpu-0-mig-1g24gbmeall-0", "gpu-0-mig-1g24gb-1"])
    assert fits_together(pool, ["gpu-0-mig-2g48gbgfx-0", "gpu-0-mig-1g24gbgfx-2", "gpu-0-mig-1g24gb-3"])
    assert "vgpu" not in types
    assert all_warnings(inventory, pool) == []


# vGPU 20.0 maxima of the C-series DC types (vgpu-device-manager); time-sliced MIG-backed ones run several
# vGPUs on one GPU instance (DC-1-12C: 2 on each of four 1g.24gb instances).
RTX_VGPU = dict(hosts.DC_C_TYPES)


def test_rtx_pro_6000_vgpu_host_types_by_the_last_word_and_every_vgpu_the_board_allows(tmp_path):
    inventory, pool = render(tmp_path, hosts.rtx_pro_6000_server(vgpu=True))
    types = by_type(pool)
    got = per_gpu_profiles(types["vgpu"])
    # MIG-backed types with one vGPU per instance are one device per placement (what counters bound); the
    # others are every vGPU of the table.
    want = {name: n for name, n in RTX_VGPU.items()}
    want.update({"DC-1-24C": 4, "DC-1-24CGFX": 4, "DC-2-48C": 2, "DC-2-48CGFX": 2, "DC-4-96C": 1, "DC-4-96CGFX": 1})
    for address, _ in hosts.RTX_GPUS:
        assert dict(got[address]) == want, address
    assert (want["DC-1-12C"], want["DC-1-8C"], want["DC-2-12C"], want["DC-4-24C"]) == (8, 12, 8, 4)
    devices = pool.devices()
    twelve = [n for n, d in devices.items() if attr(d, "profile") == "DC-1-12C" and n.startswith("gpu-0-")]
    assert attr(devices[twelve[0]], "mdevType") == "nvidia-1560"  # the id a real host lists
    assert _cap(devices[twelve[0]], "memory") == 12 * GiB
    assert fits_together(pool, twelve)
    assert groups(devices[twelve[0]]) == [["mig-vgpu-1111", "mig-vgpu-112"], ["dc-1-12c"]]
    eight = [n for n, d in devices.items() if attr(d, "profile") == "DC-1-8C" and n.startswith("gpu-0-")]
    assert len(eight) == 12 and fits_together(pool, eight)
    # MIG-backed types mix on disjoint instances, one type per instance, classic and time-sliced alike
    # (NVIDIA's "mixed MIG-backed configurations"); two types never share an instance.
    assert fits_together(pool, ["gpu-0-vgpu-dc-1-24c-0", "gpu-0-vgpu-dc-1-24cgfx-1", "gpu-0-vgpu-dc-2-48c-2"])
    assert fits_together(pool, ["gpu-0-vgpu-dc-1-12c-0-0", "gpu-0-vgpu-dc-1-12c-0-1", "gpu-0-vgpu-dc-1-8c-1-0",
                                "gpu-0-vgpu-dc-2-24c-2-0"])
    # (counters alone would take 1/2 + 1/3 of it: the instance's own counter set has the type as its group)
    same = [devices[n]["consumesCounters"][1] for n in ("gpu-0-vgpu-dc-1-12c-0-0", "gpu-0-vgpu-dc-1-8c-0-0")]
    assert same[0]["counterSet"] == same[1]["counterSet"] == "gpu-0-gi-0-counters"
    assert not set(same[0]["compatibilityGroups"]) & set(same[1]["compatibilityGroups"])
    assert groups(devices["gpu-0-vgpu-dc-1-24c-0"]) == [["mig-vgpu-1111", "mig-vgpu-112"], ["dc-1-24c"]]
    assert groups(devices["gpu-0-vgpu-dc-48c-0"]) == [["vgpu-dc-48c"]]
    # Q/QGFX (RTX workstation) types are listed by the host and quietly not this driver's.
    assert all_warnings(inventory, pool) == []


def test_a_dc_type_of_another_board_is_warned_about_not_matched_by_its_prefix(tmp_path):
    """DC-2-32C is an RTX PRO 4500 type: on a 6000 (10de:2bb5) it is not in the board's table."""
    from truth_sysfs import Mdev

    fns = hosts.single_gpu(0x2BB5, [Mdev("nvidia-1700", "NVIDIA RTX Pro 4500 Blackwell DC-2-32C", 1),
                                     Mdev("nvidia-1563", "NVIDIA RTX Pro 6000 Blackwell DC-1-24C", 1)], vfs=4)
    inventory, pool = render(tmp_path, fns)
    assert dict(per_gpu_profiles(by_type(pool)["vgpu"])["0000:41:00.0"]) == {"DC-1-24C": 4}
    (warning,) = all_warnings(inventory, pool)
    assert "'NVIDIA RTX Pro 4500 Blackwell DC-2-32C' is not a vGPU type of rtx-pro-6000-bse" in warning
    assert "10de:2bb5" in warning


def test_vendor_vfio_lines_with_the_long_name(tmp_path):
    """R580+ hosts on Linux >= 6.8 list the same names in <VF>/nvidia/creatable_vgpu_types."""
    creatable = "\n".join(["ID    : vGPU Name", "1560  : NVIDIA RTX Pro 6000 Blackwell DC-1-12C",
                           "1585  : NVIDIA RTX Pro 6000 Blackwell DC-4-96Q"])
    fns = [Fn("0000:41:00.0", 0x10DE, 0x2BB5, D3, 0, ("0000:40:01.0",), driver="nvidia", total_vfs=48, num_vfs=8,
              vf_offset=4, vf_device=0x2BB5, vf_creatable=creatable)]
    inventory, pool = render(tmp_path, fns)
    vgpus = by_type(pool)["vgpu"]
    assert Counter(attr(d, "profile") for d in vgpus) == {"DC-1-12C": 8}
    assert {attr(d, "mdevType") for d in vgpus} == {"1560"}
    assert all_warnings(inventory, pool) == []


# --- GH200 --------------------------------------------------------------------------------------------

def test_gh200_grace_domains_pcie_root_numa_and_mig(tmp_path):
    inventory, pool = render(tmp_path, hosts.gh200_node())
    types = by_type(pool)
    gpus = _by_address(types["gpu"])
    assert sorted(gpus) == ["0009:01:00.0", "0019:01:00.0"]
    for address, numa in hosts.GH200_GPUS:
        dev = gpus[address]
        assert attr(dev, "productName") == "NVIDIA GH200 480GB" and _cap(dev, "memory") == 97871 * MiB
        assert attr(dev, "resource.kubernetes.io/pcieRoot") == f"pci{address[:4]}:00"
        assert attr(dev, "numaNode") == numa
    for address, profiles in per_gpu_profiles(types["mig"]).items():
        assert dict(profiles) == GH200_MIG, address
    mig = {attr(d, "profile"): d for d in types["mig"] if attr(d, "pciBusID") == "0009:01:00.0"}
    # The GH200 capture: 1g.24gb and 2g.24gb 23552 MiB, 3g.48gb 47616 MiB; SMs 26/32/60.
    assert {p: (_cap(mig[p], "memory") / MiB, _cap(mig[p], "multiprocessors")) for p in ("1g.24gb", "2g.24gb", "3g.48gb")} == {
        "1g.24gb": (23552, 26), "2g.24gb": (23552, 32), "3g.48gb": (47616, 60)}
    # MIG devices carry the GPU's location too.
    assert {attr(d, "resource.kubernetes.io/pcieRoot") for d in types["mig"]} == {"pci0009:00", "pci0019:00"}
    vfs = types["vf"]
    assert len(vfs) == 4 and {attr(v, "pfPciBusID") for v in vfs} == {"0000:01:00.0"}
    assert "0010:01:00.0" not in published_addresses(pool)
    assert all_warnings(inventory, pool) == []


# --- L40S inference node ------------------------------------------------------------------------------

def test_l40s_inference_node(tmp_path):
    inventory, pool = render(tmp_path, hosts.l40s_node())
    types = by_type(pool)
    assert {(attr(d, "productName"), _cap(d, "memory")) for d in types["gpu"]} == {("NVIDIA L40S", 46068 * MiB)}
    assert len(types["gpu"]) == 4 and "mig" not in types and "vgpu" not in types
    assert Counter(attr(d, "sharing") for d in types["timeshare"]) == {"time-slicing": 4, "mps": 4}
    assert len(types["vf"]) == 4
    assert all_warnings(inventory, pool) == []


HOSTS = {"hgx_b200": hosts.hgx_b200, "rtx_pro_6000": hosts.rtx_pro_6000_server,
         "rtx_pro_6000_vgpu": lambda: hosts.rtx_pro_6000_server(vgpu=True), "gh200": hosts.gh200_node,
         "l40s": hosts.l40s_node}


@pytest.mark.parametrize("host", sorted(HOSTS))
@pytest.mark.parametrize("features", GATE_MIXES)
def test_every_slice_validates_against_the_137_schema(tmp_path, host, features):
    _, pool = render(tmp_path, HOSTS[host](), features)
    validate_137(pool)
    assert Counter(attr(d, "type") for d in pool.devices().values())["gpu"] >= 1
