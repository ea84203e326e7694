"""Host side of hack/image-smoke.sh: podman arguments taken from the DaemonSet, and the kubelet's checks.

Why a script of its own: the smoke must run the image exactly as the DaemonSet does, so the
podman flags are derived from the rendered install (`kubectl kustomize deploy/overlays/<name>`)
rather than written out a second time: securityContext, env, volume mounts, memory limit, args and
the liveness command. Anything in the manifest this mapping does not know is an error, so a
manifest change cannot silently escape the smoke. Two stand-ins replace the cluster, and only
these: the node name comes from the script instead of the downward API, and claims come from a
bind-mounted local object store instead of the API server (`--profile` for the init container's
node-label lookup, `FAKE_DRA_STORE` for the plugin).

    image_smoke.py podman-args  --rendered FILE --container NAME --work DIR --image IMG --node-name N
    image_smoke.py probe-command --rendered FILE
    image_smoke.py check --work DIR --node-name N     (registration, sockets, health, prepare/unprepare)

Host directories: hostPath volumes live under WORK/host/<path>, emptyDirs under WORK/empty/<name>,
the store under WORK/store. The AF_UNIX limit (107 bytes) keeps WORK short (/tmp/...).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from driver import DEFAULT_DRIVER_NAME

STORE_IN_CONTAINER = "/var/lib/fake-dra-smoke/store"
DAEMONSET = "fake-dra-kubelet-plugin"
# securityContext keys the mapping below understands; anything else stops the smoke.
KNOWN_SECURITY = {"allowPrivilegeEscalation", "readOnlyRootFilesystem", "capabilities", "privileged"}


class SmokeError(Exception):
    """The manifest asks for something the smoke cannot reproduce, or a check failed."""


def daemonset(rendered: Path) -> dict[str, Any]:
    for doc in yaml.safe_load_all(rendered.read_text()):
        if doc and doc.get("kind") == "DaemonSet" and doc["metadata"]["name"] == DAEMONSET:
            return doc
    raise SmokeError(f"{rendered}: no DaemonSet {DAEMONSET}")


def container(ds: dict[str, Any], name: str) -> dict[str, Any]:
    pod = ds["spec"]["template"]["spec"]
    for c in pod.get("initContainers", []) + pod["containers"]:
        if c["name"] == name:
            return c
    raise SmokeError(f"DaemonSet {DAEMONSET} has no container {name!r}")


def _security_args(pod: dict[str, Any], c: dict[str, Any]) -> list[str]:
    sc = c.get("securityContext") or {}
    unknown = set(sc) - KNOWN_SECURITY
    if unknown:
        raise SmokeError(f"container {c['name']}: securityContext {sorted(unknown)} not mapped to podman flags")
    if sc.get("privileged"):
        raise SmokeError(f"container {c['name']}: privileged is not what the smoke verifies")
    args: list[str] = []
    if sc.get("readOnlyRootFilesystem"):
        # Kubernetes adds no tmpfs of its own; podman's --read-only would (/tmp, /run, /var/tmp).
        args += ["--read-only", "--read-only-tmpfs=false"]
    if sc.get("allowPrivilegeEscalation") is False:
        args.append("--security-opt=no-new-privileges")
    caps = sc.get("capabilities") or {}
    args += [f"--cap-drop={cap}" for cap in caps.get("drop", [])]
    args += [f"--cap-add={cap}" for cap in caps.get("add", [])]
    seccomp = ((pod.get("securityContext") or {}).get("seccompProfile") or {}).get("type", "RuntimeDefault")
    if seccomp != "RuntimeDefault":  # podman's default profile is the runtime default
        raise SmokeError(f"pod seccompProfile {seccomp} not mapped to podman flags")
    return args


def _env_args(c: dict[str, Any], node: str) -> list[str]:
    args = []
    for e in c.get("env", []):
        if "value" in e:
            args.append(f"--env={e['name']}={e['value']}")
        elif (e.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName":
            args.append(f"--env={e['name']}={node}")
        else:
            raise SmokeError(f"container {c['name']}: env {e['name']} source not mapped: {e.get('valueFrom')}")
    return args


def _mount_args(pod: dict[str, Any], c: dict[str, Any], work: Path) -> list[str]:
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    args = []
    for m in c.get("volumeMounts", []):
        v = volumes[m["name"]]
        ro = ",ro" if m.get("readOnly") else ""
        if "hostPath" in v:
            host = work / "host" / v["hostPath"]["path"].lstrip("/")
            host.mkdir(parents=True, exist_ok=True)  # DirectoryOrCreate
            args.append(f"--volume={host}:{m['mountPath']}{ro}")
        elif "emptyDir" in v and (v["emptyDir"] or {}).get("medium") == "Memory":
            size = (v["emptyDir"] or {}).get("sizeLimit")
            args.append(f"--tmpfs={m['mountPath']}:rw{',size=' + _bytes(size) if size else ''}")
        elif "emptyDir" in v:
            host = work / "empty" / m["name"]
            host.mkdir(parents=True, exist_ok=True)
            args.append(f"--volume={host}:{m['mountPath']}{ro}")
        else:
            raise SmokeError(f"container {c['name']}: volume {m['name']} kind not mapped: {sorted(v)}")
    return args


def _bytes(quantity: str) -> str:
    """A memory quantity (16Mi, 256Mi, 1Gi) as podman's size (16m, 256m, 1g)."""
    for suffix, unit in (("Ki", "k"), ("Mi", "m"), ("Gi", "g")):
        if quantity.endswith(suffix) and quantity[: -len(suffix)].isdigit():
            return quantity[: -len(suffix)] + unit
    if quantity.isdigit():
        return quantity
    raise SmokeError(f"quantity {quantity!r}: only Ki/Mi/Gi or plain bytes are mapped")


