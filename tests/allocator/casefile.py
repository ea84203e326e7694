"""Load allocator scenario files (tests/allocator/cases/*.yaml) into API objects.

A case names shared fixtures (tests/allocator/fixtures/<name>.yaml: classes and slices), may add
raw `objects`, and lists `claims` in a compact form that is expanded into real ResourceClaim
objects (v1 shape), so every case exercises the same parsing as `fake-dra allocate`.
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


def load_case(path: Path) -> tuple[dict, list[dict]]:
    case = yaml.safe_load(path.read_text())
    objects: list[dict] = []
    for name in case.get("fixtures") or ():
        objects.extend(load_fixture(name))
    objects.extend(case.get("objects") or ())
    if case.get("nodeLabels"):
        objects.append({"apiVersion": "v1", "kind": "Node",
                        "metadata": {"name": case.get("node", "node-1"), "labels": case["nodeLabels"]}})
    objects.extend(expand_claim(c, objects) for c in case.get("claims") or ())
    return case, objects


def all_cases() -> list[Path]:
    return sorted(CASES.glob("*.yaml"))
