"""The discover / make-sysfs / show commands and load_driver_config, through the real CLI entry point."""

from __future__ import annotations

import json

import pytest

from driver.cli import main
from driver.commands.common import load_driver_config
from driver.commands.show import mig_map
from driver.errors import ConfigError
from driver.hardware import load_catalog


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_make_sysfs_then_discover_table(tmp_path, capsys) -> None:
    code, out, _ = run(capsys, "make-sysfs", "--profile", "demo", "--out", str(tmp_path / "sys"))
    assert code == 0 and "wrote profile demo" in out
    code, out, _ = run(capsys, "discover", "--sysfs-root", str(tmp_path / "sys"))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "GPUs (2)"
    assert lines[2].split() == ["0", "0000:07:00.0", "NVIDIA", "A100-SXM4-40GB", "40960", "MiB",
                                "108", "7", "profiles", "-", "0", "pci0000:00"]
    assert lines[3].split()[6:] == ["108", "7", "profiles", "6", "0", "pci0000:00"]
    assert "NICs (1 SR-IOV PFs, 8 VFs, 0 ports without SR-IOV)" in out
    assert "ens3f0     MT2892 Family [ConnectX-6 Dx]  100 Gb/s  8/16" in out
    assert out.rstrip().endswith("Warnings (0)")


def test_discover_json(pristine, capsys) -> None:
    code, out, _ = run(capsys, "discover", "--sysfs-root", str(pristine("vgpu-host")), "-o", "json")
    assert code == 0
    data = json.loads(out)
    assert [g["model"] for g in data["gpus"]] == ["a100-80gb-pcie", "t4", "l4", "a100-80gb-pcie", "t4"]
    assert data["gpus"][0]["device"] == "0x20b5" and data["gpus"][0]["pcieRoot"] == "pci0000:3a"
    assert data["gpus"][0]["mdevTypes"][0]["profile"] == "A100D-80C"
    assert len(data["gpus"][0]["mdevTypes"][0]["parents"]) == 20
    assert [n["speedMbps"] for n in data["nics"]] == [25000, None]
    assert data["nics"][0]["vfs"][0] == {
        "index": 0, "address": "0000:18:02.0", "vendor": "0x8086", "device": "0x1889", "class": "0x020000",
        "numaNode": 0, "pcieRoot": "pci0000:17", "driver": "iavf", "iommuGroup": 4, "interface": "ens1f0v0",
        "hardwareAddress": "0e:42:01:80:00:00",
    }
    assert (data["nics"][0]["driver"], data["nics"][0]["iommuGroup"]) == ("ice", 3)
    assert data["warnings"] == []


def test_discover_missing_root_exits_2(tmp_path, capsys) -> None:
    code, out, err = run(capsys, "discover", "--sysfs-root", str(tmp_path / "missing"))
    assert code == 2 and out == ""
    assert err.startswith("fake-dra discover: sysfs root") and "does not exist" in err


