"""The kill loop, CI-sized: a few kills of every kind (the recovery of a damaged checkpoint included)
under concurrent load that cancels some prepares in flight, with the generators, then a short leak
check. hack/soak.sh runs the same loop longer and prints the figures."""

from __future__ import annotations

import pytest

from adversarial.soak import KILLS, SoakConfig, run_soak

pytestmark = pytest.mark.slow


def test_kill_loop_loses_nothing_and_books_nothing_twice(sysfs_template):
    figures = run_soak(SoakConfig(cycles=8, threads=3, leak_cycles=150, seed=12), sysfs_template)
    print(figures.report())
    assert figures.claims_lost == 0 and figures.double_bookings == 0
    assert figures.stale_holds == 0 and figures.orphan_specs == 0
    assert figures.problems == []
    # 8 cycles, every kind twice (a successor may add a crash of its own: it is counted too)
    assert figures.kills_survived == sum(figures.kills.values()) >= 8
    assert all(figures.kills[k] >= 2 for k in KILLS)
    assert figures.kubelet_calls > 20 and figures.generator_inputs.get("conflicts", 0) > 0
    assert figures.cancelled_calls > 0, "the load cancels some prepares in flight and unprepares their claims"
    assert figures.generator_inputs.get("hostile", 0) >= 100  # the catalogue once, then fuzz rounds
    assert figures.fds is not None and figures.fds[1] - figures.fds[0] <= 2
