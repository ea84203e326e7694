"""PCI addresses as people type them, normalised to the name Linux gives the function in sysfs.

Why: sysfs names a function `DDDD:BB:DD.F` in lower-case hex (the kernel prints the domain with
`%04x`, so a VMD domain is `10000`), but users copy addresses from `nvidia-smi`, which prints an
8-digit domain in upper case (`00000000:07:00.0`), or from `lspci`, which omits domain 0
(`07:00.0`). Every place a user types an address (fault injection, the driver config) accepts
all of these and works with the sysfs form.
"""

from __future__ import annotations

import re

from driver.errors import InputError

_ADDRESS = re.compile(
    r"(?:(?P<domain>[0-9a-fA-F]{4,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<device>[0-9a-fA-F]{2})\.(?P<function>[0-7])"
)
MAX_DEVICE = 0x1F  # 5 bits of devfn


def normalize_pci_address(value: object, where: str) -> str:
    """`value` as the sysfs name of the function (e.g. `0000:07:00.0`); InputError naming `where`.

    Accepted: `0000:07:00.0`, upper case, nvidia-smi's `00000000:07:00.0`, lspci's `07:00.0`.
    """
    text = value.strip() if isinstance(value, str) else None
    match = _ADDRESS.fullmatch(text) if text else None
    if match is None:
        raise InputError(
            f"{where}: invalid PCI address {value!r}: expected DOMAIN:BUS:DEVICE.FUNCTION in hex, "
            "e.g. 0000:07:00.0 (nvidia-smi's 00000000:07:00.0 and lspci's 07:00.0 are accepted too)"
        )
    domain = int(match["domain"] or "0", 16)
    device = int(match["device"], 16)
    if device > MAX_DEVICE:
        raise InputError(f"{where}: invalid PCI address {value!r}: device number {match['device']} is above 1f")
    return f"{domain:04x}:{int(match['bus'], 16):02x}:{device:02x}.{match['function']}"
