"""Structured logging set-up shared by every command (text for humans, JSON lines for clusters).

Text lines are `LEVEL logger: message key=value ...` with values as a person would write them
(logfmt-style): a list is `a,b`, a string with spaces is quoted, None is `-`; never a Python repr
like `['gpu-0']`, which reads as noise and breaks `grep devices=gpu-0`.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Mapping

_RESERVED = set(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime"}
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_NEEDS_QUOTES = set(' "=\t\n\r\\')


def text_value(value: object) -> str:
    """One extra field's value for a text log line (see the module docstring)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, Mapping):
        text = ",".join(f"{k}:{_bare(v)}" for k, v in value.items())
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        text = ",".join(_bare(v) for v in items)
    else:
        text = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    if text == "":
        return '""' if not isinstance(value, (list, tuple, set, frozenset, Mapping)) else "-"
    return json.dumps(text) if any(c in _NEEDS_QUOTES for c in text) else text


def _bare(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def _jsonable(value: object) -> object:
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


class JsonFormatter(logging.Formatter):
    """One JSON object per line; `extra={...}` fields become top-level keys."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _RESERVED and not key.startswith("_"):
                entry[key] = _jsonable(value)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, sort_keys=False)


class TextFormatter(logging.Formatter):
    """`LEVEL logger: message key=value ...` for terminals."""

    def format(self, record: logging.LogRecord) -> str:
        extras = " ".join(
            f"{k}={text_value(v)}" for k, v in vars(record).items() if k not in _RESERVED and not k.startswith("_")
        )
        line = f"{record.levelname} {record.name}: {record.getMessage()}"
        if extras:
            line += " " + extras
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure_logging(level: str = "INFO", fmt: str = "text") -> None:
    """Route every logger to stderr in `fmt`; `level` is one of LEVELS (the CLI validates it)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
