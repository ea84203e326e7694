"""Hostile kubelet inputs against a real `fake-dra run` over its unix sockets (adversarial.hostile).

One plugin process serves the whole catalogue (100+ inputs: malformed UIDs, huge/empty/unicode names,
duplicated claims in one call, wrong namespaces, store objects of the wrong kind or shape, allocations
malformed in every field, quantities at and beyond the limits, raw messages that do not decode).
After each input: a per-claim error naming the claim (or a clean answer), every claim answered,
the good claim sent along prepared, nothing left reserved, the server still serving. At the end the
process is alive, logged no traceback, and every device the inputs touched can still be prepared.
"""

from __future__ import annotations

import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from adversarial.hostile import Devices, Target, catalogue, claim_object, fuzz, run
from plugin.harness import DRIVER, NODE, Plugin

DEMO = Devices(DRIVER, NODE, gpu="gpu-0", good="gpu-1", mig="gpu-0-mig-1g5gb-0", vf="nic-0-vf-0",
               vf_counter_set="nic-0-counters", vf_counter="bandwidth")
INPUTS = catalogue(DEMO)


@pytest.fixture(scope="module")
def served():
    from driver.discovery import make_sysfs

    template = Path(tempfile.mkdtemp(prefix="fdh-sys-", dir="/tmp")) / "sys"
    make_sysfs("demo", template)
    plugin = Plugin(template)
    client = plugin.start()
    plugin.wait_slices()
    target = Target(plugin.registry, plugin.store_dir, plugin.state, plugin.cdi, DRIVER, NODE)
    yield plugin, target, client
    if plugin.proc is not None and plugin.proc.poll() is None:
        plugin.stop(signal.SIGKILL)
    shutil.rmtree(plugin.root, ignore_errors=True)
    shutil.rmtree(template.parent, ignore_errors=True)


def test_the_catalogue_is_large_enough_and_finds_the_demo_devices(served):
    _, target, _ = served
    assert len(INPUTS) >= 100 and len({i.name for i in INPUTS}) == len(INPUTS)
    found = target.devices()
    assert found.mig is not None and found.mig.startswith("gpu-0-mig-")  # which one depends on slice order
    assert found == Devices(**{**DEMO.__dict__, "mig": found.mig})


@pytest.mark.parametrize("inp", INPUTS, ids=[i.name for i in INPUTS])
def test_hostile_input(served, inp):
    plugin, target, client = served
    report = run(target, [inp], client=client)
    assert report.violations == [], "\n".join(report.violations) + "\n" + plugin.log_text()[-3000:]
    assert plugin.proc.poll() is None, plugin.log_text()[-3000:]


def test_random_variants_keep_the_invariants(served):
    plugin, target, client = served
    report = run(target, fuzz(DEMO, 12, 150), client=client)
    assert report.tried == 150 and report.violations == [], "\n".join(report.violations)


def test_afterwards_the_process_is_healthy_and_nothing_is_held(served):
    plugin, target, client = served
    assert plugin.proc.poll() is None
    assert "Traceback" not in plugin.log_text(), plugin.log_text()[-5000:]
    assert target.reserved() == (set(), set())
    # every device the inputs aimed at is free: prepare them all at once, then release them
    refs = []
    for name, device, extra in [("gpu0", "gpu-0", {}), ("gpu1", "gpu-1", {}),
                                ("vf", "nic-0-vf-0", {"consumedCounters": [
                                    {"counterSet": "nic-0-counters", "counters": {"bandwidth": {"value": "100G"}}}]})]:
        obj = claim_object(f"final-{name}", "default", f"final-{name}-uid",
                           [{"request": "r", "driver": DRIVER, "pool": NODE, "device": device, **extra}])
        plugin.store.create("resourceclaims", obj)
        refs.append(("default", obj["metadata"]["name"], obj["metadata"]["uid"]))
    out = client.prepare(refs)
    assert {uid: r.error for uid, r in out.items()} == {r[2]: "" for r in refs}
    assert client.unprepare(refs) == {r[2]: "" for r in refs}
    assert target.reserved() == (set(), set())


def test_command_line_for_the_soak(served, capsys):
    """The interface hack/soak.sh uses (tests/adversarial/HOSTILE.md): one JSON summary, exit 0."""
    import json

    from adversarial.hostile import main

    plugin, target, _ = served
    code = main(["--registry-dir", str(plugin.registry), "--store", str(plugin.store_dir), "--state-dir",
                 str(plugin.state), "--cdi-root", str(plugin.cdi), "--only", "store/", "--fuzz", "5", "--seed", "7",
                 "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["violation_count"] == 0, summary
    assert summary["inputs"] == len([i for i in INPUTS if i.name.startswith("store/")]) + 5
    assert summary["seed"] == 7 and summary["errors"] >= summary["inputs"] - 5


def test_huge_claim_fields_in_errors_never_push_the_answer_past_the_kubelets_limit(make_plugin):
    """Issue 18 item 6: error texts echoed claim fields without bound; three bad claims pushed the
    response past the kubelet's 4 MiB message limit, so the whole call failed, and the good claim
    sent with them was prepared and recorded but never answered."""
    from adversarial.claims import allocated_claim, ref

    plugin = make_plugin()
    client = plugin.start()
    bad = []
    for i in range(3):
        claim = allocated_claim(f"bad-{i}", ["gpu-0"])
        claim["status"]["allocation"]["devices"]["results"][0]["pool"] = "p" * 1_400_000  # echoed in the error
        plugin.store.create("resourceclaims", claim)
        bad.append(ref(claim))
    good = allocated_claim("good", ["gpu-1"])
    plugin.store.create("resourceclaims", good)
    answers = client.prepare([*bad, ref(good)])  # before: RESOURCE_EXHAUSTED for the whole call
    assert answers[ref(good)[2]].error == "" and answers[ref(good)[2]].devices
    for r in bad:
        error = answers[r[2]].error
        assert f"claim default/{r[1]}" in error and "is in pool" in error and len(error) <= 1024
    assert plugin.stop() == 0
