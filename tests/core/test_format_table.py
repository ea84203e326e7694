"""Tables fit the terminal without breaking or hiding a token: long prose wraps at spaces, long values widen the table."""

from __future__ import annotations

import re

from driver.tables import table

TOKEN = "k8s.fake-dra.example.com/device=0f3c2a44-1111-2222-3333-444455556666-gpu-0-mig-1g5gb-0"


def test_short_tables_are_untouched():
    out = table(["A", "BB"], [["x", None], ["yy", 3]])
    assert out.splitlines() == ["A   BB", "x   -", "yy  3"]


def test_a_long_value_widens_the_table_and_is_never_replaced():
    rows = [["claim-a", "ok", TOKEN], ["claim-b", "ok", "short"]]
    out = table(["NAME", "STATUS", "CDI DEVICE"], rows, width=60)
    lines = out.splitlines()
    assert lines[1].split() == ["claim-a", "ok", TOKEN], "the value stands whole where it belongs"
    assert lines[2].split() == ["claim-b", "ok", "short"]
    assert "[1]" not in out and len(lines) == 3


def test_columns_stay_aligned_when_wider_than_the_terminal():
    rows = [[f"dev-{i}", "fake-dra.example.com-long-driver-name", f"{i}m{i}s"] for i in range(3)]
    out = table(["NAME", "DRIVER", "AGE"], rows, width=20)
    lines = out.splitlines()
    assert all(line.split()[1] == "fake-dra.example.com-long-driver-name" for line in lines[1:])
    assert len({line.index(line.split()[2]) for line in lines[1:]}) == 1, "AGE starts in one column"


def test_wrappable_column_wraps_at_spaces_and_never_cuts_a_word():
    message = "revalidation failed: groups incompatible on counter set gpu-1-counters of pool node-1 " * 2
    out = table(["DEVICE", "MESSAGE"], [["gpu-1", message.strip()]], width=50, wrap=[1])
    lines = out.splitlines()
    assert len(lines) > 3 and all(len(line) <= 50 for line in lines)
    words = re.findall(r"\S+", " ".join(line[7:] for line in lines[1:]))
    assert words == message.split()


def test_a_wrappable_value_with_an_overlong_token_keeps_it_whole():
    out = table(["CHECK", "OBSERVED"], [["cdi", f"2: {TOKEN}"]], width=40, wrap=[1])
    assert out.splitlines()[1:] == ["cdi    2:", f"       {TOKEN}"]


def test_width_follows_columns_and_defaults_to_100_off_a_terminal(monkeypatch):
    from driver.tables import terminal_width

    message = "word " * 40
    monkeypatch.setenv("COLUMNS", "60")
    assert terminal_width() == 60
    assert max(len(line) for line in table(["A", "MESSAGE"], [["x", message]], wrap=[1]).splitlines()) <= 60
    monkeypatch.setenv("COLUMNS", "150")
    assert max(len(line) for line in table(["A", "MESSAGE"], [["x", message]], wrap=[1]).splitlines()) > 100
    monkeypatch.delenv("COLUMNS")
    assert terminal_width() == 100, "pytest captures stdout: not a terminal"


def test_kubectl_table_is_gos_tabwriter_as_kubectl_configures_it():
    from driver.tables import kubectl_table

    out = kubectl_table(["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
                        [["nginx-7c5ddbdf54-2jvq4", "1/1", "Running", 0, "5m"], ["a", "0/1", "Pending", 0, "1s"]])
    assert out.splitlines() == ["NAME                     READY   STATUS    RESTARTS   AGE",
                                "nginx-7c5ddbdf54-2jvq4   1/1     Running   0          5m",
                                "a                        0/1     Pending   0          1s"]
    # a column narrower than three characters is still six wide (minwidth 6 includes the padding)
    assert kubectl_table(["A", "B"], [["x", "y"]]).splitlines() == ["A     B", "x     y"]
    assert kubectl_table(["A", "B"], [["x", None]], no_headers=True) == "x     <none>"


def test_kubectl_tables_never_wrap_however_narrow_the_terminal(monkeypatch):
    from driver.tables import kubectl_table

    monkeypatch.setenv("COLUMNS", "20")
    out = kubectl_table(["NAME", "MESSAGE"], [["a", "word " * 30]])
    assert len(out.splitlines()) == 2


def test_fake_dra_tables_do_not_wrap_when_piped(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    message = "word " * 40
    assert len(table(["A", "MESSAGE"], [["x", message]], wrap=[1]).splitlines()) == 2, "pytest's stdout is a pipe"
    monkeypatch.setenv("COLUMNS", "60")
    assert len(table(["A", "MESSAGE"], [["x", message]], wrap=[1]).splitlines()) > 2


def test_tabwrite_column_blocks_end_at_a_line_without_that_cell():
    from driver.tables import tabwrite

    lines = [["Name:", "n1"], ["Labels:", "a=b"], ["", "c=d"], ["Capacity:"], ["  cpu:", "4"],
             ["  ephemeral-storage:", "1"]]
    assert tabwrite(lines, minwidth=0, padding=2).splitlines() == [
        "Name:    n1", "Labels:  a=b", "         c=d", "Capacity:", "  cpu:                4", "  ephemeral-storage:  1"]
    # an empty cell is a column of its own (kubectl's `Name\t\tCPU Requests`)
    assert tabwrite([["a", "", "b"], ["ccc", "", "d"]], minwidth=0, padding=2).splitlines() == ["a      b", "ccc    d"]
