"""One bad claim in the local object store fails that claim only, with an error naming it.

Each hostile object sits next to a good claim in the same NodePrepareResources call: the good one
must be prepared, the bad one answered with its own error, and nothing reserved for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from driver.state.cdi import CdiWriter
from driver.state.checkpoint import CheckpointStore
from driver.state.pool import PoolCache
from driver.state.prepare import DeviceState
from driver.state.sources import StoreClaimSource
from driver.state.types import ClaimRef
from driver.store import ObjectStore
from driver.store.objectstore import MAX_OBJECT_BYTES
from state.conftest import DRIVER, NODE, result
from tests.storeutil import plant_row

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

    def write(self, name: str, data: bytes | str, namespace: str = "default") -> ClaimRef:
        """Plant `data` as the stored row of the claim, as a hand edit of the database would."""
        plant_row(self.root / "store", "resourceclaims", namespace, name, data)
        return ClaimRef(namespace, name, str(uuid.uuid4()))


@pytest.fixture
def senv(tmp_path, demo_pool):
    e = StoreEnv(tmp_path, demo_pool)
    yield e
    e.state.close()


def _doc(**override) -> str:
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": "bad", "namespace": "default", "uid": "u-bad"},
           "spec": {"devices": {}},
           "status": {"allocation": {"devices": {"results": [result("gpu-1")]}}}}
    obj.update(override)
    return json.dumps(obj)


HOSTILE = {
    "status-list": (_doc(status=[1]), "not a valid ResourceClaim: status: expected object, got list"),
    "metadata-list": (_doc(metadata=[1]), "metadata: expected an object, got list"),
    "kind-pod": (_doc(kind="Pod"), 'not a valid ResourceClaim: kind: Unsupported value: "Pod"'),
    "api-version": (_doc(apiVersion="v1"), 'not a valid ResourceClaim: apiVersion: Unsupported value: "v1"'),
    "other-namespace": (_doc(metadata={"name": "bad", "namespace": "kube-system", "uid": "u-bad"}),
                        "metadata.namespace 'kube-system' is not the namespace it is stored under"),
    "results-map": (_doc(status={"allocation": {"devices": {"results": {"a": 1}}}}),
                    "status.allocation.devices.results: expected list"),
    "result-scalar": (_doc(status={"allocation": {"devices": {"results": ["gpu-1"]}}}),
                      "status.allocation.devices.results[0]: expected object"),
    "not-an-object": ("[1, 2]", "does not hold an object"),
    "not-json": ("a: [1, 2\n", "its stored JSON does not parse"),
    "yaml-tag": ("!!python/object/apply:os.system ['true']\n", "its stored JSON does not parse"),
    "non-utf8": (b"metadata:\n  name: \xff\xfe\n", "its stored value is not text"),
    "null": (None, "its stored value is not text"),
    "deep-150": (_doc(spec={"a": json.loads("[" * 150 + "]" * 150)}), "nests more than 100 levels deep"),
    "deep-5000": ('{"a": ' + "[" * 5000 + "]" * 5000 + "}", "its stored JSON does not parse"),
    "huge-int": ('{"metadata": {"generation": ' + "9" * 5000 + "}}", "its stored JSON does not parse"),
    "oversized": ('{"a": "' + "x" * (MAX_OBJECT_BYTES + 10) + '"}', f"larger than the {MAX_OBJECT_BYTES:,} bytes"),
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


def test_an_invalid_namespace_is_that_claims_error(senv):
    good = senv.claim("good", "gpu-0")
    bad = ClaimRef("Team_A", "c", "u-bad")
    out = senv.state.prepare([bad, good])
    assert out[good.uid].error == ""
    assert out[bad.uid].error.startswith("claim Team_A/c: invalid claim namespace 'Team_A': must be a DNS label")


def test_a_253_character_name_is_a_claim_like_any_other(senv):
    """The directory store could not keep it (a file name holds 255 bytes); the database can."""
    good = senv.claim("good", "gpu-0")
    long = senv.claim(NAME_253, "gpu-1")
    out = senv.state.prepare([long, good])
    assert out[good.uid].error == "" and out[long.uid].error == ""


def test_nesting_that_overflowed_the_c_stack_is_refused(tmp_path):
    """100,000 levels crashed the process with SIGSEGV in libyaml's composer; run in a child so a
    regression cannot take the test session down with it."""
    ObjectStore(tmp_path / "store").create("resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "opens", "namespace": "default"}})
    plant_row(tmp_path / "store", "resourceclaims", "default", "deep", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
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
    assert proc.stdout.count("its stored JSON does not parse") == 2, proc.stdout
