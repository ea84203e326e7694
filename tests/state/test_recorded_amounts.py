"""Revalidation does not trust what a claim records (KEP-5941 `consumedCounters`), and a claim never
gets one device twice.

A recorded amount must be non-negative, name only counter sets and counters the device consumes,
and be one the counter's requestPolicy allows; otherwise the claim is refused with an error naming
the claim, the result, the counter set and the counter, and nothing stays reserved. The demo node's
PF counter set `nic-0-counters` has bandwidth 100G with requestPolicy default 12500M, validRange
min 100M, max 100G, step 100M.
"""

from __future__ import annotations

import json

import pytest

from driver.allocator.rules import PlacedDevice, validate_combination
from driver.features import Features
from state.conftest import DRIVER, NODE, result


def _bw(amount, counter_set="nic-0-counters", counter="bandwidth"):
    return [{"counterSet": counter_set, "counters": {counter: {"value": amount}}}]


def _refused(env, st, ref) -> str:
    out = st.prepare([ref])[ref.uid]
    assert out.error, "expected the claim to be refused"
    assert ref.uid not in st.prepared(), "a refused claim must leave no checkpoint entry"
    assert not any(ref.uid in f for f in env.cdi_files()), "a refused claim must leave no CDI spec"
    return out.error


def test_negative_amounts_do_not_let_overlapping_mig_devices_prepare_together(env):
    st = env.state()
    big = env.claims.add("big", [result("gpu-0-mig-4g20gb-0")])  # memory slices 0-3
    sneaky = env.claims.add("sneaky", [result("gpu-0-mig-2g10gb-2", consumedCounters=[
        {"counterSet": "gpu-0-counters", "counters": {"memory-slice-2": {"value": "-1"},
                                                      "memory-slice-3": {"value": "-1"}}}])])
    assert st.prepare([big])[big.uid].error == ""
    error = _refused(env, st, sneaky)
    assert error.startswith("claim default/sneaky: preparation-time revalidation failed")
    assert "results[0]" in error and "gpu-0-counters" in error and "memory-slice-" in error


def test_negative_bandwidth_does_not_put_200g_of_vfs_on_a_100g_pf(env):
    st = env.state()
    first = env.claims.add("a", [result("nic-0-vf-0", consumedCounters=_bw("100G"))])
    second = env.claims.add("b", [result("nic-0-vf-1", consumedCounters=_bw("100G")),
                                  result("nic-0-vf-2", consumedCounters=_bw("-100G"))])
    assert st.prepare([first])[first.uid].error == ""
    error = _refused(env, st, second)
    assert "results[1]" in error and "nic-0-counters" in error and "bandwidth" in error and "negative" in error
    # and the honest 100G claim on the same PF is refused for exhaustion, not let through
    honest = env.claims.add("c", [result("nic-0-vf-1", consumedCounters=_bw("100G"))])
    assert "counters exhausted on counter set nic-0-counters" in _refused(env, st, honest)


@pytest.mark.parametrize("records, fragment", [
    (_bw("1", counter_set="gpu-0-counters", counter="memory"),
     "counter set gpu-0-counters): device nic-0-vf-0 does not consume from this counter set"),
    (_bw("1G", counter="bogus"), "counter set nic-0-counters, counter bogus): device nic-0-vf-0 does not consume this counter"),
    (_bw("150M"), "150M is not allowed by the counter's requestPolicy (validRange min 100M, max 100G, step 100M; default 12500M)"),
    (_bw("50M"), "50M is not allowed by the counter's requestPolicy"),
    (_bw("101G"), "101G is not allowed by the counter's requestPolicy"),
    (_bw("1e10000000"), "invalid quantity '1e10000000'"),
    (_bw("200M") + _bw("200M"), "consumedCounters[1] (counter set nic-0-counters): listed twice"),
    ({"counterSet": "nic-0-counters"}, "consumedCounters: expected a list of objects"),
    ([{"counterSet": "nic-0-counters", "counters": ["bandwidth"]}], "counters: expected a map"),
])
def test_recorded_amounts_must_fit_what_the_device_consumes(env, records, fragment):
    st = env.state()
    ref = env.claims.add("vf", [result("nic-0-vf-0", consumedCounters=records)])
    error = _refused(env, st, ref)
    assert error.startswith("claim default/vf: ") and "results[0]" in error and fragment in error, error


