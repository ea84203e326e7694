"""The progress line long commands (fleet apply/delete, schedule) print on stderr (driver.commands.common.Progress)."""

from __future__ import annotations

from driver.commands import common


def test_progress_prints_at_most_every_two_seconds_with_its_rate(monkeypatch, capsys):
    clock = iter([100.0, 100.5, 103.0, 104.0, 106.0])
    monkeypatch.setattr(common.time, "monotonic", lambda: next(clock))
    progress = common.Progress("fleet lab: applied", "nodes")  # started at 100.0
    progress(10, 100)   # 100.5: too soon
    progress(60, 100)   # 103.0: printed, 60 in 3 s
    progress(70, 100)   # 104.0: too soon after the last line
    progress(100, 100)  # 106.0: done, no line
    assert capsys.readouterr().err == "fleet lab: applied 60/100 nodes, 20 nodes/s\n"
    assert (progress.done, progress.total) == (100, 100)
