"""Defaults kube-apiserver gives a pod spec, wherever one appears (a Pod or a workload's template).

Sources: k8s.io/kubernetes pkg/apis/core/v1/defaults.go (SetDefaults_PodSpec: dnsPolicy ClusterFirst,
restartPolicy Always, securityContext {}, terminationGracePeriodSeconds 30, schedulerName
default-scheduler, hostNetwork ports; SetDefaults_Pod: requests from limits, enableServiceLinks true;
SetDefaults_Container: imagePullPolicy by the image's tag, terminationMessagePath
/dev/termination-log, terminationMessagePolicy File; SetDefaults_ContainerPort: protocol TCP;
SetDefaults_Probe, SetDefaults_HTTPGetAction, SetDefaults_ObjectFieldSelector, SetDefaults_Volume
and the volume sources' defaultMode) and the generated zz_generated.defaults.go, which applies
them to every PodSpec, container and volume it reaches. pkg/util/parsers ParseImageName decides
the tag: none (and no digest) means "latest", which is pulled Always.

Every function works on plain dicts as decoded from YAML and leaves anything of an unexpected
type alone: the schema check that follows reports those.
"""

from __future__ import annotations

import copy
import re
from collections.abc import MutableMapping
from typing import Any

DEFAULT_GRACE = 30  # v1.DefaultTerminationGracePeriodSeconds
DEFAULT_SCHEDULER = "default-scheduler"
TERMINATION_MESSAGE_PATH = "/dev/termination-log"
_MODE_644 = 0o644  # defaultMode of secret, configMap, downwardAPI and projected volumes (420)
_DIGEST = re.compile(r"@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$")
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def _d(value: Any) -> MutableMapping[str, Any] | None:
    return value if isinstance(value, MutableMapping) else None


def _items(value: Any) -> list[MutableMapping[str, Any]]:
    return [v for v in value if isinstance(v, MutableMapping)] if isinstance(value, list) else []


def image_tag(image: str) -> str:
    """The tag ParseImageName finds: "latest" when there is neither a tag nor a digest."""
    digest = _DIGEST.search(image)
    name = image[:digest.start()] if digest else image
    last = name.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else ""
    return tag or ("" if digest else "latest")


def _probe(probe: Any) -> None:
    probe = _d(probe)
    if probe is None:
        return
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    _handler(probe)


def _handler(handler: MutableMapping[str, Any]) -> None:
    http = _d(handler.get("httpGet"))
    if http is not None:
        if not http.get("path"):
            http["path"] = "/"
        if not http.get("scheme"):
            http["scheme"] = "HTTP"


def container(ctr: MutableMapping[str, Any]) -> None:
    if not ctr.get("imagePullPolicy") and isinstance(ctr.get("image"), str):
        ctr["imagePullPolicy"] = "Always" if image_tag(ctr["image"]) == "latest" else "IfNotPresent"
    if not ctr.get("terminationMessagePath"):
        ctr["terminationMessagePath"] = TERMINATION_MESSAGE_PATH
    if not ctr.get("terminationMessagePolicy"):
        ctr["terminationMessagePolicy"] = "File"
    for port in _items(ctr.get("ports")):
        if not port.get("protocol"):
            port["protocol"] = "TCP"
    for var in _items(ctr.get("env")):
        source = _d(var.get("valueFrom"))
        field_ref = _d(source.get("fieldRef")) if source is not None else None
        if field_ref is not None and not field_ref.get("apiVersion"):
            field_ref["apiVersion"] = "v1"
    for name in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(ctr.get(name))
    lifecycle = _d(ctr.get("lifecycle"))
    if lifecycle is not None:
        for hook in ("postStart", "preStop"):
            if _d(lifecycle.get(hook)) is not None:
                _handler(lifecycle[hook])


def _volume(vol: MutableMapping[str, Any]) -> None:
    sources = [k for k in vol if k != "name" and vol[k] is not None]
    if not sources:
        vol["emptyDir"] = {}
    for name in ("secret", "configMap", "downwardAPI", "projected"):
        source = _d(vol.get(name))
        if source is not None and source.get("defaultMode") is None:
            source["defaultMode"] = _MODE_644
    host_path = _d(vol.get("hostPath"))
    if host_path is not None and host_path.get("type") is None:
        host_path["type"] = ""


def pod_spec(spec: MutableMapping[str, Any]) -> None:
    """SetDefaults_PodSpec plus the defaults of everything a PodSpec holds."""
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if spec.get("hostNetwork") is True:
        _host_network_ports(spec)
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = DEFAULT_GRACE
    if not spec.get("schedulerName"):
        spec["schedulerName"] = DEFAULT_SCHEDULER
    for field_name in _CONTAINER_LISTS:
        for ctr in _items(spec.get(field_name)):
            container(ctr)
    for vol in _items(spec.get("volumes")):
        _volume(vol)


def _host_network_ports(spec: MutableMapping[str, Any]) -> None:
    """defaultHostNetworkPorts: with hostNetwork, an unset hostPort is the containerPort."""
    for field_name in ("containers", "initContainers"):
        for ctr in _items(spec.get(field_name)):
            for port in _items(ctr.get("ports")):
                if not port.get("hostPort"):
                    port["hostPort"] = port.get("containerPort")


def pod(obj: MutableMapping[str, Any]) -> None:
    """SetDefaults_Pod (requests default to limits, enableServiceLinks) over SetDefaults_PodSpec."""
    spec = _d(obj.get("spec"))
    if spec is None:
        return
    for field_name in ("containers", "initContainers"):
        for ctr in _items(spec.get(field_name)):
            resources = _d(ctr.get("resources"))
            limits = _d(resources.get("limits")) if resources is not None else None
            if resources is None or not limits:
                continue
            requests = resources.setdefault("requests", {})
            if isinstance(requests, MutableMapping):
                for name, value in limits.items():
                    requests.setdefault(name, copy.deepcopy(value))
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    pod_spec(spec)


def template(obj: MutableMapping[str, Any]) -> None:
    """A workload's spec.template.spec gets the PodSpec defaults (not SetDefaults_Pod's)."""
    spec = _d(obj.get("spec"))
    tmpl = _d(spec.get("template")) if spec is not None else None
    inner = _d(tmpl.get("spec")) if tmpl is not None else None
    if inner is not None:
        pod_spec(inner)
