"""`fake-dra apply` admits objects as kube-apiserver does: refusals with its messages and nothing
stored, defaults in what `get -o yaml` shows, updates that keep what `kubectl apply` keeps."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from driver.cli import main
from driver.store import ObjectStore
from driver.store.kinds import resolve

# `kubectl create deployment web --image=nginx --dry-run=client -o yaml` and
# `kubectl create job pi --image=perl:5.34.0 --dry-run=client -o yaml`, as kubectl 1.37 prints them.
KUBECTL_GENERATED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  creationTimestamp: null
  labels:
    app: web
  name: web
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  strategy: {}
  template:
    metadata:
      creationTimestamp: null
      labels:
        app: web
    spec:
      containers:
      - image: nginx
        name: nginx
        resources: {}
status: {}
---
apiVersion: batch/v1
kind: Job
metadata:
  creationTimestamp: null
  name: pi
spec:
  template:
    metadata:
      creationTimestamp: null
    spec:
      containers:
      - image: perl:5.34.0
        name: pi
        resources: {}
      restartPolicy: Never
status: {}
"""

# Each refused by a 1.37 kube-apiserver (issue 27's list), with the field and message it names.
REFUSED = [
    ("containers: []\n", "spec.containers: Required value"),
    ("containers: [{name: c, image: x}, {name: c, image: y}]\n", 'spec.containers[1].name: Duplicate value: "c"'),
    ("containers: [{name: c, image: x, resources: {claims: [{name: gpus}]}}]\n"
     "resourceClaims: [{name: gpu, resourceClaimTemplateName: t}]\n",
     'spec.containers[0].resources.claims[0]: Not found: "gpus": must be one of the names in pod.spec.resourceClaims: gpu'),
    ("containers: [{name: c, image: x}]\ntolerations: [{key: k, operator: Equalz}]\n",
     'spec.tolerations[0].operator: Unsupported value: "Equalz": supported values: "Equal", "Exists"'),
    ("containers: [{name: c, image: x, resources: {requests: {cpu: '2'}, limits: {cpu: '1'}}}]\n",
     'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1'),
    ("containers: [{name: c, image: x}]\nnodeSelector: {'bad key!': v}\n", 'spec.nodeSelector: Invalid value: "bad key!"'),
]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _apply(tmp_path: Path, capsys, text: str) -> tuple[int, str, str]:
    path = tmp_path / "objects.yaml"
    path.write_text(text)
    return _run(capsys, "apply", "-f", str(path), "--store", str(tmp_path / "store"))


def _pod(spec: str) -> str:
    indented = "".join(f"  {line}\n" for line in spec.splitlines())
    return f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n{indented}"


@pytest.mark.parametrize(("spec", "message"), REFUSED)
def test_refused_pods_are_refused_with_kube_apiservers_message(tmp_path, capsys, spec, message):
    code, _, err = _apply(tmp_path, capsys, _pod(spec))
    assert code == 2 and "Traceback" not in err
    assert 'objects.yaml: document 1 (Pod p): The Pod "p" is invalid: ' in err and message in err
    assert ObjectStore(tmp_path / "store").list("pods", "default") == []


def test_labels_and_annotations_are_checked_on_every_kind(tmp_path, capsys):
    text = ("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: gpu.example.com\n"
            "  labels: {x/y/z: 'a b'}\n  annotations: {'bad key!': v}\n")
    code, _, err = _apply(tmp_path, capsys, text)
    assert code == 2
    assert 'metadata.labels: Invalid value: "x/y/z": a valid label key' in err
    assert 'metadata.labels: Invalid value: "a b": a valid label must be an empty string' in err
    assert 'metadata.annotations: Invalid value: "bad key!"' in err


