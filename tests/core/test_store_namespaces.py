"""Namespaces in the local store: manifests written for a cluster (NVIDIA's quickstart files open
with a Namespace) apply unchanged; deleting a namespace deletes what it holds and nothing else."""

from __future__ import annotations

from pathlib import Path

from driver.cli import main
from driver.store import ObjectStore

# The shape of NVIDIA's demo/specs/quickstart/v1/gpu-test1.yaml (kubernetes-sigs/dra-driver-nvidia-gpu):
# a Namespace, a claim template and a pod using it, in one file.
QUICKSTART = """\
---
apiVersion: v1
kind: Namespace
metadata:
  name: gpu-test1
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  namespace: gpu-test1
  name: single-gpu
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
---
apiVersion: v1
kind: Pod
metadata:
  namespace: gpu-test1
  name: pod1
spec:
  containers:
  - name: ctr
    image: ubuntu:22.04
    resources:
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: single-gpu
"""
OTHER_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: keep, namespace: other}
spec:
  containers: [{name: c, image: x}]
"""


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _apply(tmp_path: Path, capsys, text: str) -> tuple[int, str, str]:
    path = tmp_path / f"m{len(list(tmp_path.glob('m*.yaml')))}.yaml"
    path.write_text(text)
    return _run(capsys, "apply", "-f", str(path), "--store", str(tmp_path / "store"))


def test_a_cluster_manifest_with_its_namespace_applies_and_reapplies_unchanged(tmp_path, capsys):
    code, out, _ = _apply(tmp_path, capsys, QUICKSTART)
    assert code == 0
    assert out.splitlines() == ["namespace/gpu-test1 created",
                                "resourceclaimtemplate.resource.k8s.io/single-gpu created", "pod/pod1 created"]
    store = ObjectStore(tmp_path / "store")
    ns = store.get("namespaces", None, "gpu-test1")
    # What kube-apiserver's namespace strategy sets.
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "gpu-test1"}
    assert ns["spec"] == {"finalizers": ["kubernetes"]} and ns["status"] == {"phase": "Active"}
    code, out, _ = _apply(tmp_path, capsys, QUICKSTART)
    assert code == 0 and out.split("\n")[0] == "namespace/gpu-test1 unchanged"
    code, out, _ = _run(capsys, "get", "ns", "--store", str(tmp_path / "store"))
    assert code == 0 and out.split("\n")[0].split() == ["NAME", "STATUS", "AGE"]
    assert out.split("\n")[1].split()[:2] == ["gpu-test1", "Active"]


def test_deleting_a_namespace_deletes_what_it_holds_and_nothing_else(tmp_path, capsys):
    assert _apply(tmp_path, capsys, QUICKSTART)[0] == 0
    assert _apply(tmp_path, capsys, OTHER_POD)[0] == 0
    store_dir = str(tmp_path / "store")
    code, out, _ = _run(capsys, "delete", "namespace", "gpu-test1", "--store", store_dir)
    assert code == 0 and out == 'namespace "gpu-test1" deleted\n'
    store = ObjectStore(tmp_path / "store")
    assert store.list("pods", "gpu-test1") == [] and store.list("resourceclaimtemplates", "gpu-test1") == []
    assert [p["metadata"]["name"] for p in store.list("pods", "other")] == ["keep"]


def test_deleting_a_missing_namespace_touches_nothing(tmp_path, capsys):
    assert _apply(tmp_path, capsys, OTHER_POD)[0] == 0
    code, _, err = _run(capsys, "delete", "ns", "other", "--store", str(tmp_path / "store"))
    assert code == 1 and 'namespaces "other" not found' in err  # pods in "other" exist, the Namespace does not
    assert [p["metadata"]["name"] for p in ObjectStore(tmp_path / "store").list("pods", "other")] == ["keep"]


def test_a_namespace_name_must_be_a_dns_label(tmp_path, capsys):
    code, _, err = _apply(tmp_path, capsys, "apiVersion: v1\nkind: Namespace\nmetadata: {name: a.b}\n")
    assert code == 2
    # ValidateNamespace's nameFn is ValidateNamespaceName (a DNS label): a dot is its own message.
    assert 'The Namespace "a.b" is invalid: metadata.name: Invalid value: "a.b": must not contain dots' in err
    code, _, err = _apply(tmp_path, capsys, "apiVersion: v1\nkind: Namespace\nmetadata: {name: ok}\nspek: {}\n")
    assert code == 2 and 'spek: unknown field "spek" (did you mean "spec"?)' in err
    assert ObjectStore(tmp_path / "store").list("namespaces", None) == []
