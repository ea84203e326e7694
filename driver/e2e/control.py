"""The simulated control plane both local backends share: stored pods, the real scheduler, the real controllers.

The e2e harness keeps no scheduler or cleanup of its own where fake-dra has the real one: a
scenario's pod is a stored Pod, bound by `fake-dra schedule`'s Scheduler (driver.schedule), and
what a deletion sets off (reservations dropped, claims deallocated, a Node's slices and pods gone)
is done by `fake-dra cluster`'s controllers (driver.controllers), run until settled.
The harness itself plays only the kubelet (prepare, unprepare, the pod's final delete).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from driver.controllers import Runner, default_controllers
from driver.e2e.manifests import NAMESPACE
from driver.errors import InputError
from driver.features import Features
from driver.schedule import Scheduler
from driver.store import deletion
from driver.store.objectstore import ObjectStore

PODS = "pods"


def store_pod(store: ObjectStore, name: str, claims: Sequence[str],
              tolerations: Sequence[Mapping[str, Any]] = ()) -> str:
    """Create the Pod of a scenario pod, each claim a `resourceClaimName` entry; its uid."""
    spec: dict[str, Any] = {
        "containers": [{"name": "ctr", "image": "registry.example.com/e2e:1",
                        "resources": {"claims": [{"name": c} for c in claims]}}],
        "resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims]}
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    pod = store.create(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
                              "spec": spec})
    return str(pod["metadata"]["uid"])


def schedule_once(store: ObjectStore, features: Features, name: str) -> tuple[str | None, str]:
    """One run of `fake-dra schedule`'s Scheduler (`--policy first`) for the scenario's new pod:
    (node, "") once bound, its claims allocated and reserved; else (None, the scheduler's reason),
    and the pod deleted: a scenario's pod is tried once, so a later step never binds it behind
    the scenario's back (kube-scheduler would keep retrying it)."""
    Scheduler(store, features=features, policy="first").run()
    pod = store.get(PODS, NAMESPACE, name)
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        return str(node), ""
    scheduled = next((c for c in (pod.get("status") or {}).get("conditions") or []
                      if isinstance(c, Mapping) and c.get("type") == "PodScheduled"), {})
    remove_pod(store, name)
    return None, str(scheduled.get("message") or "not scheduled")


def remove_pod(store: ObjectStore, name: str) -> None:
    """The kubelet's final delete of a pod (grace period 0), if it is still stored."""
    if store.exists(PODS, NAMESPACE, name):
        deletion.delete(store, PODS, NAMESPACE, name, grace_period_s=0)


def settle(store: ObjectStore, timeout_s: float) -> None:
    """Run the local control plane's controllers (no scheduler) until nothing is left to do."""
    runner = Runner(store, default_controllers())
    if not runner.run(until_settled=True, timeout_s=timeout_s).settled:
        raise InputError(f"the controllers did not settle within {timeout_s:.0f} s "
                         f"({len(runner.queue)} object(s) still queued)")
