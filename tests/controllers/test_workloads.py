"""Deployment, ReplicaSet and Job controllers against upstream's rules (pkg/controller/deployment,
replicaset, job), with kwok's pod stages (kustomize/stage/pod/fast) moving the pods, and pod GC."""

from __future__ import annotations

import time

import pytest

from adversarial.invariants import violations
from driver.commands.cluster import scheduler_cycle
from driver.controllers import Runner, default_controllers
from driver.controllers.deployment import HASH_LABEL, template_hash
from driver.controllers.job import TRACKING
from driver.controllers.podstages import parse_duration
from driver.errors import InputError
from driver.features import Features
from driver.store import deletion
from schedule.conftest import TOLERATE_KWOK, add, mig_template

A100 = {"name": "a100", "count": 2, "profile": "dgx-a100"}


def _template(labels, claims=True, **spec):
    body = {"containers": [{"name": "c", "image": "busybox", **({"resources": {"claims": [{"name": "gpu"}]}} if claims else {})}],
            "tolerations": TOLERATE_KWOK, **spec}
    if claims:
        body["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "mig-1g"}]
    return {"metadata": {"labels": labels}, "spec": body}


def deployment(name="web", replicas=3, image="busybox", **spec):
    t = _template({"app": name})
    t["spec"]["containers"][0]["image"] = image
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": t, **spec}}


def job(name="train", **spec):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": {"template": _template({}, restartPolicy="Never"), **spec}}


def _pods(store):
    return store.list("pods", "default")


def _create(store, resource, obj):
    return store.create(resource, obj)


def test_a_deployment_makes_a_replicaset_with_the_template_hash_and_running_pods(store, fleet, settle):
    fleet(A100)
    add(store, mig_template())
    d = _create(store, "deployments", deployment())
    settle()
    (rs,) = store.list("replicasets", "default")
    digest = template_hash(d["spec"]["template"])
    assert rs["metadata"]["name"] == f"web-{digest}" and rs["metadata"]["labels"][HASH_LABEL] == digest
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", HASH_LABEL: digest}
    assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    pods = _pods(store)
    assert len(pods) == 3 and all(p["status"]["phase"] == "Running" and p["spec"]["nodeName"] for p in pods)
    assert all(p["metadata"]["name"].startswith(f"web-{digest}-") for p in pods)
    status = store.get("deployments", "default", "web")["status"]
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"], status["updatedReplicas"]) == (3, 3, 3, 3)
    reasons = {e["reason"] for e in store.list("events", "default")}
    assert {"ScalingReplicaSet", "SuccessfulCreate"} <= reasons
    assert violations(store) == []


def test_scale_down_and_up_leave_no_claim_behind(store, fleet, settle):
    fleet(A100)
    add(store, mig_template())
    d = _create(store, "deployments", deployment(replicas=5))
    settle()
    d = store.get("deployments", "default", "web")
    store.update("deployments", {**d, "spec": {**d["spec"], "replicas": 2}})
    settle()
    assert len(_pods(store)) == 2 and len(store.list("resourceclaims", "default")) == 2
    d = store.get("deployments", "default", "web")
    store.update("deployments", {**d, "spec": {**d["spec"], "replicas": 4}})
    settle()
    assert len(_pods(store)) == 4 and violations(store) == []


def test_a_rolling_update_replaces_every_pod_and_keeps_the_old_replicaset_at_zero(store, fleet, settle):
    fleet(A100)
    add(store, mig_template())
    _create(store, "deployments", deployment(replicas=4))
    settle()
    d = store.get("deployments", "default", "web")
    changed = deployment(replicas=4, image="busybox:2")
    store.update("deployments", {**d, "spec": changed["spec"]})
    settle()
    rss = {rs["metadata"]["name"]: rs for rs in store.list("replicasets", "default")}
    new = next(rs for rs in rss.values() if rs["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:2")
    assert new["spec"]["replicas"] == 4 and new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert all(rs["spec"]["replicas"] == 0 for rs in rss.values() if rs is not new)
    pods = _pods(store)
    assert len(pods) == 4 and all(p["spec"]["containers"][0]["image"] == "busybox:2" for p in pods)
    assert len(store.list("resourceclaims", "default")) == 4 and violations(store) == []


def test_deleting_a_deployment_deletes_everything_it_made(store, fleet, settle):
    fleet(A100)
    add(store, mig_template())
    _create(store, "deployments", deployment())
    settle()
    deletion.delete(store, "deployments", "default", "web")
    settle()
    assert store.list("replicasets", "default") == [] and _pods(store) == []
    assert store.list("resourceclaims", "default") == [] and violations(store) == []


def test_a_replicaset_adopts_a_matching_orphan_and_deletes_the_surplus(store, fleet, settle):
    fleet(A100)
    add(store, mig_template())
    orphan = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stray", "namespace": "default", "labels": {"app": "rs"}},
              "spec": _template({"app": "rs"})["spec"]}
    _create(store, "pods", orphan)
    _create(store, "replicasets", {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                   "metadata": {"name": "rs", "namespace": "default"},
                                   "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "rs"}},
                                            "template": _template({"app": "rs"})}})
    settle()
    pods = _pods(store)
    assert len(pods) == 2 and "stray" in {p["metadata"]["name"] for p in pods}
    assert store.get("pods", "default", "stray")["metadata"]["ownerReferences"][0]["name"] == "rs"


