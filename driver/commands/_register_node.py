"""`fake-dra run` in local mode registers its Node, as a kubelet does (pkg/kubelet/kubelet_node_status.go
registerWithAPIServer / initialNode): a Node named after the node with the well-known labels
`kubernetes.io/hostname`, `kubernetes.io/os` and `kubernetes.io/arch`, a Ready condition, and an
existing Node of that name updated rather than replaced (the kubelet reconciles its labels and
status and keeps what others set). The annotation `fake-dra.example.com/node-agent` names the
plugin registry directory, through which `fake-dra cluster` plays this node's kubelet
(NodePrepareResources before a pod runs: driver.controllers.podstages). A Node of that name that
a fleet owns (kwok's, no kubelet) is left alone, with a warning.
"""

from __future__ import annotations

import logging
import platform
import socket
from pathlib import Path
from typing import Any

from driver.controllers.podstages import KWOK_ANNOTATION, NODE_AGENT_ANNOTATION
from driver.errors import ConflictError, NotFoundError
from driver.store.objectstore import ObjectStore, now_timestamp

log = logging.getLogger("fake-dra.run")
_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}


def node_object(name: str, registry: Path) -> dict[str, Any]:
    now = now_timestamp()
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name,
                     "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                "kubernetes.io/arch": _ARCH.get(platform.machine(), platform.machine() or "amd64")},
                     "annotations": {NODE_AGENT_ANNOTATION: str(registry)}},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "message": "fake-dra node agent is posting ready status", "lastHeartbeatTime": now,
                                   "lastTransitionTime": now}],
                   "addresses": [{"type": "Hostname", "address": socket.gethostname() or name}],
                   "capacity": {"pods": "110"}, "allocatable": {"pods": "110"},
                   "nodeInfo": {"operatingSystem": "linux", "architecture": _ARCH.get(platform.machine(), "amd64"),
                                "kubeletVersion": "fake-dra", "kubeProxyVersion": ""}},
    }


def register_node(store: ObjectStore, name: str, registry: Path) -> None:
    """Create the Node, or bring an existing one's labels and agent annotation up to date."""
    wanted = node_object(name, registry)
    for _ in range(5):
        try:
            current = store.get("nodes", None, name)
        except NotFoundError:
            try:
                store.create("nodes", wanted)
                log.info("registered node in the local store", extra={"node": name})
                return
            except ConflictError:
                continue
        meta = current.get("metadata") or {}
        if (meta.get("annotations") or {}).get(KWOK_ANNOTATION) == "fake":
            log.warning("node %s is a fleet's (kwok) node: not registering over it", name)
            return
        labels = {**(meta.get("labels") or {}), **wanted["metadata"]["labels"]}
        annotations = {**(meta.get("annotations") or {}), **wanted["metadata"]["annotations"]}
        if labels == meta.get("labels") and annotations == meta.get("annotations"):
            return
        try:
            store.update("nodes", {**current, "metadata": {**meta, "labels": labels, "annotations": annotations}})
            return
        except ConflictError:
            continue
