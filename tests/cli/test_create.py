"""`create -f` beside `apply`: generateName as kube-apiserver names objects, AlreadyExists, each
object limited as kubectl sends it; kube-scheduler's own benchmark templates (scheduler_perf)
created and scheduled unchanged; Fleets pointed at `fleet apply`."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from core.test_object_commands import claim, cli
from driver import yamlio
from driver.store import ObjectStore
from driver.store.names import ALPHABET, MAX_GENERATED_PREFIX, generate_name

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))
from gotemplate import render  # noqa: E402 - the renderer hack/bench_scheduler_perf.py uses

def _perf_dir() -> Path:
    """../shared/upstream/scheduler_perf beside the checkout (or beside a worktree's parent)."""
    for parent in Path(__file__).resolve().parents[2:]:
        found = parent / "shared" / "upstream" / "scheduler_perf"
        if found.is_dir():
            return found
    return Path("/nonexistent")


PERF = _perf_dir()
GENERATED = re.compile(rf"[{ALPHABET}]{{5}}")


def test_generated_names_use_kube_apiservers_alphabet():
    names = {generate_name("test-dra") for _ in range(200)}
    assert all(n.startswith("test-dra") and GENERATED.fullmatch(n[len("test-dra"):]) for n in names)
    assert len(names) > 190, "five random characters of 27"
    long = generate_name("x" * 80)
    assert len(long) == 63 and long.startswith("x" * MAX_GENERATED_PREFIX)


def test_create_names_generate_name_objects_and_refuses_taken_names(tmp_path, capsys):
    store = str(tmp_path / "s")
    (tmp_path / "p.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {generateName: web-}\n"
                                     "spec: {containers: [{name: c, image: x}]}\n")
    code, out, err = cli(capsys, "create", "-f", str(tmp_path / "p.yaml"), "--store", store)
    assert code == 0, err
    (made,) = re.findall(r"^pod/(web-\S+) created$", out, re.M)
    assert GENERATED.fullmatch(made[len("web-"):])
    code, out, _ = cli(capsys, "create", "-f", str(tmp_path / "p.yaml"), "-o", "name", "--store", store)
    assert out.startswith("pod/web-") and out.strip() != f"pod/{made}"
    assert len(ObjectStore(store).list("pods", "default")) == 2
    (tmp_path / "c.yaml").write_text(claim("taken") + "---\n" + claim("fresh"))
    assert cli(capsys, "apply", "-f", str(tmp_path / "c.yaml"), "--store", store)[0] == 0
    ObjectStore(store).delete("resourceclaims", "default", "fresh")
    code, out, err = cli(capsys, "create", "-f", str(tmp_path / "c.yaml"), "--store", store)
    assert code == 1 and out == ""
    assert 'document 1 (ResourceClaim taken): resourceclaims.resource.k8s.io "taken" already exists (AlreadyExists' in err
    assert [c["metadata"]["name"] for c in ObjectStore(store).list("resourceclaims", "default")] == ["taken"], (
        "nothing created")


def test_create_refuses_an_object_without_name_or_generate_name(tmp_path, capsys):
    code, _, err = cli(capsys, "create", "-f", "-", "--store", str(tmp_path / "s"),
                       stdin="apiVersion: v1\nkind: Pod\nmetadata: {labels: {a: b}}\nspec: {containers: [{name: c, image: x}]}\n")
    assert code == 2 and "stdin: document 1 (Pod): metadata.name: Required value: name or generateName is required" in err
    assert not (tmp_path / "s").exists()


def test_apply_still_needs_a_name_and_says_create_takes_generate_name(tmp_path, capsys):
    code, _, err = cli(capsys, "apply", "-f", "-", "--store", str(tmp_path / "s"),
                       stdin="apiVersion: v1\nkind: Pod\nmetadata: {generateName: x-}\nspec: {containers: [{name: c, image: x}]}\n")
    assert code == 2 and "generateName needs `kubectl create`" in err


def test_each_object_is_limited_as_its_own_request(tmp_path, capsys):
    big = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "big", "annotations": {"a": "x" * (3 * 1024 * 1024)}}}
    (tmp_path / "big.json").write_text(json.dumps(big))
    for verb in ("apply", "create"):
        code, _, err = cli(capsys, verb, "-f", str(tmp_path / "big.json"), "--store", str(tmp_path / "s"))
        assert code == 2 and "document 1 (Node big): Request entity too large: limit is 3145728" in err, err
    assert not (tmp_path / "s").exists()


