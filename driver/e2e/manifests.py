"""Kubernetes objects the harness creates: ResourceClaims, Pods, PodGroups, and the generated files.

One place turns scenario steps into API objects, so the local backend (object store), the kind
backend (API server) and the example manifests under deploy/ all see the same objects. It also
writes the generated DeviceClass files under deploy/ (fake-dra's and the nvidia personality's, from
driver/personality; a test keeps them equal).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from driver import DEFAULT_DRIVER_NAME
from driver.personality.fakedra.classes import class_name, device_classes

NAMESPACE = "fake-dra-e2e"
# Pods only need to exist and print what they were given; the image is the one the upstream
# Kubernetes e2e tests use for the same purpose.
POD_IMAGE = "registry.k8s.io/e2e-test-images/busybox:1.36.1-1"

def claim_object(
    name: str,
    requests: Sequence[Mapping[str, Any]],
    *,
    driver_name: str = DEFAULT_DRIVER_NAME,
    namespace: str = NAMESPACE,
    constraints: Sequence[Mapping[str, Any]] | None = None,
    config: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """A ResourceClaim from a scenario's compact request list (class, selector, count, capacity)."""
    reqs = []
    for req in requests:
        short = str(req["class"])
        exactly: dict[str, Any] = {
            # A short name (gpu, mig, ...) is fake-dra's class of that type; a dotted one is a DeviceClass
            # name as is (another personality's: mig.nvidia.com).
            "deviceClassName": short if "." in short else class_name(short, driver_name),
            "allocationMode": "ExactCount",
            "count": int(req.get("count", 1)),
        }
        if req.get("selector"):
            exactly["selectors"] = [{"cel": {"expression": str(req["selector"])}}]
        if req.get("capacity"):
            exactly["capacity"] = {"requests": {str(k): str(v) for k, v in dict(req["capacity"]).items()}}
        reqs.append({"name": str(req["name"]), "exactly": exactly})
    devices: dict[str, Any] = {"requests": reqs}
    if constraints:
        devices["constraints"] = [dict(c) for c in constraints]
    if config:
        devices["config"] = [dict(c) for c in config]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/part-of": "fake-dra-e2e"}},
        "spec": {"devices": devices},
    }


def pod_object(
    name: str,
    claims: Sequence[str],
    *,
    podgroup: str | None = None,
    namespace: str = NAMESPACE,
    node_name: str | None = None,
    node_names: Sequence[str] = (),
) -> dict[str, Any]:
    """A pod whose single container uses every listed claim and prints its FAKE_DRA_* env.
    `node_name`: only that node; `node_names`: any of them, kwok's taint tolerated (multi-node)."""
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 1,
        "containers": [
            {
                "name": "ctr",
                "image": POD_IMAGE,
                "command": ["sh", "-c", "env | sort | grep -E '^(FAKE_DRA|NVIDIA|CUDA)' ; sleep 3600"],
                "resources": {"claims": [{"name": c} for c in claims]},
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                    "runAsNonRoot": True,
                    "runAsUser": 65534,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
            }
        ],
        "resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims],
    }
    if podgroup is not None:
        spec["schedulingGroup"] = {"podGroupName": podgroup}
    if node_name is not None:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node_name}
    if node_names:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": list(node_names)}]}]}}}
        spec["tolerations"] = [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/part-of": "fake-dra-e2e"}},
        "spec": spec,
    }


def podgroup_object(name: str, claim: str, *, namespace: str = NAMESPACE) -> dict[str, Any]:
    """A PodGroup (KEP-5729) whose claim is reserved for the group instead of each pod."""
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/part-of": "fake-dra-e2e"}},
        "spec": {
            "schedulingPolicy": {"basic": {}},
            "resourceClaims": [{"name": claim, "resourceClaimName": claim}],
        },
    }


def namespace_object(namespace: str = NAMESPACE) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}


