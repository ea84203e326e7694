"""Containers of a pod spec: what kube-apiserver checks on each one.

Sources (k8s.io/kubernetes pkg/apis/core/validation/validation.go): validateContainers,
validateInitContainers, validateContainerCommon, validateContainerPorts, ValidateEnv,
validateEnvVarValueFrom, validateObjectFieldSelector, validateContainerResourceFieldSelector,
ValidateEnvFrom, validateConfigMapKeySelector / validateSecretKeySelector, ValidateVolumeMounts,
ValidateVolumeDevices, validatePullPolicy, validateResizePolicy, validateInitContainerRestartPolicy,
checkHostPortConflicts, validateContainerOnlyForPod. Probes and lifecycle hooks are probes.py's,
security contexts security.py's.

Not ported (docs/validation.md): the fields of volume sources, mountPropagation and
recursiveReadOnly, resourceFieldRef divisors, Windows security options, AppArmor/seccomp
localhost profile paths.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from driver.store.admission import names, resources
from driver.store.admission.field import (FieldError, child, duplicate, forbidden, index, invalid, invalid_each,
                                          not_found, not_supported, required)
from driver.store.admission.probes import lifecycle, probe
from driver.store.admission.security import security_context


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


_PROTOCOLS = ("SCTP", "TCP", "UDP")
_PULL = ("Always", "IfNotPresent", "Never")
_ENV_FIELDS = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
               "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")
# pods.ConvertDownwardAPIFieldLabel (v1): what a fieldRef may name at all.
_DOWNWARD = ("metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
             "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName", "status.phase",
             "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")
_RESOURCE_FIELDS = ("limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu",
                    "requests.ephemeral-storage", "requests.memory")
_TERMINATION_POLICIES = ("File", "FallbackToLogsOnError")
# ContainerRestartRules (beta, on since 1.35) lets any container name its own restart policy; only
# "Always" on an init container makes it a sidecar (validateInitContainerRestartPolicy without the gate
# accepts "Always" alone).
_CONTAINER_RESTART = ("Always", "OnFailure", "Never")


def ports(items: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, port in enumerate(_l(items)):
        port, at = _m(port), index(path, i)
        name = port.get("name")
        if name:
            msgs = names.is_valid_port_name(str(name))
            if msgs:
                errs += invalid_each(child(at, "name"), str(name), msgs)
            elif name in seen:
                errs.append(duplicate(child(at, "name"), name))
            else:
                seen.add(str(name))
        number = port.get("containerPort")
        if not number:
            errs.append(required(child(at, "containerPort")))
        elif isinstance(number, int):
            errs += invalid_each(child(at, "containerPort"), number, names.is_valid_port_num(number))
        host = port.get("hostPort")
        if isinstance(host, int) and host:
            errs += invalid_each(child(at, "hostPort"), host, names.is_valid_port_num(host))
        protocol = port.get("protocol")
        if not protocol:
            errs.append(required(child(at, "protocol")))
        elif protocol not in _PROTOCOLS:
            errs.append(not_supported(child(at, "protocol"), protocol, _PROTOCOLS))
    return errs


def _field_ref(ref: Mapping[str, Any], path: str) -> list[FieldError]:
    if not ref.get("apiVersion"):
        return [required(child(path, "apiVersion"))]
    field_path = str(ref.get("fieldPath") or "")
    if not field_path:
        return [required(child(path, "fieldPath"))]
    base, bracket, rest = field_path.partition("[")
    if bracket and rest.endswith("]") and base in ("metadata.annotations", "metadata.labels"):
        subscript = rest[:-1].strip("'")
        subscript = subscript.lower() if base == "metadata.annotations" else subscript
        return invalid_each(path, subscript, names.is_qualified_name(subscript))
    if field_path not in _DOWNWARD:
        return [invalid(child(path, "fieldPath"), field_path,
                        f"error converting fieldPath: field label not supported: {field_path}")]
    if field_path not in _ENV_FIELDS:
        return [not_supported(child(path, "fieldPath"), field_path, sorted(_ENV_FIELDS))]
    return []


def _key_selector(ref: Mapping[str, Any], path: str) -> list[FieldError]:
    name = str(ref.get("name") or "")
    errs = invalid_each(child(path, "name"), name, names.name_is_dns_subdomain(name))
    k = ref.get("key")
    if not k:
        errs.append(required(child(path, "key")))
    else:
        errs += invalid_each(child(path, "key"), str(k), names.is_config_map_key(str(k)))
    return errs


def env(items: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, var in enumerate(_l(items)):
        var, at = _m(var), index(path, i)
        name = var.get("name")
        if not name:
            errs.append(required(child(at, "name")))
        else:
            errs += invalid_each(child(at, "name"), str(name), names.is_relaxed_env_var_name(str(name)))
        source = var.get("valueFrom")
        if source is None:
            continue
        source, vpath, count = _m(source), child(at, "valueFrom"), 0
        if source.get("fieldRef") is not None:
            count += 1
            errs += _field_ref(_m(source["fieldRef"]), child(vpath, "fieldRef"))
        if source.get("resourceFieldRef") is not None:
            count += 1
            res = str(_m(source["resourceFieldRef"]).get("resource") or "")
            rpath = child(vpath, "resourceFieldRef", "resource")
            if not res:
                errs.append(required(rpath))
            elif res not in _RESOURCE_FIELDS and not res.startswith(("requests.hugepages-", "limits.hugepages-")):
                errs.append(not_supported(rpath, res, _RESOURCE_FIELDS))
        for ref in ("configMapKeyRef", "secretKeyRef"):
            if source.get(ref) is not None:
                count += 1
                errs += _key_selector(_m(source[ref]), child(vpath, ref))
        if count == 0:
            errs.append(invalid(vpath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` "
                                           "or `secretKeyRef`"))
        elif var.get("value"):
            errs.append(invalid(vpath, "", "may not be specified when `value` is not empty"))
        elif count > 1:
            errs.append(invalid(vpath, "", "may not have more than one field specified at a time"))
    return errs


def env_from(items: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, src in enumerate(_l(items)):
        src, at = _m(src), index(path, i)
        if src.get("prefix"):
            errs += invalid_each(child(at, "prefix"), str(src["prefix"]), names.is_relaxed_env_var_name(str(src["prefix"])))
        count = 0
        for ref in ("configMapRef", "secretRef"):
            if src.get(ref) is not None:
                count += 1
                name = str(_m(src[ref]).get("name") or "")
                if not name:
                    errs.append(required(child(at, ref, "name")))
                else:
                    errs += invalid_each(child(at, ref, "name"), name, names.name_is_dns_subdomain(name, True))
        if count == 0:
            errs.append(invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif count > 1:
            errs.append(invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def _local_descending(target: str, path: str) -> list[FieldError]:
    errs = [invalid(path, target, "must be a relative path")] if posixpath.isabs(target) else []
    if ".." in target.replace("\\", "/").split("/"):
        errs.append(invalid(path, target, "must not contain '..'"))
    return errs


def volume_mounts(items: Any, devices: Mapping[str, str], volumes: Mapping[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    mount_points: set[str] = set()
    for i, mount in enumerate(_l(items)):
        mount, at = _m(mount), index(path, i)
        name, mount_path = str(mount.get("name") or ""), str(mount.get("mountPath") or "")
        if not name:
            errs.append(required(child(at, "name")))
        if name not in volumes:
            errs.append(not_found(child(at, "name"), name))
        if not mount_path:
            errs.append(required(child(at, "mountPath")))
        if mount_path in mount_points:
            errs.append(invalid(child(at, "mountPath"), mount_path, "must be unique"))
        mount_points.add(mount_path)
        if name in devices:
            errs.append(invalid(child(at, "name"), name, "must not already exist in volumeDevices"))
        if mount_path in devices.values():
            errs.append(invalid(child(at, "mountPath"), mount_path, "must not already exist as a path in volumeDevices"))
        sub, sub_expr = str(mount.get("subPath") or ""), str(mount.get("subPathExpr") or "")
        if sub:
            errs += _local_descending(sub, child(path, "subPath"))  # upstream's path: the list's, not the item's
        if sub_expr:
            if sub:
                errs.append(invalid(child(at, "subPathExpr"), sub_expr, "subPathExpr and subPath are mutually exclusive"))
            errs += _local_descending(sub_expr, child(path, "subPathExpr"))
    return errs


def volume_devices(items: Any, mounts: Mapping[str, str], volumes: Mapping[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen_names: set[str] = set()
    seen_paths: set[str] = set()
    for i, dev in enumerate(_l(items)):
        dev, at = _m(dev), index(path, i)
        name, dev_path = str(dev.get("name") or ""), str(dev.get("devicePath") or "")
        source = _m(volumes.get(name))
        if not name:
            errs.append(required(child(at, "name")))
        if name in seen_names:
            errs.append(invalid(child(at, "name"), name, "must be unique"))
        if name in volumes and source.get("persistentVolumeClaim") is None and source.get("ephemeral") is None:
            errs.append(invalid(child(at, "name"), name, "can only use volume source type of PersistentVolumeClaim "
                                                         "or Ephemeral for block mode"))
        if name not in volumes:
            errs.append(not_found(child(at, "name"), name))
        if not dev_path:
            errs.append(required(child(at, "devicePath")))
        if dev_path in seen_paths:
            errs.append(invalid(child(at, "devicePath"), dev_path, "must be unique"))
        if dev_path and ".." in dev_path.split("/"):
            errs.append(invalid(child(at, "devicePath"), dev_path, "can not contain backsteps ('..')"))
        else:
            seen_paths.add(dev_path)
        if name in mounts:
            errs.append(invalid(child(at, "name"), name, "must not already exist in volumeMounts"))
        if dev_path in mounts.values():
            errs.append(invalid(child(at, "devicePath"), dev_path, "must not already exist as a path in volumeMounts"))
        if name:
            seen_names.add(name)
    return errs


def _pull_policy(value: Any, path: str) -> list[FieldError]:
    if not value:
        return [required(path)]
    return [] if value in _PULL else [not_supported(path, value, _PULL)]


def _resize_policy(items: Any, path: str, restart_policy: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, p in enumerate(_l(items)):
        p = _m(p)
        name, policy = p.get("resourceName") or "", p.get("restartPolicy") or ""
        if name in seen:
            errs.append(duplicate(index(path, i), name))
        seen.add(name)
        if not name:
            errs.append(required(path))
        elif name not in ("cpu", "memory"):
            errs.append(not_supported(path, name, ["cpu", "memory"]))
        if not policy:
            errs.append(required(path))
        elif policy not in ("NotRequired", "RestartContainer"):
            errs.append(not_supported(path, policy, ["NotRequired", "RestartContainer"]))
        if restart_policy == "Never" and policy != "NotRequired":
            errs.append(invalid(path, policy, "must be 'NotRequired' when `restartPolicy` is 'Never'"))
    return errs


def common(ctr: Mapping[str, Any], volumes: Mapping[str, Any], pod_claims: set[str], path: str,
           restart_policy: Any, host_users: bool) -> list[FieldError]:
    """validateContainerCommon."""
    errs: list[FieldError] = []
    name = ctr.get("name")
    if not name:
        errs.append(required(child(path, "name")))
    else:
        errs += invalid_each(child(path, "name"), str(name), names.is_dns1123_label(str(name)))
    if not ctr.get("image"):
        errs.append(required(child(path, "image")))
    policy = ctr.get("terminationMessagePolicy")
    if not policy:
        errs.append(required(child(path, "terminationMessagePolicy")))
    elif policy not in _TERMINATION_POLICIES:
        errs.append(not_supported(child(path, "terminationMessagePolicy"), policy, _TERMINATION_POLICIES))
    mounts = {str(_m(m).get("name") or ""): str(_m(m).get("mountPath") or "") for m in _l(ctr.get("volumeMounts"))}
    devices = {str(_m(d).get("name") or ""): str(_m(d).get("devicePath") or "") for d in _l(ctr.get("volumeDevices"))}
    errs += ports(ctr.get("ports"), child(path, "ports"))
    errs += env(ctr.get("env"), child(path, "env"))
    errs += env_from(ctr.get("envFrom"), child(path, "envFrom"))
    errs += volume_mounts(ctr.get("volumeMounts"), devices, volumes, child(path, "volumeMounts"))
    errs += volume_devices(ctr.get("volumeDevices"), mounts, volumes, child(path, "volumeDevices"))
    errs += _pull_policy(ctr.get("imagePullPolicy"), child(path, "imagePullPolicy"))
    errs += resources.requirements(ctr.get("resources"), pod_claims, child(path, "resources"))
    errs += _resize_policy(ctr.get("resizePolicy"), child(path, "resizePolicy"), restart_policy)
    errs += security_context(ctr.get("securityContext"), child(path, "securityContext"), host_users)
    return errs


def _host_port_conflicts(containers: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for ci, ctr in enumerate(containers):
        for pi, port in enumerate(_l(_m(ctr).get("ports"))):
            port = _m(port)
            if not port.get("hostPort"):
                continue
            text = f"{port.get('protocol') or ''}/{port.get('hostIP') or ''}/{port['hostPort']}"
            if text in seen:
                errs.append(duplicate(child(index(child(index(path, ci), "ports"), pi), "hostPort"), text))
            seen.add(text)
    return errs


def containers(items: Any, volumes: Mapping[str, Any], pod_claims: set[str], grace: Any, path: str,
               restart_policy: Any, host_users: bool) -> list[FieldError]:
    """validateContainers: at least one, unique names, probes and hooks valid."""
    items = _l(items)
    if not items:
        return [required(path)]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, ctr in enumerate(items):
        ctr, at = _m(ctr), index(path, i)
        errs += common(ctr, volumes, pod_claims, at, restart_policy, host_users)
        name = str(ctr.get("name") or "")
        if name in seen:
            errs.append(duplicate(child(at, "name"), name))
        seen.add(name)
        if ctr.get("lifecycle") is not None:
            errs += lifecycle(ctr["lifecycle"], grace, child(at, "lifecycle"))
        errs += probe(ctr.get("livenessProbe"), grace, child(at, "livenessProbe"), "liveness")
        errs += probe(ctr.get("readinessProbe"), grace, child(at, "readinessProbe"), "readiness")
        errs += probe(ctr.get("startupProbe"), grace, child(at, "startupProbe"), "startup")
    return errs + _host_port_conflicts(items, path)


def init_containers(items: Any, regular: Any, volumes: Mapping[str, Any], pod_claims: set[str], grace: Any,
                    path: str, restart_policy: Any, host_users: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    seen = {str(_m(c).get("name") or "") for c in _l(regular)}
    for i, ctr in enumerate(_l(items)):
        ctr, at = _m(ctr), index(path, i)
        errs += common(ctr, volumes, pod_claims, at, restart_policy, host_users)
        policy = ctr.get("restartPolicy")
        if policy is not None and policy not in _CONTAINER_RESTART:
            errs.append(not_supported(child(at, "restartPolicy"), policy, _CONTAINER_RESTART))
        name = str(ctr.get("name") or "")
        if name in seen:
            errs.append(duplicate(child(at, "name"), name))
        elif name:
            seen.add(name)
        errs += _host_port_conflicts([ctr], path)
        if policy == "Always":
            if ctr.get("lifecycle") is not None:
                errs += lifecycle(ctr["lifecycle"], grace, child(at, "lifecycle"))
            for f, kind in (("livenessProbe", "liveness"), ("readinessProbe", "readiness"), ("startupProbe", "startup")):
                errs += probe(ctr.get(f), grace, child(at, f), kind)
        else:
            for f in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if ctr.get(f) is not None:
                    errs.append(forbidden(child(at, f), "may not be set for init containers without restartPolicy=Always"))
    return errs


def only_for_pod(items: Any, path: str) -> list[FieldError]:
    """validateContainersOnlyForPod: a pod's images have no surrounding whitespace."""
    errs: list[FieldError] = []
    for i, ctr in enumerate(_l(items)):
        image = _m(ctr).get("image")
        if isinstance(image, str) and image != image.strip():
            errs.append(invalid(child(index(path, i), "image"), image, "must not have leading or trailing whitespace"))
    return errs
