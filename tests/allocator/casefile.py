"""Load allocator scenario files (tests/allocator/cases/*.yaml) into API objects.

A case names shared fixtures (tests/allocator/fixtures/<name>.yaml: classes and slices), may add
raw `objects`, and lists `claims` in a compact form that is expanded into real ResourceClaim
objects (v1 shape), so every case exercises the same parsing as `fake-dra allocate`.

Shorthands (all expand into plain API objects):
* `slices`: ResourceSlices as `{name, driver, pool, count, generation, node | allNodes | nodeSelector |
  perDevice, counters: {set: {counter: quantity}}, devices: [...]}`; a device may say
  `consumes: {set: {counter: quantity}}` and `capacity: {name: quantity}` instead of the API shape,
  and `groups: {set: [group, ...]}` for the compatibilityGroups of those entries (kept verbatim, so
  `null` and `[]` stay distinguishable from an absent field).
* `allocatedDevices: [driver/pool/device, ...]` and `allocatedShares: [{device, consumedCapacity}]`:
  devices already allocated by other claims (one claim object holds them).
* a request's `derived: {name: expression}` becomes its KEP-6080 `derivedAttributes`.
* `upstreamFeatures: [PartitionableDevices, ...]`: the upstream allocator test's Features value —
  every listed feature on, every other one of UPSTREAM_FEATURES off (`features` may still add gates).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).parent
CASES = HERE / "cases"
FIXTURES = HERE / "fixtures"


def load_fixture(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((FIXTURES / f"{name}.yaml").read_text()) if d]


def _exact(req: dict) -> dict:
    out: dict[str, Any] = {"deviceClassName": req["class"]}
    if req.get("selectors"):
        out["selectors"] = [{"cel": {"expression": e}} for e in req["selectors"]]
    if req.get("mode"):
        out["allocationMode"] = req["mode"]
    if "count" in req:
        out["count"] = req["count"]
    if "adminAccess" in req:
        out["adminAccess"] = req["adminAccess"]
    if req.get("capacity") is not None:
        out["capacity"] = {"requests": req["capacity"]}
    if req.get("tolerations"):
        out["tolerations"] = req["tolerations"]
    if req.get("derived"):  # KEP-6080: {name: expression}
        out["derivedAttributes"] = [{"name": n, "expression": e} for n, e in req["derived"].items()]
    return out


def _find_device(objects: list[dict], name: str) -> tuple[str, str]:
    hits = {
        (o["spec"]["driver"], o["spec"]["pool"]["name"])
        for o in objects
        if o.get("kind") == "ResourceSlice"
        for d in o["spec"].get("devices") or ()
        if d["name"] == name
    }
    if len(hits) != 1:
        raise ValueError(f"case: cannot infer driver/pool of device {name!r} ({len(hits)} candidates)")
    return next(iter(hits))


def expand_claim(short: dict, objects: list[dict]) -> dict:
    if "apiVersion" in short:
        return short
    requests = []
    for req in short.get("requests") or ():
        if "firstAvailable" in req:
            subs = [{"name": s["name"], **_exact(s)} for s in req["firstAvailable"]]
            requests.append({"name": req["name"], "firstAvailable": subs})
        else:
            requests.append({"name": req["name"], "exactly": _exact(req)})
    devices: dict[str, Any] = {"requests": requests}
    if short.get("constraints"):
        devices["constraints"] = short["constraints"]
    if short.get("config"):
        devices["config"] = short["config"]
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": short["name"], "namespace": short.get("namespace", "default")},
        "spec": {"devices": devices},
    }
    if short.get("allocated") is not None:
        results = []
        for r in short["allocated"]:
            r = dict(r)
            if "driver" not in r or "pool" not in r:
                r["driver"], r["pool"] = _find_device(objects, r["device"])
            r.setdefault("request", requests[0]["name"] if requests else "r")
            results.append(r)
        claim["status"] = {"allocation": {"devices": {"results": results}}}
    return claim


def _quantities(values: dict) -> dict:
    return {k: ({"value": str(v)} if not isinstance(v, dict) else v) for k, v in (values or {}).items()}


def expand_device(short: dict) -> dict:
    dev = {k: v for k, v in short.items() if k not in ("consumes", "capacity", "groups")}
    if short.get("capacity") is not None:
        dev["capacity"] = _quantities(short["capacity"])
    if short.get("consumes") is not None:
        dev["consumesCounters"] = [{"counterSet": cs, "counters": _quantities(counters)}
                                   for cs, counters in short["consumes"].items()]
    for cs, groups in (short.get("groups") or {}).items():
        entry = next((e for e in dev.get("consumesCounters") or () if e["counterSet"] == cs), None)
        if entry is None:
            raise ValueError(f"case: device {short.get('name')!r} declares groups for {cs!r} but does not consume from it")
        entry["compatibilityGroups"] = groups
    return dev


def expand_slice(short: dict) -> dict:
    spec: dict[str, Any] = {
        "driver": short.get("driver", "driver-a"),
        "pool": {"name": short.get("pool", "pool-1"), "generation": short.get("generation", 1),
                 "resourceSliceCount": short.get("count", 1)},
    }
    if short.get("allNodes"):
        spec["allNodes"] = True
    elif short.get("nodeSelector") is not None:
        spec["nodeSelector"] = short["nodeSelector"]
    elif short.get("perDevice"):
        spec["perDeviceNodeSelection"] = True
    else:
        spec["nodeName"] = short.get("node", "node-1")
    if short.get("counters") is not None:
        spec["sharedCounters"] = [{"name": name, "counters": _quantities(counters)}
                                  for name, counters in short["counters"].items()]
    else:
        spec["devices"] = [expand_device(d) for d in short.get("devices") or ()]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": short["name"]}, "spec": spec}


def _allocated_claim(name: str, results: list[dict]) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "other"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "any"}}]}},
            "status": {"allocation": {"devices": {"results": results}}}}


def _device_result(device_id: str, **extra: Any) -> dict:
    driver, pool, device = device_id.split("/")
    return {"request": "r", "driver": driver, "pool": pool, "device": device, **extra}


UPSTREAM_FEATURES = {
    "AdminAccess": ["DRAAdminAccess"],
    "CompatibilityGroups": ["DRADeviceCompatibilityGroups"],
    "ConsumableCapacity": ["DRAConsumableCapacity"],
    "DeviceBindingAndStatus": ["DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"],
    "DeviceTaints": ["DRADeviceTaints"],
    "FractionalCapacityRange": ["DRAFractionalCapacityRange"],
    "ListTypeAttributes": ["DRAListTypeAttributes"],
    "PartitionableDevices": ["DRAPartitionableDevices"],
    "PrioritizedList": ["DRAPrioritizedList"],
}


def case_features(case: dict) -> str | None:
    """The case's gate string: `upstreamFeatures` mapped to gates (others off), then `features`."""
    if case.get("upstreamFeatures") is None:
        return case.get("features")
    on = set(case["upstreamFeatures"])
    unknown = on - set(UPSTREAM_FEATURES)
    if unknown:
        raise ValueError(f"case: unknown upstream feature(s) {sorted(unknown)}")
    gates = [f"{g}={'true' if name in on else 'false'}" for name, names in UPSTREAM_FEATURES.items() for g in names]
    return ",".join(gates + ([case["features"]] if case.get("features") else []))


def load_case(path: Path) -> tuple[dict, list[dict]]:
    case = yaml.safe_load(path.read_text())
    objects: list[dict] = []
    for name in case.get("fixtures") or ():
        objects.extend(load_fixture(name))
    objects.extend(case.get("objects") or ())
    objects.extend(expand_slice(s) for s in case.get("slices") or ())
    if case.get("allocatedDevices"):
        objects.append(_allocated_claim("allocated-devices", [_device_result(d) for d in case["allocatedDevices"]]))
    if case.get("allocatedShares"):
        objects.append(_allocated_claim("allocated-shares", [
            _device_result(s["device"], shareID=f"00000000-0000-0000-0000-{i:012d}",
                           consumedCapacity={k: str(v) for k, v in (s.get("consumedCapacity") or {}).items()})
            for i, s in enumerate(case["allocatedShares"])]))
    if case.get("nodeLabels"):
        objects.append({"apiVersion": "v1", "kind": "Node",
                        "metadata": {"name": case.get("node", "node-1"), "labels": case["nodeLabels"]}})
    objects.extend(expand_claim(c, objects) for c in case.get("claims") or ())
    return case, objects


def all_cases() -> list[Path]:
    return sorted(CASES.glob("*.yaml"))
