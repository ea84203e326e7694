"""The `metadata` expectation: the DRA device metadata files a pod's container sees (KEP-5304).

Backends report what the container sees as {container path: file content} — the local backend by
following the bind mounts of the CDI devices the kubelet handed to the runtime, the kind backend
by reading the files inside the running container — and this module judges it, once for both.

Beyond the keys a scenario asks for, every file is held to the protocol: a JSON stream of
DeviceMetadata objects, one per API version in the driver's order (newest first), identical apart
from apiVersion, with a positive metadata.generation, at the path its own content implies
(`resourceclaims/<claim>/<request>/<driver>-metadata.json`, or `resourceclaimtemplates/
<podClaimName>/...`, the request without its `/<subrequest>`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driver.state.metadata import API_VERSIONS, KIND, container_path, decode


def protocol_problems(path: str, text: str) -> tuple[dict[str, Any] | None, list[str]]:
    """(first object, problems) of one file."""
    try:
        objects = decode(text)
    except ValueError as exc:
        return None, [f"{path}: not a JSON stream ({exc})"]
    if not objects:
        return None, [f"{path}: empty"]
    problems = []
    versions = tuple(o.get("apiVersion") for o in objects)
    if versions != API_VERSIONS:
        problems.append(f"{path}: versions {', '.join(map(str, versions))} (want {', '.join(API_VERSIONS)})")
    first = objects[0]
    strip = [{k: v for k, v in o.items() if k != "apiVersion"} for o in objects]
    if any(s != strip[0] for s in strip[1:]):
        problems.append(f"{path}: the versions of the stream differ in content")
    if any(o.get("kind") != KIND for o in objects):
        problems.append(f"{path}: kind is not {KIND}")
    meta = first.get("metadata") or {}
    generation = meta.get("generation")
    if not isinstance(generation, int) or generation < 1:
        problems.append(f"{path}: metadata.generation {generation!r} is not a positive integer")
    requests = first.get("requests") or []
    devices = [d for r in requests for d in (r.get("devices") or [])]
    drivers = {d.get("driver") for d in devices}
    if len(requests) != 1 or len(drivers) != 1:
        problems.append(f"{path}: want one request served by one driver, got {len(requests)} / {len(drivers)}")
    else:
        request = str(requests[0].get("name", "")).split("/", 1)[0]
        want = container_path(str(next(iter(drivers))), str(meta.get("name")), request, first.get("podClaimName"))
        if path != want:
            problems.append(f"{path}: content says it belongs at {want}")
    return first, problems


def _type(device: Mapping[str, Any]) -> Any:
    value = (device.get("attributes") or {}).get("type") or {}
    return next(iter(value.values()), None) if isinstance(value, Mapping) else None


def check(want: Mapping[str, Any], files: Mapping[str, str] | None) -> tuple[bool, str]:
    """(ok, what was seen) for one `metadata` expectation."""
    if files is None:
        return False, "(not observed)"
    problems: list[str] = []
    firsts = []
    for path, text in sorted(files.items()):
        first, bad = protocol_problems(path, text)
        problems.extend(bad)
        if first is not None:
            firsts.append(first)
    devices = [d for f in firsts for r in f.get("requests") or [] for d in r.get("devices") or []]
    if "files" in want and len(files) != int(want["files"]):
        problems.append(f"{len(files)} files")
    if "devices" in want and len(devices) != int(want["devices"]):
        problems.append(f"{len(devices)} devices")
    if "type" in want:
        bad = [str(d.get("name")) for d in devices if str(_type(d)) != str(want["type"])]
        if bad or not devices:
            problems.append(f"type != {want['type']} on {', '.join(bad) or 'no device'}")
    if "network" in want:
        have = [bool((d.get("networkData") or {}).get("interfaceName") and (d.get("networkData") or {}).get("hardwareAddress"))
                for d in devices]
        if not devices or any(h != bool(want["network"]) for h in have):
            problems.append(f"networkData {'missing' if want['network'] else 'present'} on some device")
    if "generation" in want:
        gens = sorted({(f.get("metadata") or {}).get("generation") for f in firsts}, key=str)
        if gens != [int(want["generation"])]:
            problems.append(f"generation {', '.join(map(str, gens)) or 'none'}")
    names = ", ".join(str(d.get("name")) for d in devices) or "none"
    seen = f"{len(files)} file(s): {names}"
    return not problems, seen + (f" ({'; '.join(problems)})" if problems else "")
