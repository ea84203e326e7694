"""The built-in tables: required models, KEP-4815 A100 placements, invariants over every model."""

from __future__ import annotations

from dataclasses import replace

import pytest

from driver.hardware import load_catalog

CATALOG = load_catalog()

# device ID -> (model key, product name), the minimum set issue 2 asks for.
REQUIRED = {
    0x20B0: ("a100-40gb", "NVIDIA A100-SXM4-40GB"),
    0x20F1: ("a100-40gb-pcie", "NVIDIA A100-PCIE-40GB"),
    0x20B2: ("a100-80gb-sxm4", "NVIDIA A100-SXM4-80GB"),
    0x20B5: ("a100-80gb-pcie", "NVIDIA A100 80GB PCIe"),
    0x20B7: ("a30", "NVIDIA A30"),
    0x2330: ("h100-80gb-sxm5", "NVIDIA H100 80GB HBM3"),
    0x2335: ("h200-141gb", "NVIDIA H200"),
    0x1EB8: ("t4", "Tesla T4"),
    0x27B8: ("l4", "NVIDIA L4"),
    0x26B9: ("l40s", "NVIDIA L40S"),
}
# Data-centre boards a DRA user plausibly has, added after an independent check found hosts with them
# publishing nothing (device IDs from pci.ids, names as nvidia-smi and NVIDIA's driver README print them).
COMMON_BOARDS = {
    0x2331: ("h100-80gb-pcie", "NVIDIA H100 PCIe"),
    0x2321: ("h100-94gb-nvl", "NVIDIA H100 NVL"),
    0x233B: ("h200-141gb-nvl", "NVIDIA H200 NVL"),
    0x2236: ("a10", "NVIDIA A10"),
    0x2235: ("a40", "NVIDIA A40"),
    0x26B5: ("l40", "NVIDIA L40"),
    0x26B1: ("rtx-6000-ada", "NVIDIA RTX 6000 Ada Generation"),
}
# Boards of late 2026 (issue 22): Blackwell, Grace Hopper, H20 and the H100 94GB/96GB variants, names as
# nvidia-smi prints them where a capture was found (driver/hardware/data/gpus-2026.yaml).
LATE_2026 = {
    0x2901: ("b200", "NVIDIA B200"),
    0x2909: ("b200-168gb", "NVIDIA B200"),
    0x2941: ("gb200", "NVIDIA GB200"),
    0x3182: ("b300", "NVIDIA B300 SXM6 AC"),
    0x31C2: ("gb300", "NVIDIA GB300"),
    0x31C3: ("gb300-31c3", "NVIDIA GB300"),
    0x2BB5: ("rtx-pro-6000-bse", "NVIDIA RTX PRO 6000 Blackwell Server Edition"),
    0x2BB1: ("rtx-pro-6000-ws", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"),
    0x2BB4: ("rtx-pro-6000-maxq", "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"),
    0x2C31: ("rtx-pro-4500", "NVIDIA RTX PRO 4500 Blackwell"),
    0x2C3A: ("rtx-pro-4500-se", "NVIDIA RTX PRO 4500 Blackwell Server Edition"),
    0x2342: ("gh200", "NVIDIA GH200 480GB"),
    0x2348: ("gh200-144gb", "NVIDIA GH200 144G HBM3e"),
    0x2329: ("h20", "NVIDIA H20"),
    0x2328: ("h20b", "NVIDIA H20B"),
    0x230C: ("h20-nvl16", "NVIDIA H20 NVL16"),
    0x230E: ("h20-nvl16-230e", "NVIDIA H20 NVL16"),
    0x232C: ("h20-141gb", "NVIDIA H20 141GB HBM3e"),
    0x2339: ("h100-94gb-sxm5", "NVIDIA H100 SXM5 94GB"),
    0x2338: ("h100-96gb-sxm5", "NVIDIA H100 SXM5 96GB"),
    0x233D: ("h100-96gb", "NVIDIA H100 96GB"),
}
# Boards that share a device ID, told apart by the PCI subsystem (vendor, device).
SUBSYSTEM_BOARDS = {
    (0x25B6, (0x10DE, 0x14A9)): ("a16", "NVIDIA A16"),
    (0x25B6, (0x10DE, 0x157E)): ("a2", "NVIDIA A2"),
}


@pytest.mark.parametrize("device_id", sorted({**REQUIRED, **COMMON_BOARDS, **LATE_2026}))
def test_required_models_present(device_id: int) -> None:
    model = CATALOG.gpu(device_id)
    assert model is not None
    assert (model.name, model.product_name) == {**REQUIRED, **COMMON_BOARDS, **LATE_2026}[device_id]


@pytest.mark.parametrize("key", sorted(SUBSYSTEM_BOARDS))
def test_boards_told_apart_by_subsystem(key) -> None:
    device_id, subsystem = key
    model = CATALOG.gpu(device_id, subsystem)
    assert (model.name, model.product_name) == SUBSYSTEM_BOARDS[key]
    assert model.subsystems == (subsystem,)
    # Without (or with another) subsystem the device ID alone names no board: discovery must ask.
    assert CATALOG.gpu(device_id) is None and CATALOG.gpu(device_id, (0x10DE, 0x0000)) is None
    assert CATALOG.needs_subsystem(device_id) and not CATALOG.needs_subsystem(0x20B0)


def test_abstract_bases_are_not_models() -> None:
    assert not any(m.name.startswith("_") for m in CATALOG.models())
    assert len(CATALOG.models()) == len(REQUIRED) + len(COMMON_BOARDS) + len(LATE_2026) + len(SUBSYSTEM_BOARDS)


def test_a100_40gb_matches_kep_4815_table_and_diagram() -> None:
    model = CATALOG.gpu(0x20B0)
    assert model.mig_memory_slices == 8
    rows = {
        p.name: (p.memory_mib, p.memory_slices, p.multiprocessors, p.copy_engines, p.decoders, p.encoders,
                 p.jpeg_engines, p.ofa_engines, p.placements)
        for p in model.mig_profiles
    }
    assert rows == {
        "7g.40gb": (40192, 8, 98, 7, 5, 0, 1, 1, (0,)),
        "4g.20gb": (19968, 4, 56, 4, 2, 0, 0, 0, (0,)),
        "3g.20gb": (19968, 4, 42, 3, 2, 0, 0, 0, (0, 4)),
        "2g.10gb": (9856, 2, 28, 2, 1, 0, 0, 0, (0, 2, 4)),
        "1g.10gb": (9856, 2, 14, 1, 1, 0, 0, 0, (0, 2, 4, 6)),
        "1g.5gb+me": (4864, 1, 14, 1, 1, 0, 1, 1, (0, 1, 2, 3, 4, 5, 6)),
        "1g.5gb": (4864, 1, 14, 1, 0, 0, 0, 0, (0, 1, 2, 3, 4, 5, 6)),
    }
    # Same order as the KEP diagram: largest first.
    assert [p.name for p in model.mig_profiles] == [
        "7g.40gb", "4g.20gb", "3g.20gb", "2g.10gb", "1g.10gb", "1g.5gb", "1g.5gb+me"
    ]


def test_a100_80gb_reuses_the_a100_shapes_with_its_own_names() -> None:
    small, big = CATALOG.gpu(0x20B0), CATALOG.gpu(0x20B2)
    shapes = lambda m: [(p.compute_slices, p.memory_slices, p.placements) for p in m.mig_profiles]  # noqa: E731
    assert shapes(small) == shapes(big)
    assert {p.name for p in big.mig_profiles} == {
        "1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"
    }
    # PCIe 80GB inherits everything from SXM4 80GB except identity and the vGPU board prefix.
    pcie = CATALOG.gpu(0x20B5)
    numbers = lambda m: [replace(p, unconfirmed="") for p in m.mig_profiles]  # noqa: E731
    assert numbers(pcie) == numbers(big)
    # Sizes confirmed by a capture of the SXM4 80GB board; on the PCIe board only 1g.10gb was seen.
    assert not [p.name for p in big.mig_profiles if p.unconfirmed]
    assert [p.name for p in pcie.mig_profiles if not p.unconfirmed] == ["1g.10gb"]
    assert [(v.name.replace("A100D-", "A100DX-"), v.framebuffer_mib, v.max_instances, v.mig_profile)
            for v in pcie.vgpu_profiles] == [
        (v.name, v.framebuffer_mib, v.max_instances, v.mig_profile) for v in big.vgpu_profiles]
    assert pcie.product_name != big.product_name


def test_a30_has_four_memory_slices() -> None:
    model = CATALOG.gpu(0x20B7)
    assert model.mig_memory_slices == 4
    assert {p.name: p.placements for p in model.mig_profiles} == {
        "4g.24gb": (0,), "2g.12gb": (0, 2), "2g.12gb+me": (0, 2), "1g.6gb": (0, 1, 2, 3), "1g.6gb+me": (0, 1, 2, 3),
    }


def test_non_mig_models() -> None:
    models = [CATALOG.gpu(d) for d in (0x1EB8, 0x27B8, 0x26B9, 0x2236, 0x2235, 0x26B5, 0x26B1)]
    models += [CATALOG.gpu(d, s) for d, s in SUBSYSTEM_BOARDS]
    for model in models:
        assert not model.mig_capable and model.mig_profiles == () and model.mig_memory_slices == 0


def _types(device_id: int, mig_backed: bool = False) -> dict[str, tuple[int, int]]:
    return {v.name: (v.framebuffer_mib, v.max_instances) for v in CATALOG.gpu(device_id).vgpu_profiles
            if v.mig_backed == mig_backed}


def test_vgpu_names_are_per_board_not_per_chip() -> None:
    """NVIDIA vGPU guide: HGX A100 40GB = A100X, HGX A100 80GB = A100DX, PCIe boards A100 / A100D."""
    assert _types(0x20B0) == {
        "A100X-40C": (40960, 1), "A100X-20C": (20480, 2), "A100X-10C": (10240, 4),
        "A100X-8C": (8192, 5), "A100X-5C": (5120, 8), "A100X-4C": (4096, 10),
    }
    assert set(_types(0x20F1)) == {n.replace("A100X-", "A100-") for n in _types(0x20B0)}
    assert _types(0x20B2)["A100DX-4C"] == (4096, 20) and _types(0x20B2)["A100DX-16C"] == (16384, 5)
    assert set(_types(0x20B5)) == {n.replace("A100DX-", "A100D-") for n in _types(0x20B2)}
    assert list(_types(0x1EB8)) == ["T4-16C", "T4-8C", "T4-4C"]
    assert all(n.startswith("H100XM-") for n in _types(0x2330))


def test_h200_has_nine_time_sliced_types_with_the_guides_framebuffers() -> None:
    assert _types(0x2335) == {
        "H200X-141C": (144384, 1), "H200X-70C": (71680, 2), "H200X-35C": (35840, 4), "H200X-28C": (28672, 5),
        "H200X-17C": (17408, 8), "H200X-14C": (14336, 10), "H200X-8C": (8192, 16), "H200X-7C": (7168, 20),
        "H200X-4C": (4096, 32),
    }
    # The full-board type's framebuffer is above what nvidia-smi reports: counts must come from the
    # table, never from memory // framebuffer (which would be 0 here).
    h200 = CATALOG.gpu(0x2335)
    assert h200.memory_mib == 143771 and h200.memory_mib // 144384 == 0


def test_mig_backed_types_name_their_gpu_instance_profile() -> None:
    a100x = {v.name: (v.mig_profile, v.framebuffer_mib, v.max_instances) for v in CATALOG.gpu(0x20B0).vgpu_profiles
             if v.mig_backed}
    assert a100x == {
        "A100X-7-40C": ("7g.40gb", 40960, 1), "A100X-4-20C": ("4g.20gb", 20480, 1), "A100X-3-20C": ("3g.20gb", 20480, 2),
        "A100X-2-10C": ("2g.10gb", 10240, 3), "A100X-1-10C": ("1g.10gb", 10240, 4), "A100X-1-5C": ("1g.5gb", 5120, 7),
        "A100X-1-5CME": ("1g.5gb+me", 5120, 1),
    }
    assert {v.name: v.mig_profile for v in CATALOG.gpu(0x20B2).vgpu_profiles if v.mig_backed}["A100DX-1-10C"] == "1g.10gb"
    assert {v.name: v.mig_profile for v in CATALOG.gpu(0x20B7).vgpu_profiles if v.mig_backed}["A30-1-6C"] == "1g.6gb"
    for model in CATALOG.models():
        for v in model.vgpu_profiles:
            if v.mig_backed:
                mig = model.mig_profile(v.mig_profile)
                assert mig is not None, (model.name, v.name)
                # One vGPU per placement, or NVIDIA's time-sliced MIG-backed types: per_instance on each.
                if v.time_sliced_mig_backed:
                    assert v.max_instances == len(mig.placements) * v.vgpus_per_instance, (model.name, v.name)
                else:
                    assert v.max_instances <= len(mig.placements), (model.name, v.name)


def test_sizes_are_what_nvidia_smi_reports() -> None:
    assert CATALOG.gpu(0x2330).memory_mib == 81559  # H100 80GB HBM3, not 81920
    assert {p.name: p.memory_mib for p in CATALOG.gpu(0x2335).mig_profiles} == {
        "1g.18gb": 16384, "1g.18gb+me": 16384, "1g.35gb": 33024, "2g.35gb": 33024,
        "3g.71gb": 71168, "4g.71gb": 71168, "7g.141gb": 143104,
    }
    assert [CATALOG.gpu(d).memory_mib for d in (0x1EB8, 0x27B8, 0x26B9)] == [15360, 23034, 46068]


def test_a30_1g6gb_has_the_decoder_real_captures_report() -> None:
    a30 = {p.name: p for p in CATALOG.gpu(0x20B7).mig_profiles}
    assert (a30["1g.6gb"].decoders, a30["1g.6gb"].jpeg_engines, a30["1g.6gb"].ofa_engines) == (1, 0, 0)
    assert "captures" in CATALOG.gpu(0x20B7).mig_profiles[0].source or "capture" in a30["1g.6gb"].source


@pytest.mark.parametrize("model", CATALOG.models(), ids=lambda m: m.name)
def test_invariants_every_model(model) -> None:
    assert 0 < model.device_id <= 0xFFFF and model.memory_mib > 0 and model.multiprocessors > 0
    for p in model.mig_profiles:
        assert p.placements and all(s + p.memory_slices <= model.mig_memory_slices for s in p.placements)
        assert p.memory_mib <= model.memory_mib and p.multiprocessors <= model.multiprocessors
        assert p.copy_engines <= model.copy_engines and p.decoders <= model.decoders
        assert p.encoders <= model.encoders and p.jpeg_engines <= model.jpeg_engines
        assert p.source
    if model.mig_capable:
        # The whole-GPU instance (on GB20X also its +gfx variant) has the one placement at 0.
        full = [p for p in model.mig_profiles if p.memory_slices == model.mig_memory_slices]
        assert full and all(p.placements == (0,) for p in full)
    for v in model.vgpu_profiles:
        assert v.source and v.max_instances >= 1 and v.framebuffer_mib > 0
    sliced = [v for v in model.vgpu_profiles if not v.mig_backed]
    if sliced:
        # The full-board type is the nominal framebuffer every other type divides.
        board = max(v.framebuffer_mib for v in sliced)
        assert all(v.framebuffer_mib * v.max_instances <= board for v in sliced), model.name


def test_nic_table() -> None:
    assert CATALOG.nics[(0x15B3, 0x101D)].product_name == "MT2892 Family [ConnectX-6 Dx]"
    assert CATALOG.nics[(0x15B3, 0x1021)].name == "connectx-7"
    assert CATALOG.nics[(0x8086, 0x159B)].product_name == "Ethernet Controller E810-XXV for SFP"


def test_sources_are_cited_in_the_data_files() -> None:
    from importlib import resources

    text = resources.files("driver.hardware.data").joinpath("gpus.yaml").read_text()
    for needle in ("mig-user-guide/supported-mig-profiles", "Virtual GPU Types", "pci-ids.ucw.cz"):
        assert needle in text
    assert "pci-ids.ucw.cz" in resources.files("driver.hardware.data").joinpath("nics.yaml").read_text()


def test_every_builtin_row_names_a_known_source() -> None:
    from driver.hardware.catalog import builtin_tables
    from driver.hardware.merge import resolve_inherits

    raw = builtin_tables()
    keys = set(raw["sources"])
    rows = []
    for name, entry in resolve_inherits(raw["gpus"], "gpus").items():
        rows.append((name, entry.get("source")))
        for profile, spec in ((entry.get("mig") or {}).get("profiles") or {}).items():
            rows.append((f"{name} MIG {profile}", spec.get("source")))
        vgpu = entry.get("vgpu") or {}
        rows.append((f"{name} vgpu", vgpu.get("source")))
    rows += [(f"nic {k}", v.get("source")) for k, v in raw["nics"].items()]
    for where, value in rows:
        if value is None:
            assert where.endswith(" vgpu"), f"{where}: no source"
            continue
        for key in value if isinstance(value, list) else [value]:
            assert key in keys, f"{where}: unknown source key {key!r}"
    # Every model that has vGPU rows gets a source for them (its own or the table's).
    for model in CATALOG.models():
        assert all(v.source for v in model.vgpu_profiles)


def test_every_builtin_model_names_its_source() -> None:
    for model in CATALOG.models():
        assert "pci.ids" in model.source, model.name
    assert load_catalog({"gpus": {"x": {"inherits": "_ga100", "device_id": 0x1111, "product_name": "X",
                                        "memory_mib": 1024, "mig": None, "source": "lab"}}}).gpu(0x1111).source == "lab"
