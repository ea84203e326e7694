"""A PodSpec as kube-apiserver validates it, in a Pod or in a workload's pod template.

Source: k8s.io/kubernetes pkg/apis/core/validation/validation.go, ValidatePodSpec and what it calls
besides containers and scheduling (containers.py, scheduling.py): ValidateVolumes (names, one source
per volume), validatePodResourceClaims / validatePodResourceClaim, validatePodResources (pod-level
resources, PodLevelResources is beta and on), validatePodHostNetworkDeps, validateRestartPolicy,
validateDNSPolicy, validatePodSpecSecurityContext with validateSysctls, validatePodDNSConfig,
validateReadinessGates, validateSchedulingGates, validateHostUsers, ValidateHostAliases,
ValidatePreemptionPolicy, validateOverhead, validateOS, and the name checks of serviceAccountName,
nodeName, hostname, subdomain, priorityClassName and runtimeClassName. The checks run in
ValidatePodSpec's order, so several problems are listed as kube-apiserver lists them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from driver.store.admission import containers, meta, names, resources, scheduling, security
from driver.store.admission.field import (FieldError, child, duplicate, forbidden, index, invalid, invalid_each,
                                          not_supported, required)

MAX_INT32 = 2**31 - 1
RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
# validateVolumeSource's order and the child names it reports the second source under (two are
# spelled differently from the JSON field upstream: "cephFS" and "downwarAPI").
_VOLUME_SOURCES = (
    ("emptyDir", "emptyDir"), ("hostPath", "hostPath"), ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"), ("awsElasticBlockStore", "awsElasticBlockStore"), ("secret", "secret"),
    ("nfs", "nfs"), ("iscsi", "iscsi"), ("glusterfs", "glusterfs"), ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"), ("rbd", "rbd"), ("cinder", "cinder"), ("cephfs", "cephFS"),
    ("quobyte", "quobyte"), ("downwardAPI", "downwarAPI"), ("fc", "fc"), ("flexVolume", "flexVolume"),
    ("configMap", "configMap"), ("azureFile", "azureFile"), ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"), ("portworxVolume", "portworxVolume"), ("azureDisk", "azureDisk"),
    ("storageos", "storageos"), ("projected", "projected"), ("scaleIO", "scaleIO"), ("csi", "csi"),
    ("ephemeral", "ephemeral"), ("image", "image"),
)
_SYSCTL = re.compile(r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?")


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def volumes(items: Any, path: str) -> tuple[dict[str, Any], list[FieldError]]:
    """ValidateVolumes: (valid volumes by name, errors)."""
    out: dict[str, Any] = {}
    errs: list[FieldError] = []
    for i, vol in enumerate(_l(items)):
        vol, at = _m(vol), index(path, i)
        el: list[FieldError] = []
        count = 0
        for field_name, reported in _VOLUME_SOURCES:
            if vol.get(field_name) is None:
                continue
            if count:
                el.append(forbidden(child(at, reported), "may not specify more than 1 volume type"))
            else:
                count += 1
                if field_name == "hostPath" and not _m(vol[field_name]).get("path"):
                    el.append(required(child(at, "hostPath", "path")))
                if field_name == "persistentVolumeClaim" and not _m(vol[field_name]).get("claimName"):
                    el.append(required(child(at, "persistentVolumeClaim", "claimName")))
        if count == 0:
            el.append(required(at, "must specify a volume type"))
        name = str(vol.get("name") or "")
        if not name:
            el.append(required(child(at, "name")))
        else:
            el += invalid_each(child(at, "name"), name, names.is_dns1123_label(name))
        if name in out:
            el.append(duplicate(child(at, "name"), name))
        if el:
            errs += el
        else:
            out[name] = vol
    return out, errs


def pod_claim_names(claims: Any) -> set[str]:
    return {str(_m(c).get("name")) for c in _l(claims) if _m(c).get("name")}


def pod_resource_claims(claims: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, claim in enumerate(_l(claims)):
        claim, at = _m(claim), index(path, i)
        name = str(claim.get("name") or "")
        if not name:
            errs.append(required(child(at, "name")))
        elif name in seen:
            errs.append(duplicate(child(at, "name"), name))
        else:
            errs += invalid_each(child(at, "name"), name, names.is_dns1123_label(name))
            seen.add(name)
        claim_name, template_name = claim.get("resourceClaimName"), claim.get("resourceClaimTemplateName")
        if claim_name is not None and template_name is not None:
            errs.append(invalid(at, dict(claim), "at most one of `resourceClaimName` or `resourceClaimTemplateName` "
                                                 "may be specified"))
        if claim_name is None and template_name is None:
            errs.append(invalid(at, dict(claim), "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
        for field_name, value in (("resourceClaimName", claim_name), ("resourceClaimTemplateName", template_name)):
            if value is not None:
                errs += invalid_each(child(at, field_name), str(value), names.name_is_dns_subdomain(str(value)))
    return errs


def _enum(value: Any, path: str, allowed: tuple[str, ...]) -> list[FieldError]:
    if not value:
        return [required(path)]
    return [] if value in allowed else [not_supported(path, value, allowed)]


def _host_network_ports(spec: Mapping[str, Any], path: str, resource_is_pod: bool) -> list[FieldError]:
    if not spec.get("hostNetwork"):
        return []
    errs: list[FieldError] = []
    for i, ctr in enumerate(_l(spec.get("containers"))):
        for j, port in enumerate(_l(_m(ctr).get("ports"))):
            port = _m(port)
            host, cont = port.get("hostPort") or 0, port.get("containerPort") or 0
            if (resource_is_pod or host != 0) and host != cont:
                errs.append(invalid(child(index(child(index(child(path, "containers"), i), "ports"), j), "hostPort"),
                                    host, "must match `containerPort` when `hostNetwork` is true"))
    return errs


def _id(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, int) and not 0 <= value <= MAX_INT32:
        return [invalid(path, value, names.inclusive_range(0, MAX_INT32))]
    return []


def _pod_security_context(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    sc = spec.get("securityContext")
    if sc is None:
        return []
    sc = _m(sc)
    errs = _id(sc.get("fsGroup"), child(path, "fsGroup")) + _id(sc.get("runAsUser"), child(path, "runAsUser"))
    errs += _id(sc.get("runAsGroup"), child(path, "runAsGroup"))
    for g, gid in enumerate(_l(sc.get("supplementalGroups"))):
        errs += _id(gid, index(child(path, "supplementalGroups"), g))
    if spec.get("shareProcessNamespace") is True and spec.get("hostPID"):
        errs.append(invalid(child(path, "shareProcessNamespace"), True,
                            "ShareProcessNamespace and HostPID cannot both be enabled"))
    seen: set[str] = set()
    for i, s in enumerate(_l(sc.get("sysctls"))):
        name, at = str(_m(s).get("name") or ""), child(index(child(path, "sysctls"), i), "name")
        if not name:
            errs.append(required(at))
        elif len(name) > 253 or not _SYSCTL.fullmatch(name):
            errs.append(invalid(at, name, f"must have at most 253 characters and match regex ^{_SYSCTL.pattern}$"))
        elif name in seen:
            errs.append(duplicate(at, name))
        seen.add(name)
    for field_name, allowed in (("fsGroupChangePolicy", ("Always", "OnRootMismatch")),
                                ("supplementalGroupsPolicy", ("Merge", "Strict")),
                                ("seLinuxChangePolicy", ("MountOption", "Recursive"))):
        value = sc.get(field_name)
        if value is not None and value not in allowed:
            errs.append(not_supported(child(path, field_name), value, allowed))
    return errs + security.seccomp_profile(sc.get("seccompProfile"), child(path, "seccompProfile"))


def _dns_config(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    config = spec.get("dnsConfig")
    if spec.get("dnsPolicy") == "None":
        if config is None:
            return [required(path, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not _l(_m(config).get("nameservers")):
            return [required(child(path, "nameservers"),
                             "must provide at least one DNS nameserver when `dnsPolicy` is None")]
    if config is None:
        return []
    config = _m(config)
    errs: list[FieldError] = []
    servers, searches = _l(config.get("nameservers")), _l(config.get("searches"))
    if len(servers) > 3:
        errs.append(invalid(child(path, "nameservers"), servers, "must not have more than 3 nameservers"))
    for i, ns in enumerate(servers):
        errs += invalid_each(index(child(path, "nameservers"), i), str(ns), names.is_valid_ip(str(ns)))
    if len(searches) > 32:
        errs.append(invalid(child(path, "searches"), searches, "must not have more than 32 search paths"))
    if len(" ".join(map(str, searches))) > 2048:
        errs.append(invalid(child(path, "searches"), searches,
                            "must not have more than 2048 characters (including spaces) in the search list"))
    for i, search in enumerate(searches):
        search = str(search)
        if search != ".":
            search = search.removesuffix(".")
            errs += invalid_each(index(child(path, "searches"), i), search, names.is_dns1123_subdomain_with_underscore(search))
    for i, option in enumerate(_l(config.get("options"))):
        if not _m(option).get("name"):
            errs.append(required(index(child(path, "options"), i), "must not be empty"))
    return errs


def _host_users(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    if spec.get("hostUsers") is not False:
        return []
    errs = [forbidden(child(path, "hostNetwork"), "when `pod.Spec.HostUsers` is false")] if spec.get("hostNetwork") else []
    if spec.get("hostPID"):
        errs.append(forbidden(child(path, "HostPID"), "when `pod.Spec.HostUsers` is false"))
    if spec.get("hostIPC"):
        errs.append(forbidden(child(path, "HostIPC"), "when `pod.Spec.HostUsers` is false"))
    return errs


def _name(spec: Mapping[str, Any], field_name: str, path: str, check: Any) -> list[FieldError]:
    value = spec.get(field_name)
    return invalid_each(child(path, field_name), str(value), check(str(value))) if value else []


def pod_spec(spec: Any, path: str, *, resource_is_pod: bool) -> list[FieldError]:
    """ValidatePodSpec."""
    spec = _m(spec)
    errs: list[FieldError] = []
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is None:
        errs.append(required(child(path, "terminationGracePeriodSeconds")))
    host_users = spec.get("hostUsers") is not False
    vols, vol_errs = volumes(spec.get("volumes"), child(path, "volumes"))
    errs += vol_errs
    claims = pod_claim_names(spec.get("resourceClaims"))
    errs += pod_resource_claims(spec.get("resourceClaims"), child(path, "resourceClaims"))
    restart = spec.get("restartPolicy")
    errs += containers.containers(spec.get("containers"), vols, claims, grace, child(path, "containers"), restart,
                                  host_users)
    errs += containers.init_containers(spec.get("initContainers"), spec.get("containers"), vols, claims, grace,
                                       child(path, "initContainers"), restart, host_users)
    if spec.get("resources") is not None:
        errs += resources.requirements(spec["resources"], claims, child(path, "resources"), pod_level=True)
    errs += _host_network_ports(spec, path, resource_is_pod)
    errs += _enum(restart, child(path, "restartPolicy"), RESTART_POLICIES)
    errs += _enum(spec.get("dnsPolicy"), child(path, "dnsPolicy"), _DNS_POLICIES)
    errs += meta.labels(spec.get("nodeSelector"), child(path, "nodeSelector"))
    errs += _pod_security_context(spec, child(path, "securityContext"))
    errs += scheduling.affinity(spec.get("affinity"), child(path, "affinity"))
    errs += _dns_config(spec, child(path, "dnsConfig"))
    for i, gate in enumerate(_l(spec.get("readinessGates"))):
        ctype = str(_m(gate).get("conditionType") or "")
        errs += invalid_each(child(index(child(path, "readinessGates"), i), "conditionType"), ctype,
                             names.is_qualified_name(ctype))
    seen_gates: set[str] = set()
    for i, gate in enumerate(_l(spec.get("schedulingGates"))):
        gate_name = str(_m(gate).get("name") or "")
        errs += invalid_each(index(child(path, "schedulingGates"), i), gate_name, names.is_qualified_name(gate_name))
        if gate_name in seen_gates:
            errs.append(duplicate(index(child(path, "schedulingGates"), i), gate_name))
        seen_gates.add(gate_name)
    errs += scheduling.topology_spread(spec.get("topologySpreadConstraints"), child(path, "topologySpreadConstraints"))
    errs += _host_users(spec, path)
    errs += _name(spec, "serviceAccountName", path, names.name_is_dns_subdomain)
    errs += _name(spec, "nodeName", path, names.name_is_dns_subdomain)
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not 1 <= deadline <= MAX_INT32:
        errs.append(invalid(child(path, "activeDeadlineSeconds"), deadline, names.inclusive_range(1, MAX_INT32)))
    errs += _name(spec, "hostname", path, names.is_dns1123_label)
    errs += _name(spec, "subdomain", path, names.is_dns1123_label)
    errs += scheduling.tolerations(spec.get("tolerations"), child(path, "tolerations"))
    for i, alias in enumerate(_l(spec.get("hostAliases"))):
        alias, at = _m(alias), index(child(path, "hostAliases"), i)
        errs += invalid_each(child(at, "ip"), str(alias.get("ip") or ""), names.is_valid_ip(str(alias.get("ip") or "")))
        for j, host in enumerate(_l(alias.get("hostnames"))):
            errs += invalid_each(index(child(at, "hostnames"), j), str(host), names.is_dns1123_subdomain(str(host)))
    errs += _name(spec, "priorityClassName", path, names.name_is_dns_subdomain)
    if spec.get("runtimeClassName") is not None:
        errs += invalid_each(child(path, "runtimeClassName"), str(spec["runtimeClassName"]),
                             names.name_is_dns_subdomain(str(spec["runtimeClassName"])))
    if spec.get("preemptionPolicy") is not None:
        errs += _enum(spec["preemptionPolicy"], child(path, "preemptionPolicy"), ("PreemptLowerPriority", "Never"))
    if spec.get("overhead") is not None:
        errs += resources.requirements({"limits": spec["overhead"]}, set(), child(path, "overhead"))
    os_spec = spec.get("os")
    if os_spec is not None:
        os_name = _m(os_spec).get("name")
        if not os_name:
            errs.append(required(child(path, "os", "name"), "cannot be empty"))
        elif os_name not in ("linux", "windows"):
            errs.append(not_supported(child(path, "os"), os_name, ["linux", "windows"]))
    return errs
