"""Plain-text table and unit formatting shared by the human-facing commands (discover, show)."""

from __future__ import annotations

from collections.abc import Sequence


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns separated by two spaces; None renders as '-'."""
    cells = [[("-" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
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
