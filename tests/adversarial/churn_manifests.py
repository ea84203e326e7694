"""What the churn soak (adversarial.churn) applies: a fleet, claim templates, Deployments, Jobs, bare
pods and user-made claims as a user writes them, and the hostile rows it plants in the store."""

from __future__ import annotations

import json
import random
from typing import Any

from driver import DEFAULT_DRIVER_NAME

NS = "default"
TOLERATE_KWOK = [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}]
KWOK_COMPLETE_DELAY = "pod-complete.stage.kwok.x-k8s.io/delay"  # kwok's pod/general stage annotation


def fleet(count: int) -> dict[str, Any]:
    return {"apiVersion": "fake-dra.example.com/v1alpha1", "kind": "Fleet", "metadata": {"name": "churn"},
            "spec": {"nodeGroups": [{"name": "a100", "count": count, "profile": "dgx-a100"}]}}


def _request(profile: str) -> dict[str, Any]:
    return {"name": "gpu", "exactly": {"deviceClassName": "mig.fake-dra.example.com", "selectors": [
        {"cel": {"expression": f'device.attributes["{DEFAULT_DRIVER_NAME}"].profile == "{profile}"'}}]}}


def claim_template(name: str, profile: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": name, "namespace": NS},
            "spec": {"spec": {"devices": {"requests": [_request(profile)]}}}}


def shared_claim(name: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": NS},
            "spec": {"devices": {"requests": [_request("1g.5gb")]}}}


def _pod_spec(*, template: str | None = None, claim: str | None = None, **extra: Any) -> dict[str, Any]:
    entry = {"name": "gpu", "resourceClaimName": claim} if claim else {"name": "gpu", "resourceClaimTemplateName": template}
    return {"containers": [{"name": "c", "image": extra.pop("image", "busybox"), "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [entry], "tolerations": TOLERATE_KWOK, **extra}


def deployment(name: str, replicas: int, template: str, image: str = "busybox") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": _pod_spec(template=template, image=image)}}}


def job(name: str, completions: int, parallelism: int, delay_ms: int) -> dict[str, Any]:
    """Its pods run for `delay_ms` (kwok's pod-complete delay) before they succeed."""
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": NS},
            "spec": {"completions": completions, "parallelism": parallelism, "template": {
                "metadata": {"annotations": {KWOK_COMPLETE_DELAY: f"{delay_ms}ms"}},
                "spec": _pod_spec(template="mig-1g", restartPolicy="Never")}}}


def solo_pod(name: str, *, template: str | None = None, claim: str | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": _pod_spec(template=template, claim=claim)}


# The hostile rows: (resource, namespace, name). Their values vary with the seed.
HOSTILE_NAMES = (
    ("nodes", None, "hostile-shape"),          # metadata of the wrong type
    ("pods", NS, "hostile-shape"),             # a spec of the wrong type, bound to a live-looking node
    ("resourceclaims", NS, "hostile-big"),     # past the store's 1.5 MiB object limit
    ("resourceslices", None, "hostile-bytes"),  # not text
    ("deployments", NS, "hostile-json"),       # not JSON at all
    ("jobs", NS, "hostile-key"),               # metadata naming another object than its key
)


def hostile_rows(rng: random.Random) -> list[tuple[str, str | None, str, Any]]:
    pad = rng.randrange(1, 64)
    big = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": "hostile-big", "namespace": NS, "annotations": {"a": "x" * (1600 * 1024 + pad)}},
           "spec": {"devices": {"requests": [_request("1g.5gb")]}}}
    values = {
        "nodes": json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": [1, 2][: rng.randrange(1, 3)]}),
        "pods": json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hostile-shape", "namespace": NS},
                            "spec": rng.choice(([1, 2], "nodeName: a100-0000", {"nodeName": 7, "containers": {}}))}),
        "resourceclaims": json.dumps(big),
        "resourceslices": bytes(rng.randrange(256) for _ in range(pad)) + b"\xff\x00",
        "deployments": rng.choice(("{not json", "spec: [", '{"apiVersion": "apps/v1", "kind"')),
        "jobs": json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train0", "namespace": NS},
                            "spec": {"template": {"spec": {"containers": []}}}}),
    }
    return [(resource, ns, name, values[resource]) for resource, ns, name in HOSTILE_NAMES]
