"""Never double-booked (issue 29): schedulers and `apply --allocate` racing over one store give no
device twice, over-commit no counter, and a write that loses leaves nothing behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

from driver.allocator import PlacedDevice, validate_combination
from driver.features import Features
from driver.schedule import Scheduler
from driver.schedule.claims import POD_CLAIM_ANNOTATION
from driver.store import ObjectStore
from schedule.conftest import add, mig_template, pod, vf_template

ROOT = Path(__file__).resolve().parents[2]
MIG_SLOTS = 8 * 7  # one DGX-A100: 8 A100-40GB, seven 1g.5gb instances each


def problems(store: ObjectStore) -> list[str]:
    """Everything that would make the store's allocations wrong: a device held twice, counters or
    groups over what the hardware has, a claim reserved for a pod elsewhere or gone, a claim made
    from a template that its pod does not record (an orphan), two claims for one pod entry."""
    out = []
    pods = {p["metadata"]["uid"]: p for p in store.list("pods", all_namespaces=True)}
    claims = store.list("resourceclaims", all_namespaces=True)
    holders: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    placed: dict[str, list[PlacedDevice]] = defaultdict(list)
    made: Counter[tuple[str, str]] = Counter()
    for claim in claims:
        meta, status = claim["metadata"], claim.get("status") or {}
        name = meta["name"]
        for ref in meta.get("ownerReferences") or []:
            owner = pods.get(ref["uid"])
            entry = (meta.get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
            if owner is None:
                out.append(f"claim {name}: owner pod {ref['name']} is gone")
                continue
            made[(ref["uid"], entry or "")] += 1
            recorded = {s["resourceClaimName"] for s in (owner.get("status") or {}).get("resourceClaimStatuses") or []}
            extended = ((owner.get("status") or {}).get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
            if name not in recorded and name != extended:
                out.append(f"claim {name}: made for pod {ref['name']}, which does not record it (orphan)")
        allocation = status.get("allocation")
        if not allocation:
            continue
        if not status.get("reservedFor"):
            out.append(f"claim {name}: allocated but reserved for nobody")
        for consumer in status.get("reservedFor") or []:
            user = pods.get(consumer["uid"])
            node = (user or {}).get("spec", {}).get("nodeName")
            want = allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"]
            if user is None or [node] != want:
                out.append(f"claim {name}: reserved for pod {consumer['name']} on {node}, allocated on {want}")
        for r in allocation["devices"]["results"]:
            if not r.get("adminAccess") and not r.get("shareID"):
                holders[(r["driver"], r["pool"], r["device"])].append(name)
            placed[r["pool"]].append(PlacedDevice(name, r["request"], r["driver"], r["pool"], r["device"]))
    out += [f"device {'/'.join(d)} held by {', '.join(names)}" for d, names in holders.items() if len(names) > 1]
    out += [f"pod {uid} entry {entry!r}: {n} claims" for (uid, entry), n in made.items() if n > 1]
    slices = store.list("resourceslices")
    for pool, devices in placed.items():
        out += validate_combination([s for s in slices if s["spec"]["pool"]["name"] == pool], devices, Features())
        index = store.allocated_devices(devices[0].driver, pool)
        if index != {d.device for d in devices}:
            out.append(f"pool {pool}: the store's allocation index {sorted(index)} differs from the claims")
    return out


def crowded(store, fleet, pods_per_kind: int = 70) -> None:
    fleet({"name": "gpu", "count": 1, "profile": "dgx-a100"}, {"name": "nic", "count": 2, "profile": "no-gpu"})
    add(store, mig_template(), vf_template(), *(pod(f"m{i:03d}") for i in range(pods_per_kind)),
        *(pod(f"v{i:03d}", "vf") for i in range(pods_per_kind // 3)))


def _bound(store) -> Counter[str]:
    return Counter(p["metadata"]["name"][0] for p in store.list("pods", all_namespaces=True) if p["spec"].get("nodeName"))


def _spawn(args: list[str], store: ObjectStore) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "driver", *args, "--store", str(store.root)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait(procs: list[subprocess.Popen]) -> list[str]:
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        outs.append(out)
    return outs


def test_two_schedulers_in_two_processes_book_every_slot_once(store, fleet):
    crowded(store, fleet)
    outs = _wait([_spawn(["schedule", "-o", "json"], store) for _ in range(2)])
    assert problems(store) == []
    # Every MIG slot is taken once; the VF pods all fit (the DGX node's NICs have VFs too).
    assert _bound(store) == {"m": MIG_SLOTS, "v": 23}
    # Every pod was decided by one of the two: bound by one, pending in the last word of the other.
    lines = [line for out in outs for line in out.splitlines()]
    assert len(lines) >= 70 + 23


def test_a_scheduler_and_apply_allocate_racing_never_share_a_device(store, fleet, tmp_path):
    """`apply --allocate` allocates its claims together, as one pod would: few enough that they fit
    beside the scheduler's pods, whichever writes first."""
    crowded(store, fleet, pods_per_kind=40)
    claims = tmp_path / "claims.yaml"
    spec = mig_template()["spec"]["spec"]
    docs = [f"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: direct-{i}, namespace: default}}\n"
            f"spec: {json.dumps(spec)}\n" for i in range(4)]
    claims.write_text("---\n".join(docs))
    applier = _spawn(["apply", "-f", str(claims), "--allocate", "--node-name", "gpu-0000"], store)
    scheduler = _spawn(["schedule"], store)
    _wait([applier, scheduler])
    # Claims allocated by `apply --allocate` are reserved for nobody (no pod asked): set them aside.
    direct = [c for c in store.list("resourceclaims", all_namespaces=True) if c["metadata"]["name"].startswith("direct-")]
    assert all(c["status"]["allocation"] for c in direct)
    assert [p for p in problems(store) if "reserved for nobody" not in p] == []
    assert len(direct) == 4 and _bound(store)["m"] == 40


