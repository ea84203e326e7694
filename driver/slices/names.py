"""Names, UUIDs and quantity strings exactly as the API server would store them.

Why a module: every device, counter set and group name must be a DNS label (RFC 1123, <= 63
chars, lower case, no dots) and every quantity must be in Kubernetes' canonical form, otherwise the
apiserver rewrites it on write and the publisher sees a spurious diff on every resync. UUIDs must be
stable for the same node and hardware across restarts, so they are name-based (uuid5), never random.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from fractions import Fraction

from driver.errors import InputError
from driver.model.dnsnames import DNS_LABEL_MAX, is_c_identifier, is_dns_label, is_dns_subdomain  # noqa: F401 (re-exported)
from driver.model.quantity import format_quantity, parse_quantity


# Fixed namespace so that uuid5(namespace, node/pci/device) is the same on every run and host.
_UUID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_DNS, "fake-dra.example.com")
_NAMESPACE_BYTES = _UUID_NAMESPACE.bytes


def profile_label(profile: str) -> str:
    """NVIDIA profile name -> the DNS-label fragment used in device and group names.

    MIG names drop their punctuation (`1g.5gb` -> `1g5gb`, `1g.10gb+me` -> `1g10gbme`) the way
    the KEP examples shorten them; vGPU names keep their dash (`A100-4C` -> `a100-4c`).
    """
    out = profile.lower().replace(".", "").replace("+", "")
    out = re.sub(r"[^a-z0-9-]+", "-", out)
    out = re.sub(r"-+", "-", out).strip("-")
    if not out:
        raise InputError(f"profile name {profile!r} has no characters usable in a DNS label")
    return out


def require_dns_label(name: str, what: str) -> str:
    if not is_dns_label(name):
        raise InputError(f"{what} {name!r} is not a DNS label (lower-case alphanumerics and '-', <= 63 chars)")
    return name


def env_token(device_name: str) -> str:
    """Device name (a DNS label) -> the upper-case token used in env var names."""
    if not isinstance(device_name, str) or not is_dns_label(device_name):
        shown = repr(device_name) if len(repr(device_name)) <= 80 else repr(device_name)[:77] + "...'"
        raise InputError(f"invalid device name {shown}: must be a DNS label (lower-case alphanumerics and '-', at most 63)")
    return device_name.upper().replace("-", "_")


def stable_uuid(node_name: str, pci_address: str, device_name: str) -> str:
    """A UUID that stays the same for the same node, PCI function and device name: RFC 4122 version 5
    (SHA-1) of `node/pci/device` in a fixed namespace, exactly `uuid.uuid5`, computed without its
    UUID object (a fleet derives ~250 per node)."""
    raw = bytearray(hashlib.sha1(_NAMESPACE_BYTES + f"{node_name}/{pci_address}/{device_name}".encode()).digest()[:16])
    raw[6] = (raw[6] & 0x0F) | 0x50  # version 5
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class Identities:
    """How a render derives the identities that make a node's devices its own (today the `uuid` and
    `parentUUID` attributes): from the node name, the PCI function and the device name. A value
    handed to `render_pool`, so a fleet can render a node group once with stand-ins and fill in
    each node's identities later (driver.fleet.template) with this very derivation."""

    def uuid(self, node_name: str, pci_address: str, device_name: str) -> str:
        return stable_uuid(node_name, pci_address, device_name)


NODE_IDENTITIES = Identities()


def mib_quantity(mib: int) -> str:
    """MiB -> canonical binary quantity: 40960 -> `40Gi`, 4864 -> `4864Mi`, 0 -> `0`."""
    if mib < 0:
        raise ValueError(f"negative memory size {mib}")
    return format_quantity(Fraction(mib * 2**20), like="1Mi")


def mbps_quantity(mbps: int) -> str:
    """Mb/s -> canonical decimal quantity in bit/s: 100000 -> `100G`, 12500 -> `12500M`."""
    if mbps < 0:
        raise ValueError(f"negative bandwidth {mbps}")
    return format_quantity(Fraction(mbps * 10**6), like="1M")


def parse_size(text: str | int, what: str) -> int:
    """Quantity (`1Gi`, `100M`, `1.5Gi`, `512`) -> whole base units; InputError names `what`.

    Only what the `slices:` config needs (steps for request policies): any Kubernetes quantity
    that is a whole, non-negative number of base units; fractions are rejected, not rounded.
    """
    if isinstance(text, bool):
        raise InputError(f"{what}: expected a quantity like 1Gi or 100M, got {text!r}")
    try:
        value = parse_quantity(text)
    except InputError as exc:
        raise InputError(f"{what}: expected a quantity like 1Gi or 100M: {exc}") from None
    if value < 0:
        raise InputError(f"{what}: must not be negative, got {text!r}")
    if value.denominator != 1:
        raise InputError(f"{what}: expected a whole-number quantity, got {text!r}")
    return int(value)
