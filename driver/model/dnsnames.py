"""The name rules of the Kubernetes API (RFC 1123 labels and subdomains, C identifiers).

A leaf module: command-line checks (`--node-name`) need them without loading the slice renderer.
"""

from __future__ import annotations

import re

DNS_LABEL_MAX = 63
_DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_C_IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_dns_label(name: str) -> bool:
    return len(name) <= DNS_LABEL_MAX and bool(_DNS_LABEL_RE.fullmatch(name))


def is_dns_subdomain(name: str, max_len: int = 253) -> bool:
    return len(name) <= max_len and bool(_DNS_SUBDOMAIN_RE.fullmatch(name))


def is_c_identifier(name: str) -> bool:
    return bool(_C_IDENTIFIER_RE.fullmatch(name))