def test_a_stale_pool_revision_makes_the_pod_try_again_and_land_elsewhere(store, fleet):
    """Another writer allocates, after this run read the store, the very device the run would give
    its first pod: the store refuses the write (the pool moved since the run's revision), the cycle
    is undone, the run catches up and the pod lands on the next device, with nothing left behind."""
    fleet({"name": "gpu", "count": 1, "profile": "dgx-a100"})
    add(store, mig_template(), pod("first"))
    scheduler = Scheduler(store, features=Features())
    (pending,) = scheduler.state.load()
    # What the run would write, found without writing, then written by someone else.
    probe = {"metadata": {"name": "probe", "namespace": "default"}, "spec": mig_template()["spec"]["spec"]}
    answer = scheduler.state.dra.try_node("gpu-0000", scheduler.state.dra.parse([probe]), "probe")
    taken = answer[0]["devices"]["results"][0]["device"]
    other = ObjectStore(store.root)
    other.create("resourceclaims", {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                    "metadata": {"name": "theirs", "namespace": "default"},
                                    "spec": mig_template()["spec"]["spec"],
                                    "status": {"allocation": answer[0]}})
    with store.batch():  # no catch-up at the start: the write itself must notice
        outcome = scheduler._cycle(pending)
    assert scheduler.report.conflicts == 1
    assert outcome is not None and outcome.node == "gpu-0000"
    (mine,) = outcome.claims
    device = store.get("resourceclaims", "default", mine)["status"]["allocation"]["devices"]["results"][0]["device"]
    assert device != taken
    assert problems(store) == ["claim theirs: allocated but reserved for nobody"]
    assert len(store.list("resourceclaims", all_namespaces=True)) == 2  # theirs and the pod's: no orphan


def test_a_pod_bound_by_another_writer_meanwhile_is_left_alone(store, fleet):
    fleet({"name": "gpu", "count": 1, "profile": "dgx-a100"})
    add(store, mig_template(), pod("a"), pod("b"))
    scheduler = Scheduler(store, features=Features())
    first, second = scheduler.state.load()
    Scheduler(ObjectStore(store.root), features=Features()).run()  # someone else binds both
    claims = len(store.list("resourceclaims", all_namespaces=True))
    with store.batch():
        assert scheduler._cycle(first) is None  # its pod's resourceVersion moved: caught up, skipped
        scheduler.state.catch_up()
        assert scheduler._cycle(second) is None
    assert scheduler.report.skipped == ["default/a", "default/b"]
    assert len(store.list("resourceclaims", all_namespaces=True)) == claims
    assert problems(store) == []


def test_what_another_writer_released_meanwhile_is_used(store, fleet):
    """A full node; after this run read the store, someone releases one claim's device and deletes
    a bound pod: the run's transaction starts by catching up, so the pending pod gets the device
    instead of being found unschedulable on a stale picture."""
    fleet({"name": "gpu", "count": 1, "profile": "dgx-a100"})
    add(store, mig_template(), *(pod(f"p{i:02d}") for i in range(MIG_SLOTS)))
    Scheduler(store, features=Features()).run()
    add(store, pod("late"))
    scheduler = Scheduler(store, features=Features())
    (late,) = scheduler.state.load()
    other = ObjectStore(store.root)
    victim = other.get("pods", "default", "p00")
    (status,) = victim["status"]["resourceClaimStatuses"]
    claim = other.get("resourceclaims", "default", status["resourceClaimName"])
    device = claim["status"]["allocation"]["devices"]["results"][0]["device"]
    other.delete("pods", "default", "p00")
    other.delete("resourceclaims", "default", claim["metadata"]["name"])
    with store.batch():
        assert scheduler.state.catch_up()
        outcome = scheduler._cycle(late)
    assert outcome is not None and outcome.node == "gpu-0000" and scheduler.report.conflicts == 0
    (mine,) = outcome.claims
    assert store.get("resourceclaims", "default", mine)["status"]["allocation"]["devices"]["results"][0]["device"] == device
    assert problems(store) == []
