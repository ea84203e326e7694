"""`fake-dra cluster` as the kubelet of the node a real `fake-dra run` registered: a pod bound there
becomes Running only after NodePrepareResources succeeded (its claim's CDI spec exists), and its
deletion unprepares the claim before the pod goes (pkg/kubelet/cm/dra manager.go)."""

from __future__ import annotations

from adversarial.invariants import violations
from driver.commands._node_agents import PluginAgents
from driver.commands.cluster import scheduler_cycle
from driver.controllers import Runner, default_controllers
from driver.controllers.podstages import NODE_AGENT_ANNOTATION
from driver.features import Features
from driver.store import deletion
from plugin.harness import DRIVER, NODE


def _settle(store):
    runner = Runner(store, default_controllers(agents=PluginAgents()), scheduler=scheduler_cycle(store, Features(), "first"))
    summary = runner.run(until_settled=True, timeout_s=120)
    assert summary.settled


def test_a_pod_runs_after_the_node_agent_prepared_its_claim_and_leaves_it_unprepared(make_plugin):
    plugin = make_plugin()
    plugin.start()
    plugin.wait_slices()
    store = plugin.store
    node = store.get("nodes", None, NODE)
    assert node["metadata"]["annotations"][NODE_AGENT_ANNOTATION] == str(plugin.registry)
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == NODE
    store.create("resourceclaimtemplates", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "gpu", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": f"gpu.{DRIVER}"}}]}}}})
    store.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                          "spec": {"containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
                                   "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]}})
    _settle(store)
    pod = store.get("pods", "default", "p")
    assert pod["spec"]["nodeName"] == NODE and pod["status"]["phase"] == "Running"
    (claim,) = store.list("resourceclaims", "default")
    assert claim["metadata"]["uid"] in plugin.cdi_uids()  # prepared before the pod ran
    deletion.delete(store, "pods", "default", "p")
    _settle(store)
    assert store.list("pods", "default") == [] and store.list("resourceclaims", "default") == []
    assert plugin.cdi_uids() == set()  # unprepared before the pod went
    assert violations(store) == []
