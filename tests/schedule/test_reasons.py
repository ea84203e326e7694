"""The one-line reason of an unschedulable pod: nodes grouped by what blocks them."""

from driver.schedule.reasons import MAX_MESSAGE, fit_error, normalize


def test_indices_inside_names_become_stars_but_claim_names_stay():
    text = "claim default/job-112-gpu-1a2b3: cannot be allocated: counters exhausted on gpu-3-counters (memory-slice-5)"
    assert normalize(text, "a100-0007") == ("claim default/job-112-gpu-1a2b3: cannot be allocated: counters exhausted "
                                            "on gpu-*-counters (memory-slice-*)")
    assert normalize("claim x: cannot be allocated on node a100-0007", "a100-0007") == "claim x: cannot be allocated on the node"
    assert normalize("needs 1 device(s), 56 match the selectors", "n") == "needs 1 device(s), 56 match the selectors"


def test_equal_nodes_group_most_first():
    reasons = {f"a-{i:04d}": f"claim c: counters exhausted on gpu-{i % 8}-counters" for i in range(900)}
    reasons.update({f"b-{i:04d}": "node(s) had untolerated taint {kwok.x-k8s.io/node: fake}" for i in range(100)})
    assert fit_error(reasons, 1000) == ("0/1000 nodes are available: 900 nodes: claim c: counters exhausted on "
                                        "gpu-*-counters; 100 nodes: node(s) had untolerated taint "
                                        "{kwok.x-k8s.io/node: fake}.")
    assert fit_error({"n": "x"}, 1) == "0/1 nodes are available: 1 node: x."
    assert fit_error({}, 0) == "0/0 nodes are available."


def test_long_messages_are_cut_as_kube_scheduler_cuts_event_notes():
    reasons = {f"n{i}": f"reason number {i} " + "x" * 50 for i in range(100)}
    message = fit_error(reasons, 100)
    assert len(message) == MAX_MESSAGE and message.endswith("...")