def test_discover_root_from_environment(pristine, capsys, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_DRA_SYSFS_ROOT", str(pristine("no-gpu")))
    code, out, _ = run(capsys, "discover", "-o", "json")
    assert code == 0 and json.loads(out)["gpus"] == []
    assert [(n["address"], n["sriov"]) for n in json.loads(out)["nics"]] == [("0000:31:00.0", True),
                                                                            ("0000:02:00.0", False)]
    code, out, _ = run(capsys, "discover")
    assert "NICs (1 SR-IOV PFs, 8 VFs, 1 ports without SR-IOV)" in out
    port = next(line for line in out.splitlines() if "0000:02:00.0" in line)
    assert port.split()[:3] == ["1", "0000:02:00.0", "eno1"] and "no SR-IOV" in port


def test_discover_lists_warnings(tree, capsys) -> None:
    root = tree()
    (root / "bus/pci/devices/0000:07:00.0").resolve().joinpath("device").write_text("0x2bad\n")
    code, out, _ = run(capsys, "discover", "--sysfs-root", str(root))
    assert code == 0 and "GPUs (1)" in out and "Warnings (1)" in out and "0x2bad" in out
    code, _, _ = run(capsys, "discover", "--sysfs-root", str(root), "--strict")
    assert code == 1


def test_strict_passes_on_a_clean_tree(pristine, capsys) -> None:
    code, _, _ = run(capsys, "discover", "--sysfs-root", str(pristine("h100")), "--strict", "-o", "json")
    assert code == 0


def test_driver_config_makes_an_unknown_gpu_known(tree, tmp_path, capsys) -> None:
    root = tree()
    (root / "bus/pci/devices/0000:07:00.0").resolve().joinpath("device").write_text("0x2bad\n")
    config = tmp_path / "driver.yaml"
    config.write_text("hardware:\n  gpus:\n    lab-gpu:\n      inherits: a100-40gb\n      device_id: 0x2bad\n"
                      "      product_name: Lab GPU\n")
    code, out, _ = run(capsys, "discover", "--sysfs-root", str(root), "--driver-config", str(config), "-o", "json")
    assert code == 0
    assert [g["model"] for g in json.loads(out)["gpus"]] == ["lab-gpu", "a100-40gb"]


def test_bad_driver_config_exits_2(pristine, tmp_path, capsys) -> None:
    config = tmp_path / "driver.yaml"
    config.write_text("hardware:\n  gpus:\n    t4: {memory_mib: -5}\n")
    code, _, err = run(capsys, "show", "--sysfs-root", str(pristine("demo")), "--driver-config", str(config))
    assert code == 2 and "hardware.gpus.t4.memory_mib: must be >= 1" in err


def test_make_sysfs_bad_profile_exits_2(tmp_path, capsys) -> None:
    code, _, err = run(capsys, "make-sysfs", "--profile", "nope", "--out", str(tmp_path / "x"))
    assert code == 2 and ("known profiles: demo, dgx-a100, dgx-a100-vgpu, gh200, h100, h200-vgpu, hgx-b200, no-gpu, "
                          "rtxpro6000, rtxpro6000-vgpu, vgpu-host") in err
    assert not (tmp_path / "x").exists()


def test_make_sysfs_requires_out_and_lists(capsys) -> None:
    code, _, err = run(capsys, "make-sysfs", "--profile", "demo")
    assert code == 2 and "--out DIR is required" in err
    code, out, _ = run(capsys, "make-sysfs", "--list")
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == [
        "demo", "dgx-a100", "dgx-a100-vgpu", "h100", "h200-vgpu", "vgpu-host", "no-gpu", "hgx-b200", "rtxpro6000",
        "rtxpro6000-vgpu", "gh200"]
    starts = {line.index(line.split()[1]) for line in out.splitlines()}
    assert len(starts) == 1, out  # the descriptions line up, after the longest name (dgx-a100-vgpu)


# The KEP-4815 diagram's layout, one space narrower per slice so eight slices fit 100 columns.
KEP_A100_DIAGRAM = """\
+-----------+-----------+-----------+-----------+-----------+-----------+-----------+-----------+
|  Slice 0  |  Slice 1  |  Slice 2  |  Slice 3  |  Slice 4  |  Slice 5  |  Slice 6  |  Slice 7  |
+-----------+-----------+-----------+-----------+-----------+-----------+-----------+-----------+
|                                            7g.40gb                                            |
+-----------+-----------+-----------+-----------+-----------+-----------+-----------+-----------+
|                    4g.20gb                    |                       X                       |
+-----------+-----------+-----------+-----------+-----------+-----------+-----------+-----------+
|                    3g.20gb                    |                    3g.20gb                    |
+-----------+-----------+-----------+-----------+-----------+-----------+-----------+-----------+
|        2g.10gb        |        2g.10gb        |        2g.10gb        |           X           |
+-----------+-----------+-----------+-----------+-----------+-----------+-----------+-----------+
|        1g.10gb        |        1g.10gb        |        1g.10gb        |        1g.10gb        |
+-----------+-----------+-----------+-----------+-----------+-----------+-----------+-----------+
|   1g.5gb  |   1g.5gb  |   1g.5gb  |   1g.5gb  |   1g.5gb  |   1g.5gb  |   1g.5gb  |     X     |
+-----------+-----------+-----------+-----------+-----------+-----------+-----------+-----------+
| 1g.5gb+me | 1g.5gb+me | 1g.5gb+me | 1g.5gb+me | 1g.5gb+me | 1g.5gb+me | 1g.5gb+me |     X     |
+-----------+-----------+-----------+-----------+-----------+-----------+-----------+-----------+"""


def test_mig_map_matches_the_kep_diagram() -> None:
    assert mig_map(load_catalog().gpu(0x20B0)) == KEP_A100_DIAGRAM


def test_mig_map_a30_and_non_mig() -> None:
    catalog = load_catalog()
    lines = mig_map(catalog.gpu(0x20B7)).splitlines()
    assert len(lines) == 3 + 2 * 5 and lines[1].count("Slice") == 4
    assert lines[3].strip("|").strip() == "4g.24gb"
    assert mig_map(catalog.gpu(0x1EB8)) == ""


def test_show_demo(pristine, capsys) -> None:
    code, out, _ = run(capsys, "show", "--sysfs-root", str(pristine("demo")))
    assert code == 0
    assert "GPU 0 (0000:07:00.0), 1 (0000:0f:00.0): NVIDIA A100-SXM4-40GB [a100-40gb]" in out
    assert KEP_A100_DIAGRAM in out
    assert "1g.10gb    0,2,4,6        2           1/7      14   9856 MiB" in out
    assert "vGPU types on GPU 1 (0000:0f:00.0):" in out
    assert "nvidia-457  NVIDIA A100X-4C   4096 MiB     10         16            yes" in out
    assert "NIC 0: 0000:0c:00.0 ens3f0  MT2892 Family [ConnectX-6 Dx]  100 Gb/s  NUMA 0  pci0000:00" in out
    assert "VFs: 8 enabled of 16, equal share 12.5 Gb/s each" in out
    assert "virtfn7   0000:0c:01.1  ens3f0v7" in out


def test_show_no_gpu_and_down_link(pristine, capsys) -> None:
    _, out, _ = run(capsys, "show", "--sysfs-root", str(pristine("no-gpu")))
    assert out.startswith("No NVIDIA GPUs found.")
    assert "NIC 1: 0000:02:00.0 eno1  PCI 10ec:8168  1 Gb/s" in out
    assert "no SR-IOV: the host's own port (published only if slices.publishPFs names it)" in out
    _, out, _ = run(capsys, "show", "--sysfs-root", str(pristine("vgpu-host")))
    assert "MIG: not supported by this model" in out
    assert "ens1f1  Ethernet Controller E810-XXV for SFP  unknown" in out and "VFs: 0 enabled of 64\n" in out


def test_show_missing_root_exits_2(tmp_path, capsys) -> None:
    code, _, err = run(capsys, "show", "--sysfs-root", str(tmp_path / "gone"))
    assert code == 2 and "does not exist" in err


# --- load_driver_config -----------------------------------------------------------------------------

def test_load_driver_config_ok(tmp_path) -> None:
    assert load_driver_config(None) == {} and load_driver_config("") == {}
    path = tmp_path / "c.yaml"
    path.write_text("")
    assert load_driver_config(str(path)) == {}
    path.write_text("hardware:\n  gpus: {}\nslices:\n  singleMode: mig\n")
    assert load_driver_config(str(path)) == {"hardware": {"gpus": {}}, "slices": {"singleMode": "mig"}}


def test_load_driver_config_unknown_section_warns(tmp_path, caplog) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("plugin: {x: 1}\n")
    assert load_driver_config(str(path)) == {"plugin": {"x": 1}}
    assert any("unknown section 'plugin'" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hardware: [1, 2\n", "invalid YAML at line 2"),
        ("- a\n- b\n", "top level must be a mapping"),
        ("hardware: 3\n", "section 'hardware' must be a mapping, got int"),
        ("slices: [x]\n", "section 'slices' must be a mapping, got list"),
    ],
)
def test_load_driver_config_errors_name_the_path(tmp_path, text, message) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_driver_config(str(path))
    assert str(path) in str(info.value) and message in str(info.value)


def test_load_driver_config_missing_and_unreadable(tmp_path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_driver_config(str(tmp_path / "none.yaml"))
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(ConfigError, match="unreadable"):
        load_driver_config(str(tmp_path / "dir.yaml"))
    bad = tmp_path / "bin.yaml"
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match=str(bad)):
        load_driver_config(str(bad))
