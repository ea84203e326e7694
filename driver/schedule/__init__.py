"""A scheduler for the local object store: pending Pods bound to Nodes as kube-scheduler with DRA would.

Public API: `Scheduler(store, features=..., policy=..., percentage=..., progress=...)` and its
`run() -> Report` (scheduler.py, report.py), `POLICIES`, `num_feasible_nodes_to_find`. The pieces:
what the run knows of the cluster and how it keeps up with other writers (state.py), where a
node's slices come from (slices.py), the resourceclaim controller's claims from templates
(claims.py), the non-DRA filters (nodes.py), DRA's filter through the reference allocator
(dra.py), a cycle's writes checked against what others wrote (binding.py), and the grouped reasons
of an unschedulable pod (reasons.py). docs/fleet.md says what is modelled and what is not.
"""

from driver.schedule.scheduler import POLICIES, PodOutcome, Report, Scheduler, num_feasible_nodes_to_find

__all__ = ["POLICIES", "PodOutcome", "Report", "Scheduler", "num_feasible_nodes_to_find"]
