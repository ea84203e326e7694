"""The one-line reason of an unschedulable pod, worded as kube-scheduler's FitError
(pkg/scheduler/framework/types.go FitError.Error; DefaultPreemption's PostFilter message)."""

from driver.schedule.reasons import (MAX_MESSAGE, NO_NODES, NodeReasons, fit_error, normalize, rename_claims,
                                     truncate)

TAINT = "node(s) had untolerated taint {kwok.x-k8s.io/node: fake}"


def test_indices_inside_names_become_stars_but_claim_names_stay():
    text = "claim default/job-112-gpu-1a2b3: cannot be allocated: counters exhausted on gpu-3-counters (memory-slice-5)"
    assert normalize(text, "a100-0007") == ("claim default/job-112-gpu-1a2b3: cannot be allocated: counters exhausted "
                                            "on gpu-*-counters (memory-slice-*)")
    assert normalize("claim x: cannot be allocated on node a100-0007", "a100-0007") == "claim x: cannot be allocated on the node"
    assert normalize("needs 1 device(s), 56 match the selectors", "n") == "needs 1 device(s), 56 match the selectors"
    # the `claim X, request Y:` form keeps its name too (it once became `claim job-*`)
    assert normalize("claim default/job-7, request gpu: could not retrieve device class c: not found", "n") == (
        "claim default/job-7, request gpu: could not retrieve device class c: not found")


def test_a_tainted_fleet_reads_as_kube_scheduler_says_it():
    reasons = {f"n-{i:03d}": TAINT for i in range(200)}
    assert fit_error(reasons, 200) == (
        "0/200 nodes are available: 200 node(s) had untolerated taint {kwok.x-k8s.io/node: fake}. "
        "preemption: 0/200 nodes are available: 200 Preemption is not helpful for scheduling.")


def test_entries_are_sorted_as_strings_and_every_reason_of_a_node_counts():
    reasons = {f"a-{i:04d}": f"claim c: counters exhausted on gpu-{i % 8}-counters" for i in range(900)}
    reasons.update({f"b-{i:04d}": TAINT for i in range(100)})
    assert fit_error(reasons, 1000) == (
        "0/1000 nodes are available: 100 node(s) had untolerated taint {kwok.x-k8s.io/node: fake}, "
        "900 claim c: counters exhausted on gpu-*-counters. "
        "preemption: 0/1000 nodes are available: 1000 Preemption is not helpful for scheduling.")
    short = {"n1": NodeReasons(["Insufficient cpu", "Insufficient memory"], resolvable=True), "n2": TAINT}
    assert fit_error(short, 2) == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 " + TAINT + ". "
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling.")


def test_prefilter_rejections_and_no_nodes():
    assert fit_error({}, 3, 'resourceclaim "gpu" not found') == (
        '0/3 nodes are available: resourceclaim "gpu" not found. '
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    assert fit_error({}, 0) == NO_NODES == "no nodes available to schedule pods"


def test_long_messages_are_cut_as_kube_scheduler_cuts_event_notes():
    reasons = {f"n{i}": f"reason number {i} " + "x" * 50 for i in range(100)}
    message = fit_error(reasons, 100)
    assert len(message) == MAX_MESSAGE and message.endswith(" ...")
    assert truncate("short") == "short"


def test_a_memoised_reason_names_the_new_pods_claims_in_every_form():
    message = ("0/2 nodes are available: 2 cannot allocate all claims: claim default/a-gpu-x, request gpu: could not "
               "retrieve device class missing: not found; claim default/a-nic-y: cannot be allocated.")
    renamed = rename_claims(message, ["default/a-gpu-x", "default/a-nic-y"], ["default/b-gpu-z", "default/b-nic-w"])
    assert "claim default/b-gpu-z, request gpu:" in renamed and "claim default/b-nic-w:" in renamed
    assert "a-gpu-x" not in renamed and "a-nic-y" not in renamed
    # names that swap places are each renamed once
    assert rename_claims("claim ns/a: x; claim ns/b: y", ["ns/a", "ns/b"], ["ns/b", "ns/c"]) == "claim ns/b: x; claim ns/c: y"
