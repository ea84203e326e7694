"""Validation of every name that ends up in a file path, CDI name or env var.

Why: the kubelet and the API hand us claim namespaces, names, UIDs and device names; a hostile
or buggy value ("../../etc", 10 kB of text) must be rejected with a clear error before any path
is built from it. Each check returns the value unchanged so call sites read `uid = check_uid(x)`.
"""

from __future__ import annotations

import re

from driver.errors import InputError
from driver.slices.names import is_dns_label, is_dns_subdomain

# Kubernetes UIDs are RFC 4122 UUIDs; accept any short [A-Za-z0-9-] token so test UIDs work,
# but nothing that could act as a path separator or traversal.
_UID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,63}$")


LOG_LIMIT = 128  # characters of a kubelet-supplied string kept in a log line or an error message


def shorten(value: object, limit: int = LOG_LIMIT) -> str:
    """A kubelet-supplied string cut for logs and messages (names, namespaces and UIDs arrive
    unvalidated and may be megabytes long); says how long the original was."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else f"{text[:limit]}...({len(text)} chars)"


def _fail(what: str, value: object, rule: str) -> InputError:
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "...'"
    return InputError(f"invalid {what} {shown}: {rule}")


def check_uid(value: object, what: str = "claim UID") -> str:
    if not isinstance(value, str) or not _UID.fullmatch(value):  # match() would let "x\n" through
        raise _fail(what, value, "must be 1-64 characters of [A-Za-z0-9-] starting alphanumeric")
    return value


def check_label(value: object, what: str) -> str:
    if not isinstance(value, str) or not is_dns_label(value):
        raise _fail(what, value, "must be a DNS label (lower-case alphanumerics and '-', at most 63)")
    return value


def check_subdomain(value: object, what: str, max_len: int = 253) -> str:
    if not isinstance(value, str) or not is_dns_subdomain(value, max_len):
        raise _fail(what, value, f"must be a DNS subdomain of at most {max_len} characters")
    return value
