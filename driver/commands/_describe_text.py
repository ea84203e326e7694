"""The text layout `fake-dra describe` shares with kubectl describe: `Label:  value` lines with the
values of a block aligned, nested blocks indented by two spaces, `<none>` for nothing, and the
Events table last (Type, Reason, Age, From, Message; `Age` as `5s (x3 over 2m)` when aggregated).

Two writers: `Tabbed` is kubectl's own (k8s.io/kubectl pkg/describe/describe.go: a PrefixWriter
over one text/tabwriter with padding 2, driver.tables.tabwrite), used where fake-dra prints what
kubectl prints (a Node's first part, Events); `Block` lays out fake-dra's own sections the same
way and wraps long values at spaces when the output is a terminal (never when piped)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import yaml

from driver.commands._objects import since
from driver.tables import DESCRIBE_MIN_WIDTH, DESCRIBE_PADDING, tabwrite, wrap_width

NONE = "<none>"


def _wrap(text: str, width: int) -> list[str]:
    """A value line broken at spaces to fit (a word is never cut: paths and IDs stay whole)."""
    return textwrap.wrap(text, width=width, break_long_words=False, break_on_hyphens=False,
                         subsequent_indent="  ") or [""]


class Tabbed:
    """kubectl describe's PrefixWriter: `write(level, text)` appends text (tabs separate cells,
    newlines end lines) after two spaces per level; `flush()` ends every column block, as
    DescribeEvents's w.Flush() does; `text()` is the tabwriter's output."""

    def __init__(self) -> None:
        self._done: list[str] = []
        self._pending: list[str] = []

    def write(self, level: int, text: str) -> None:
        self._pending.append("  " * level + text)

    def flush(self) -> None:
        raw = "".join(self._pending)
        self._pending = []
        if raw:
            lines = raw[:-1].split("\n") if raw.endswith("\n") else raw.split("\n")
            self._done.append(tabwrite([line.split("\t") for line in lines], minwidth=DESCRIBE_MIN_WIDTH,
                                       padding=DESCRIBE_PADDING))

    def text(self) -> str:
        self.flush()
        return "\n".join(self._done)


def rfc1123z(stamp: Any) -> str:
    """An RFC 3339 time stamp as kubectl describe prints it (Go's time.RFC1123Z)."""
    if not stamp:
        return "Mon, 01 Jan 0001 00:00:00 +0000"  # Go's zero time, as kubectl prints an unset one
    try:
        when = datetime.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return str(stamp)
    return when.strftime("%a, %d %b %Y %H:%M:%S +0000")


def event_lines(out: Tabbed, found: Sequence[Mapping[str, Any]], now: datetime) -> None:
    """DescribeEvents: `Events:  <none>`, or the table of them after a flush."""
    if not found:
        out.write(0, "Events:\t<none>\n")
        return
    out.flush()
    out.write(0, "Events:\n  Type\tReason\tAge\tFrom\tMessage\n")
    out.write(1, "----\t------\t----\t----\t-------\n")
    for e in found:
        first = since(e.get("firstTimestamp"), now)
        count = int(e.get("count") or 1)
        age = f"{since(e.get('lastTimestamp'), now)} (x{count} over {first})" if count > 1 else first
        source = (e.get("source") or {}).get("component") or e.get("reportingController") or e.get("reportingComponent") or ""
        message = str(e.get("message") or "").strip()
        field_path = (e.get("involvedObject") or {}).get("fieldPath")
        if field_path:
            message = f"{field_path}: {message}"
        out.write(1, f"{e.get('type') or ''}\t{e.get('reason') or ''}\t{age}\t{source}\t{message}\n")


class Block:
    """Lines of one describe output; the values of every `field` at one nesting level align."""

    def __init__(self) -> None:
        self._entries: list[tuple[int, str | None, str]] = []  # (level, label or None for a plain line, text)

    def field(self, label: str, value: object, level: int = 0) -> None:
        self._entries.append((level, label, NONE if value is None or value == "" else str(value)))

    def line(self, text: str, level: int = 0) -> None:
        self._entries.append((level, None, text))

    def head(self, label: str, level: int = 0) -> None:
        """A label whose value is the indented block that follows."""
        self.line(f"{label}:", level)

    def text(self) -> str:
        # Top-level fields align throughout (as kubectl's); nested ones with the fields of their
        # section: the same level, no shallower entry between.
        groups: list[tuple[int, int]] = []
        section: dict[int, int] = {}
        for n, (level, _, _) in enumerate(self._entries):
            for deeper in [k for k in section if k > level]:
                section[deeper] = n  # a shallower entry starts new sections below it
            groups.append((level, section.setdefault(level, 0) if level else 0))
        widths: dict[tuple[int, int], int] = {}
        for (level, label, _), group in zip(self._entries, groups):
            if label is not None:
                widths[group] = max(widths.get(group, 0), len(label) + 3)
        lines = []
        for (level, label, text), group in zip(self._entries, groups):
            indent = "  " * level
            if label is None:
                lines.extend((indent + part).rstrip() for part in text.split("\n"))
                continue
            width = wrap_width()
            room = max(20, width - len(indent) - widths[group]) if width else None
            first, *rest = [w for part in text.split("\n") for w in (_wrap(part, room) if room else [part])]
            lines.append((indent + f"{label}:".ljust(widths[group]) + first).rstrip())
            lines.extend((indent + " " * widths[group] + more).rstrip() for more in rest)
        return "\n".join(lines)


def mapping_text(value: Mapping[str, Any] | None) -> str:
    """Labels or annotations as kubectl shows them: `key=value` per line, `<none>` when empty."""
    if not value:
        return NONE
    return "\n".join(f"{k}={v}" for k, v in sorted(value.items()))


def header(out: Block, obj: Mapping[str, Any], now: datetime) -> None:
    """Name, Namespace, Labels, Annotations, API Version, Kind, UID, Created (kubectl's first lines)."""
    meta = obj.get("metadata") or {}
    out.field("Name", meta.get("name"))
    if meta.get("namespace"):
        out.field("Namespace", meta.get("namespace"))
    out.field("Labels", mapping_text(meta.get("labels")))
    out.field("Annotations", mapping_text(meta.get("annotations")))
    out.field("API Version", obj.get("apiVersion"))
    out.field("Kind", obj.get("kind"))
    if meta.get("uid"):
        out.field("UID", meta.get("uid"))
    stamp = meta.get("creationTimestamp")
    out.field("Created", f"{stamp} ({since(stamp, now)} ago)" if stamp else None)


def yaml_block(out: Block, label: str, value: Any, level: int = 0) -> None:
    """A part of an object kubectl has no describer for, as indented YAML."""
    if value in (None, {}, []):
        out.field(label, NONE, level)
        return
    out.head(label, level)
    text = yaml.safe_dump(value, sort_keys=True, default_flow_style=False, width=1000).rstrip()
    out.line(text, level + 1)


def events(out: Block, found: Sequence[Mapping[str, Any]], now: datetime) -> None:
    """The Events section of a Block, laid out as kubectl's (event_lines)."""
    if not found:
        out.field("Events", NONE)
        return
    tabbed = Tabbed()
    event_lines(tabbed, found, now)
    out.line(tabbed.text())
