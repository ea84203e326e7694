"""Input is checked the way kube-apiserver checks it, in every command (issue 17).

Before: `selector:` for `selectors:` in a claim was stored and ignored, so `allocate` handed out a
7g.40gb for a request meant for a 1g.5gb (exit 0); the same typo in a DeviceClass gave away whole
GPUs; `allocate` accepted resource.k8s.io/v1beta1 objects that `apply` refused. Each test below
failed before driver.schema.
"""

from __future__ import annotations

import copy
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from driver.allocator import allocate_claims
from driver.cli import main
from driver.discovery import discover
from driver.discovery.fakesysfs import make_sysfs
from driver.e2e.manifests import device_classes
from driver.features import Features
from driver.hardware import load_catalog
from driver.slices import render_pool, to_resource_slices
from driver.store.objectstore import ObjectStore

DRIVER = "fake-dra.example.com"
ONE_G = 'device.attributes["fake-dra.example.com"].profile == "1g.5gb"'


@lru_cache(maxsize=2)
def demo_slices(shared: bool = False) -> tuple[dict, ...]:
    sysfs = Path(tempfile.mkdtemp(prefix="fdra-strict-")) / "sys"
    make_sysfs("demo", sysfs)
    pool = render_pool(discover(sysfs, load_catalog()), Features(shared_consumable_capacity=shared),
                       node_name="node-1", driver_name=DRIVER)
    return tuple(to_resource_slices(pool))


def mig_claim(selectors_key: str = "selectors", name: str = "small") -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": f"mig.{DRIVER}", selectors_key: [{"cel": {"expression": ONE_G}}]}}]}}}


def whole_claim() -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "any-mig", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": f"mig.{DRIVER}"}}]}}}


def typo_classes() -> list[dict]:
    classes = copy.deepcopy(device_classes())
    for dc in classes:
        dc["spec"]["selector"] = dc["spec"].pop("selectors")
    return classes


def write(tmp_path: Path, name: str, docs) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=False))
    return str(path)


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def allocated_device(claim: dict, classes=None) -> str:
    outcome = allocate_claims([*(classes or device_classes()), *demo_slices(), claim], node="node-1")
    return outcome.results[0].allocation["devices"]["results"][0]["device"]


def test_the_hazard_a_typo_selects_every_device_of_the_class():
    """What the typo means to the allocator, which reads only known fields: why it must be refused."""
    assert allocated_device(mig_claim()) == "gpu-0-mig-1g5gb-0"
    assert allocated_device(mig_claim("selector")) != "gpu-0-mig-1g5gb-0"  # a 7g.40gb, the first MIG device
    assert allocated_device(whole_claim(), typo_classes()) == "gpu-0"  # the mig class hands out the whole GPU


def test_allocate_refuses_the_claim_typo(tmp_path, capsys):
    files = [write(tmp_path, "classes.yaml", device_classes()), write(tmp_path, "slices.yaml", demo_slices()),
             write(tmp_path, "claim.yaml", [mig_claim("selector")])]
    code, out, err = run(["allocate", "--node-name", "node-1", *files], capsys)
    assert (code, out) == (2, "")
    assert err.strip() == (f"fake-dra allocate: {files[2]}: document 1 (ResourceClaim small): "
                           'spec.devices.requests[0].exactly.selector: unknown field "selector" (did you mean "selectors"?)')


def test_allocate_refuses_the_device_class_typo(tmp_path, capsys):
    files = [write(tmp_path, "classes.yaml", typo_classes()), write(tmp_path, "slices.yaml", demo_slices()),
             write(tmp_path, "claim.yaml", [whole_claim()])]
    code, out, err = run(["allocate", "--node-name", "node-1", *files], capsys)
    assert (code, out) == (2, "")
    assert f"classes.yaml: document 1 (DeviceClass gpu.{DRIVER}): spec.selector: unknown field \"selector\" " \
           '(did you mean "selectors"?)' in err


def test_apply_refuses_both_typos_and_stores_nothing(tmp_path, capsys):
    store = tmp_path / "store"
    claim = write(tmp_path, "claim.yaml", [mig_claim("selector")])
    classes = write(tmp_path, "classes.yaml", typo_classes())
    for path, what in ((claim, "(ResourceClaim small): spec.devices.requests[0].exactly.selector"),
                       (classes, f"(DeviceClass gpu.{DRIVER}): spec.selector")):
        code, _, err = run(["apply", "-f", path, "--store", str(store)], capsys)
        assert code == 2 and what in err and 'did you mean "selectors"' in err
    assert ObjectStore(store).count("resourceclaims") == 0 and ObjectStore(store).count("deviceclasses") == 0


