"""`--personality` (FAKE_DRA_PERSONALITY): which DRA driver(s) the node's hardware is presented as.

The one place a command turns the flag, `--driver-name` and the driver config into the configured
driver profiles it renders, publishes and prepares with (driver.personality).
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from driver.commands import common
from driver.errors import InputError
from driver.personality import DriverProfile, personality_named

log = logging.getLogger("fake-dra.config")


def profiles_from_args(args: argparse.Namespace, config: dict[str, Any] | None = None) -> tuple[DriverProfile, ...]:
    """The personality's driver profiles, configured from the driver config (read here when not
    given). An explicit --driver-name keeps only that driver (fake-dra: renames its one driver).
    Sets `args.driver_name` to the first profile's name, where older code paths read it."""
    personality = personality_named(getattr(args, "personality", None))
    if config is None:
        config = common.load_driver_config(getattr(args, "driver_config", None))
    for section in common.DRIVER_CONFIG_SECTIONS:
        if config.get(section) is not None and section not in personality.sections:
            log.warning(f"driver config section {section!r} is not read by personality {personality.name!r} "
                        f"(it reads {', '.join(personality.sections)})")
    explicit = getattr(args, "driver_name", None)
    profiles = personality.drivers(config, explicit)
    if explicit and personality.fixed_driver_names:
        profiles = tuple(p for p in profiles if p.name == explicit)
    if not profiles:  # pragma: no cover - build() refuses a name it does not publish
        raise InputError(f"--driver-name {explicit!r}: not a driver of personality {personality.name!r}")
    args.driver_name = profiles[0].name
    return profiles