def test_a_job_runs_its_completions_with_its_parallelism_and_completes(store, fleet, settle):
    fleet(A100)
    add(store, mig_template())
    _create(store, "jobs", job(completions=5, parallelism=2))
    settle()
    j = store.get("jobs", "default", "train")
    assert j["status"]["succeeded"] == 5 and j["status"].get("active", 0) == 0
    assert {c["type"] for c in j["status"]["conditions"] if c["status"] == "True"} == {"SuccessCriteriaMet", "Complete"}
    pods = _pods(store)
    assert len(pods) == 5 and all(p["status"]["phase"] == "Succeeded" for p in pods)
    uid = j["metadata"]["uid"]
    for p in pods:
        labels = p["metadata"]["labels"]
        assert labels["batch.kubernetes.io/job-name"] == "train" and labels["batch.kubernetes.io/controller-uid"] == uid
        assert labels["job-name"] == "train" and labels["controller-uid"] == uid
        assert TRACKING not in p["metadata"].get("finalizers", [])
    assert store.list("resourceclaims", "default") == []  # done pods' claims are deleted
    assert violations(store) == []


def test_an_indexed_job_runs_each_index_once(store, fleet, settle):
    fleet(A100)
    add(store, mig_template())
    _create(store, "jobs", job(completions=3, parallelism=3, completionMode="Indexed"))
    settle()
    j = store.get("jobs", "default", "train")
    assert j["status"]["completedIndexes"] == "0-2" and j["status"]["succeeded"] == 3
    indexes = sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in _pods(store))
    assert indexes == ["0", "1", "2"]


def test_failures_past_backoff_limit_fail_the_job(store, fleet, settle):
    fleet(A100)
    add(store, mig_template())
    spec = job(backoffLimit=0)
    spec["spec"]["template"]["metadata"]["annotations"] = {"pod-complete.stage.kwok.x-k8s.io/delay": "1h"}
    _create(store, "jobs", spec)
    # The pod would complete in an hour: run the control plane until it is running, then fail it.
    deadline = time.monotonic() + 120
    while not [p for p in _pods(store) if p["status"].get("phase") == "Running"] and time.monotonic() < deadline:
        Runner(store, default_controllers(), scheduler=scheduler_cycle(store, Features(), "first")).run(timeout_s=0.5)
    (p,) = _pods(store)
    assert p["status"]["phase"] == "Running"
    store.update("pods", {**p, "status": {**p["status"], "phase": "Failed"}})
    settle()
    j = store.get("jobs", "default", "train")
    failed = {c["type"]: c for c in j["status"]["conditions"]}
    assert failed["Failed"]["reason"] == "BackoffLimitExceeded" and j["status"]["failed"] == 1


def test_kwoks_completion_delay_is_honoured(store, fleet, settle):
    fleet(A100)
    add(store, mig_template())
    spec = job()
    spec["spec"]["template"]["metadata"]["annotations"] = {"pod-complete.stage.kwok.x-k8s.io/delay": "3s"}
    _create(store, "jobs", spec)
    summary = settle()
    assert summary.seconds >= 2.0  # waited for the delay (counted from startTime, whole seconds), then completed
    assert store.get("jobs", "default", "train")["status"]["succeeded"] == 1


@pytest.mark.parametrize(("text", "seconds"), [("10s", 10), ("1m30s", 90), ("500ms", 0.5), ("2h", 7200), ("0", 0)])
def test_kwok_delays_are_go_durations(text, seconds):
    assert parse_duration(text, "x") == seconds


def test_a_bad_delay_names_the_annotation():
    with pytest.raises(InputError, match="pod p: annotation .* 'ten seconds' is not a duration"):
        parse_duration("ten seconds", "pod p: annotation pod-ready.stage.kwok.x-k8s.io/delay")


def test_pod_gc_deletes_pods_of_a_vanished_node_and_terminated_pods_past_the_threshold(store, fleet, settle):
    fleet(A100)
    add(store, mig_template())
    _create(store, "jobs", job(completions=4, parallelism=4))
    settle(threshold=2)
    assert len(_pods(store)) == 2  # the two oldest terminated pods went
    node = store.get("nodes", None, "a100-0000")
    stray = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bound", "namespace": "default"},
             "spec": {"nodeName": "gone-node", "containers": [{"name": "c", "image": "x"}]}}
    _create(store, "pods", stray)
    settle(threshold=2)
    assert "bound" not in {p["metadata"]["name"] for p in _pods(store)}
    assert node


def test_a_foreground_deletion_of_a_deployment_whose_pods_hold_allocated_claims_completes(store, fleet, settle):
    # Found by the churn soak: the garbage collector deletes the pods in the foreground (they have
    # dependents: their claims), the claims wait for their pods (delete-protection, reserved), and
    # a pod held by its foregroundDeletion finalizer stayed Running, so nothing ever went. The
    # kubelet reports a deleted pod's terminal phase before its final delete (pkg/kubelet
    # kubelet_pods.go getPhase with podIsTerminal; status_manager canBeDeleted); then the
    # resourceclaim controller releases the claims (isPodDone) and the foreground deletion ends.
    fleet(A100)
    add(store, mig_template())
    _create(store, "deployments", deployment(replicas=2))
    settle()
    assert len(store.list("resourceclaims", "default")) == 2
    deletion.delete(store, "deployments", "default", "web", propagation=deletion.FOREGROUND)
    settle()
    for resource in ("deployments", "replicasets", "pods", "resourceclaims"):
        assert store.list(resource, "default") == [], resource
    assert violations(store) == []
