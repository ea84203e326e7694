"""The committed stubs in driver/plugin/gen are exactly what hack/gen_protos.sh generates.

Why: the stubs are committed (no build step), so CI must prove nobody edited them by hand or
changed a .proto without regenerating.
"""

from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "driver" / "plugin" / "gen"


def test_regenerating_stubs_changes_nothing() -> None:
    out = Path(tempfile.mkdtemp(prefix="fake-dra-gen-"))
    env_python = str(Path(sys.executable))
    result = subprocess.run(
        ["bash", str(ROOT / "hack" / "gen_protos.sh"), str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHON": env_python, "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    fresh = sorted(p.name for p in (out / "driver/plugin/gen").iterdir() if "_pb2" in p.name)
    committed = sorted(p.name for p in GEN.iterdir() if "_pb2" in p.name)
    assert fresh == committed
    assert len(fresh) == 6 * 3  # 6 protos x (pb2, pyi, grpc)
    _, mismatch, errors = filecmp.cmpfiles(out / "driver/plugin/gen", GEN, fresh, shallow=False)
    shutil.rmtree(out, ignore_errors=True)
    assert mismatch == [] and errors == [], f"stale generated stubs: {mismatch or errors}; run hack/gen_protos.sh"


def test_every_proto_has_stubs_and_they_import() -> None:
    import importlib

    protos = sorted(p.stem for p in (ROOT / "proto").glob("*.proto"))
    assert protos == [
        "dra_v1", "dra_v1beta1", "drahealth_v1", "drahealth_v1alpha1", "drahealth_v1beta1",
        "pluginregistration_v1",
    ]
    for name in protos:
        pb2 = importlib.import_module(f"driver.plugin.gen.{name}_pb2")
        grpc_mod = importlib.import_module(f"driver.plugin.gen.{name}_pb2_grpc")
        assert pb2.DESCRIPTOR.name == f"driver/plugin/gen/{name}.proto"
        assert grpc_mod is not None


def test_wire_names_match_kubelet() -> None:
    # The kubelet dials these exact fully-qualified service names.
    from driver.plugin.gen import dra_v1_pb2, dra_v1beta1_pb2, drahealth_v1_pb2, drahealth_v1alpha1_pb2
    from driver.plugin.gen import pluginregistration_v1_pb2

    assert dra_v1_pb2.DESCRIPTOR.services_by_name["DRAPlugin"].full_name == "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"
    assert (
        dra_v1beta1_pb2.DESCRIPTOR.services_by_name["DRAPlugin"].full_name
        == "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin"
    )
    assert drahealth_v1_pb2.DESCRIPTOR.services_by_name["DRAResourceHealth"].full_name == "v1.DRAResourceHealth"
    assert (
        drahealth_v1alpha1_pb2.DESCRIPTOR.services_by_name["DRAResourceHealth"].full_name
        == "v1alpha1.DRAResourceHealth"
    )
    assert pluginregistration_v1_pb2.DESCRIPTOR.services_by_name["Registration"].full_name == (
        "pluginregistration.Registration"
    )
