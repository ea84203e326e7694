"""`fake-dra describe`, `show --store` and `get events` on a store with the demo node's slices."""

from __future__ import annotations

import pytest

from core.test_object_commands import PROFILE, claim, cli, node  # noqa: F401 - `node` is a fixture
from driver.store import ObjectStore

VF_SHARE = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: %s}\nspec:\n  devices:\n"
            "    requests:\n    - name: net\n      exactly: {deviceClassName: vf.fake-dra.example.com}\n")


@pytest.fixture()
def busy(node, tmp_path, capsys):
    """node-1 with a MIG 1g.5gb claim and a VF claim allocated."""
    (tmp_path / "mig.yaml").write_text(claim("inference", selector=PROFILE.format("1g.5gb")))
    (tmp_path / "vf.yaml").write_text(VF_SHARE % "net")
    for f in ("mig.yaml", "vf.yaml"):
        assert cli(capsys, "apply", "-f", str(tmp_path / f), "--allocate", "--store", str(node))[0] == 0
    return node


def test_describe_claim_allocation_and_prepared_state(busy, capsys):
    code, out, err = cli(capsys, "describe", "resourceclaim", "inference", "--store", str(busy))
    assert code == 0, err
    lines = out.splitlines()
    text = " ".join(out.split())
    assert lines[0].split() == ["Name:", "inference"] and "Kind: ResourceClaim" in text
    assert "State: allocated" in text
    assert any(line.strip().startswith("where device.attributes") for line in lines)
    assert "Allocation: Node: node-1" in text
    assert ("Request gpu: gpu-0-mig-1g5gb-0 (pool fake-dra.example.com/node-1) counters gpu-0-counters: memory "
            "4864Mi, multiprocessors 14, copy-engines 1, memory slice 0") in text
    assert "Reserved For: <none>" in text
    # No plugin ran here: the node's state directory is not on this machine, and describe says so.
    assert "Prepared on node-1:" in lines and "plugin state is not on this machine" in text
    assert "Device Status: <none>" in text and lines[-1].split() == ["Events:", "<none>"]


def test_failed_allocation_is_an_event_describe_shows(busy, tmp_path, capsys):
    (tmp_path / "all.yaml").write_text(claim("all-vfs", cls="vf", count=8))
    assert cli(capsys, "apply", "-f", str(tmp_path / "all.yaml"), "--store", str(busy))[0] == 0  # pending
    for _ in range(2):
        code, _, err = cli(capsys, "apply", "-f", str(tmp_path / "all.yaml"), "--allocate", "--store", str(busy))
        assert code == 1 and "8 match the selectors, 7 usable (1 in use)" in err
    code, out, _ = cli(capsys, "describe", "resourceclaim", "all-vfs", "--store", str(busy))
    assert code == 0 and "State: pending" in " ".join(out.split())
    events = out[out.index("Events:"):].splitlines()
    assert events[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert events[3].split()[:2] == ["Warning", "FailedAllocation"] and "(x2 over" in events[3]
    assert "fake-dra-scheduler" in events[3] and "7 usable (1 in use)" in " ".join(out.split())
    code, out, _ = cli(capsys, "get", "events", "--store", str(busy))
    assert out.splitlines()[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert "resourceclaim/all-vfs" in out
    # A claim that --allocate refused outright was never stored: describe says so, with its last event.
    (tmp_path / "nine.yaml").write_text(claim("nine", cls="vf", count=9))
    assert cli(capsys, "apply", "-f", str(tmp_path / "nine.yaml"), "--allocate", "--store", str(busy))[0] == 1
    code, _, err = cli(capsys, "describe", "resourceclaim", "nine", "--store", str(busy))
    assert code == 1 and 'resourceclaims.resource.k8s.io "nine" not found in namespace "default"' in err
    assert "its last event: FailedAllocation: claim default/nine: cannot be allocated" in err


def test_describe_node_devices_in_use_and_counters_left(busy, capsys):
    code, out, err = cli(capsys, "describe", "node", "node-1", "--store", str(busy))
    assert code == 0, err
    text = " ".join(out.split())
    assert "Node object: <none in the store>" in text
    assert "Pools: fake-dra.example.com/node-1: generation 1" in text
    assert "gpu-0-mig-1g5gb-0 default/inference gpu counters gpu-0-counters: memory 4864Mi" in text
    assert "nic-0-vf-0 default/net net counters nic-0-counters: bandwidth 12500M" in text
    assert ("gpu-0-counters: memory slices 7/8, memory 36096Mi/40Gi, multiprocessors 94/108, copy-engines 6/7"
            in text)
    assert "nic-0-counters: bandwidth 87500M/100G" in text
    assert "Prepared claims: fake-dra.example.com: unknown: node node-1's plugin state is not on this machine" in text
    code, _, err = cli(capsys, "describe", "node", "node-9", "--store", str(busy))
    assert code == 1 and 'nodes "node-9" not found' in err and "nodes here: node-1" in err


def test_describe_a_shared_device_lists_its_shares(node, tmp_path, capsys):
    share = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: %s}\nspec:\n  devices:\n"
             "    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: timeshare.fake-dra.example.com\n"
             "        selectors: [{cel: {expression: 'device.attributes[\"fake-dra.example.com\"].sharing == "
             "\"time-slicing\" && device.attributes[\"fake-dra.example.com\"].index == 0'}}]\n"
             "        capacity: {requests: {memory: 10Gi}}\n")
    (tmp_path / "s.yaml").write_text(share % "s1" + "---\n" + share % "s2")
    code, _, err = cli(capsys, "apply", "-f", str(tmp_path / "s.yaml"), "--allocate", "--store", str(node))
    assert code == 0, err
    code, out, _ = cli(capsys, "describe", "node", "node-1", "--store", str(node))
    text = " ".join(out.split())
    assert "Shared gpu-0-timeslicing: 2 shares, capacity used: memory 20Gi of 40Gi" in text, text
    assert "capacity: memory 10Gi; share" in text, text


