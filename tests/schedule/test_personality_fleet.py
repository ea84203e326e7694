"""`fake-dra schedule` on fleets of nvidia-personality nodes, with NVIDIA's DeviceClasses: NVIDIA's own
quickstart manifests land and get the devices the real driver's slices give them (the expectations
of tests/personality/test_quickstart.py, per node model, held against facts from NVIDIA's sources),
and a mixed fleet keeps each vocabulary on its own nodes."""

from __future__ import annotations

from typing import Any

from driver.cli import main
from driver.fleet.template import device_classes
from driver.commands._local import seed_device_classes
from personality.test_quickstart import EXPECT, MANIFESTS, NODES, _matches
from schedule.conftest import DRIVER, TOLERATE_KWOK, add, mig_template, pod


def _claim(name: str, ns: str, spec: dict[str, Any]) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": spec["requests"]}
    for key in ("constraints", "config"):
        if spec.get(key):
            devices[key] = spec[key]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"devices": devices}}


def _pod(name: str, ns: str, node: str, claims: list[str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": c} for c in claims]}}],
                     "resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims],
                     "nodeSelector": {"kubernetes.io/hostname": node}, "tolerations": TOLERATE_KWOK}}


def _devices(store, ns: str, claims: list[str]) -> list[str]:
    out = []
    for name in claims:
        allocation = (store.get("resourceclaims", ns, name).get("status") or {}).get("allocation")
        out.extend(r["device"] for r in allocation["devices"]["results"])
    return out


def test_nvidias_quickstart_manifests_on_an_nvidia_fleet(store, fleet, schedule):
    """One node group per node model of the quickstart table (docs/personalities.md), one node per
    manifest; each manifest's pods pinned to its node, in order, as the table assumes."""
    seed_device_classes(store, device_classes(["nvidia"], DRIVER))
    models, manifests = list(NODES), list(MANIFESTS)
    fleet(*({"name": f"m{i}", "count": len(manifests), "profile": profile, "personality": "nvidia",
             "driverConfig": config} for i, (profile, config) in enumerate(NODES.values())))
    pods: dict[tuple[int, int], list[tuple[str, list[str]]]] = {}
    for i in range(len(models)):
        for j, manifest in enumerate(manifests):
            ns, node = f"m{i}-q{j}", f"m{i}-{j:04d}"
            for k, spec in enumerate(MANIFESTS[manifest]["pods"]):
                claims = list(spec.get("claims") or {}) + list(spec.get("reuse") or [])
                add(store, *(_claim(c, ns, s) for c, s in (spec.get("claims") or {}).items()))
                add(store, _pod(f"pod-{k}", ns, node, claims))
                pods.setdefault((i, j), []).append((f"{ns}/pod-{k}", claims))
    outcomes = {o.name: o for o in schedule().outcomes}
    checked = 0
    for (i, j), entries in pods.items():
        want = EXPECT[models[i]][manifests[j]]
        for (name, claims), expected in zip(entries, want, strict=True):
            outcome = outcomes[name]
            ns = name.split("/")[0]
            got = _devices(store, ns, claims) if outcome.node else outcome.reason
            if outcome.node:
                assert outcome.node == f"m{i}-{j:04d}"
            assert _matches(got, expected), f"{models[i]}, {manifests[j]}, {name}: got {got!r}, want {expected!r}"
            checked += 1
    assert checked == sum(len(MANIFESTS[m]["pods"]) for m in manifests) * len(models)


def _nvidia_mig_template(profile: str) -> dict[str, Any]:
    """A claim template as NVIDIA's docs write one: class mig.nvidia.com, CEL on the profile."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "nv-mig", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "mig.nvidia.com",
                "selectors": [{"cel": {"expression": f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"}}]}}]}}}}


def test_a_mixed_fleet_keeps_each_vocabulary_on_its_own_nodes(store, fleet, schedule, capsys):
    """An H100 has seven 1g.10gb slots of its eight memory slices (NVIDIA's MIG user guide): with
    DynamicMIG one node takes 56 such pods and the 57th waits; fake-dra's own 1g.5gb pods go to the
    fake-dra group. `show --store` sums each group with its personality."""
    seed_device_classes(store, device_classes(["nvidia"], DRIVER))
    fleet({"name": "fd", "count": 1, "profile": "dgx-a100"},
          {"name": "nv", "count": 1, "profile": "h100", "personality": "nvidia",
           "driverConfig": {"nvidia": {"featureGates": {"DynamicMIG": True}}}})
    add(store, _nvidia_mig_template("1g.10gb"), mig_template(), *(pod(f"nv{i:02d}", "nv-mig") for i in range(57)),
        *(pod(f"fd{i}") for i in range(3)))
    report = schedule()
    by_node: dict[str | None, int] = {}
    for o in report.outcomes:
        by_node[o.node] = by_node.get(o.node, 0) + 1
    assert by_node == {"nv-0000": 56, "fd-0000": 3, None: 1}
    (stuck,) = report.pending
    assert stuck.name == "default/nv56"
    assert stuck.reason.startswith("0/2 nodes are available: ")
    assert "(class mig.nvidia.com)" in stuck.reason and "0 usable" in stuck.reason
    held = {r["device"] for c in store.list("resourceclaims", all_namespaces=True)
            for r in (c.get("status") or {}).get("allocation", {}).get("devices", {}).get("results", ())
            if r["driver"] == "gpu.nvidia.com"}
    assert len(held) == 56 and all("-mig-1g10gb-" in d for d in held)
    assert main(["show", "--store", str(store.root)]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[2:] if line.strip()}
    # nv: 8 GPUs + 8 x (7 x 1g.10gb, 1g.10gb+me... every placement) + 4 VFs; 64 memory slices, 56 in use.
    assert rows["lab/nv"][1:4] == ["h100", "nvidia", "1"] and rows["lab/nv"][7:10] == ["56", "of", "64"]
    assert rows["lab/fd"][1:4] == ["dgx-a100", "fake-dra", "1"] and rows["lab/fd"][7:10] == ["3", "of", "64"]
