"""status.reservedFor upkeep shared by `fake-dra schedule` and the e2e backends (driver.schedule.claims)."""

from __future__ import annotations

from driver.schedule.claims import reserved_by, with_consumer, without_consumer

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