def render_yaml(docs: Sequence[Mapping[str, Any]], header: str = "") -> str:
    """Multi-document YAML in the layout of the committed files under deploy/."""
    body = yaml.safe_dump_all([dict(d) for d in docs], sort_keys=False, explicit_start=True, width=1000)
    return header + body


DEVICECLASSES_HEADER = (
    "# DeviceClasses of fake-dra, one per device type it publishes (selecting on the driver and its\n"
    "# `type` attribute). Generated by `fake-dra e2e --render-manifests deploy` from\n"
    "# driver/personality/fakedra/classes.py; tests/deploy keeps the two equal.\n"
)


def scenario_objects(scenario: Any, driver_name: str = DEFAULT_DRIVER_NAME) -> list[dict[str, Any]]:
    """The objects a scenario creates, in step order (deletes, gates and faults are not objects)."""
    docs: list[dict[str, Any]] = [namespace_object()]
    seen_pods: set[str] = set()
    for step in scenario.steps:
        a = step.args
        if step.action == "claim":
            docs.append(claim_object(a["name"], a["requests"], driver_name=driver_name,
                                     constraints=a.get("constraints"), config=a.get("config")))
        elif step.action == "podgroup":
            docs.append(podgroup_object(a["name"], a["claim"]))
        elif step.action == "pod" and a["name"] not in seen_pods:
            seen_pods.add(a["name"])
            docs.append(pod_object(a["name"], list(a.get("claims") or []), podgroup=a.get("podgroup")))
    return docs


def example_header(scenario: Any) -> str:
    return (
        f"# Example objects of e2e scenario {scenario.name!r} ({scenario.path.rsplit('/', 1)[-1]}).\n"
        f"# {scenario.reason}\n"
        "# Generated by `fake-dra e2e --render-manifests deploy`; do not edit. `${...}` references in\n"
        "# selectors (pinning a request to the GPU of an earlier claim) are filled in by\n"
        "# `fake-dra e2e --backend kind` at run time; to apply by hand, replace them with the UUIDs\n"
        "# from `kubectl get resourceslices -o yaml` and apply the objects in order.\n"
    )


NVIDIA_CLASSES_HEADER = (
    "# The DeviceClasses of NVIDIA's DRA driver (its Helm chart's deviceclass-gpu/-mig/-vfio-gpu.yaml) and of\n"
    "# the SR-IOV DRA driver, which the nvidia personality presents the node's NICs as. Generated by\n"
    "# `fake-dra e2e --render-manifests deploy` from driver/personality; tests/deploy keeps the two equal.\n"
)


EXAMPLE_CLASSES_HEADER = (
    "# The DeviceClass of dra-example-driver's gpu profile (its Helm chart's templates/deviceclass.yaml), which\n"
    "# the example personality presents. Generated by `fake-dra e2e --render-manifests deploy` from\n"
    "# driver/personality; tests/deploy keeps the two equal.\n"
)


def render_deploy_files(scenarios: Sequence[Any], driver_name: str = DEFAULT_DRIVER_NAME) -> dict[str, str]:
    """Relative path under deploy/ -> content, for every generated manifest (the examples: scenarios
    of fake-dra's own personality that can run on kind)."""
    from driver.personality import personality_named

    nvidia = [dc for profile in personality_named("nvidia").drivers() for dc in profile.device_classes()]
    files = {"base/03-deviceclasses.yaml": render_yaml(device_classes(driver_name), DEVICECLASSES_HEADER),
             "components/personality-nvidia/deviceclasses.yaml": render_yaml(nvidia, NVIDIA_CLASSES_HEADER),
             "components/personality-example/deviceclasses.yaml": render_yaml(
                 [dc for profile in personality_named("example").drivers() for dc in profile.device_classes()],
                 EXAMPLE_CLASSES_HEADER)}
    for s in scenarios:
        if s.kind and s.personality == "fake-dra":
            files[f"examples/{s.name}.yaml"] = render_yaml(scenario_objects(s, driver_name), example_header(s))
    return files
