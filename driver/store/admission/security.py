"""Security contexts of pods and containers: the parts kube-apiserver checks on Linux pods.

Sources (k8s.io/kubernetes pkg/apis/core/validation/validation.go): ValidateSecurityContext
(runAsUser/runAsGroup ranges, procMount, allowPrivilegeEscalation with privileged or CAP_SYS_ADMIN)
and validateSeccompProfileField. Windows options and AppArmor localhost profiles are not checked
(docs/validation.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driver.store.admission import names
from driver.store.admission.field import FieldError, child, invalid, not_supported, required


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _id_range(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, int) and not 0 <= value <= 2**31 - 1:
        return [invalid(path, value, names.inclusive_range(0, 2**31 - 1))]
    return []


def security_context(sc: Any, path: str, host_users: bool) -> list[FieldError]:
    if sc is None:
        return []
    sc = _m(sc)
    errs = _id_range(sc.get("runAsUser"), child(path, "runAsUser")) + _id_range(sc.get("runAsGroup"),
                                                                                 child(path, "runAsGroup"))
    proc = sc.get("procMount")
    if proc is not None:
        if proc not in ("Default", "Unmasked"):
            errs.append(not_supported(child(path, "procMount"), proc, ["Default", "Unmasked"]))
        if host_users and proc == "Unmasked":
            errs.append(invalid(child(path, "procMount"), proc, "`hostUsers` must be false to use `Unmasked`"))
    errs += seccomp_profile(sc.get("seccompProfile"), child(path, "seccompProfile"))
    if sc.get("allowPrivilegeEscalation") is False:
        if sc.get("privileged") is True:
            errs.append(invalid(path, dict(sc), "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
        if "CAP_SYS_ADMIN" in _l(_m(sc.get("capabilities")).get("add")):
            errs.append(invalid(path, dict(sc), "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` "
                                                "CAP_SYS_ADMIN"))
    return errs


def seccomp_profile(sp: Any, path: str) -> list[FieldError]:
    if sp is None:
        return []
    sp = _m(sp)
    kind = sp.get("type") or ""
    errs: list[FieldError] = []
    if not kind:
        errs.append(required(child(path, "type"), "type is required when seccompProfile is set"))
    elif kind not in ("Localhost", "RuntimeDefault", "Unconfined"):
        errs.append(not_supported(child(path, "type"), kind, ["Localhost", "RuntimeDefault", "Unconfined"]))
    if kind == "Localhost":
        if sp.get("localhostProfile") is None:
            errs.append(required(child(path, "localhostProfile"), "must be set when seccomp type is Localhost"))
    elif sp.get("localhostProfile") is not None:
        errs.append(invalid(child(path, "localhostProfile"), dict(sp), "can only be set when seccomp type is Localhost"))
    return errs
