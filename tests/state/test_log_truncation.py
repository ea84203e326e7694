"""Strings from the kubelet (names, namespaces, UIDs) arrive unvalidated and may be megabytes long:
logs and error messages carry them shortened, never in full; the gRPC answer keeps the UID as key."""

from __future__ import annotations

import logging

from driver.plugin.gen import dra_v1_pb2, dra_v1_pb2_grpc
from driver.plugin.metrics import PluginMetrics
from driver.plugin.services import dra_servicer
from driver.state.names import LOG_LIMIT, shorten
from driver.state.types import ClaimRef, PrepareResult
from state.conftest import result

HUGE = 1_000_000


def _records_ok(caplog) -> None:
    assert caplog.records, "expected something to be logged"
    for rec in caplog.records:
        text = rec.getMessage() + " " + " ".join(str(v) for v in rec.__dict__.values())
        assert len(text) < 20_000, f"log record of {len(text)} characters: {rec.getMessage()[:100]}"


def test_shorten_keeps_short_strings_and_says_how_long_a_cut_one_was():
    assert shorten("default") == "default"
    cut = shorten("x" * HUGE)
    assert cut.startswith("x" * LOG_LIMIT) and cut.endswith(f"...({HUGE} chars)") and len(cut) < LOG_LIMIT + 40


def test_state_logs_and_errors_cut_huge_kubelet_strings(env, caplog):
    st = env.state()
    huge_uid, huge_name, huge_ns = "u" * HUGE, "n" * HUGE, "s" * HUGE
    with caplog.at_level(logging.DEBUG):
        refs = [ClaimRef("default", huge_name, "a1"), ClaimRef(huge_ns, "c", "a2"), ClaimRef("default", "c", huge_uid),
                ClaimRef("default", "d", "a3"), ClaimRef("default", huge_name, "a3")]  # a3: same UID, other names
        out = st.prepare(refs)
        real = env.claims.add("real", [result("gpu-0")])
        assert st.prepare([real])[real.uid].error == ""
        # the kubelet unprepares by UID; the names it sends along are not checked (the claim may be gone)
        gone = st.unprepare([ClaimRef(huge_ns, huge_name, "a4"), ClaimRef("default", "c", huge_uid),
                             ClaimRef(huge_ns, huge_name, real.uid)])
    assert gone[real.uid] == "" and st.prepared() == {}
    assert set(out) == {"a1", "a2", huge_uid, "a3"} and all(r.error for r in out.values())
    assert all(len(r.error) < 2000 for r in out.values()), [len(r.error) for r in out.values()]
    assert "listed twice with different names" in out["a3"].error
    assert gone["a4"] == "" and len(gone[huge_uid]) < 2000
    _records_ok(caplog)


def test_servicer_log_line_cuts_the_uid_and_error(caplog):
    class State:
        def prepare(self, refs, timeout_s=None, abandoned=None):
            return {r.uid: PrepareResult(error="e" * HUGE) for r in refs}

        def count(self) -> int:
            return 0

    srv = dra_servicer(dra_v1_pb2, dra_v1_pb2_grpc, "v1", State(), PluginMetrics.create())
    uid = "u" * HUGE
    req = dra_v1_pb2.NodePrepareResourcesRequest(claims=[dra_v1_pb2.Claim(namespace="default", name="c", uid=uid)])
    with caplog.at_level(logging.WARNING, logger="fake-dra.plugin"):
        resp = srv.NodePrepareResources(req, None)
    assert list(resp.claims) == [uid], "the answer is keyed by the UID the kubelet sent"
    _records_ok(caplog)
