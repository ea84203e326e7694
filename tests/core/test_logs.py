"""Text logs print values as a person writes them, never Python reprs; JSON keeps structure."""

import json
import logging
from pathlib import Path

import pytest

from driver.logs import JsonFormatter, TextFormatter, text_value


@pytest.mark.parametrize("value,text", [
    (["gpu-0", "gpu-0-mig-1g5gb-0"], "gpu-0,gpu-0-mig-1g5gb-0"),
    (("a",), "a"), ({"b", "a"}, "a,b"), ([], "-"), (None, "-"), (True, "true"), (3, "3"), (0.5, "0.5"),
    ({"gpu": 2, "mig": 50}, "gpu:2,mig:50"), ("plain", "plain"), ("two words", '"two words"'),
    ('say "hi"', '"say \\"hi\\""'), ("a=b", '"a=b"'), ("", '""'), (Path("/var/run/cdi"), "/var/run/cdi"),
])
def test_text_value(value, text):
    assert text_value(value) == text


def _record(**extra):
    record = logging.LogRecord("fake-dra.state", logging.INFO, __file__, 1, "prepared claim", None, None)
    record.__dict__.update(extra)
    return record


def test_text_line_has_no_reprs():
    line = TextFormatter().format(_record(claim="default/c", devices=["gpu-0", "gpu-1"], reason="XID 79: off"))
    assert line == 'INFO fake-dra.state: prepared claim claim=default/c devices=gpu-0,gpu-1 reason="XID 79: off"'


def test_json_keeps_lists_and_sorts_sets():
    entry = json.loads(JsonFormatter().format(_record(devices=["gpu-0"], gates={"b", "a"}, root=Path("/x"))))
    assert entry["devices"] == ["gpu-0"] and entry["gates"] == ["a", "b"] and entry["root"] == "/x"
