"""The docs-example runner itself: parsing, output matching, exit codes, background jobs, clean-up."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from tests.docs.console import matches, parse_page, run_page


def page(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "page.md"
    p.write_text(textwrap.dedent(text))
    return p


def test_parse_commands_output_exit_codes_and_skips() -> None:
    blocks = parse_page(textwrap.dedent("""\
        Intro.

        ```console
        $ echo one \\
            two
        one two
        $ false  # exit 1
        ```

        <!-- not-run: needs a cluster -->
        ```console
        $ kubectl get pods
        ```

        ```bash
        $ not a console block
        ```

        ```console
        $ cat > f.yaml <<'EOF'
        a: 1
        $ not a command inside the here-document
        EOF
        $ cat f.yaml
        a: 1
        ...
        ```
        """))
    assert len(blocks) == 3
    first, skipped, heredoc = blocks
    assert [c.text for c in first.commands] == ["echo one \\\n    two", "false  # exit 1"]
    assert first.commands[0].expected == ["one two"] and first.commands[1].exit_code == 1
    assert skipped.skipped == "needs a cluster"
    assert heredoc.commands[0].text.endswith("EOF") and "$ not a command" in heredoc.commands[0].text
    assert heredoc.commands[1].expected == ["a: 1", "..."]


def test_matching_is_whole_output_with_ellipsis() -> None:
    assert matches(["a", "b"], ["a", "b  ", ""])
    assert not matches(["a"], ["a", "b"]), "extra output is a mismatch"
    assert not matches(["b", "a"], ["a", "b"]), "order matters"
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert matches(["...", "c", "..."], ["a", "b", "c", "d"])
    assert matches(["a", "...", "b"], ["a", "b"]), "... may stand for no lines"
    assert not matches(["a", "...", "x"], ["a", "b", "c"])


def test_state_carries_between_commands_and_blocks(tmp_path: Path) -> None:
    p = page(tmp_path, """\
        ```console
        $ export GREETING=hello; mkdir sub; cd sub
        ```

        ```console
        $ echo "$GREETING from $(basename "$PWD")"; echo to-stderr >&2
        hello from sub
        to-stderr
        $ exit_with() { return "$1"; }; exit_with 3  # exit 3
        ```
        """)
    work = tmp_path / "work"
    work.mkdir()
    failures, ran = run_page(p, work)
    assert ran == 3 and not failures, failures


def test_wrong_output_or_exit_code_fails_with_both_shown(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    failures, _ = run_page(page(tmp_path, """\
        ```console
        $ echo actual
        expected
        ```
        """), work)
    assert len(failures) == 1 and "output differs" in failures[0].why and "actual" in failures[0].why
    failures, _ = run_page(page(tmp_path, """\
        ```console
        $ false
        ```
        """), work)
    assert "exit code 1, expected 0" in failures[0].why


def test_fake_dra_is_the_venv_one_and_home_is_private(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    os.environ["FAKE_DRA_STORE_PROBE_TEST"] = "leak"
    try:
        failures, _ = run_page(page(tmp_path, f"""\
            ```console
            $ test "$(command -v fake-dra)" = "{Path(os.sys.executable).parent / 'fake-dra'}" && echo venv
            venv
            $ test "$HOME" = "$PWD/.home" && echo private-home
            private-home
            $ env | grep -c '^FAKE_DRA_' # exit 1
            0
            ```
            """), work)
    finally:
        del os.environ["FAKE_DRA_STORE_PROBE_TEST"]
    assert not failures, failures


def test_background_jobs_are_reported_and_killed(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    failures, _ = run_page(page(tmp_path, """\
        ```console
        $ sleep 300 &
        $ sleep 301 > /dev/null 2>&1 &
        ```
        """), work)
    assert len(failures) == 1 and "background processes still running" in failures[0].why
    assert "sleep 300" in failures[0].why and "sleep 301" in failures[0].why
    for pid in (line.split(":")[0].strip() for line in failures[0].why.splitlines()[1:]):
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split(")")[1][:3]


def test_a_stopped_background_job_is_fine(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    failures, ran = run_page(page(tmp_path, """\
        ```console
        $ sleep 300 &
        $ kill %1; wait
        ```
        """), work)
    assert ran == 2 and not failures, failures
