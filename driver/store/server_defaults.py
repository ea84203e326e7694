"""What kube-apiserver's registry strategies do to objects of the 1.37 DRA API beyond validation.

Each rule is one small function that `driver.store.apply` calls while planning a write:

- `drop_disabled_fields`: a ResourceClaim's or ResourceClaimTemplate's `derivedAttributes`
  (KEP-6080) are dropped on create while the simulated apiserver has `DRADerivedAttributes` off, and
  kept on update when the stored object already used them (pkg/registry/resource/resourceclaim
  strategy `dropDisabledFields`, tested by TestStrategyCreateWithDerivedAttributes: "should drop
  derivedAttributes during creation when the feature gate is disabled").
- `taint_rule_time_added`: a DeviceTaintRule's `spec.taint.timeAdded` is set when missing, and
  replaced by the current time on an update that changes the effect but repeats the old time
  (k8s.io/api resource/v1 DeviceTaint.timeAdded: "Added automatically during create or update if
  not set ... a value provided during an update gets replaced with the current time if the provided
  value is the same as the old one and the new effect is different"). A document that omits it on
  update keeps the stored time while the effect stays (what `kubectl apply`'s merge patch leaves).
- `pool_status_request`: a ResourcePoolStatusRequest's `spec.limit` defaults to 100, and once its
  status is set the whole object is immutable (k8s.io/api resource/v1alpha3
  ResourcePoolStatusRequest: "When status is non-nil, the request is considered complete and the
  entire object becomes immutable").
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from driver.errors import InputError
from driver.features import Features

DEFAULT_POOL_STATUS_LIMIT = 100  # ResourcePoolStatusRequestSpec.limit: "Default: 100"


def now() -> str:
    """The current time as the API writes metav1.Time (RFC 3339, seconds, UTC)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _requests(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every ExactDeviceRequest and DeviceSubRequest body of a claim spec (the owners of derivedAttributes)."""
    out = []
    for req in ((spec.get("devices") or {}).get("requests") or ()):
        if not isinstance(req, dict):
            continue
        if isinstance(req.get("exactly"), dict):
            out.append(req["exactly"])
        out.extend(sub for sub in req.get("firstAvailable") or () if isinstance(sub, dict))
    return out


def _claim_spec(kind: str, obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    spec = (obj or {}).get("spec") or {}
    return (spec.get("spec") or {}) if kind == "ResourceClaimTemplate" else spec


def uses_derived_attributes(kind: str, obj: Mapping[str, Any] | None) -> bool:
    return any(r.get("derivedAttributes") for r in _requests(_claim_spec(kind, obj)))


def drop_disabled_fields(doc: dict[str, Any], kind: str, features: Features,
                         current: Mapping[str, Any] | None) -> dict[str, Any]:
    """`doc` without the fields of gates the apiserver has off (a copy when something is dropped)."""
    if kind not in ("ResourceClaim", "ResourceClaimTemplate") or features.derived_attributes:
        return doc
    if not uses_derived_attributes(kind, doc) or uses_derived_attributes(kind, current):
        return doc
    out = copy.deepcopy(doc)
    for req in _requests(_claim_spec(kind, out)):
        req.pop("derivedAttributes", None)
    return out


def taint_rule_time_added(new: dict[str, Any], current: Mapping[str, Any] | None, stamp: str) -> None:
    taint = (new.get("spec") or {}).get("taint")
    if not isinstance(taint, dict):
        return  # validation names the missing field
    old = ((current or {}).get("spec") or {}).get("taint") or {}
    effect_changed = bool(old) and old.get("effect") != taint.get("effect")
    given = taint.get("timeAdded")
    if not given:
        taint["timeAdded"] = old.get("timeAdded") if old.get("timeAdded") and not effect_changed else stamp
    elif effect_changed and given == old.get("timeAdded"):
        taint["timeAdded"] = stamp


def pool_status_request(new: dict[str, Any], current: Mapping[str, Any] | None, where: str) -> None:
    spec = new.get("spec")
    if isinstance(spec, dict) and spec.get("limit") is None:
        spec["limit"] = DEFAULT_POOL_STATUS_LIMIT
    if current is None or not current.get("status"):
        return
    keep = ("spec", "status", "metadata")
    before = {k: current.get(k) for k in keep}
    after = {k: new.get(k) if k != "status" or "status" in new else current.get("status") for k in keep}
    for side in (before, after):
        side["metadata"] = {k: v for k, v in (side["metadata"] or {}).items()
                            if k not in ("uid", "creationTimestamp", "resourceVersion", "generation", "managedFields")}
    if before != after:
        raise InputError(f"{where}: the request is complete (status is set), so the whole object is immutable: "
                         "delete it and create it again for new figures")