@pytest.mark.parametrize("command", ["apply", "allocate"])
def test_one_api_version_rule_for_apply_and_allocate(tmp_path, capsys, command):
    old = mig_claim()
    old["apiVersion"] = "resource.k8s.io/v1beta1"
    request = old["spec"]["devices"]["requests"][0]
    request.update(request.pop("exactly"))  # the v1beta1 shape
    path = write(tmp_path, "old.yaml", [old])
    argv = (["apply", "-f", path, "--store", str(tmp_path / "store")] if command == "apply"
            else ["allocate", "--node-name", "node-1", path])
    code, out, err = run(argv, capsys)
    assert (code, out) == (2, "")
    assert ("old.yaml: document 1 (ResourceClaim " in err and "apiVersion: resource.k8s.io/v1beta1 is not served by a "
            "Kubernetes 1.37 kube-apiserver by default" in err and "go under `exactly:`" in err)


def test_allocate_reads_lists_and_checks_their_items(tmp_path, capsys):
    listed = {"apiVersion": "v1", "kind": "List", "items": [*device_classes(), *demo_slices()]}
    files = [write(tmp_path, "all.yaml", [listed]), write(tmp_path, "claim.yaml", [mig_claim()])]
    code, out, err = run(["allocate", "--node-name", "node-1", *files], capsys)
    assert code == 0, err
    assert "device: gpu-0-mig-1g5gb-0" in out
    broken = copy.deepcopy(listed)
    index = next(i for i, o in enumerate(broken["items"]) if o["spec"].get("devices"))
    broken["items"][index]["spec"]["devices"][0]["bogus"] = 1
    files[0] = write(tmp_path, "all.yaml", [broken])
    code, _, err = run(["allocate", "--node-name", "node-1", *files], capsys)
    assert code == 2 and f"all.yaml: document 1 item {index + 1} (ResourceSlice " in err
    assert 'devices[0].bogus: unknown field "bogus"' in err
    files[0] = write(tmp_path, "all.yaml", [{"apiVersion": "v1", "kind": "List", "items": ["text"]}])
    code, _, err = run(["allocate", "--node-name", "node-1", *files], capsys)
    assert code == 2 and "all.yaml: document 1 item 1: expected a mapping with apiVersion and kind, got str" in err


def test_allocate_knows_kep5941_fields_and_checks_their_shape(tmp_path, capsys):
    """allocate's --features are the scheduler's gates: slices carrying KEP-5941 fields come from an
    apiserver with the gate, so the fields are known to the check, and their shape is checked."""
    vf = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "vf", "namespace": "default"},
          "spec": {"devices": {"requests": [{"name": "vf", "exactly": {
              "deviceClassName": f"vf.{DRIVER}", "capacity": {"requests": {"bandwidth": "40G"}}}}]}}}
    files = [write(tmp_path, "classes.yaml", device_classes()), write(tmp_path, "slices.yaml", demo_slices(shared=True)),
             write(tmp_path, "claim.yaml", [vf])]
    code, out, err = run(["allocate", "--node-name", "node-1", *files], capsys)
    assert code == 0, err
    assert "consumedCounters" in out
    # The allocated claim, fed back, carries consumedCounters: known too, and a scheduler without the
    # gate (=false) still reads it.
    done = write(tmp_path, "done.yaml", yaml.safe_load_all(out))
    code, _, err = run(["allocate", "--node-name", "node-1", "--features", "DRASharedConsumableCapacity=false",
                        *files[:2], done, write(tmp_path, "c2.yaml", [mig_claim()])], capsys)
    assert code == 0, err
    # A mistyped KEP-5941 field is an error like any other.
    broken = [copy.deepcopy(s) for s in demo_slices(shared=True)]
    device = next(d for s in broken for d in s["spec"].get("devices") or () if "valueFrom" in str(d))
    counters = device["consumesCounters"][0]["counters"]
    name = next(n for n, c in counters.items() if "valueFrom" in c)
    counters[name]["valueFrom"] = {"capacity": counters[name]["valueFrom"]["capacityName"]}
    files[1] = write(tmp_path, "slices.yaml", broken)
    code, _, err = run(["allocate", "--node-name", "node-1", *files], capsys)
    assert code == 2
    assert f'counters[{name}].valueFrom.capacity: unknown field "capacity" (did you mean "capacityKey"?)' in err
    assert f"counters[{name}].valueFrom: must set exactly one of capacityName, capacityKey (neither is set)" in err


def test_apply_knows_kep5941_fields_when_the_stores_apiserver_has_the_gate(tmp_path, capsys):
    store = tmp_path / "store"
    slices = write(tmp_path, "slices.yaml", demo_slices(shared=True))
    code, _, err = run(["apply", "-f", slices, "--store", str(store)], capsys)
    assert code == 2
    assert f"(a KEP-5941 field: DRASharedConsumableCapacity is off; turn it on in {store / 'featuregates.yaml'} " \
           "(apiserver: and scheduler:))" in err
    assert ObjectStore(store).count("resourceslices") == 0
    store.mkdir(exist_ok=True)
    (store / "featuregates.yaml").write_text("apiserver: {DRASharedConsumableCapacity: true}\n")
    code, out, err = run(["apply", "-f", slices, "--store", str(store)], capsys)
    assert code == 0, err
    assert len(ObjectStore(store).list("resourceslices")) == len(demo_slices(shared=True))