def test_describe_other_kinds_and_selectors(busy, tmp_path, capsys):
    code, out, _ = cli(capsys, "describe", "deviceclass", "mig.fake-dra.example.com", "--store", str(busy))
    assert code == 0 and "Kind:" in out and "Spec:" in out and "selectors:" in out and "Events:" in out
    labelled = claim("tagged").replace("metadata:\n  name: tagged", "metadata:\n  name: tagged\n  labels: {team: ml}")
    (tmp_path / "t.yaml").write_text(labelled)
    assert cli(capsys, "apply", "-f", str(tmp_path / "t.yaml"), "--store", str(busy))[0] == 0
    code, out, _ = cli(capsys, "describe", "resourceclaims", "-l", "team=ml", "--store", str(busy))
    assert code == 0 and out.count("Name:") == 1 and "tagged" in out and "Labels: team=ml" in " ".join(out.split())
    code, out, _ = cli(capsys, "describe", "resourceclaims", "--store", str(busy))
    assert out.count("\nName:") + out.startswith("Name:") == 3


def test_show_store_draws_every_node(busy, capsys):
    code, out, err = cli(capsys, "show", "--store", str(busy))
    assert code == 0, err
    assert out.splitlines()[0] == "node node-1: pool fake-dra.example.com/node-1, generation 1, 94 devices"
    assert "  MIG slices     [A . . . . . . .]  1g.5gb@0" in out
    assert "NIC ens3f0  1/8 VFs in use, bandwidth left 87500M of 100G  (B:nic-0-vf-0 12500M)" in out
    assert "claims: A = default/inference; B = default/net" in out
    code, same, _ = cli(capsys, "show", "--store", str(busy), "--node-name", "node-1")
    assert same == out
    code, _, err = cli(capsys, "show", "--store", str(busy), "--node-name", "node-2")
    assert code == 1 and "--node-name node-2: no ResourceSlices of that node" in err and "nodes: node-1" in err


def test_show_store_when_empty(tmp_path, capsys):
    code, out, err = cli(capsys, "show", "--store", str(tmp_path / "nothing"))
    assert code == 0 and out == "" and "No ResourceSlices in the local store" in err
    assert not (tmp_path / "nothing").exists()


