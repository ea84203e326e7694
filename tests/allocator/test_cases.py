"""Run every allocator scenario in tests/allocator/cases/ (one YAML file each, with a `reason`).

The pending claims of a case are one pod (one search, all or nothing) unless the case says
`mode: sequential` (one scheduling cycle per claim, each seeing the earlier ones allocated).

`expectNodes: {node: {claim: expectation}}` asks the same pod of several nodes (one answer each)
instead of `expect` for `node`.

Expectations per claim: a list of device names (results in order), or a mapping with `error`
(substring of the reason), `fails: true` (not allocated, any reason), `results` (subset match of
each result; `exact: true` for equality), `nodeSelector` / `config` (exact match). `inputError`
expects the whole case to be rejected as invalid input.
"""

from __future__ import annotations

import pytest

from driver.allocator import allocate_claims
from driver.errors import InputError
from driver.features import parse_features
from .casefile import all_cases, case_features, load_case

CASE_FILES = all_cases()


def _subset(expected, actual) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and _subset(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(map(_subset, expected, actual))
    return expected == actual


def test_there_are_enough_cases_and_each_has_a_reason():
    assert len(CASE_FILES) >= 60
    for path in CASE_FILES:
        case, _ = load_case(path)
        assert isinstance(case.get("reason"), str) and case["reason"].strip(), path.name
        assert "\n" not in case["reason"].strip(), f"{path.name}: reason must be one line"
        assert "expect" in case or "expectNodes" in case or case.get("inputError"), path.name


@pytest.mark.parametrize("path", CASE_FILES, ids=[p.stem for p in CASE_FILES])
def test_case(path):
    case, objects = load_case(path)
    features = parse_features(case_features(case))
    assert case.get("mode", "pod") in ("pod", "sequential"), path.name
    kwargs = {"node": case.get("node", "node-1"), "features": features, "stop_on_failure": False,
              "sequential": case.get("mode") == "sequential"}
    if case.get("budget"):
        kwargs["budget"] = case["budget"]
    if case.get("inputError"):
        with pytest.raises(InputError) as err:
            allocate_claims(objects, **kwargs)
        assert case["inputError"] in str(err.value)
        return
    if "expectNodes" in case:  # the same pod asked of several nodes, one answer per node
        assert "expect" not in case, path.name
        for node, expect in case["expectNodes"].items():
            _check(allocate_claims(objects, **{**kwargs, "node": node}), expect, f"{path.name}, node {node}")
        return
    outcome = allocate_claims(objects, **kwargs)
    _check(outcome, case["expect"], path.name)
    if "warnings" in case:
        assert outcome.warnings == case["warnings"]


def _check(outcome, expect: dict, where: str) -> None:
    by_name = {r.claim["metadata"]["name"]: r for r in outcome.results}
    for claim, want in expect.items():
        got = by_name[claim]
        claim = f"{where}: {claim}"
        if isinstance(want, list):
            assert got.allocation is not None, f"{claim}: expected {want}, got error: {got.reason}"
            assert [r["device"] for r in got.allocation["devices"]["results"]] == want
            continue
        if want.get("fails"):
            assert got.allocation is None, f"{claim}: expected failure, got {got.allocation}"
            continue
        if "error" in want:
            assert got.allocation is None, f"{claim}: expected failure, got {got.allocation}"
            assert want["error"] in got.reason, got.reason
            if "budgetExceeded" in want:
                assert got.budget_exceeded == want["budgetExceeded"]
            continue
        assert got.allocation is not None, f"{claim}: {got.reason}"
        if "devices" in want:
            assert [r["device"] for r in got.allocation["devices"]["results"]] == want["devices"]
        if want.get("exact"):
            assert got.allocation["devices"]["results"] == want["results"]
        if "results" in want:
            assert _subset(want["results"], got.allocation["devices"]["results"]), got.allocation["devices"]["results"]
        for key in ("nodeSelector", "config"):
            if key in want:
                actual = got.allocation.get(key) if key == "nodeSelector" else got.allocation["devices"].get(key)
                assert actual == want[key], actual
