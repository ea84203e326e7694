"""kubectl's habits on the local store, each as kubectl shows it: flags anywhere, --field-selector,
--show-labels, --no-headers, --sort-by, custom columns, `get all`, api-resources, explain, version,
`describe node`, create with generateName, and the Fleet hints."""

from __future__ import annotations

import re

import pytest

from core.test_object_commands import claim, cli
from driver.store import ObjectStore
from tests.storeutil import plant_row

POD = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  labels: {{app: {app}}}
spec:
  nodeName: {node}
  containers:
  - name: c
    image: x
    resources:
      requests: {{cpu: {cpu}, memory: {mem}}}
      limits: {{cpu: {cpu_limit}, memory: {mem}}}
"""
NODE = """apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{node-role.kubernetes.io/worker: "", zone: a}}
  annotations: {{kwok.x-k8s.io/node: fake}}
spec:
  taints: [{{key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}}, {{key: gpu, effect: NoExecute}}]
status:
  capacity: {{cpu: "4", memory: 16Gi, pods: "110", example.com/gpu: "2"}}
  allocatable: {{cpu: "4", memory: 16Gi, pods: "110", example.com/gpu: "2"}}
"""


def pod(name, ns="team", app="web", node="n1", cpu="500m", mem="1Gi", cpu_limit="1"):
    return POD.format(name=name, ns=ns, app=app, node=node, cpu=cpu, mem=mem, cpu_limit=cpu_limit)


@pytest.fixture()
def store(tmp_path, capsys):
    docs = [NODE.format(name="n1"), NODE.format(name="n2"), pod("alpha"), pod("beta", app="db", cpu="1500m", cpu_limit="2"),
            pod("gamma", node="n2", mem="4Gi"), pod("delta", ns="other"), claim("c1")]
    (tmp_path / "objs.yaml").write_text("---\n".join(docs))
    code, _, err = cli(capsys, "apply", "-f", str(tmp_path / "objs.yaml"), "--store", str(tmp_path / "s"))
    assert code == 0, err
    return str(tmp_path / "s")


def names(out: str) -> list[str]:
    return [line.split()[0] for line in out.splitlines()[1:]]


def test_flags_anywhere_as_kubectl_parses_them(store, capsys):
    for argv in (("get", "pods", "-n", "team", "alpha"), ("get", "-n", "team", "pods", "alpha"),
                 ("get", "pods", "alpha", "-n", "team")):
        code, out, err = cli(capsys, *argv, "--store", store)
        assert code == 0 and names(out) == ["alpha"], (argv, err)
    code, out, _ = cli(capsys, "describe", "pod", "-n", "team", "alpha", "--store", store)
    assert code == 0 and out.startswith("Name:") and "alpha" in out.splitlines()[0]
    code, out, _ = cli(capsys, "delete", "pods", "-n", "team", "alpha", "--store", store)
    assert (code, out) == (0, 'pod "alpha" deleted\n')
    # the forms and messages of before still hold
    code, _, err = cli(capsys, "get", "--store", store)
    assert code == 2 and "the following arguments are required: KIND" in err
    code, _, err = cli(capsys, "get", "pods", "x", "--bogus", "--store", store)
    assert code == 2 and "unrecognized arguments: --bogus" in err


def test_tables_have_kubectls_three_spaces_and_never_wrap(store, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "30")
    code, out, _ = cli(capsys, "get", "pods", "-n", "team", "-o", "wide", "--store", store)
    lines = out.splitlines()
    assert lines[0].startswith("NAME    READY   STATUS    RESTARTS   AGE")
    assert len(lines) == 4, "one line per pod whatever $COLUMNS says"
    assert re.match(r"alpha   0/1     Pending   0 +\S+ +<none>   n1 ", lines[1])


def test_field_selector_on_get_and_delete(store, capsys):
    code, out, _ = cli(capsys, "get", "pods", "-A", "--field-selector", "spec.nodeName=n1", "-o", "name",
                       "--store", store)
    assert out.split() == ["pod/delta", "pod/alpha", "pod/beta"], "namespaces in order, as etcd's keys list them"
    code, out, _ = cli(capsys, "get", "pods", "-A", "--field-selector", "spec.nodeName!=n1,metadata.namespace=team",
                       "-o", "name", "--store", store)
    assert out.split() == ["pod/gamma"]
    code, out, _ = cli(capsys, "get", "nodes", "--field-selector", "metadata.name=n2", "-o", "name", "--store", store)
    assert out.split() == ["node/n2"]
    code, _, err = cli(capsys, "get", "pods", "--field-selector", "spec.image=x", "--store", store)
    assert code == 2 and err.strip() == (
        'fake-dra get: --field-selector: Unable to find "/v1, Resource=pods" that match label selector "", '
        'field selector "spec.image=x": field label not supported: spec.image')
    code, _, err = cli(capsys, "get", "pods", "--field-selector", "nonsense", "--store", store)
    assert code == 2 and "invalid selector: 'nonsense'; can't understand 'nonsense'" in err
    code, _, err = cli(capsys, "get", "pods", "alpha", "--field-selector", "spec.nodeName=n1", "--store", store)
    assert code == 2 and "--field-selector: give either NAMEs or a selector" in err
    code, out, _ = cli(capsys, "delete", "pods", "-n", "team", "--field-selector", "spec.nodeName=n2", "--store", store)
    assert (code, out) == (0, 'pod "gamma" deleted\n')
    code, _, err = cli(capsys, "delete", "resourceclaims", "--field-selector", "spec.devices=x", "--store", store)
    assert code == 2 and '"spec.devices" is not a known field selector' in err


def test_show_labels_no_headers_and_sort_by(store, capsys):
    code, out, _ = cli(capsys, "get", "pods", "-n", "team", "--show-labels", "--store", store)
    assert out.splitlines()[0].split()[-1] == "LABELS" and out.splitlines()[1].split()[-1] == "app=web"
    code, out, _ = cli(capsys, "get", "pods", "-n", "team", "--no-headers", "--store", store)
    assert [line.split()[0] for line in out.splitlines()] == ["alpha", "beta", "gamma"]
    # quantities compare as quantities ("500m" < "1500m"), as kubectl's sorter does
    code, out, _ = cli(capsys, "get", "pods", "-n", "team", "--sort-by", ".spec.containers[0].resources.requests.cpu",
                       "-o", "name", "--store", store)
    assert out.split() == ["pod/alpha", "pod/gamma", "pod/beta"]
    code, out, _ = cli(capsys, "get", "pods", "-n", "team", "--sort-by", "{.metadata.labels.app}", "-o", "name",
                       "--store", store)
    assert out.split() == ["pod/beta", "pod/alpha", "pod/gamma"]
    code, _, err = cli(capsys, "get", "pods", "-n", "team", "--sort-by", ".spec.nothing", "--store", store)
    assert code == 2 and 'couldn\'t find any field with path "{.spec.nothing}" in the list of objects' in err
    code, _, err = cli(capsys, "get", "pods", "-n", "team", "--sort-by", ".spec", "--store", store)
    assert code == 2 and "unsortable type: map" in err
    code, _, err = cli(capsys, "get", "pods", "-o", "yaml", "--show-labels", "--store", store)
    assert code == 2 and "--show-labels option cannot be used with yaml printer" in err


def test_custom_columns(store, capsys):
    code, out, _ = cli(capsys, "get", "pods", "-n", "team", "-o",
                       "custom-columns=NAME:.metadata.name,NODE:{.spec.nodeName},CPU:spec.containers[*].resources.requests.cpu,X:.nope",
                       "--store", store)
    assert out.splitlines() == ["NAME    NODE   CPU     X", "alpha   n1     500m    <none>", "beta    n1     1500m   <none>",
                                "gamma   n2     500m    <none>"]
    code, out, _ = cli(capsys, "get", "pods", "-n", "team", "--no-headers", "-o=custom-columns=N:.metadata.name",
                       "--store", store)
    assert out.split() == ["alpha", "beta", "gamma"]
    for spec, message in [("", "custom-columns format specified but no custom columns given"),
                          ("NAME", "unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>"),
                          ("A:{.a}}", "unexpected path string")]:
        code, _, err = cli(capsys, "get", "pods", "-o", f"custom-columns={spec}", "--store", store)
        assert code == 2 and message in err, (spec, err)


def test_get_all_is_the_all_category(store, capsys):
    code, out, _ = cli(capsys, "get", "all", "-n", "team", "--store", store)
    assert code == 0 and names(out) == ["alpha", "beta", "gamma"], "pods are in `all`; claims and nodes are not"
    code, out, err = cli(capsys, "get", "all", "-n", "empty", "--store", store)
    assert (code, out) == (0, "") and "No resources found in empty namespace." in err


def test_several_kinds_are_qualified_only_when_several_are_found(store, capsys):
    code, out, _ = cli(capsys, "get", "pods,resourceclaims", "-A", "--store", store)
    blocks = out.split("\n\n")
    assert len(blocks) == 2 and blocks[0].splitlines()[1].split()[:2] == ["other", "pod/delta"]
    assert blocks[1].splitlines()[1].split()[:2] == ["default", "resourceclaim.resource.k8s.io/c1"]
    code, out, _ = cli(capsys, "get", "pods,resourceclaims", "-n", "team", "--store", store)
    assert names(out) == ["alpha", "beta", "gamma"], "only pods found: kubectl prints them as one kind"


def test_api_resources(capsys):
    from driver.store.kinds import KINDS

    code, out, _ = cli(capsys, "api-resources")
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    assert re.search(r"^pods +po +v1 +true +Pod$", out, re.M)
    assert re.search(r"^resourceclaims {3,}resource\.k8s\.io/v1 +true +ResourceClaim$", out, re.M), "no short name"
    assert len(lines) == 1 + len(KINDS), "one line per kind the store keeps"
    names = [line.split()[0] for line in lines[1:]]
    assert names.index("pods") < names.index("resourceclaims"), "the core group sorts first"
    code, out, _ = cli(capsys, "api-resources", "--namespaced=false", "-o", "name")
    assert out.split() == sorted((k.resource for k in KINDS if not k.namespaced), key=lambda r: (
        r.partition(".")[2], r.partition(".")[0]))
    assert {"namespaces", "nodes", "deviceclasses.resource.k8s.io", "resourceslices.resource.k8s.io"} <= set(out.split())
    code, out, _ = cli(capsys, "api-resources", "--api-group", "", "--categories", "all", "-o", "wide", "--no-headers")
    assert out.split() == ["pods", "po", "v1", "true", "Pod", "create,delete,deletecollection,get,list,patch,update,watch",
                           "all"]
    code, _, err = cli(capsys, "api-resources", "--sort-by", "age")
    assert code == 2 and "invalid choice: 'age'" in err


def test_explain_from_the_schema(capsys):
    code, out, _ = cli(capsys, "explain", "resourceclaim.spec.devices.requests")
    lines = out.splitlines()
    assert lines[:4] == ["GROUP:      resource.k8s.io", "KIND:       ResourceClaim", "VERSION:    v1", ""]
    assert "FIELD: requests <[]DeviceRequest>" in lines
    assert "  exactly\t<ExactDeviceRequest>" in lines and "  name\t<string> -required-" in lines
    code, out, _ = cli(capsys, "explain", "pods")
    assert out.startswith("KIND:       Pod\nVERSION:    v1\n") and "  spec\t<PodSpec>" in out.splitlines()
    code, out, _ = cli(capsys, "explain", "deviceclass.spec", "--recursive")
    assert "    cel\t<CELDeviceSelector>" in out.splitlines()
    code, _, err = cli(capsys, "explain", "pods.spec.nope")
    assert code == 2 and 'field "nope" does not exist' in err
    code, _, err = cli(capsys, "explain", "widgets")
    assert code == 2 and 'doesn\'t have a resource type "widgets"' in err
    code, _, err = cli(capsys, "explain", "pods", "--max-depth", "2")
    assert code == 2 and "--max-depth requires --recursive" in err


def test_version(capsys):
    code, out, _ = cli(capsys, "version")
    assert code == 0 and re.fullmatch(r"Client Version: fake-dra \S+\nServer Version: v1\.37\.0\n", out)
    code, out, _ = cli(capsys, "version", "-o", "json", "--client")
    assert '"clientVersion"' in out and "serverVersion" not in out


def test_describe_node_as_kubectl(store, capsys):
    code, out, err = cli(capsys, "describe", "node", "n1", "--store", store)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "Name:               n1"
    assert lines[1] == "Roles:              worker"
    assert lines[2:4] == ["Labels:             node-role.kubernetes.io/worker=", "                    zone=a"]
    assert "Annotations:        kwok.x-k8s.io/node: fake" in lines
    assert re.search(r"^CreationTimestamp:  \w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d \+0000$", out, re.M)
    # taints sorted by effect, then key (printTaintsMultiline)
    i = lines.index("Taints:             gpu:NoExecute")
    assert lines[i + 1] == "                    kwok.x-k8s.io/node=fake:NoSchedule" and lines[i + 2] == "Unschedulable:      false"
    assert "Capacity:" in lines and "  example.com/gpu:  2" in lines
    text = "\n".join(lines)
    assert re.search(r"^Non-terminated Pods: +\(3 in total\)$", text, re.M)
    assert re.search(r"^  team +alpha +500m \(12%\) +1 \(25%\) +1Gi \(6%\) +1Gi \(6%\) +\S+$", text, re.M)
    assert re.search(r"^  cpu +2500m \(62%\) +4 \(100%\)$", text, re.M), "alpha, beta and delta summed"
    assert re.search(r"^  memory +3Gi \(18%\) +3Gi \(18%\)$", text, re.M)
    assert re.search(r"^  example.com/gpu +0 +0$", text, re.M)
    # then the DRA part, and for a kwok node one line instead of a path
    assert "Prepared claims:  <none>" in lines or "Prepared claims:" in text
    assert lines[-1] == "Events:  <none>"



def test_describe_node_reads_only_that_nodes_pods_and_slices(store, capsys):
    """Another node's objects are never read: an unreadable pod and slice on n2 draw no warning."""
    s = ObjectStore(store)
    s.create("resourceslices", {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n2-s"},
                                "spec": {"driver": "d.example.com", "nodeName": "n2", "pool": {
                                    "name": "n2", "generation": 1, "resourceSliceCount": 1}}})
    plant_row(store, "resourceslices", None, "n2-s", "{not json")
    plant_row(store, "pods", "team", "gamma", "{not json")
    code, out, err = cli(capsys, "describe", "node", "n1", "--store", store)
    assert code == 0, err
    assert re.search(r"^Non-terminated Pods: +\(3 in total\)$", out, re.M)
    assert "gamma" not in err and "n2-s" not in err, err
    code, out, err = cli(capsys, "describe", "node", "n2", "--store", store)
    assert "gamma" in err and "n2-s" in err, "n2's own unreadable objects are still reported"


