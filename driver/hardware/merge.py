"""Deep-merge and `inherits:` resolution for the YAML hardware tables and driver-config overrides.

Kept apart from the table validation so the merge rules (mappings merge, everything else replaces,
`null` deletes) are stated and tested once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driver.errors import ConfigError


def deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """`top` over `base`: nested mappings merge, other values replace, a `None` value deletes the key."""
    out: dict[str, Any] = dict(base)
    for key, value in top.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def resolve_inherits(entries: Mapping[str, Any], where: str) -> dict[str, dict[str, Any]]:
    """Flatten every entry's `inherits:` chain (string or list, applied in order, entry itself last).

    `where` names the section (e.g. "hardware.gpus") for error messages; cycles and unknown bases
    are ConfigErrors naming the entry.
    """
    resolved: dict[str, dict[str, Any]] = {}

    def resolve(key: str, chain: tuple[str, ...]) -> dict[str, Any]:
        if key in resolved:
            return resolved[key]
        if key in chain:
            raise ConfigError(f"{where}.{key}.inherits: inheritance cycle {' -> '.join(chain + (key,))}")
        raw = entries.get(key)
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{where}.{key}: must be a mapping, got {type(raw).__name__}")
        parents = raw.get("inherits") or []
        if isinstance(parents, str):
            parents = [parents]
        if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
            raise ConfigError(f"{where}.{key}.inherits: must be a model key or a list of model keys")
        merged: dict[str, Any] = {}
        for parent in parents:
            if parent not in entries:
                raise ConfigError(f"{where}.{key}.inherits: unknown model {parent!r}")
            merged = deep_merge(merged, resolve(parent, chain + (key,)))
        own = {k: v for k, v in raw.items() if k != "inherits"}
        merged = deep_merge(merged, own)
        resolved[key] = merged
        return merged

    for key in entries:
        resolve(key, ())
    return resolved
