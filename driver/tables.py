"""Plain-text tables and unit formatting for every human-facing output (discover, show, get, the e2e
reports); a leaf module, so the commands and the e2e harness share it without importing each other.

Two kinds of table:

- `kubectl_table` (what `get` prints) and `tabwrite` (what `describe` lays out) are Go's
  text/tabwriter as kubectl configures it, so the output is kubectl's byte for byte: `kubectl get`
  pads every column but the last to its widest cell plus three spaces, at least six
  (k8s.io/cli-runtime pkg/printers/tabwriter.go: minwidth 6, padding 3); `kubectl describe` pads
  by two (k8s.io/kubectl pkg/describe/describe.go tabbedString: minwidth 0, padding 2). Neither
  ever wraps a cell, whatever the terminal.
- `table` (fake-dra's own reports) fits a terminal ($COLUMNS, else the terminal's width) without
  ever breaking or hiding a value: a column listed in `wrap` (prose: reasons, messages) wraps at
  spaces, a word longer than its column standing alone on its line; when the other columns alone
  do not fit, the table is wider than the terminal rather than shortened. Piped (no terminal and
  no $COLUMNS) nothing wraps: a script reading the output gets one line per row. Names, PCI
  addresses and CDI IDs stay whole and copy-pastable where they stand.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Sequence

DEFAULT_WIDTH = 100  # when the output is not a terminal and $COLUMNS is unset
MIN_WIDTH = 20
MIN_WRAP_WIDTH = 12


def terminal_width(default: int = DEFAULT_WIDTH) -> int:
    """Columns to fit: $COLUMNS when set, else the terminal's width, else `default` (a pipe, a file)."""
    return max(MIN_WIDTH, shutil.get_terminal_size(fallback=(default, 24)).columns)


def wrap_width() -> int | None:
    """The width prose may be wrapped to: $COLUMNS when set, else the terminal's when standard
    output is one; None when piped (then nothing wraps)."""
    if os.environ.get("COLUMNS", "").strip().isdigit():
        return max(MIN_WIDTH, int(os.environ["COLUMNS"]))
    try:
        if not sys.stdout.isatty():
            return None
    except (AttributeError, ValueError):  # a closed or replaced stream
        return None
    return terminal_width()


KUBECTL_MIN_WIDTH, KUBECTL_PADDING = 6, 3  # cli-runtime's GetNewTabWriter (kubectl get)
DESCRIBE_MIN_WIDTH, DESCRIBE_PADDING = 0, 2  # kubectl describe's tabbedString


def tabwrite(lines: Sequence[Sequence[str]], *, minwidth: int, padding: int) -> str:
    """Go's text/tabwriter with a space pad character: each line is its cells; every cell but a
    line's last is tab-terminated and aligned with the cells of the same column in the adjacent
    lines that have one (a column block ends at the first line without that cell), padded to the
    block's widest cell plus `padding`, at least `minwidth`. A line's last cell is never padded, so
    a line of one cell (a heading) ends every block."""
    rows = [[str(c) for c in line] or [""] for line in lines]
    out: list[str] = []

    def emit(first: int, last: int, widths: list[int]) -> None:
        for row in rows[first:last]:
            parts = [cell.ljust(widths[j]) if j < len(widths) else cell for j, cell in enumerate(row)]
            out.append("".join(parts).rstrip())

    def block(first: int, last: int, widths: list[int]) -> None:
        column = len(widths)
        start = first
        i = first
        while i < last:
            if column >= len(rows[i]) - 1:
                i += 1
                continue
            emit(start, i, widths)
            start = i
            width = minwidth
            while i < last and column < len(rows[i]) - 1:
                width = max(width, len(rows[i][column]) + padding)
                i += 1
            block(start, i, [*widths, width])
            start = i
        emit(start, last, widths)

    block(0, len(rows), [])
    return "\n".join(out)


def kubectl_table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, no_headers: bool = False) -> str:
    """A table as `kubectl get` prints it (module docstring); None renders as `<none>`."""
    cells = [["<none>" if v is None else str(v) for v in row] for row in rows]
    return tabwrite(cells if no_headers else [list(headers), *cells],
                    minwidth=KUBECTL_MIN_WIDTH, padding=KUBECTL_PADDING)


def _cells(rows: Sequence[Sequence[object]]) -> list[list[str]]:
    return [[("-" if v is None else str(v)) for v in row] for row in rows]


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width=width, break_long_words=False, break_on_hyphens=False) or [""]


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], width: int | None = None,
          wrap: Sequence[int] = (), sep: str = "  ") -> str:
    """Left-aligned columns; None renders as '-'. Fits `width` columns (default: `wrap_width()`,
    nothing wraps when that is None) by wrapping the `wrap` columns at spaces; never shortens a
    value (see the module docstring)."""
    width = width or wrap_width()
    if width is None:
        wrap = ()
        width = 1 << 30
    cells = _cells(rows)
    headers = [str(h) for h in headers]
    n = len(headers)
    widths = [max([len(headers[i])] + [len(r[i]) for r in cells]) for i in range(n)]
    wrap = [c for c in wrap if 0 <= c < n]
    if sum(widths) + len(sep) * (n - 1) > width and wrap:
        fixed = sum(w for i, w in enumerate(widths) if i not in wrap) + len(sep) * (n - 1)
        room = max(width - fixed, MIN_WRAP_WIDTH * len(wrap))
        # Each wrapping column gets its longest word when the room allows (a word is never cut: one
        # longer than its column stands alone on its line, past the right edge) ...
        fair = room // len(wrap)
        share = {c: min(fair, max([len(headers[c])] + [len(w) for row in cells for w in row[c].split()])) for c in wrap}
        # ... then the room left is shared in proportion to what each still lacks for its widest value.
        lacking = {c: widths[c] - share[c] for c in wrap}
        spare, total_lack = room - sum(share.values()), sum(lacking.values())
        if spare > 0 and total_lack:
            for c in wrap:
                share[c] += min(lacking[c], spare * lacking[c] // total_lack)
            rest = room - sum(share.values())
            for c in sorted(wrap, key=lambda c: widths[c] - share[c], reverse=True):
                add = max(0, min(rest, widths[c] - share[c]))
                share[c] += add
                rest -= add
        for c in wrap:
            widths[c] = min(widths[c], max(share[c], len(headers[c])))
    lines = [sep.join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    for row in cells:
        parts = [_wrap(v, widths[i]) if i in wrap else [v] for i, v in enumerate(row)]
        for k in range(max(len(p) for p in parts)):
            lines.append(sep.join((p[k] if k < len(p) else "").ljust(w) for p, w in zip(parts, widths)).rstrip())
    return "\n".join(lines)


def speed(mbps: int | None) -> str:
    """Link speed as the kernel's Mb/s in Gb/s when round ("100 Gb/s"), "unknown" when None."""
    if mbps is None:
        return "unknown"
    if mbps % 1000 == 0:
        return f"{mbps // 1000} Gb/s"
    return f"{mbps / 1000:g} Gb/s" if mbps >= 1000 else f"{mbps} Mb/s"


def mib(value: int) -> str:
    return f"{value} MiB"
