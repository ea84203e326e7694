"""Tables fit 100 columns without breaking a token: long values wrap at spaces or go below the table."""

from __future__ import annotations

import re

from driver.tables import table

TOKEN = "k8s.fake-dra.example.com/device=0f3c2a44-1111-2222-3333-444455556666-gpu-0-mig-1g5gb-0"


def test_short_tables_are_untouched():
    out = table(["A", "BB"], [["x", None], ["yy", 3]])
    assert out.splitlines() == ["A   BB", "x   -", "yy  3"]


def test_long_value_goes_below_the_table_whole():
    rows = [["claim-a", "ok", TOKEN], ["claim-b", "ok", "short"]]
    out = table(["NAME", "STATUS", "CDI DEVICE"], rows, width=60)
    lines = out.splitlines()
    # Only a single token longer than the width may exceed it, alone on its line.
    assert all(len(line) <= 60 or len(line.split()) == 1 for line in lines)
    assert lines[1].split() == ["claim-a", "ok", "[1]"] and lines[2].split() == ["claim-b", "ok", "short"]
    assert lines[4:] == ["[1] CDI DEVICE:", f"    {TOKEN}"], "the value is printed in full, unbroken"


def test_identical_long_values_share_one_note():
    rows = [[f"dev-{i}", "fake-dra.example.com-long-driver-name"] for i in range(3)]
    out = table(["NAME", "DRIVER"], rows, width=20)
    assert out.count("[1]") == 4 and "[2]" not in out


def test_wrappable_column_wraps_at_spaces_and_never_cuts_a_word():
    message = "revalidation failed: groups incompatible on counter set gpu-1-counters of pool node-1 " * 2
    out = table(["DEVICE", "MESSAGE"], [["gpu-1", message.strip()]], width=50, wrap=[1])
    lines = out.splitlines()
    assert len(lines) > 3 and all(len(line) <= 50 for line in lines)
    words = re.findall(r"\S+", " ".join(line[7:] for line in lines[1:]))
    assert words == message.split()


def test_wrappable_value_with_an_overlong_token_goes_below():
    out = table(["CHECK", "OBSERVED"], [["cdi", f"2: {TOKEN}"]], width=40, wrap=[1])
    assert out.splitlines()[1:] == ["cdi    [1]", "", "[1] OBSERVED: 2:", f"    {TOKEN}"]
