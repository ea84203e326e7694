"""Environment a workload sees for each prepared device (CDI containerEdits).

Why: with simulated hardware there is no device node to inspect, so the env is how a workload
(and the e2e harness) learns what it got: type, profile, UUIDs, PCI address, bandwidth and the
opaque config that applied. Names are FAKE_DRA_<DEVICE>_<FIELD>, <DEVICE> being the device name
upper-cased with '-' -> '_' (device names are DNS labels, so this is always a valid identifier).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from driver.model.deviceattrs import attr, granted
from driver.personality.base import AppliedConfig
from driver.slices.names import env_token

_ATTRS = {"TYPE": "type", "PROFILE": "profile", "UUID": "uuid", "PARENT_UUID": "parentUUID",
          "PCI_BUS_ID": "pciBusID", "PRODUCT_NAME": "productName", "NUMA_NODE": "numaNode"}


def _env_value(value: Any) -> str:
    """A scalar as text (bools lower-case); a list-typed attribute (DRAListTypeAttributes) comma-joined."""
    if isinstance(value, list):
        return ",".join(_env_value(v) for v in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def device_env(
    claim: Any, result: Mapping[str, Any], device: Mapping[str, Any], config: AppliedConfig | None, driver_name: str,
    unrequested: Mapping[str, str] | None = None,
) -> dict[str, str]:
    prefix = f"FAKE_DRA_{env_token(str(result['device']))}_"
    env = {prefix + "CLAIM": f"{claim.namespace}/{claim.name}", prefix + "REQUEST": str(result.get("request", ""))}
    for key, name in _ATTRS.items():
        value = attr(dict(device), name, driver_name)
        if value is not None:
            env[prefix + key] = _env_value(value)
    # What the claim was granted, not the device's full capacity (shared GPUs, VF bandwidth).
    for key, name in (("MEMORY", "memory"), ("BANDWIDTH", "bandwidth")):
        amount = granted(result, device, name, unrequested)
        if amount is not None:
            env[prefix + key] = amount
    if result.get("shareID"):
        env[prefix + "SHARE_ID"] = str(result["shareID"])
    if config is not None:
        env[prefix + "CONFIG_KIND"] = config.kind
        env[prefix + "CONFIG"] = json.dumps(dict(config.params), sort_keys=True, separators=(",", ":"))
    return env
