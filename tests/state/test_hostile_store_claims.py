"""One bad claim in the local object store fails that claim only, with an error naming it.

Each hostile object sits next to a good claim in the same NodePrepareResources call: the good one
must be prepared, the bad one answered with its own error, and nothing reserved for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from driver.state.cdi import CdiWriter
from driver.state.checkpoint import CheckpointStore
from driver.state.pool import PoolCache
from driver.state.prepare import DeviceState
from driver.state.sources import StoreClaimSource
from driver.state.types import ClaimRef
from driver.store import ObjectStore
from state.conftest import DRIVER, NODE, result

NAME_253 = ".".join(["a" * 63] * 4)[:253]  # a valid DNS subdomain of the maximum length


class StoreEnv:
    def __init__(self, root: Path, pool) -> None:
        self.root = root
        self.store = ObjectStore(root / "store")
        self.state = DeviceState(
            driver_name=DRIVER, claims=StoreClaimSource(self.store), pool=PoolCache(lambda: pool),
            cdi=CdiWriter(root / "cdi", DRIVER),
            checkpoint=CheckpointStore(root / "state", driver_name=DRIVER, node_name=NODE, boot_id="b1"))

    def claim(self, name: str, device: str, namespace: str = "default") -> ClaimRef:
        uid = str(uuid.uuid4())
        self.store.create("resourceclaims", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace, "uid": uid}, "spec": {},
            "status": {"allocation": {"devices": {"results": [result(device)]}}}})
        return ClaimRef(namespace, name, uid)

    def path(self, name: str, namespace: str = "default") -> Path:
        return self.root / "store" / "resourceclaims" / namespace / f"{name}.yaml"

    def write(self, name: str, data: bytes | str, namespace: str = "default") -> ClaimRef:
        path = self.path(name, namespace)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return ClaimRef(namespace, name, str(uuid.uuid4()))


@pytest.fixture
def senv(tmp_path, demo_pool):
    e = StoreEnv(tmp_path, demo_pool)
    yield e
    e.state.close()


def _doc(**override) -> str:
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": "bad", "namespace": "default", "uid": "u-bad"},
           "status": {"allocation": {"devices": {"results": [result("gpu-1")]}}}}
    obj.update(override)
    return yaml.safe_dump(obj)


HOSTILE = {
    "status-list": (_doc(status=[1]), "claim default/bad: status: expected an object, got [1]"),
    "metadata-list": (_doc(metadata=[1]), "claim default/bad: metadata: expected an object, got [1]"),
    "kind-pod": (_doc(kind="Pod"), "claim default/bad: kind is 'Pod', not ResourceClaim"),
    "api-version": (_doc(apiVersion="v1"), "claim default/bad: apiVersion is 'v1', not resource.k8s.io/..."),
    "other-namespace": (_doc(metadata={"name": "bad", "namespace": "kube-system", "uid": "u-bad"}),
                        "claim default/bad: metadata.namespace is 'kube-system', not 'default'"),
    "results-map": (_doc(status={"allocation": {"devices": {"results": {"a": 1}}}}),
                    "status.allocation.devices.results: expected a list"),
    "result-scalar": (_doc(status={"allocation": {"devices": {"results": ["gpu-1"]}}}),
                      "status.allocation.devices.results[0]: expected an object"),
    "not-an-object": ("- 1\n- 2\n", "does not hold an object"),
    "not-yaml": ("a: [1, 2\n", "invalid YAML"),
    "python-tag": ("!!python/object/apply:os.system ['true']\n", "invalid YAML"),
    "non-utf8": (b"metadata:\n  name: \xff\xfe\n", "is not UTF-8 text"),
    "deep-5000": ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nests more than 100 levels deep"),
    "deep-block": ("".join("  " * i + "k:\n" for i in range(400)) + "  " * 400 + "v\n", "nests more than 100 levels"),
    "alias-bomb": ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(7)),
        "expands to more than 1000000 values"),
    "huge-int": ("metadata:\n  generation: " + "9" * 5000 + "\n", "ValueError"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_store_object_is_that_claims_error(senv, case):
    data, fragment = HOSTILE[case]
    good = senv.claim("good", "gpu-0")
    bad = senv.write("bad", data)
    out = senv.state.prepare([bad, good])
    assert out[good.uid].error == "", out[good.uid].error
    error = out[bad.uid].error
    assert fragment in error and "default/bad" in error, error
    assert len(error) < 1200
    assert set(senv.state.prepared()) == {good.uid}


def test_a_directory_where_the_file_should_be(senv):
    senv.path("bad").mkdir(parents=True)
    good = senv.claim("good", "gpu-0")
    bad = ClaimRef("default", "bad", "u-bad")
    out = senv.state.prepare([bad, good])
    assert out[good.uid].error == ""
    assert out[bad.uid].error.startswith("resourceclaim default/bad: local store: cannot read ")
    assert "Is a directory" in out[bad.uid].error


def test_a_store_path_component_that_is_a_file(senv):
    good = senv.claim("good", "gpu-0")
    (senv.root / "store" / "resourceclaims" / "team").write_text("not a directory\n")
    bad = ClaimRef("team", "c", "u-bad")
    out = senv.state.prepare([bad, good])
    assert out[good.uid].error == ""
    assert "resourceclaim team/c" in out[bad.uid].error and "Not a directory" in out[bad.uid].error


def test_a_253_character_name_does_not_fit_in_a_file_name(senv):
    good = senv.claim("good", "gpu-0")
    bad = ClaimRef("default", NAME_253, "u-bad")
    out = senv.state.prepare([bad, good])
    assert out[good.uid].error == ""
    error = out[bad.uid].error
    assert error.startswith(f"resourceclaim default/{NAME_253}: local store: name ")
    assert "at most 250 fit" in error


def test_an_oversized_file_is_refused_without_reading_it_all(senv):
    from driver.store.objectstore import MAX_OBJECT_BYTES

    good = senv.claim("good", "gpu-0")
    bad = senv.write("bad", b"a: " + b"x" * (MAX_OBJECT_BYTES + 10))
    out = senv.state.prepare([bad, good])
    assert out[good.uid].error == "" and f"larger than {MAX_OBJECT_BYTES} bytes" in out[bad.uid].error


def test_nesting_that_overflowed_the_c_stack_is_refused(tmp_path):
    """100,000 levels crashed the process with SIGSEGV in libyaml's composer; run in a child so a
    regression cannot take the test session down with it."""
    claims = tmp_path / "store" / "resourceclaims" / "default"
    claims.mkdir(parents=True)
    (claims / "deep.yaml").write_text("a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    code = ("import sys; from driver.store import ObjectStore; from driver.state.sources import StoreClaimSource\n"
            "from driver.errors import InputError\n"
            f"src = StoreClaimSource(ObjectStore({str(tmp_path / 'store')!r}))\n"
            "try:\n    src.get_claim('default', 'deep')\nexcept InputError as e:\n    print(e)\n"
            "from driver.store import ObjectStore as S\n"
            f"try:\n    S({str(tmp_path / 'store')!r}).get('resourceclaims', 'default', 'deep')\n"
            "except InputError as e:\n    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("nests more than 100 levels deep") == 2, proc.stdout


def test_a_selector_over_every_cel_limit_is_not_the_plugins_to_evaluate(senv, monkeypatch):
    """Prepare-time revalidation checks the allocation against what the node holds (counters,
    groups, exclusivity), never the claim's selectors: a kubelet plugin does not evaluate CEL
    (upstream's kubeletplugin helper reads only status.allocation), so a claim whose spec holds a
    selector over the length and cost limits is prepared as allocated, and no CEL is compiled."""
    import driver.celexpr.environment as environment

    def no_cel(expression):
        raise AssertionError("prepare compiled a CEL selector")

    monkeypatch.setattr(environment, "_compile", no_cel)
    nested = "true"
    for i in reversed(range(9)):
        nested = f"[1,2,3,4,5,6,7,8,9,10].all(v{i}, {nested})"
    expression = nested + " && " + " && ".join(["true"] * 3000)  # also over 10 KiB
    ref = senv.claim("nested", "gpu-0")
    stored = senv.store.get("resourceclaims", "default", "nested")
    stored["spec"] = {"devices": {"requests": [{"name": "req", "exactly": {
        "deviceClassName": "gpu.fake-dra.example.com", "selectors": [{"cel": {"expression": expression}}]}}]}}
    senv.store.update("resourceclaims", stored)
    out = senv.state.prepare([ref])
    assert out[ref.uid].error == "", out[ref.uid].error
    assert set(senv.state.prepared()) == {ref.uid}
