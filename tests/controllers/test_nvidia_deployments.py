"""NVIDIA's quickstart files that run a Deployment (kubernetes-sigs/dra-driver-nvidia-gpu@95932046
demo/specs/quickstart/v1/gpu-test4.yaml and gpu-test6.yaml), applied unchanged to a fleet of
nvidia-personality nodes and run by `fake-dra cluster`: the Deployment's four replicas get what the
quickstart table (tests/personality/test_quickstart.py) says a pod of that manifest gets on that
node model. NVIDIA's pods tolerate `nvidia.com/gpu`, not kwok's taint: the fleet's group taints its
Nodes as NVIDIA's GPU nodes are tainted."""

from __future__ import annotations

import yaml

from adversarial.invariants import violations
from driver.cli import main
from personality.test_quickstart import HALF_BALANCED, MIG4

MIG_CEL = "device.attributes['gpu.nvidia.com'].profile == '{p}'"
_CTR = ("  - name: ctr{i}\n    image: ubuntu:22.04\n    command: [\"bash\", \"-c\"]\n"
        "    args: [\"nvidia-smi -L; trap 'exit 0' TERM; sleep 9999 & wait\"]\n"
        "    resources:\n      claims:\n      - name: mig-devices\n        request: {r}\n")
# The shape of gpu-test4.yaml: a Namespace, a template of four MIG requests on one parent GPU, and a
# Deployment of 4 replicas whose four containers each take one request.
GPU_TEST4 = f"""\
---
apiVersion: v1
kind: Namespace
metadata:
  name: gpu-test4
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  namespace: gpu-test4
  name: mig-devices
spec:
  spec:
    devices:
      requests:
{''.join(f'''      - name: {r}
        exactly:
          deviceClassName: mig.nvidia.com
          selectors:
          - cel:
              expression: "{MIG_CEL.format(p=p)}"
''' for r, p in (("mig-1g-5gb-0", "1g.5gb"), ("mig-1g-5gb-1", "1g.5gb"), ("mig-2g-10gb", "2g.10gb"), ("mig-3g-20gb", "3g.20gb")))}
      constraints:
      - requests: []
        matchAttribute: "gpu.nvidia.com/parentUUID"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  namespace: gpu-test4
  name: pod
  labels:
    app: gpu-test4-pod
spec:
  replicas: 4
  selector:
    matchLabels:
      app: pod
  template:
    metadata:
      labels:
        app: pod
    spec:
      resourceClaims:
      - name: mig-devices
        resourceClaimTemplateName: mig-devices
      containers:
{''.join('    ' + line + chr(10) for i, r in enumerate(("mig-1g-5gb-0", "mig-1g-5gb-1", "mig-2g-10gb", "mig-3g-20gb")) for line in _CTR.format(i=i, r=r).splitlines())}
      tolerations:
      - key: "nvidia.com/gpu"
        operator: "Exists"
        effect: "NoSchedule"
"""
# The shape of gpu-test6.yaml: a time-sliced A100 picked by its `index` attribute, 4 replicas.
GPU_TEST6 = """\
---
apiVersion: v1
kind: Namespace
metadata:
  name: gpu-test6
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  namespace: gpu-test6
  name: a100
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
          selectors:
          - cel:
              expression: |
                device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*a100.*$')
                &&
                (device.attributes['gpu.nvidia.com'].index == 0 ||
                device.attributes['gpu.nvidia.com'].index == 2)
      config:
      - requests: ["gpu"]
        opaque:
          driver: gpu.nvidia.com
          parameters:
            apiVersion: resource.nvidia.com/v1beta1
            kind: GpuConfig
            sharing:
              strategy: TimeSlicing
              timeSlicingConfig:
                interval: Long
---
apiVersion: apps/v1
kind: Deployment
metadata:
  namespace: gpu-test6
  name: pod
  labels:
    app: gpu-test6-pod
spec:
  replicas: 4
  selector:
    matchLabels:
      app: pod
  template:
    metadata:
      labels:
        app: pod
    spec:
      containers:
      - name: ctr
        image: ubuntu:22.04
        command: ["bash", "-c"]
        args: ["nvidia-smi -L; trap 'exit 0' TERM; sleep 9999 & wait"]
        resources:
          claims:
          - name: a100
      resourceClaims:
      - name: a100
        resourceClaimTemplateName: a100
      tolerations:
      - key: "nvidia.com/gpu"
        operator: "Exists"
        effect: "NoSchedule"
"""


def _fleet(tmp_path):
    doc = {"apiVersion": "fake-dra.example.com/v1alpha1", "kind": "Fleet", "metadata": {"name": "nv"},
           "spec": {"nodeGroups": [{"name": "dgx", "count": 1, "profile": "dgx-a100", "personality": "nvidia",
                                    "driverConfig": {"nvidia": {"migDevices": HALF_BALANCED}},
                                    "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}]}}
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_gpu_test4s_deployment_runs_four_replicas_on_their_mig_devices(tmp_path, capsys):
    store = str(tmp_path / "store")
    _run(capsys, "fleet", "apply", "-f", _fleet(tmp_path), "--store", store)
    (tmp_path / "gpu-test4.yaml").write_text(GPU_TEST4)
    out = _run(capsys, "apply", "-f", str(tmp_path / "gpu-test4.yaml"), "--store", store)
    assert "deployment.apps/pod created" in out
    assert _run(capsys, "cluster", "--until-settled", "--timeout", "120", "--store", store).startswith("settled after")
    from driver.store import ObjectStore

    s = ObjectStore(store)
    pods = s.list("pods", "gpu-test4")
    assert len(pods) == 4 and all(p["status"]["phase"] == "Running" for p in pods)
    got = sorted(sorted(r["device"] for r in c["status"]["allocation"]["devices"]["results"])
                 for c in s.list("resourceclaims", "gpu-test4"))
    assert got == sorted(sorted(n.format(g=g) for n in MIG4) for g in range(4))
    assert violations(s) == []
    _run(capsys, "delete", "namespace", "gpu-test4", "--store", store)
    _run(capsys, "cluster", "--until-settled", "--timeout", "120", "--store", store)
    assert s.list("pods", "gpu-test4") == [] and s.list("resourceclaims", "gpu-test4") == [] and violations(s) == []


def test_gpu_test6s_deployment_stays_pending_saying_why(tmp_path, capsys):
    store = str(tmp_path / "store")
    _run(capsys, "fleet", "apply", "-f", _fleet(tmp_path), "--store", store)
    (tmp_path / "gpu-test6.yaml").write_text(GPU_TEST6)
    _run(capsys, "apply", "-f", str(tmp_path / "gpu-test6.yaml"), "--store", store)
    _run(capsys, "cluster", "--until-settled", "--timeout", "120", "--store", store)
    from driver.store import ObjectStore

    s = ObjectStore(store)
    pods = s.list("pods", "gpu-test6")
    assert len(pods) == 4
    for p in pods:
        scheduled = next(c for c in p["status"]["conditions"] if c["type"] == "PodScheduled")
        assert scheduled["status"] == "False" and "no such key: index" in scheduled["message"]
    assert violations(s) == []
