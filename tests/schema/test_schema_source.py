"""The committed compact schema is exactly what hack/gen_schema.py derives from kubernetes-validate 1.37.

Why: driver/schema validates every object users give fake-dra, at run time, without
kubernetes-validate installed; the file must never drift from the official 1.37 schemas (nor be
edited by hand), so a Kubernetes bump is one regenerate away.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import kubernetes_validate

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "driver" / "schema" / "data" / "k8s-1.37-strict.json"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_schema", ROOT / "hack" / "gen_schema.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_schema_equals_what_kubernetes_validate_ships():
    assert kubernetes_validate.__version__.startswith("1.37"), kubernetes_validate.__version__
    assert DATA.read_text() == _generator().generate(), "stale: run .venv/bin/python hack/gen_schema.py"


def test_check_mode_says_so_when_stale(tmp_path, monkeypatch):
    gen = _generator()
    monkeypatch.setattr(gen, "OUT", tmp_path / "k8s.json")
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    (tmp_path / "k8s.json").write_text("{}")
    assert gen.main(["--check"]) == 1
    assert gen.main([]) == 0 and gen.main(["--check"]) == 0


def test_check_mode_passes_on_the_committed_file():
    result = subprocess.run([sys.executable, str(ROOT / "hack" / "gen_schema.py"), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_schema_reaches_every_type_of_the_kinds_read():
    data = json.loads(DATA.read_text())
    assert sorted(data["kinds"]) == ["apps/v1/Deployment", "apps/v1/ReplicaSet", "batch/v1/Job",
                                     "resource.k8s.io/v1/DeviceClass", "resource.k8s.io/v1/DeviceTaintRule",
                                     "resource.k8s.io/v1/ResourceClaim",
                                     "resource.k8s.io/v1/ResourceClaimTemplate", "resource.k8s.io/v1/ResourceSlice",
                                     "resource.k8s.io/v1alpha3/ResourcePoolStatusRequest",
                                     "scheduling.k8s.io/v1beta1/PodGroup",
                                     "v1/Event", "v1/Namespace", "v1/Node", "v1/Pod"]
    refs = {d["ref"] for t in data["types"].values() for f in t["fields"].values() for d in _descs(f) if "ref" in d}
    assert refs <= set(data["types"])  # closed: every reference resolves
    # The 1.37 fields this project cares about are there (alpha ones included).
    consumption = data["types"]["io.k8s.api.resource.v1.DeviceCounterConsumption"]["fields"]
    assert "compatibilityGroups" in consumption
    assert "valueFrom" not in data["types"]["io.k8s.api.resource.v1.Counter"]["fields"]  # KEP-5941 is not in 1.37


def _descs(desc):
    yield desc
    for key in ("items", "values"):
        if key in desc:
            yield from _descs(desc[key])