def test_get_shows_what_a_cluster_shows(tmp_path, capsys):
    assert _apply(tmp_path, capsys, _pod("containers: [{name: c, image: 'busybox:1.36'}]\n"))[0] == 0
    code, out, _ = _run(capsys, "get", "pod", "p", "-o", "yaml", "--store", str(tmp_path / "store"))
    obj = yaml.safe_load(out)
    assert code == 0 and obj["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert [t["key"] for t in obj["spec"]["tolerations"]] == ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
    assert obj["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_kubectl_generated_workloads_apply_and_reapply_unchanged(tmp_path, capsys):
    code, out, err = _apply(tmp_path, capsys, KUBECTL_GENERATED)
    assert code == 0, err
    assert out.splitlines() == ["deployment.apps/web created", "job.batch/pi created"]
    code, out, _ = _apply(tmp_path, capsys, KUBECTL_GENERATED)
    assert code == 0 and out.splitlines() == ["deployment.apps/web unchanged", "job.batch/pi unchanged"]
    store = ObjectStore(tmp_path / "store")
    job = store.get("jobs", "default", "pi")
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert store.get("deployments", "default", "web")["spec"]["strategy"]["type"] == "RollingUpdate"


def test_workload_kinds_resolve_as_kubectl_names_them():
    """Discovery's short names: deploy and rs (apis__apps__v1.json), none for jobs."""
    assert resolve("deploy").kind == resolve("deployments.apps").kind == resolve("deployment.v1.apps").kind == "Deployment"
    assert resolve("rs").kind == "ReplicaSet" and resolve("jobs.batch").kind == "Job"
    assert (resolve("jobs").api_version, resolve("deploy").api_version) == ("batch/v1", "apps/v1")
    assert resolve("job").qualified == "job.batch"


def test_a_slice_without_generation_is_generation_zero(tmp_path, capsys):
    text = ("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
            "spec: {driver: gpu.example.com, nodeName: n1, pool: {name: n1, resourceSliceCount: 1}, devices: [{name: gpu-0}]}\n")
    code, _, err = _apply(tmp_path, capsys, text)
    assert code == 0, err
    assert ObjectStore(tmp_path / "store").get("resourceslices", None, "s")["spec"]["pool"]["generation"] == 0


def test_a_bound_pod_reapplied_stays_bound(tmp_path, capsys):
    """The scheduler's binding is not in the document; kubectl apply's merge keeps it, so does this."""
    text = _pod("containers: [{name: c, image: 'busybox:1.36'}]\n")
    assert _apply(tmp_path, capsys, text)[0] == 0
    store = ObjectStore(tmp_path / "store")
    pod = store.get("pods", "default", "p")
    pod["spec"]["nodeName"] = "node-1"
    pod["status"]["phase"] = "Running"
    store.update("pods", pod)
    code, out, err = _apply(tmp_path, capsys, text)
    assert code == 0 and out.strip() == "pod/p unchanged", err
    code, _, err = _apply(tmp_path, capsys, text.replace("busybox:1.36", "busybox:1.37"))
    assert code == 0, err  # images may change
    after = store.get("pods", "default", "p")
    assert after["spec"]["nodeName"] == "node-1" and after["status"]["phase"] == "Running"


def test_objects_stored_before_defaults_existed_reapply(tmp_path, capsys):
    """An object written without defaults (an older store) is read with them, as etcd's objects are:
    re-applying its manifest is an update that adds them, not an immutable-field error."""
    store = ObjectStore(tmp_path / "store")
    text = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: default}\n"
            "spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}\n")
    store.create("resourceclaims", yaml.safe_load(text))
    code, out, err = _apply(tmp_path, capsys, text)
    assert code == 0 and out.strip() == "resourceclaim.resource.k8s.io/c configured", err
    assert store.get("resourceclaims", "default", "c")["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1


def test_a_refused_update_changes_nothing(tmp_path, capsys):
    text = ("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {providerID: kwok://n1}\n")
    assert _apply(tmp_path, capsys, text)[0] == 0
    before = ObjectStore(tmp_path / "store").get("nodes", None, "n1")
    code, _, err = _apply(tmp_path, capsys, text.replace("kwok://n1", "kwok://other"))
    assert code == 2 and "spec.providerID: Forbidden: node updates may not change providerID" in err
    assert ObjectStore(tmp_path / "store").get("nodes", None, "n1") == before