def podman_args(rendered: Path, name: str, work: Path, image: str, node: str) -> list[str]:
    ds = daemonset(rendered)
    pod = ds["spec"]["template"]["spec"]
    c = container(ds, name)
    if c["image"] != image:
        raise SmokeError(f"container {name} runs image {c['image']!r}, the smoke built {image!r}")
    if c.get("command"):
        raise SmokeError(f"container {name}: command override not mapped (the image's entrypoint is used)")
    args = ["--network=none", *_security_args(pod, c), *_env_args(c, node), *_mount_args(pod, c, work)]
    limit = ((c.get("resources") or {}).get("limits") or {}).get("memory")
    if limit:
        args.append(f"--memory={_bytes(limit)}")
    cmd = list(c.get("args") or [])
    if cmd[:1] == ["node-sysfs"]:
        cmd.append("--profile=demo")  # stands in for the node-label lookup (no API server here)
    elif cmd[:1] == ["run"]:
        store = work / "store"
        store.mkdir(exist_ok=True)
        args += [f"--volume={store}:{STORE_IN_CONTAINER}", f"--env=FAKE_DRA_STORE={STORE_IN_CONTAINER}"]
    return [*args, image, *cmd]


def probe_command(rendered: Path) -> tuple[list[str], int]:
    probe = container(daemonset(rendered), "plugin").get("livenessProbe") or {}
    if "exec" not in probe:
        raise SmokeError("plugin container has no exec livenessProbe")
    return list(probe["exec"]["command"]), int(probe.get("timeoutSeconds", 1))


# -- the kubelet's side ---------------------------------------------------------------------------


