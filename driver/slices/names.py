"""Names, UUIDs and quantity strings exactly as the API server would store them.

Why a module: every device, counter set and group name must be a DNS label (RFC 1123, <= 63
chars, lower case, no dots) and every quantity must be in Kubernetes' canonical form, otherwise the
apiserver rewrites it on write and the publisher sees a spurious diff on every resync. UUIDs must be
stable for the same node and hardware across restarts, so they are name-based (uuid5), never random.
"""

from __future__ import annotations

import re
import uuid

from driver.errors import InputError

DNS_LABEL_MAX = 63
_DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_C_IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Fixed namespace so that uuid5(namespace, node/pci/device) is the same on every run and host.
_UUID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_DNS, "fake-dra.example.com")


def is_dns_label(name: str) -> bool:
    return len(name) <= DNS_LABEL_MAX and bool(_DNS_LABEL_RE.match(name))


def is_dns_subdomain(name: str, max_len: int = 253) -> bool:
    return len(name) <= max_len and bool(_DNS_SUBDOMAIN_RE.match(name))


def is_c_identifier(name: str) -> bool:
    return bool(_C_IDENTIFIER_RE.match(name))


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


def stable_uuid(node_name: str, pci_address: str, device_name: str) -> str:
    """A UUID that stays the same for the same node, PCI function and device name."""
    return str(uuid.uuid5(_UUID_NAMESPACE, f"{node_name}/{pci_address}/{device_name}"))


# Binary suffixes for memory (MiB in, canonical Ki/Mi/Gi/Ti/Pi/Ei out).
_BINARY = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL = ("k", "M", "G", "T", "P", "E")


def mib_quantity(mib: int) -> str:
    """MiB -> canonical binary quantity: 40960 -> `40Gi`, 4864 -> `4864Mi`, 0 -> `0`."""
    if mib < 0:
        raise ValueError(f"negative memory size {mib}")
    if mib == 0:
        return "0"
    value, idx = mib, 1  # idx into _BINARY: Mi
    while value % 1024 == 0 and idx + 1 < len(_BINARY):
        value //= 1024
        idx += 1
    return f"{value}{_BINARY[idx]}"


def mbps_quantity(mbps: int) -> str:
    """Mb/s -> canonical decimal quantity in bit/s: 100000 -> `100G`, 12500 -> `12500M`."""
    if mbps < 0:
        raise ValueError(f"negative bandwidth {mbps}")
    if mbps == 0:
        return "0"
    value, idx = mbps, 1  # idx into _DECIMAL: M
    while value % 1000 == 0 and idx + 1 < len(_DECIMAL):
        value //= 1000
        idx += 1
    return f"{value}{_DECIMAL[idx]}"


_QTY_RE = re.compile(r"^\s*(\d+)\s*([kMGTPE]i?|Ki)?\s*$")
_FACTORS = {
    None: 1,
    **{s: 1000 ** (i + 1) for i, s in enumerate(_DECIMAL)},
    **{s: 1024 ** (i + 1) for i, s in enumerate(_BINARY)},
}


def parse_size(text: str | int, what: str) -> int:
    """Whole-number quantity (`1Gi`, `100M`, `512`) -> integer base units; InputError names `what`.

    Only what the `slices:` config needs (steps for request policies); fractional or exponent
    forms are rejected with a clear message instead of being rounded silently.
    """
    if isinstance(text, bool):
        raise InputError(f"{what}: expected a quantity like 1Gi or 100M, got {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise InputError(f"{what}: must not be negative, got {text}")
        return text
    m = _QTY_RE.match(str(text))
    if not m:
        raise InputError(f"{what}: expected a whole-number quantity like 1Gi or 100M, got {text!r}")
    return int(m.group(1)) * _FACTORS[m.group(2)]
