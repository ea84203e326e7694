"""Probes and lifecycle hooks of a container.

Sources (k8s.io/kubernetes pkg/apis/core/validation/validation.go): validateLivenessProbe,
validateReadinessProbe, validateStartupProbe, validateProbe, validateLifecycle, validateHandler
(exactly one handler), validateExecAction, validateHTTPGetAction, validateTCPSocketAction,
validateGRPCAction, ValidatePortNumOrName, validateSleepAction (PodLifecycleSleepActionAllowZero is
GA: zero seconds is allowed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driver.store.admission import names
from driver.store.admission.field import FieldError, child, forbidden, invalid, invalid_each, not_supported, required
from driver.store.admission.meta import nonnegative


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _port_num_or_name(port: Any, path: str) -> list[FieldError]:
    if isinstance(port, int):
        return invalid_each(path, port, names.is_valid_port_num(port))
    if isinstance(port, str):
        return invalid_each(path, port, names.is_valid_port_name(port))
    return []


def _handler(handler: Mapping[str, Any], grace: Any, path: str, kinds: tuple[str, ...]) -> list[FieldError]:
    errs: list[FieldError] = []
    count = 0
    for kind in kinds:
        body = handler.get(kind)
        if body is None:
            continue
        if count:
            errs.append(forbidden(child(path, kind), "may not specify more than 1 handler type"))
            continue
        count += 1
        body, at = _m(body), child(path, kind)
        if kind == "exec" and not body.get("command"):
            errs.append(required(child(at, "command")))
        elif kind == "httpGet":
            if not body.get("path"):
                errs.append(required(child(at, "path")))
            errs += _port_num_or_name(body.get("port"), child(at, "port"))
            if body.get("scheme") not in ("HTTP", "HTTPS"):
                errs.append(not_supported(child(at, "scheme"), body.get("scheme") or "", ["HTTP", "HTTPS"]))
        elif kind in ("tcpSocket", "grpc"):
            errs += _port_num_or_name(body.get("port"), child(at, "port"))
        elif kind == "sleep":
            seconds = body.get("seconds")
            if isinstance(grace, int) and isinstance(seconds, int) and not 0 <= seconds <= grace:
                errs.append(invalid(at, seconds, "must be non-negative and less than terminationGracePeriodSeconds "
                                                 f"({grace})"))
    if count == 0:
        errs.append(required(path, "must specify a handler type"))
    return errs


def lifecycle(value: Any, grace: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for hook in ("postStart", "preStop"):
        if _m(value).get(hook) is not None:
            errs += _handler(_m(value)[hook], grace, child(path, hook), ("exec", "httpGet", "tcpSocket", "sleep"))
    return errs


def probe(value: Any, grace: Any, path: str, kind: str) -> list[FieldError]:
    """validateLivenessProbe / validateReadinessProbe / validateStartupProbe."""
    if value is None:
        return []
    value = _m(value)
    errs = _handler(value, grace, path, ("exec", "httpGet", "tcpSocket", "grpc"))
    for f in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        errs += nonnegative(value.get(f), child(path, f))
    tgps = value.get("terminationGracePeriodSeconds")
    if isinstance(tgps, int) and tgps <= 0:
        errs.append(invalid(child(path, "terminationGracePeriodSeconds"), tgps, "must be greater than 0"))
    if kind in ("liveness", "startup") and value.get("successThreshold", 1) != 1:
        errs.append(invalid(child(path, "successThreshold"), value.get("successThreshold"), "must be 1"))
    if kind == "readiness" and tgps is not None:
        errs.append(invalid(child(path, "terminationGracePeriodSeconds"), tgps, "must not be set for readinessProbes"))
    return errs