def test_many_documents_are_not_an_alias_bomb(monkeypatch):
    # The cap once counted every value of the text, so a file of many objects was a "bomb". With
    # the cap at 10,000 (1,000,000 for real; a million values take a while to parse here): many
    # more values written out load, and aliases are still capped over the whole text.
    monkeypatch.setattr(yamlio, "MAX_VALUES", 10_000)
    doc = "a: [" + ", ".join(["x"] * 1000) + "]\n"
    docs = yamlio.load_all("---\n".join([doc] * 30), "many.yaml")
    assert len(docs) == 30 and len(docs[-1]["a"]) == 1000
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    bomb += "c: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"  # 110 + 1,110 values from aliases per document
    assert len(yamlio.load_all("---\n".join([bomb] * 8), "eight.yaml")) == 8
    with pytest.raises(yamlio.YamlInputError, match="bombs.yaml: expands to more than 10000 values"):
        yamlio.load_all("---\n".join([bomb] * 9), "bombs.yaml")


def test_a_fleet_is_pointed_at_fleet_apply(tmp_path, capsys):
    (tmp_path / "f.yaml").write_text("apiVersion: fake-dra.example.com/v1alpha1\nkind: Fleet\nmetadata: {name: lab}\n"
                                     "spec: {nodeGroups: [{name: a, count: 1, profile: demo}]}\n")
    for verb, hint in (("apply", "fleet apply"), ("create", "fleet apply"), ("delete", "fleet delete")):
        code, _, err = cli(capsys, verb, "-f", str(tmp_path / "f.yaml"), "--store", str(tmp_path / "s"))
        assert code == 2 and f"a Fleet is not an object the store keeps: `fake-dra {hint} -f {tmp_path / 'f.yaml'}`" in err


def test_a_refused_fleet_apply_writes_nothing(tmp_path, capsys):
    store = tmp_path / "s"
    (tmp_path / "n.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: a-0000}\n")
    assert cli(capsys, "apply", "-f", str(tmp_path / "n.yaml"), "--store", str(store))[0] == 0
    before = sorted(p.relative_to(store) for p in store.rglob("*") if p.is_file())
    (tmp_path / "f.yaml").write_text("{apiVersion: fake-dra.example.com/v1alpha1, kind: Fleet, metadata: {name: lab}, "
                                     "spec: {nodeGroups: [{name: a, count: 2, profile: demo}]}}")
    code, _, err = cli(capsys, "fleet", "apply", "-f", str(tmp_path / "f.yaml"), "--store", str(store))
    assert code == 2 and "node a-0000: exists and belongs to no fleet" in err
    assert sorted(p.relative_to(store) for p in store.rglob("*") if p.is_file()) == before
    assert "fake-dra.run" not in err and "device classes applied" not in err
    code, _, err = cli(capsys, "fleet", "apply", "-f", str(tmp_path / "f.yaml"), "--store", str(tmp_path / "t"))
    assert code == 0
    assert "INFO fake-dra.fleet: device classes applied to the local store" in err, "the fleet's own logger"


needs_perf = pytest.mark.skipif(not PERF.is_dir(), reason="kube-scheduler's scheduler_perf templates are not here")


def _perf(path: str, **params) -> str:
    return render((PERF / path).read_text(), params)