@pytest.mark.parametrize("amount", ["12500M", "100M", "200M", "100G"])
def test_amounts_the_policy_allows_are_prepared(env, amount):
    st = env.state()
    ref = env.claims.add("vf", [result("nic-0-vf-0", consumedCounters=_bw(amount))])
    assert st.prepare([ref])[ref.uid].error == ""


def test_a_fixed_counter_recorded_at_its_value_is_accepted_and_not_charged_twice(env):
    st = env.state()
    one = env.claims.add("one", [result("gpu-0-mig-1g5gb-0", consumedCounters=[
        {"counterSet": "gpu-0-counters", "counters": {"memory-slice-0": {"value": "1"}}}])])
    assert st.prepare([one])[one.uid].error == ""
    wrong = env.claims.add("wrong", [result("gpu-0-mig-1g5gb-1", consumedCounters=[
        {"counterSet": "gpu-0-counters", "counters": {"memory-slice-1": {"value": "2"}}}])])
    assert "consumes a fixed 1, the result records 2" in _refused(env, st, wrong)


def test_the_same_device_twice_in_one_claim_is_refused(env):
    st = env.state()
    twice = env.claims.add("twice", [result("gpu-1", "a"), result("gpu-1", "b")])
    error = _refused(env, st, twice)
    assert error == ("claim default/twice: device gpu-1 is allocated twice in this claim (status.allocation.devices."
                     "results[0] and [1]); a claim gets each device at most once")
    # also with adminAccess, and counting only this driver's results for the positions
    other = {"request": "x", "driver": "other.example.com", "pool": "p", "device": "gpu-1"}
    admin = env.claims.add("admin", [other, result("gpu-1", adminAccess=True), result("gpu-1", adminAccess=True)])
    assert "results[1] and [2]" in _refused(env, st, admin)
    # gpu-1 is free for the next claim
    ok = env.claims.add("ok", [result("gpu-1")])
    assert st.prepare([ok])[ok.uid].error == ""
    spec = json.loads(next(env.cdi_root.glob(f"*{ok.uid}.json")).read_text())
    assert [d["name"] for d in spec["devices"]] == [f"{ok.uid}-gpu-1"]


def test_a_bad_record_already_prepared_charges_nothing_and_is_reported(demo_pool):
    """Rules level: placements made earlier are not re-judged by today's policy, but a negative
    record must never hand counters back (it used to cancel out real consumption)."""
    placed = [
        PlacedDevice("old", "r", DRIVER, NODE, "nic-0-vf-0", consumed_counters=tuple(_bw("-100G"))),
        PlacedDevice("a", "r", DRIVER, NODE, "nic-0-vf-1", consumed_counters=tuple(_bw("100G"))),
        PlacedDevice("b", "r", DRIVER, NODE, "nic-0-vf-2", consumed_counters=tuple(_bw("100G"))),
    ]
    violations = validate_combination(demo_pool.slices, placed, Features.all_on())
    kinds = {v.kind for v in violations}
    assert kinds == {"recorded", "counters"}, violations
    recorded = next(v for v in violations if v.kind == "recorded")
    assert recorded.devices == (f"{DRIVER}/{NODE}/nic-0-vf-0",) and "negative" in recorded.message
    # a policy violation of an earlier placement is charged as recorded, not refused again
    off_step = [PlacedDevice("old", "r", DRIVER, NODE, "nic-0-vf-0", consumed_counters=tuple(_bw("150M")))]
    assert validate_combination(demo_pool.slices, off_step, Features.all_on()) == []


