"""Personalities: which DRA driver(s) the node's hardware is presented as (fake-dra's own, NVIDIA's,
the SR-IOV driver's), as one value given to the renderer, the prepare path and the command line.

Public API: `personality_named(name)`, `PERSONALITIES`, `DEFAULT_PERSONALITY`, and the types of
driver.personality.base (`Personality`, `DriverProfile`, `CdiNaming`, `AppliedConfig`,
`PreparedElsewhere`). docs/personalities.md says what each one matches, and against which commit.
"""

from driver.personality.base import AppliedConfig, CdiNaming, DriverProfile, Personality, PreparedElsewhere
from driver.personality.registry import DEFAULT_PERSONALITY, PERSONALITIES, personality_named

__all__ = ["AppliedConfig", "CdiNaming", "DEFAULT_PERSONALITY", "DriverProfile", "PERSONALITIES", "Personality",
           "PreparedElsewhere", "personality_named"]
