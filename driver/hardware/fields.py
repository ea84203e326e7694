"""Field readers shared by the hardware-table parsers: one place that turns a wrong type or a missing
key into a ConfigError naming the model and field (e.g. `hardware.gpus.a30.mig.profiles.1g.6gb.sms`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driver.errors import ConfigError


def check_keys(where: str, entry: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = set(entry) - allowed
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {sorted(unknown, key=str)}; allowed: {sorted(allowed)}")


def integer(where: str, value: Any, *, minimum: int = 0, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{where}: must be an integer, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ConfigError(f"{where}: must be {bound}, got {value}")
    return value


def text(where: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: must be a non-empty string, got {value!r}")
    return value


def mapping(where: str, value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: must be a mapping, got {type(value).__name__}")
    return value


def required(where: str, entry: Mapping[str, Any], key: str) -> Any:
    if key not in entry:
        raise ConfigError(f"{where}.{key}: required field missing")
    return entry[key]


def sources_section(raw: Any) -> dict[str, str]:
    """The `sources:` section: short key -> citation text."""
    out = {}
    for key, citation in mapping("hardware.sources", raw).items():
        out[str(key)] = text(f"hardware.sources.{key}", citation)
    return out


def source_text(where: str, value: Any, sources: Mapping[str, str], default: str = "") -> str:
    """A row's `source:` (one key/text or a list of them) as citation text; keys of `sources:` are
    expanded, anything else is taken literally (a driver config may cite in prose)."""
    if value is None:
        return default
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ConfigError(f"{where}: must name at least one source")
    texts = []
    for item in items:
        item = text(where, item)
        texts.append(sources.get(item, item))
    return "; ".join(texts)


def unconfirmed(where: str, entry: Mapping[str, Any]) -> str:
    value = entry.get("unconfirmed")
    return "" if value is None else text(f"{where}.unconfirmed", value)
