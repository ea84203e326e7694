"""`kubectl apply` semantics of the local store (driver.store.apply): checks first, then all or nothing."""

from __future__ import annotations

import pytest

from driver.errors import ConflictError, InputError
from driver.store import ObjectStore
from driver.store.apply import commit, load_documents, plan
from driver.store.kinds import resolve
from tests.storeutil import plant_row

CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: {name}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: mig.fake-dra.example.com
"""
CLASS = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: device.driver == "example.com"
"""


def apply(store: ObjectStore, text: str, source: str = "f.yaml", **kw):
    docs = [(source, i, d) for i, d in load_documents(text, source)]
    with store.locked():
        return commit(store, plan(store, docs, **kw))


def files(store: ObjectStore) -> list[str]:
    """Every stored object as `<resource>/<namespace or _cluster>/<name>.yaml` (the export layout)."""
    return sorted(f"{r}/{ns or '_cluster'}/{name}.yaml" for r in store.resources()
                  for ns, name in store.keys(r, all_namespaces=True))


def test_create_unchanged_configured(tmp_path):
    store = ObjectStore(tmp_path)
    (a,) = apply(store, CLASS)
    assert a.action == "created" and a.planned.ref == "deviceclass.resource.k8s.io/gpu.example.com"
    meta = a.obj["metadata"]
    assert meta["uid"] and meta["creationTimestamp"] and meta["generation"] == 1
    (b,) = apply(store, CLASS)
    assert b.action == "unchanged" and b.obj["metadata"]["resourceVersion"] == meta["resourceVersion"]
    (c,) = apply(store, CLASS.replace('"example.com"', '"other.example.com"'))
    assert c.action == "configured"
    assert int(c.obj["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])
    assert c.obj["metadata"]["generation"] == 2 and c.obj["metadata"]["uid"] == meta["uid"]
    assert c.obj["metadata"]["creationTimestamp"] == meta["creationTimestamp"]


def test_one_invalid_document_leaves_the_store_untouched(tmp_path):
    store = ObjectStore(tmp_path)
    bad = CLAIM.format(name="b").replace("deviceClassName: mig.fake-dra.example.com\n",
                                          "deviceClassName: mig.fake-dra.example.com\n"
                                          "        selectors:\n        - cel: {expression: 'device.driver =='}\n")
    text = CLASS + "---\n" + CLAIM.format(name="a") + "---\n" + bad
    with pytest.raises(InputError) as err:
        apply(store, text)
    msg = str(err.value)
    assert "f.yaml: document 3 (ResourceClaim b)" in msg
    assert "spec.devices.requests[0].exactly.selectors[0].cel.expression" in msg
    assert files(store) == []


def test_server_fields(tmp_path):
    store = ObjectStore(tmp_path)
    with pytest.raises(InputError, match="resourceVersion: should not be set on objects to be created"):
        apply(store, CLAIM.format(name="c").replace("  name: c\n", "  name: c\n  resourceVersion: '7'\n"))
    given = CLAIM.format(name="c").replace(
        "  name: c\n", "  name: c\n  uid: 11111111-1111-1111-1111-111111111111\n"
                       "  creationTimestamp: '2001-01-01T00:00:00Z'\n  generation: 9\n")
    (a,) = apply(store, given)
    meta = a.obj["metadata"]
    assert meta["uid"] != "11111111-1111-1111-1111-111111111111", "the server assigns the uid"
    assert meta["creationTimestamp"] != "2001-01-01T00:00:00Z" and meta["generation"] == 1
    with pytest.raises(ConflictError, match="Precondition failed: UID in precondition"):
        apply(store, given)  # on update, a uid is a precondition
    stale = CLAIM.format(name="c").replace("  name: c\n", "  name: c\n  resourceVersion: '0'\n")
    with pytest.raises(ConflictError, match="the object has been modified"):
        apply(store, stale)
    current = CLAIM.format(name="c").replace(
        "  name: c\n", f"  name: c\n  resourceVersion: '{meta['resourceVersion']}'\n  labels: {{a: b}}\n")
    (b,) = apply(store, current)
    assert b.action == "configured" and b.obj["metadata"]["labels"] == {"a": "b"}


def test_claim_spec_is_immutable_and_status_rules(tmp_path):
    store = ObjectStore(tmp_path)
    apply(store, CLAIM.format(name="c"))
    # ValidateResourceClaimUpdate: ValidateImmutableField(spec), kube-apiserver's 422 wording.
    with pytest.raises(InputError, match=r'document 1 \(ResourceClaim c\): The ResourceClaim "c" is invalid: spec: '
                                         r'Invalid value: \{.*"name":"other".*\}: field is immutable'):
        apply(store, CLAIM.format(name="c").replace("name: gpu", "name: other"))
    alloc = ("status:\n  allocation:\n    devices:\n      results:\n"
             "      - {request: gpu, driver: d.example.com, pool: p, device: dev-%s}\n")
    (a,) = apply(store, CLAIM.format(name="c") + alloc % "0")
    assert a.action == "configured" and a.obj["status"]["allocation"]["devices"]["results"][0]["device"] == "dev-0"
    (b,) = apply(store, CLAIM.format(name="c").replace("name: c", "name: c\n  labels: {x: y}"))
    assert b.obj["status"] == a.obj["status"], "a document without status keeps the stored one"
    with pytest.raises(InputError, match=r"status.allocation: Invalid value: .*: field is immutable"):
        apply(store, CLAIM.format(name="c") + alloc % "1")
    (c,) = apply(store, CLAIM.format(name="c") + "status: {}\n")
    assert "allocation" not in c.obj["status"], "clearing the allocation (deallocation) is allowed"


SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: d.example.com
  pool: {name: p, generation: 1, resourceSliceCount: 2}
  nodeName: node-1
  sharedCounters:
  - name: gpu-0
    counters: {memory: {value: COUNTER}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s-devices}
spec:
  driver: d.example.com
  pool: {name: p, generation: 1, resourceSliceCount: 2}
  nodeName: node-1
  devices:
  - name: gpu-0
    capacity: {memory: {value: 40Gi}}
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 40Gi}}}]
"""


def test_resource_slices_are_stored_after_their_devices_and_counters_parse(tmp_path):
    store = ObjectStore(tmp_path)
    (a, b) = apply(store, SLICE.replace("COUNTER", "40Gi"))
    assert a.action == b.action == "created"
    assert files(store) == ["resourceslices/_cluster/s-devices.yaml", "resourceslices/_cluster/s.yaml"]
    with pytest.raises(InputError, match=r"\(ResourceSlice s\): spec.sharedCounters\[0\].counters\[memory\].value: invalid quantity 'lots'"):
        apply(store, SLICE.replace("COUNTER", "lots"))
    with pytest.raises(InputError, match=r"\(ResourceSlice s-devices\): spec.devices\[0\].capacity\[memory\].value: invalid quantity '40 Gi'"):
        apply(store, SLICE.replace("COUNTER", "40Gi").replace("value: 40Gi}}\n    consumes", "value: 40 Gi}}\n    consumes"))


def test_status_allocation_is_checked(tmp_path):
    store = ObjectStore(tmp_path)
    broken = CLAIM.format(name="c") + "status:\n  allocation:\n    devices:\n      results:\n      - {request: gpu}\n"
    with pytest.raises(InputError, match=r"status.allocation.devices.results\[0\].device: Required value; status.allocation.devices.results\[0\].driver: Required value"):
        apply(store, broken)


def test_namespaces(tmp_path):
    store = ObjectStore(tmp_path)
    (a,) = apply(store, CLAIM.format(name="c"), namespace="team-a")
    assert a.obj["metadata"]["namespace"] == "team-a" and files(store) == ["resourceclaims/team-a/c.yaml"]
    in_b = CLAIM.format(name="c").replace("  name: c\n", "  name: c\n  namespace: team-b\n")
    with pytest.raises(InputError, match="does not match the namespace 'team-a'"):
        apply(store, in_b, namespace="team-a", explicit_namespace=True)
    (b,) = apply(store, in_b, namespace="default")
    assert b.obj["metadata"]["namespace"] == "team-b"
    (c,) = apply(store, CLASS.replace("  name: gpu.example.com\n", "  name: gpu.example.com\n  namespace: x\n"))
    assert "namespace" not in c.obj["metadata"], "cluster-scoped objects have no namespace"
    assert "deviceclasses/_cluster/gpu.example.com.yaml" in files(store)
    with pytest.raises(InputError, match=r'metadata.namespace: Invalid value: "Bad_NS": a lowercase RFC 1123 label'):
        apply(store, CLAIM.format(name="d"), namespace="Bad_NS")


@pytest.mark.parametrize(("text", "message"), [
    (CLAIM.format(name="UPPER"), 'The ResourceClaim "UPPER" is invalid: metadata.name: Invalid value: "UPPER": a lowercase '
                                 "RFC 1123 subdomain must consist of"),
    (CLAIM.format(name="a/b"), 'metadata.name: Invalid value: "a/b": a lowercase RFC 1123 subdomain'),
    (CLAIM.replace("  name: {name}\n", "  generateName: x-\n"), "metadata.name: required (generateName"),
    (CLAIM.format(name="c").replace("kind: ResourceClaim", "kind: StatefulSet"), "kind: 'StatefulSet' is not stored by the local store"),
    (CLAIM.format(name="c").replace("kind: ResourceClaim", "kind: Deployment"), "apiVersion: 'resource.k8s.io/v1' does not serve Deployment; use apps/v1"),
    (CLAIM.format(name="c").replace("kind: ResourceClaim", "kind: Pod"), "apiVersion: 'resource.k8s.io/v1' does not serve Pod; use v1"),
    (CLAIM.format(name="c").replace("resource.k8s.io/v1", "resource.k8s.io/v1beta1"),
     "apiVersion: resource.k8s.io/v1beta1 is not served by a Kubernetes 1.37 kube-apiserver by default"),
    (CLAIM.format(name="c").replace("kind: ResourceClaim\n", ""), "kind: required"),
    ("- just\n- a list\n", "document 1: expected an object"),
    (CLAIM.format(name="c") + "---\n" + CLAIM.format(name="c"), "ResourceClaim default/c is also f.yaml: document 1"),
    (CLAIM.format(name="c").replace("spec:\n", "spec: 3\nx:\n"), "spec: expected object, got integer 3; x: unknown field \"x\""),
    (CLAIM.format(name="c").replace("  name: c\n", "  name: c\n  labels: {a: 1}\n"), "metadata.labels[a]: expected string, got integer 1"),
    ("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec: {pool: {name: p}}\n",
     # generation is a plain int64 in v1: omitted, it decodes as 0 (the others are required).
     "(ResourceSlice s): spec.pool.resourceSliceCount: Required value; spec.driver: Required value"),
    ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: t}\nspec: {spec: {devices: {requests: [{name: r}]}}}\n",
     'The ResourceClaimTemplate "t" is invalid: spec.spec.devices.requests[0]: Required value: exactly one of `exactly` '
     "or `firstAvailable` is required"),
    ("key: [unclosed\n", "f.yaml: invalid YAML at line 2"),
])
def test_invalid_documents_name_document_and_field(tmp_path, text, message):
    store = ObjectStore(tmp_path)
    with pytest.raises(InputError) as err:
        apply(store, text)
    assert message in str(err.value)
    assert files(store) == []


def test_list_documents_are_accepted(tmp_path):
    store = ObjectStore(tmp_path)
    listed = ("apiVersion: v1\nkind: List\nitems:\n- " + CLASS.replace("\n", "\n  ").rstrip() + "\n")
    (a,) = apply(store, listed)
    assert a.planned.kind.kind == "DeviceClass" and a.action == "created"


def test_failed_write_rolls_back_the_batch(tmp_path):
    store = ObjectStore(tmp_path)
    apply(store, CLASS)
    before = store.get("deviceclasses", None, "gpu.example.com")
    text = CLASS.replace('"example.com"', '"changed.example.com"') + "---\n" + CLAIM.format(name="a") + "---\n" + CLAIM.format(name="b")
    docs = [("f.yaml", i, d) for i, d in load_documents(text, "f.yaml")]
    calls = []

    def fail_third(p):
        calls.append(p.name)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")

    with store.locked():
        planned = plan(store, docs)
        with pytest.raises(InputError, match="cannot write resourceclaims/default/b: No space left on device; nothing was applied"):
            commit(store, planned, on_write=fail_third)
    assert store.list("resourceclaims") == []
    after = store.get("deviceclasses", None, "gpu.example.com")
    assert after["spec"] == before["spec"] and after["metadata"]["uid"] == before["metadata"]["uid"]


@pytest.mark.parametrize("name", ["resourceclaims", "resourceclaim", "ResourceClaim", "RESOURCECLAIMS",
                                  "resourceclaims.resource.k8s.io", "resourceclaim.v1.resource.k8s.io"])
def test_kind_names_like_kubectl(name):
    assert resolve(name).plural == "resourceclaims"


@pytest.mark.parametrize("name", ["rc", "claims", "resourceclaims.v1beta1.resource.k8s.io", "statefulsets"])
def test_unknown_kind_names(name):
    with pytest.raises(InputError, match=f'doesn\'t have a resource type "{name}"'):
        resolve(name)


def test_store_lock_is_reentrant(tmp_path):
    store = ObjectStore(tmp_path)
    with store.locked(), store.locked():
        store.create("deviceclasses", {"metadata": {"name": "x"}})  # would deadlock on a second flock
    assert store.get("deviceclasses", None, "x")


def test_unreadable_store_rows_are_named(tmp_path):
    store = ObjectStore(tmp_path)
    apply(store, CLAIM.format(name="c"))
    plant_row(tmp_path, "resourceclaims", "default", "c", b"name: caf\xe9\n")
    with pytest.raises(InputError, match="resourceclaims default/c: its stored value is not text"):
        store.get("resourceclaims", "default", "c")
    assert store.list("resourceclaims", "default") == []  # left out with a warning, not the whole list


def test_nodes_and_pods_are_core_v1_kinds_of_the_store(tmp_path):
    """Fleets create Nodes and `schedule` binds Pods: both are stored as kube-apiserver serves them."""
    store = ObjectStore(tmp_path)
    docs = [("f.yaml", 1, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"type": "kwok"}}}),
            ("f.yaml", 2, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                           "spec": {"containers": [{"name": "c", "image": "busybox"}],
                                    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]}})]
    applied = commit(store, plan(store, docs))
    assert [a.planned.ref for a in applied] == ["node/n1", "pod/p"]
    assert store.get("nodes", None, "n1")["metadata"]["labels"] == {"type": "kwok"}
    assert store.exists("pods", "default", "p")
    assert resolve("po").kind == "Pod" and resolve("no").kind == "Node" and resolve("pods.v1").kind == "Pod"
    with pytest.raises(InputError, match=r"apiVersion: 'resource.k8s.io/v1' does not serve Pod; use v1"):
        plan(store, [("f.yaml", 1, {"apiVersion": "resource.k8s.io/v1", "kind": "Pod", "metadata": {"name": "q"}})])


def test_kep5941_fields_follow_the_apiservers_gate_and_updates_keep_fields_in_use(tmp_path):
    """`features` are the simulated kube-apiserver's gates; like its dropDisabledFields, an update of
    an object that already has a gated field is not refused for it when the gate went off."""
    from driver.features import Features

    store = ObjectStore(tmp_path)
    recorded = CLAIM.format(name="c") + (
        "status:\n  allocation:\n    devices:\n      results:\n"
        "      - {request: gpu, driver: d.example.com, pool: p, device: vf-0,\n"
        "         consumedCounters: [{counterSet: pf, counters: {bandwidth: {value: 40G}}}]}\n")
    with pytest.raises(InputError, match=r'consumedCounters: unknown field "consumedCounters" \(a KEP-5941 field: '
                                         r"DRASharedConsumableCapacity is off; turn it on here\)"):
        apply(store, recorded, gate_hint="turn it on here")
    (a,) = apply(store, recorded, features=Features.all_on())
    assert a.action == "created"
    (a,) = apply(store, recorded)  # the gate is off now: the stored claim keeps its field
    assert a.action == "unchanged"
    with pytest.raises(InputError, match="unknown field \"consumedCounters\""):
        apply(store, recorded.replace("name: c\n", "name: d\n"))  # a new object may not use it