def test_describe_a_fleet_node_says_it_has_no_node_agent(tmp_path, capsys):
    (tmp_path / "fleet.yaml").write_text("{apiVersion: fake-dra.example.com/v1alpha1, kind: Fleet, metadata: {name: lab}, "
                                         "spec: {nodeGroups: [{name: a, count: 1, profile: demo}]}}")
    store = str(tmp_path / "s")
    assert cli(capsys, "fleet", "apply", "-f", str(tmp_path / "fleet.yaml"), "--store", store)[0] == 0
    code, out, _ = cli(capsys, "describe", "node", "a-0000", "--store", store)
    prepared = [line for line in out.splitlines() if line.startswith("Prepared claims:")]
    assert prepared == ["Prepared claims:  none: a-0000 is a fleet node (kwok.x-k8s.io/node=fake); no node agent "
                        "prepares claims there"]
    assert "plugin state is not on this machine" not in out
    assert "Node-Local ResourceSlices:" in out and "Non-terminated Pods:" in out


def test_field_selectors_the_store_indexes_give_what_matching_every_object_gives(store, capsys, tmp_path):
    # spec.nodeName and status.phase of pods are answered by the store's indexes (as kube-apiserver's
    # watch cache indexes pods by node); a pod without a node or phase is found by the empty value.
    unbound = POD.format(name="eps", ns="team", app="web", node="n1", cpu="1", mem="1Gi", cpu_limit="1").replace(
        "  nodeName: n1\n", "")
    (tmp_path / "unbound.yaml").write_text(unbound)
    assert cli(capsys, "apply", "-f", str(tmp_path / "unbound.yaml"), "--store", store)[0] == 0
    ObjectStore(store).update("pods", {**ObjectStore(store).get("pods", "team", "gamma"), "status": {"phase": "Running"}})

    def got(selector):
        code, out, err = cli(capsys, "get", "pods", "-A", "--field-selector", selector, "-o", "name", "--store", store)
        assert code == 0, err
        return out.split()

    assert got("spec.nodeName=n2") == ["pod/gamma"]
    assert got("spec.nodeName=") == ["pod/eps"]
    assert got("status.phase=Running") == ["pod/gamma"]
    assert "pod/gamma" not in got("status.phase!=Running") and "pod/alpha" in got("status.phase!=Running")
    assert got("spec.nodeName=n1,status.phase=Running") == []


def test_label_selectors_read_only_the_objects_the_label_index_names(store, capsys):
    """`-l key=value` and `key in (...)` are answered by the store's label index (a 5,000-node store's
    `get nodes -l kubernetes.io/hostname=X` reads one Node): an unreadable pod other labels name draws
    no warning, and every requirement is still matched on what is read."""
    plant_row(store, "pods", "team", "beta", "{not json")  # app=db in the index

    def got(*args):
        code, out, err = cli(capsys, "get", "pods", "-A", "-o", "name", "--store", store, *args)
        assert code == 0, err
        return out.split(), err

    assert got("-l", "app=web") == (["pod/delta", "pod/alpha", "pod/gamma"], "")
    assert got("-l", "app in (web,x),app!=web") == ([], "")
    assert got("-l", "app==web", "--field-selector", "spec.nodeName=n2") == (["pod/gamma"], "")
    names_, err = got("-l", "app")  # "exists" is matched on every pod: the unreadable one is reported
    assert "pod/alpha" in names_ and "team/beta" in err