@needs_perf
def test_kube_schedulers_benchmark_templates_create_and_schedule_unchanged(tmp_path, capsys):
    """SchedulingWithResourceClaimTemplate/fast (21605d77/dra/performance-config.yaml): a node with
    the test driver's slice of 10 devices, the class, the claim template and 10 pods named by
    generateName, created and scheduled as scheduler_perf's createAny/createPods make them."""
    store = str(tmp_path / "s")
    files = {
        "node.yaml": _perf("3c88b691/dra/templates/node-with-dra-test-driver.yaml", Index=0, Count=1),
        "slice.yaml": _perf("9d2a8fb7/dra/templates/resourceslice-basic-devices.yaml", Index=0, Count=1, numPCIRoots=2,
                            numDevices=10),
        "class.yaml": _perf("030880a5/dra/templates/deviceclass.yaml", Index=0, Count=1),
    }
    test_ns = {
        "template.yaml": _perf("958ef682/dra/templates/resourceclaimtemplate.yaml", Index=0, Count=1, numRequests=1,
                               selectors=None, constraints=None),
        "pods.yaml": "---\n".join(_perf("81810de6/dra/templates/pod-with-claim-template.yaml", Index=i, Count=10)
                                  for i in range(10)),
    }
    for name, text in {**files, **test_ns}.items():
        (tmp_path / name).write_text(text)
    code, _, err = cli(capsys, "create", *(a for n in files for a in ("-f", str(tmp_path / n))), "--store", store)
    assert code == 0, err
    code, out, err = cli(capsys, "create", "-f", str(tmp_path / "template.yaml"), "-f", str(tmp_path / "pods.yaml"),
                         "-n", "test", "--store", store)
    assert code == 0, err
    pods = re.findall(r"^pod/(test-dra\S+) created$", out, re.M)
    assert len(pods) == 10 and all(GENERATED.fullmatch(p[len("test-dra"):]) for p in pods)
    code, out, err = cli(capsys, "schedule", "--store", store)
    assert code == 0 and out.startswith("scheduled 10 of 10 pending pods on 1 nodes"), out + err
    code, out, _ = cli(capsys, "get", "pods", "-n", "test", "--field-selector", "spec.nodeName=scheduler-perf-dra-0",
                       "--no-headers", "-o", "name", "--store", store)
    assert len(out.split()) == 10
    # every bound pod carries kube-scheduler's Scheduled event
    code, out, _ = cli(capsys, "get", "events", "-n", "test", "--field-selector", "reason=Scheduled", "-o", "name",
                       "--store", store)
    assert len(out.split()) == 10


@needs_perf
def test_list_attribute_slices_in_one_file_are_read_object_by_object(tmp_path, capsys, monkeypatch):
    """SchedulingWithResourceClaimTemplateListAttributes' slices (d1a2be3d) of 64 devices, 48 values
    each (~3,300 values a slice): 500 in one file (35 MB) were refused as "YAML aliases" they do not
    have. Here the cap is 10,000 (a million for real) and three slices are created."""
    monkeypatch.setattr(yamlio, "MAX_VALUES", 10_000)
    template = (PERF / "d1a2be3d/dra/templates/resourceslice-list-attributes-devices.yaml").read_text()
    text = "---\n".join(render(template, {"Index": i, "Count": 3, "numDevices": 64, "numNonMatchingDevices": 32,
                                          "numListValues": 47}) for i in range(3))
    (tmp_path / "three.yaml").write_text(text)
    code, out, err = cli(capsys, "create", "-f", str(tmp_path / "three.yaml"), "--store", str(tmp_path / "s"))
    assert code == 0 and len(out.splitlines()) == 3, err
    stored = ObjectStore(tmp_path / "s").get("resourceslices", None, "resourceslice-0")
    devices = stored["spec"]["devices"]
    assert len(devices) == 64 and devices[40]["attributes"]["dra.example.com/match"]["strings"][0] == "shared-value"