def _wait(what: str, fn, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = fn()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - retried until the deadline, then reported
            last = exc
        time.sleep(0.2)
    raise SmokeError(f"timed out after {timeout:g}s waiting for {what}" + (f": {last}" if last else ""))


def check(work: Path, node: str, driver: str = DEFAULT_DRIVER_NAME, wait_s: float = 60.0) -> None:
    from driver.allocator import Allocator
    from driver.e2e.manifests import device_classes
    from driver.features import Features
    from driver.plugin.client import KubeletClient
    from driver.store.objectstore import ObjectStore

    host = work / "host"
    registry = host / "var/lib/kubelet/plugins_registry"
    plugins = host / "var/lib/kubelet/plugins"
    cdi = host / "var/run/cdi"
    reg_sock = registry / f"{driver}-reg.sock"
    _wait(f"registration socket {reg_sock}", reg_sock.exists, wait_s)

    # Registration as the kubelet does it; the endpoint is the path inside the container, which
    # the DaemonSet's hostPath makes the same on the node. Here it maps to the bind-mounted dir.
    kubelet = KubeletClient(registry, driver, timeout_s=20.0)
    info = _wait("GetInfo on the registration socket", kubelet.register, 30)
    kubelet.close()
    want = f"/var/lib/kubelet/plugins/{driver}/dra.sock"
    if info.endpoint != want:
        raise SmokeError(f"plugin advertises endpoint {info.endpoint}, the kubelet would dial {want}")
    dra_sock = plugins / driver / "dra.sock"
    if not dra_sock.is_socket():
        raise SmokeError(f"{dra_sock} is not a socket on the host")
    client = KubeletClient(registry, driver, timeout_s=20.0, endpoint=str(dra_sock),
                           dra_version=kubelet.dra_version, health_version=kubelet.health_version)
    print(f"registration: {info.type} {info.name} {list(info.supported_versions)}; DRA {client.dra_version} "
          f"over {dra_sock.name}")

    health = _wait("a device health update", lambda: next(iter(client.watch_health(timeout=10)), None), 30)
    states = sorted({d.health for d in health})
    print(f"health: {len(health)} devices, {states}")

    store = ObjectStore(work / "store")

    def newest_slices() -> list[dict[str, Any]]:
        slices = [s for s in store.list("resourceslices") if s["spec"].get("driver") == driver]
        if not slices:
            return []
        gen = max(s["spec"]["pool"]["generation"] for s in slices)
        newest = [s for s in slices if s["spec"]["pool"]["generation"] == gen]
        return newest if len(newest) == newest[0]["spec"]["pool"]["resourceSliceCount"] else []

    slices = _wait("published ResourceSlices in the store", newest_slices, 60)
    devices = sum(len(s["spec"].get("devices") or []) for s in slices)
    print(f"publish: {len(slices)} ResourceSlices, {devices} devices for node {slices[0]['spec'].get('nodeName')}")

    claim: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "smoke", "namespace": "default", "uid": str(uuid.uuid4())},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": f"mig.{driver}"}}]}},
    }
    (allocation,) = Allocator(slices=slices, classes=device_classes(driver), node=node, features=Features(),
                              allocated=[]).allocate([claim])
    claim["status"] = {"allocation": allocation}
    uid = store.create("resourceclaims", claim)["metadata"]["uid"]
    ref = ("default", "smoke", uid)
    result = client.prepare([ref])[uid]
    if result.error or len(result.devices) != 1:
        raise SmokeError(f"prepare: {result}")
    (dev,) = result.devices
    spec_file = cdi / f"k8s.{driver}_device_{uid}.json"
    if not spec_file.is_file():
        raise SmokeError(f"prepare answered but no CDI spec {spec_file.name} on the host")
    ids = [f"k8s.{driver}/device={d['name']}" for d in json.loads(spec_file.read_text())["devices"]]
    if list(dev.cdi_device_ids) != ids:
        raise SmokeError(f"prepare returned CDI ids {dev.cdi_device_ids}, the spec holds {ids}")
    print(f"prepare: {dev.device_name} in pool {dev.pool_name}, CDI {dev.cdi_device_ids[0]}")

    errors = client.unprepare([ref])
    if errors != {uid: ""}:
        raise SmokeError(f"unprepare: {errors}")
    if spec_file.exists():
        raise SmokeError(f"unprepare answered but {spec_file.name} is still on the host")
    print("unprepare: CDI spec removed")
    client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    pa = sub.add_parser("podman-args")
    pa.add_argument("--rendered", type=Path, required=True)
    pa.add_argument("--container", required=True)
    pa.add_argument("--work", type=Path, required=True)
    pa.add_argument("--image", required=True)
    pa.add_argument("--node-name", required=True)
    pc = sub.add_parser("probe-command")
    pc.add_argument("--rendered", type=Path, required=True)
    ck = sub.add_parser("check")
    ck.add_argument("--work", type=Path, required=True)
    ck.add_argument("--node-name", required=True)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "podman-args":
            out = podman_args(args.rendered, args.container, args.work, args.image, args.node_name)
        elif args.cmd == "probe-command":
            command, timeout = probe_command(args.rendered)
            out = [str(timeout), *command]
        else:
            check(args.work, args.node_name)
            return 0
    except SmokeError as exc:
        print(f"image-smoke: {exc}", file=sys.stderr)
        return 1
    # NUL-separated, for `mapfile -d ''` (arguments may hold spaces).
    sys.stdout.write("".join(a + "\0" for a in out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
