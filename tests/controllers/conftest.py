"""A store with a fleet and DeviceClasses (tests/schedule's fixtures), and the control plane run on it
until settled, in process: `settle()` returns the runner's Summary and fails a test that does not settle."""

from __future__ import annotations

import pytest

from driver.commands.cluster import scheduler_cycle
from driver.controllers import Runner, default_controllers
from driver.features import Features
from schedule.conftest import fleet, schedule, store  # noqa: F401 - fixtures

SETTLE_S = 120.0  # generous: the machine is shared


@pytest.fixture
def settle(store):  # noqa: F811
    def run(*, scheduler: bool = True, threshold: int = 12500, timeout_s: float = SETTLE_S, **kw):
        runner = Runner(store, default_controllers(terminated_pod_threshold=threshold, **kw),
                        scheduler=scheduler_cycle(store, Features(), "first") if scheduler else None)
        summary = runner.run(until_settled=True, timeout_s=timeout_s)
        assert summary.settled, f"not settled in {timeout_s} s: {len(runner.queue)} queued"
        return summary
    return run
