"""Every ```console example in README.md and docs/*.md runs and prints what it shows.

The convention (TEAM.md, implemented in tests/docs/console.py): `$ ` lines run in one bash per page,
in a fresh temporary directory with the venv's `fake-dra` on PATH; the lines below a command are
its output (`...` = any lines); exit 0 unless `# exit N`; `<!-- not-run: reason -->` skips a block.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.docs.console import parse_page, run_page

ROOT = Path(__file__).resolve().parents[2]
# The README's tour is held to the same standard as the docs pages.
RUN_README_EXAMPLES = True


def pages() -> list[Path]:
    found = sorted((ROOT / "docs").glob("*.md"))
    if RUN_README_EXAMPLES:
        found.insert(0, ROOT / "README.md")
    return found


@pytest.mark.slow
@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples(page: Path) -> None:
    if not any(b.skipped is None and b.commands for b in parse_page(page.read_text(encoding="utf-8"))):
        pytest.skip(f"{page.name} has no runnable console examples")
    # Short path: the tour starts a plugin whose unix sockets live under this directory (107-byte limit).
    with tempfile.TemporaryDirectory(prefix="fdra-docs-", dir="/tmp") as tmp:
        failures, ran = run_page(page, Path(tmp))
    assert ran > 0
    assert not failures, f"{page.relative_to(ROOT)}:\n" + "\n\n".join(str(f) for f in failures)


def test_docs_pages_exist() -> None:
    # The README's tour and the longer one it links to are both run above.
    assert (ROOT / "README.md") in pages()
    assert (ROOT / "docs" / "local-mode.md") in pages()