def test_a_bad_record_in_the_checkpoint_does_not_block_the_shared_device(env):
    """A checkpoint written before records were checked may hold a bad one: it charges nothing
    and must not refuse the next share of the same device."""
    from driver.state.checkpoint import COMPLETED, Checkpoint, ClaimEntry
    from driver.state.types import ClaimRef, PreparedDevice

    old = ClaimRef("default", "old", "old-uid")
    bad = ({"counterSet": "gpu-0-counters", "counters": {"multiprocessors": {"value": "-54"}}},)
    cp = Checkpoint()
    cp.claims[old.uid] = ClaimEntry(old, COMPLETED, env.boot_id, [PreparedDevice(
        ("r",), NODE, "gpu-0-timeslicing", ("x",), consumed_counters=bad, share_id="s0")])
    env.state().close()  # creates the directories
    env.states.clear()
    from driver.state.checkpoint import CheckpointStore
    CheckpointStore(env.state_dir, driver_name=DRIVER, node_name=NODE, boot_id=env.boot_id).save(cp)
    st = env.state()
    assert set(st.prepared()) == {old.uid}
    share = env.claims.add("share", [result("gpu-0-timeslicing", shareID="00000000-0000-0000-0000-000000000001")])
    assert st.prepare([share])[share.uid].error == ""
    # the negative record did not hand back gpu-0's multiprocessors: the full GPU still does not fit
    full = env.claims.add("full", [result("gpu-0")])
    assert "counters exhausted on counter set gpu-0-counters" in st.prepare([full])[full.uid].error


@pytest.mark.parametrize("share", ["s1", "123E4567-E89B-12D3-A456-426614174000", "123e4567-e89b-12d3-a456-426614174000\nX=1",
                                   "x" * 100_000], ids=["not-uuid", "upper", "newline", "huge"])
def test_a_share_id_that_is_not_a_lowercase_uuid_is_refused(env, share):
    """kube-apiserver allows only format=k8s-uuid; anything else came from a hostile or broken
    object, and it would land verbatim in the CDI env, the checkpoint and status.devices."""
    st = env.state()
    bad = env.claims.add("bad", [result("gpu-0-timeslicing", shareID=share)])
    error = _refused(env, st, bad)
    assert error.startswith("claim default/bad: status.allocation.devices.results[0].shareID: ")
    assert error.endswith("is not a lowercase UUID in 8-4-4-4-12 format") and len(error) < 400
    good = env.claims.add("good", [result("gpu-0-timeslicing", shareID="123e4567-e89b-12d3-a456-426614174000")])
    assert st.prepare([good])[good.uid].error == ""


@pytest.mark.parametrize("bad", [{"shareID": {"a": 1}}, {"shareID": [1]}, {"consumedCounters": {"counterSet": "x"}},
                                 {"consumedCounters": ["x"]}, {"device": 7}],
                         ids=["share-dict", "share-list", "counters-map", "counters-strings", "device-number"])
def test_a_checkpoint_record_of_the_wrong_shape_is_corrupt_not_blamed_on_the_next_claim(env, caplog, bad):
    """A non-string shareID in a checkpoint record used to be loaded as is: revalidation then
    failed every later claim on the same counters with 'malformed allocation: TypeError:
    unhashable type', naming the new claim. Such a file is now corrupt: moved aside, state
    rebuilt from the CDI specs."""
    env.state().close()  # creates the directories
    env.states.clear()
    record = {"requestNames": ["r"], "pool": NODE, "device": "gpu-0-timeslicing", "cdiDeviceIDs": ["x"], **bad}
    doc = {"kind": "FakeDraCheckpoint", "version": 1, "driver": DRIVER, "node": NODE, "bootID": env.boot_id,
           "claims": {"old-uid": {"namespace": "default", "name": "old", "state": "PrepareCompleted",
                                  "bootID": env.boot_id, "devices": [record]}}}
    (env.state_dir / "checkpoint.json").write_text(json.dumps(doc))
    st = env.state()
    assert "is corrupt" in caplog.text and list(env.state_dir.glob("checkpoint.json.corrupt-*"))
    assert st.prepared() == {}
    new = env.claims.add("new", [result("gpu-0-timeslicing", shareID="00000000-0000-0000-0000-000000000002")])
    assert st.prepare([new])[new.uid].error == ""
