"""The resourceclaim controller against upstream's rules (pkg/controller/resourceclaim/controller.go:
handleClaim, findPodResourceClaim, syncPod, syncClaim, isPodDone) and the invariant of issue 29
(HIGH 2): after any deletion, once settled, nothing reserves what is gone."""

from __future__ import annotations

import yaml

from adversarial.invariants import violations
from driver.controllers.resourceclaim import (DELETE_PROTECTION, POD_CLAIM_ANNOTATION, claim_from_template,
                                              generate_name)
from driver.errors import NotFoundError
from driver.store import deletion
from schedule.conftest import add, mig_template, pod

A100 = {"name": "a100", "count": 1, "profile": "dgx-a100"}


def _claims(store):
    return store.list("resourceclaims", "default")


def test_the_generated_name_is_cut_in_proportion_as_upstreams():
    assert generate_name("web", "gpu") == "web-gpu-"
    long_pod, long_entry = "p" * 60, "e" * 30
    base = generate_name(long_pod, long_entry)
    # 60 x 57 // 92 and 30 x 57 // 92 characters, no trailing hyphen (the apiserver appends 5 characters)
    assert base == "p" * 37 + "-" + "e" * 18


def test_a_template_claim_is_made_by_the_controller_with_owner_annotation_and_status(store, fleet, settle):
    fleet(A100)
    add(store, mig_template(), pod("p"))
    settle(scheduler=False)
    (claim,) = _claims(store)
    p = store.get("pods", "default", "p")
    assert claim["metadata"]["name"].startswith("p-gpu-") and len(claim["metadata"]["name"]) == len("p-gpu-") + 5
    assert claim["metadata"]["annotations"][POD_CLAIM_ANNOTATION] == "gpu"
    assert claim["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "p",
                                                     "uid": p["metadata"]["uid"], "controller": True,
                                                     "blockOwnerDeletion": True}]
    assert claim["metadata"]["labels"] == {"app": "bench"}  # the template's
    assert p["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]
    settle(scheduler=False)  # again: nothing made twice
    assert len(_claims(store)) == 1


def test_a_missing_template_is_a_warning_event_and_nothing_is_made(store, settle):
    add(store, pod("p", template="nope"))
    settle(scheduler=False)
    assert _claims(store) == []
    events = store.find("events", "involved", "Pod/default/p")
    assert [e["reason"] for e in events] == ["FailedResourceClaimCreation"]


def test_deleting_a_bound_pod_frees_its_devices_and_its_claim(store, fleet, settle):
    fleet(A100)
    add(store, mig_template(), pod("p"))
    settle()
    (claim,) = _claims(store)
    assert claim["status"]["allocation"] and claim["status"]["reservedFor"][0]["name"] == "p"
    deletion.delete(store, "pods", "default", "p")  # graceful: the kwok node completes it
    settle()
    assert store.list("pods", "default") == [] and _claims(store) == []
    assert violations(store) == []


def test_a_pod_recreated_with_the_same_name_gets_a_new_claim_and_the_old_one_goes(store, fleet, settle):
    fleet({**A100, "count": 1})
    add(store, mig_template(), *(pod(f"p{i}") for i in range(7)))  # 7 x 1g.5gb fill one A100's MIG slots
    settle()
    old = {c["metadata"]["name"] for c in _claims(store)}
    deletion.delete(store, "pods", "default", "p0", grace_period_s=0)
    add(store, pod("p0"))
    settle()
    new = {c["metadata"]["name"] for c in _claims(store)}
    assert len(new) == 7 and new != old
    assert store.get("pods", "default", "p0")["spec"].get("nodeName")
    assert violations(store) == []


def test_a_done_pods_generated_claim_is_deallocated_and_deleted(store, fleet, settle):
    fleet(A100)
    add(store, mig_template(), pod("p"))
    settle()
    p = store.get("pods", "default", "p")
    store.update("pods", {**p, "status": {**p["status"], "phase": "Succeeded"}})
    settle()
    assert _claims(store) == []
    assert store.get("pods", "default", "p")["status"]["phase"] == "Succeeded"


def test_a_users_claim_shared_by_two_pods_stays_allocated_until_neither_reserves_it_then_is_kept(store, fleet, settle):
    fleet(A100)
    shared = claim_from_template(mig_template(), {"metadata": {"name": "x", "uid": "u"}}, "gpu")
    shared["metadata"] = {"name": "shared", "namespace": "default"}
    add(store, shared, pod("a", claim="shared"), pod("b", claim="shared"))
    settle()
    reserved = {r["name"] for r in store.get("resourceclaims", "default", "shared")["status"]["reservedFor"]}
    assert reserved == {"a", "b"}
    deletion.delete(store, "pods", "default", "a", grace_period_s=0)
    settle()
    claim = store.get("resourceclaims", "default", "shared")
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["b"] and claim["status"]["allocation"]
    deletion.delete(store, "pods", "default", "b", grace_period_s=0)
    settle()
    claim = store.get("resourceclaims", "default", "shared")  # the user's: kept, deallocated
    assert "allocation" not in (claim.get("status") or {}) and DELETE_PROTECTION not in claim["metadata"].get("finalizers", [])
    assert violations(store) == []


def test_a_protected_claim_deleted_while_in_use_waits_for_its_pod(store, fleet, settle):
    fleet(A100)
    shared = claim_from_template(mig_template(), {"metadata": {"name": "x", "uid": "u"}}, "gpu")
    shared["metadata"] = {"name": "c", "namespace": "default"}
    add(store, shared, pod("a", claim="c"))
    settle()
    claim = store.get("resourceclaims", "default", "c")
    store.update("resourceclaims", {**claim, "metadata": {**claim["metadata"], "finalizers": [DELETE_PROTECTION]}})
    assert deletion.delete(store, "resourceclaims", "default", "c").action == "terminating"
    settle()
    assert store.get("resourceclaims", "default", "c")["status"]["allocation"]  # still in use by a
    deletion.delete(store, "pods", "default", "a", grace_period_s=0)
    settle()
    try:
        store.get("resourceclaims", "default", "c")
        raise AssertionError("the claim should be gone")
    except NotFoundError:
        pass


def test_the_scheduler_protects_what_it_allocates_so_a_claim_deleted_in_use_waits_for_its_pod(store, fleet, settle):
    # kube-scheduler adds resourceapi.Finalizer when it allocates (pkg/scheduler/framework/plugins/
    # dynamicresources, Reserve; written in PreBind's bindClaim); the churn soak found the claim of
    # a running pod deleted at once and a fresh, unallocated one made for the still-running pod.
    fleet(A100)
    add(store, mig_template(), pod("p"))
    settle()
    (claim,) = _claims(store)
    assert DELETE_PROTECTION in claim["metadata"]["finalizers"]
    assert deletion.delete(store, "resourceclaims", "default", claim["metadata"]["name"]).action == "terminating"
    settle()
    (still,) = _claims(store)  # the same claim, still allocated and reserved for its running pod
    assert still["metadata"]["uid"] == claim["metadata"]["uid"] and still["status"]["allocation"]
    assert [r["name"] for r in still["status"]["reservedFor"]] == ["p"]
    assert violations(store) == []  # terminating while in use is not stuck
    deletion.delete(store, "pods", "default", "p", grace_period_s=0)
    settle()
    assert _claims(store) == [] and violations(store) == []


def test_a_users_claim_allocated_by_apply_allocate_is_protected_once_a_pod_uses_it(store, fleet, settle, tmp_path, capsys):
    # `apply --allocate` plays kube-scheduler without the finalizer (the local-mode tour deletes such
    # claims with no control plane running); once the scheduler reserves it for a pod it carries
    # upstream's, as every allocated claim in use does on a cluster, so deleting it waits for the pod.
    from driver.cli import main

    fleet(A100)
    user = claim_from_template(mig_template(), {"metadata": {"name": "x", "uid": "u"}}, "gpu")
    user["metadata"] = {"name": "c", "namespace": "default"}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(user))
    assert main(["apply", "-f", str(tmp_path / "c.yaml"), "--allocate", "--node-name", "a100-0000",
                 "--store", str(store.root)]) == 0, capsys.readouterr().err
    assert DELETE_PROTECTION not in store.get("resourceclaims", "default", "c")["metadata"].get("finalizers", [])
    add(store, pod("a", claim="c"))
    settle()
    assert DELETE_PROTECTION in store.get("resourceclaims", "default", "c")["metadata"]["finalizers"]
    assert deletion.delete(store, "resourceclaims", "default", "c").action == "terminating"
    add(store, pod("b", claim="c"))
    settle()
    b = store.get("pods", "default", "b")  # kube-scheduler's PreFilter: a claim being deleted is not used
    assert not b["spec"].get("nodeName")
    assert "resourceclaim c is being deleted" in next(c["message"] for c in b["status"]["conditions"] if c["type"] == "PodScheduled")
    assert [r["name"] for r in store.get("resourceclaims", "default", "c")["status"]["reservedFor"]] == ["a"]
    assert violations(store) == []
    deletion.delete(store, "pods", "default", "a", grace_period_s=0)
    settle()
    assert [c["metadata"]["name"] for c in _claims(store)] == [] and violations(store) == []


def test_a_duplicate_generated_claim_from_a_racing_scheduler_is_released(store, fleet, settle):
    """Issue 29 HIGH 1's leftover: a second claim for the same pod entry, allocated and reserved,
    that the pod's status does not name. It must not hold its device forever."""
    fleet(A100)
    add(store, mig_template(), pod("p"))
    settle()
    (real,) = _claims(store)
    p = store.get("pods", "default", "p")
    dup = claim_from_template(mig_template(), p, "gpu")
    dup["metadata"]["name"] = "p-gpu-dupl1"
    dup["status"] = {"allocation": {**real["status"]["allocation"], "devices": {"results": [
        {**r, "device": "gpu-1-mig-1g5gb-0"} for r in real["status"]["allocation"]["devices"]["results"]]}},
        "reservedFor": [{"resource": "pods", "name": "p", "uid": p["metadata"]["uid"]}]}
    store.create("resourceclaims", dup)
    settle()
    assert [c["metadata"]["name"] for c in _claims(store)] == [real["metadata"]["name"]]
    assert violations(store) == []
