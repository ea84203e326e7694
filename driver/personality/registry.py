"""The personalities by name: the one lookup the command line, fleets and scenarios use.

`personality_named(name)` returns the value; `PERSONALITIES` lists them in the order `--help` shows.
"""

from __future__ import annotations

from driver.errors import InputError
from driver.personality import example, fakedra, nvidia, sriov
from driver.personality.base import Personality

DEFAULT_PERSONALITY = fakedra.NAME
PERSONALITIES: dict[str, Personality] = {p.name: p for p in (fakedra.PERSONALITY, nvidia.PERSONALITY, sriov.PERSONALITY,
                                                               example.PERSONALITY)}


def personality_named(name: str | None, where: str = "--personality") -> Personality:
    """The personality called `name` (None/empty: fake-dra); InputError naming `where` otherwise."""
    if not name:
        return PERSONALITIES[DEFAULT_PERSONALITY]
    found = PERSONALITIES.get(name)
    if found is None:
        raise InputError(f"{where}: unknown personality {name!r} (known: {', '.join(PERSONALITIES)})")
    return found
