"""status.reservedFor upkeep shared by `fake-dra schedule` and the e2e backends (driver.schedule.claims),
and the Scheduler's own argument checks."""

from __future__ import annotations

import pytest

from driver.errors import InputError
from driver.features import Features
from driver.schedule.claims import reserved_by, with_consumer, without_consumer
from driver.schedule.scheduler import Scheduler
from driver.store import ObjectStore

ALLOCATION = {"devices": {"results": [{"request": "gpu", "driver": "d", "pool": "n1", "device": "gpu-0"}]}}


def _claim(*uids: str) -> dict:
    status = {"allocation": ALLOCATION}
    if uids:
        status["reservedFor"] = [{"resource": "pods", "name": f"p-{u}", "uid": u} for u in uids]
    return {"metadata": {"name": "c"}, "status": status}


def test_a_consumer_is_appended_once():
    claim = _claim("a")
    added = with_consumer(claim, {"resource": "pods", "name": "p-b", "uid": "b"})
    assert [r["uid"] for r in added["status"]["reservedFor"]] == ["a", "b"]
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == ["a"]  # the input is not changed
    assert with_consumer(added, {"resource": "pods", "name": "p-b", "uid": "b"}) is None
    assert reserved_by(added, "b") and not reserved_by(claim, "b")


def test_dropping_the_last_consumer_deallocates():
    claim = _claim("a", "b")
    one_left = without_consumer(claim, "a")
    assert one_left["status"]["allocation"] == ALLOCATION
    assert [r["uid"] for r in one_left["status"]["reservedFor"]] == ["b"]
    none_left = without_consumer(one_left, "b")
    assert none_left["status"] == {}
    assert without_consumer(_claim(), "x")["status"] == {}  # an unreserved claim is deallocated too


def test_the_scheduler_refuses_a_policy_or_percentage_it_does_not_know(tmp_path):
    # The Python entry point checks what the CLI's argparse choices and `_percentage` check there.
    store = ObjectStore(tmp_path / "store")
    with pytest.raises(InputError, match="--policy: expected one of first, most-allocated, least-allocated, got 'best'"):
        Scheduler(store, features=Features(), policy="best")
    with pytest.raises(InputError, match="--percentage-of-nodes-to-score: must be between 0 and 100, got 101"):
        Scheduler(store, features=Features(), percentage=101)