def test_show_picks_the_view_typed_on_the_command_line(busy, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_DRA_STORE", str(busy))
    code, out, _ = cli(capsys, "show", "--sysfs-root", str(tmp_path / "sys"))
    assert code == 0 and out.startswith("GPU 0 (0000:07:00.0)"), "the typed --sysfs-root wins over the variable"
    monkeypatch.delenv("FAKE_DRA_STORE")
    monkeypatch.setenv("FAKE_DRA_SYSFS_ROOT", str(tmp_path / "sys"))
    code, out, _ = cli(capsys, "show", "--store", str(busy))
    assert code == 0 and out.startswith("node node-1:")
    code, _, err = cli(capsys, "show", "--store", str(busy), "--sysfs-root", "sys")
    assert code == 2 and "give one" in err
    ObjectStore(busy)  # the store is left as it was


def test_describe_pod_with_its_claims_and_scheduling_events(busy, tmp_path, capsys):
    from driver.store.events import FAILED_SCHEDULING, SCHEDULER_COMPONENT, ObjectRef, record_event

    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: trainer}\nspec:\n  resourceClaims:\n"
           "  - {name: gpu, resourceClaimName: inference}\n  - {name: scratch, resourceClaimTemplateName: tmpl}\n"
           "  containers: [{name: c, image: busybox}]\n")
    (tmp_path / "pod.yaml").write_text(pod)
    assert cli(capsys, "apply", "-f", str(tmp_path / "pod.yaml"), "--store", str(busy))[0] == 0
    stored = ObjectStore(busy).get("pods", "default", "trainer")
    record_event(ObjectStore(busy), ObjectRef.of(stored), reason=FAILED_SCHEDULING,
                 message="0/1 nodes are available: 1 cannot allocate all claims.", component=SCHEDULER_COMPONENT)
    code, out, err = cli(capsys, "describe", "po", "trainer", "--store", str(busy))
    assert code == 0, err
    text = " ".join(out.split())
    assert "Node: <none> Status: Pending" in text
    assert "Resource Claims: gpu: claim inference, allocated scratch: from template tmpl (no claim generated yet)" in text
    assert "Warning FailedScheduling" in text and "fake-dra-scheduler 0/1 nodes are available" in text


def test_describe_requests_of_every_shape(node, tmp_path, capsys):
    claim_yaml = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shapes}
spec:
  devices:
    requests:
    - name: net
      exactly: {deviceClassName: vf.fake-dra.example.com, allocationMode: All, adminAccess: true}
    - name: gpu
      firstAvailable:
      - {name: big, deviceClassName: gpu.fake-dra.example.com}
      - {name: small, deviceClassName: timeshare.fake-dra.example.com, capacity: {requests: {memory: 4Gi}}}
    constraints:
    - {requests: [net, gpu], matchAttribute: resource.kubernetes.io/pcieRoot}
"""
    (tmp_path / "c.yaml").write_text(claim_yaml)
    assert cli(capsys, "apply", "-f", str(tmp_path / "c.yaml"), "--store", str(node))[0] == 0
    code, out, _ = cli(capsys, "describe", "resourceclaim", "shapes", "--store", str(node))
    text = " ".join(out.split())
    assert "net: all vf.fake-dra.example.com admin access" in text
    assert ("gpu: first available of: big: 1 x gpu.fake-dra.example.com small: 1 x timeshare.fake-dra.example.com "
            "capacity memory=4Gi") in text
    assert "Constraints: matchAttribute resource.kubernetes.io/pcieRoot over requests gpu, net" in text
    assert "State: pending" in text and "Allocation: <none>" in text and "Prepared: no (not allocated)" in text


def test_describe_a_node_object_and_a_claim_on_a_device_gone(node, tmp_path, capsys):
    (tmp_path / "n.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: node-1, labels: {zone: a}}\n")
    assert cli(capsys, "apply", "-f", str(tmp_path / "n.yaml"), "--store", str(node))[0] == 0
    code, out, _ = cli(capsys, "describe", "nodes", "-l", "zone=a", "--store", str(node))
    text = " ".join(out.split())
    # kubectl's NodeDescriber first (Name, Roles, Labels, ...), then the DRA part
    assert code == 0 and text.startswith("Name: node-1 Roles: <none> Labels: zone=a Annotations: <none>")
    assert "Pools: fake-dra.example.com/node-1" in text
    gone = claim("gone").rstrip() + ("\nstatus:\n  allocation:\n    devices:\n      results:\n"
                                     "      - {request: gpu, driver: fake-dra.example.com, pool: node-1, device: gpu-7}\n"
                                     "    nodeSelector:\n      nodeSelectorTerms:\n      - matchFields:\n"
                                     "        - {key: metadata.name, operator: In, values: [node-1]}\n")
    (tmp_path / "g.yaml").write_text(gone)
    assert cli(capsys, "apply", "-f", str(tmp_path / "g.yaml"), "--store", str(node))[0] == 0
    code, out, _ = cli(capsys, "describe", "resourceclaim", "gone", "--store", str(node))
    text = " ".join(out.split())
    assert "Node: node-1" in text and "gpu-7 (pool fake-dra.example.com/node-1, not published any more)" in text


def test_describe_nothing_found(tmp_path, capsys):
    code, out, err = cli(capsys, "describe", "resourceclaims", "--store", str(tmp_path / "empty"))
    assert (code, out) == (0, "") and "No resources found in default namespace." in err
