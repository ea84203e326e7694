"""The built-in tables: required models, KEP-4815 A100 placements, invariants over every model."""

from __future__ import annotations

import pytest

from driver.hardware import load_catalog

CATALOG = load_catalog()

# device ID -> (model key, product name), the minimum set issue 2 asks for.
REQUIRED = {
    0x20B0: ("a100-40gb", "NVIDIA A100-SXM4-40GB"),
    0x20B2: ("a100-80gb-sxm4", "NVIDIA A100-SXM4-80GB"),
    0x20B5: ("a100-80gb-pcie", "NVIDIA A100 80GB PCIe"),
    0x20B7: ("a30", "NVIDIA A30"),
    0x2330: ("h100-80gb-sxm5", "NVIDIA H100 80GB HBM3"),
    0x2335: ("h200-141gb", "NVIDIA H200"),
    0x1EB8: ("t4", "Tesla T4"),
    0x27B8: ("l4", "NVIDIA L4"),
    0x26B9: ("l40s", "NVIDIA L40S"),
}


@pytest.mark.parametrize("device_id", sorted(REQUIRED))
def test_required_models_present(device_id: int) -> None:
    model = CATALOG.gpu(device_id)
    assert model is not None
    assert (model.name, model.product_name) == REQUIRED[device_id]


def test_abstract_bases_are_not_models() -> None:
    assert not any(m.name.startswith("_") for m in CATALOG.gpus.values())
    assert len(CATALOG.gpus) == len(REQUIRED)


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
    # PCIe 80GB inherits everything from SXM4 80GB except identity.
    pcie = CATALOG.gpu(0x20B5)
    assert pcie.mig_profiles == big.mig_profiles and pcie.vgpu_profiles == big.vgpu_profiles
    assert pcie.product_name != big.product_name


def test_a30_has_four_memory_slices() -> None:
    model = CATALOG.gpu(0x20B7)
    assert model.mig_memory_slices == 4
    assert {p.name: p.placements for p in model.mig_profiles} == {
        "4g.24gb": (0,), "2g.12gb": (0, 2), "2g.12gb+me": (0, 2), "1g.6gb": (0, 1, 2, 3), "1g.6gb+me": (0, 1, 2, 3),
    }


def test_non_mig_models() -> None:
    for device_id in (0x1EB8, 0x27B8, 0x26B9):
        model = CATALOG.gpu(device_id)
        assert not model.mig_capable and model.mig_profiles == () and model.mig_memory_slices == 0


def test_vgpu_c_series() -> None:
    a100 = {p.name: (p.framebuffer_mib, p.max_instances) for p in CATALOG.gpu(0x20B0).vgpu_profiles}
    assert a100 == {
        "A100-40C": (40960, 1), "A100-20C": (20480, 2), "A100-10C": (10240, 4),
        "A100-8C": (8192, 5), "A100-5C": (5120, 8), "A100-4C": (4096, 10),
    }
    assert [p.name for p in CATALOG.gpu(0x1EB8).vgpu_profiles] == ["T4-16C", "T4-8C", "T4-4C"]
    assert CATALOG.gpu(0x20B2).vgpu_profiles[-1].name == "A100D-4C"
    assert CATALOG.gpu(0x20B2).vgpu_profiles[-1].max_instances == 20


@pytest.mark.parametrize("model", list(CATALOG.gpus.values()), ids=lambda m: m.name)
def test_invariants_every_model(model) -> None:
    assert 0 < model.device_id <= 0xFFFF and model.memory_mib > 0 and model.multiprocessors > 0
    for p in model.mig_profiles:
        assert p.placements and all(s + p.memory_slices <= model.mig_memory_slices for s in p.placements)
        assert p.memory_mib <= model.memory_mib and p.multiprocessors <= model.multiprocessors
        assert p.copy_engines <= model.copy_engines and p.decoders <= model.decoders
    if model.mig_capable:
        full = [p for p in model.mig_profiles if p.memory_slices == model.mig_memory_slices]
        assert len(full) == 1 and full[0].placements == (0,)
    for v in model.vgpu_profiles:
        assert v.framebuffer_mib * v.max_instances <= model.memory_mib


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


def test_every_builtin_model_names_its_source() -> None:
    for model in CATALOG.gpus.values():
        assert "pci.ids" in model.source, model.name
    assert load_catalog({"gpus": {"x": {"inherits": "_ga100", "device_id": 0x1111, "product_name": "X",
                                        "memory_mib": 1024, "mig": None, "source": "lab"}}}).gpu(0x1111).source == "lab"
