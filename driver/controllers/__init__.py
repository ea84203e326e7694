"""The local control plane: what kube-controller-manager (and kwok, in place of kubelets) runs over the store.

Each controller is one module, a reconcile function over the objects it watches, reading and
writing only through the store's API (driver.controllers.base says how):
- garbagecollector: ownerReferences; background, foreground and orphan deletion; finalizers;
- resourceclaim: claims from templates, reservations, deallocation, cleanup of generated claims;
- devicetaint: the device taint eviction controller (NoExecute device taints evict pods; rules' status);
- podgc: pods bound to Nodes that are gone, terminating unscheduled pods, terminated pods past a threshold;
- replicaset, deployment, job: the workload controllers;
- podstages: kwok's pod stages (Running, Succeeded, deletion completed), or a node agent's prepare;
and runner runs them over the store's watch, with the scheduler's cycle between passes.
docs/control-plane.md says what is modelled and what is not, with the upstream source of each rule.

Public API: `default_controllers(...)`, `Runner(store, controllers, scheduler=...)`, `Summary`.
"""

from __future__ import annotations

from driver.controllers.base import Controller, Result, Writes
from driver.controllers.deployment import DeploymentController
from driver.controllers.devicetaint import DeviceTaintEviction
from driver.controllers.garbagecollector import GarbageCollector
from driver.controllers.job import JobController
from driver.controllers.podgc import DEFAULT_THRESHOLD, PodGC
from driver.controllers.podstages import NodeAgents, PodStages
from driver.controllers.replicaset import ReplicaSetController
from driver.controllers.resourceclaim import ResourceClaimController
from driver.controllers.runner import Runner, Summary
from driver.features import Features


def default_controllers(*, terminated_pod_threshold: int = DEFAULT_THRESHOLD,
                        agents: NodeAgents | None = None, features: Features = Features()) -> list[Controller]:
    """Every controller, in the order a pass runs them (owners before what they own)."""
    return [DeploymentController(), ReplicaSetController(), JobController(), ResourceClaimController(),
            DeviceTaintEviction(features), PodStages(agents), PodGC(terminated_pod_threshold), GarbageCollector()]


__all__ = ["Controller", "DeploymentController", "DeviceTaintEviction", "GarbageCollector", "JobController", "NodeAgents", "PodGC",
           "PodStages", "ReplicaSetController", "ResourceClaimController", "Result", "Runner", "Summary", "Writes",
           "default_controllers"]
