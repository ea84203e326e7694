"""Plain-text tables and unit formatting for every human-facing output (discover, show, get, the e2e
reports); a leaf module, so the commands and the e2e harness share it without importing each other.

Tables fit a terminal of TABLE_WIDTH columns without breaking a token: a value that does not fit
its column is wrapped at spaces when the column allows it, and otherwise replaced by a marker `[n]`
and printed in full below the table, so names, PCI addresses and CDI IDs stay copy-pastable.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

TABLE_WIDTH = 100
MIN_WRAP_WIDTH = 12
MIN_NOTE = 8


def _cells(rows: Sequence[Sequence[object]]) -> list[list[str]]:
    return [[("-" if v is None else str(v)) for v in row] for row in rows]


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width=width, break_long_words=False, break_on_hyphens=False) or [""]


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], width: int = TABLE_WIDTH,
          wrap: Sequence[int] = (), sep: str = "  ") -> str:
    """Left-aligned columns; None renders as '-'. At most `width` columns (see module docstring).

    `wrap` lists the columns whose long values may span several lines (prose: reasons, messages).
    The first column (the name) is never moved below the table.
    """
    cells = _cells(rows)
    headers = [str(h) for h in headers]
    n = len(headers)
    notes: list[tuple[str, str, str]] = []

    def natural() -> list[int]:
        return [max([len(headers[i])] + [len(r[i]) for r in cells]) for i in range(n)]

    def total(widths: Sequence[int]) -> int:
        return sum(widths) + len(sep) * (n - 1)

    def to_note(r: int, c: int) -> None:
        # Rows with the same long value share one note.
        marker = next((m for m, h, v in notes if h == headers[c] and v == cells[r][c]), None)
        if marker is None:
            marker = f"[{len(notes) + 1}]"
            notes.append((marker, headers[c], cells[r][c]))
        cells[r][c] = marker

    widths = natural()
    if total(widths) > width and wrap:
        fixed = sum(w for i, w in enumerate(widths) if i not in wrap) + len(sep) * (n - 1)
        room = max(width - fixed, MIN_WRAP_WIDTH * len(wrap))

        def longest_word(c: int) -> int:
            return max([len(headers[c])] + [len(w) for row in cells for w in row[c].split()])

        # Each wrapping column needs at least its longest word; while they do not fit together,
        # the values holding the longest word of the widest such column go below the table.
        while sum(longest_word(c) for c in wrap) > room:
            col = max(wrap, key=longest_word)
            need = longest_word(col)
            hits = [r for r, row in enumerate(cells) if any(len(w) == need for w in row[col].split())]
            if not hits:
                break
            for r in hits:
                to_note(r, col)
        # Then share the room out, from each minimum up, in proportion to what each column still
        # lacks for its widest value (the column with the longest prose gets the most).
        share = {c: longest_word(c) for c in wrap}
        full = {c: max([len(headers[c])] + [len(row[c]) for row in cells]) for c in wrap}
        spare = room - sum(share.values())
        lacking = {c: full[c] - share[c] for c in wrap}
        total_lack = sum(lacking.values())
        if spare > 0 and total_lack:
            for c in wrap:
                add = min(lacking[c], spare * lacking[c] // total_lack)
                share[c] += add
            rest = room - sum(share.values())
            for c in sorted(wrap, key=lambda c: full[c] - share[c], reverse=True):
                add = max(0, min(rest, full[c] - share[c]))
                share[c] += add
                rest -= add
        for c in wrap:
            widths[c] = share[c]
    while total(widths) > width:
        # Move the longest values of the widest column (never the name column) below the table.
        # Values up to MIN_NOTE characters stay: a marker would hardly be shorter.
        candidates = [c for c in range(1, n) if c not in wrap and widths[c] > max(len(headers[c]), MIN_NOTE)]
        if not candidates:
            break
        col = max(candidates, key=lambda c: widths[c])
        target = max(len(headers[col]), MIN_NOTE, width - (total(widths) - widths[col]))
        for r, row in enumerate(cells):
            if len(row[col]) > target:
                to_note(r, col)
        new = max([len(headers[col])] + [len(row[col]) for row in cells])
        if new >= widths[col]:
            break
        widths[col] = new
    lines = [sep.join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    for row in cells:
        parts = [_wrap(v, widths[i]) if i in wrap else [v] for i, v in enumerate(row)]
        for k in range(max(len(p) for p in parts)):
            lines.append(sep.join((p[k] if k < len(p) else "").ljust(w) for p, w in zip(parts, widths)).rstrip())
    if notes:
        lines.append("")
        for marker, header, value in notes:
            lines.extend(textwrap.wrap(f"{marker} {header}: {value}", width=width, subsequent_indent="    ",
                                       break_long_words=False, break_on_hyphens=False))
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
