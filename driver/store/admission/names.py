"""Name and value formats of the Kubernetes API, with apimachinery's exact messages.

Sources: k8s.io/apimachinery pkg/util/validation/validation.go (IsDNS1123Label, IsDNS1123Subdomain,
IsDNS1035Label, IsValidPercent, IsRelaxedEnvVarName, IsConfigMapKey, IsValidPortNum,
IsValidPortName, IsValidIP, IsValidCIDR) and pkg/api/validate/content (IsLabelKey a.k.a.
IsQualifiedName, IsLabelValue, IsCIdentifier, the DNS checks used inside label keys and by
`validate.LongName`); pkg/api/validation/generic.go (NameIsDNSSubdomain and friends, which accept a
trailing '-' in a generateName prefix). Each check returns the list of problems, empty when valid,
as the Go functions do. Lengths are counted in bytes, as Go's len() does.

The two packages word the length limit differently: util/validation says "must be no more than 253
characters", content says "... 253 bytes"; both are kept because kube-apiserver prints both (object
names use the first, label keys and DeviceClass names the second).
"""

from __future__ import annotations

import ipaddress
import re

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + r"(\." + _LABEL + ")*"
_DNS1123_LABEL_RE = re.compile(_LABEL)
_DNS1123_SUBDOMAIN_RE = re.compile(_SUBDOMAIN)
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_RE = re.compile(_DNS1035_FMT)
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_RE = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER_RE = re.compile(_C_IDENTIFIER_FMT)
_PERCENT_FMT = "[0-9]+%"
_PERCENT_RE = re.compile(_PERCENT_FMT)
_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_KEY_RE = re.compile(_CONFIG_KEY_FMT)

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63

_DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                      "start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                          "'.', and must start and end with an alphanumeric character")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character")
_LABEL_KEY_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                  "alphanumeric character")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                    "and must start and end with an alphanumeric character")
_C_IDENTIFIER_MSG = ("a valid C identifier must start with alphabetic character or '_', followed by a string of "
                     "alphanumeric characters or '_'")


def _len(value: str) -> int:
    return len(value.encode())


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """validation.RegexError (the "(e.g. 'a',  or 'b', regex used for validation is '...')" tail)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    parts = [f"{' or ' if i else ''}'{e}', " for i, e in enumerate(examples)]
    return f"{msg} (e.g. {''.join(parts)}regex used for validation is '{fmt}')"


def max_len_chars(n: int) -> str:
    return f"must be no more than {n} characters"


def max_len_bytes(n: int) -> str:
    return f"must be no more than {n} bytes"


def inclusive_range(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if _len(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_chars(DNS1123_LABEL_MAX))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, _LABEL, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str, *, bytes_unit: bool = False) -> list[str]:
    """util/validation's check; `bytes_unit` words the length limit as content's does."""
    errs = []
    if _len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append((max_len_bytes if bytes_unit else max_len_chars)(DNS1123_SUBDOMAIN_MAX))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _SUBDOMAIN, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if _len(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_chars(DNS1123_LABEL_MAX))
    if not _DNS1035_RE.fullmatch(value):
        errs.append(regex_error(_DNS1035_MSG, _DNS1035_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """content.IsLabelKey: `[prefix/]name`, the prefix a DNS subdomain, the name 63 bytes at most."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + m for m in is_dns1123_subdomain(prefix, bytes_unit=True)]
    else:
        return ["a valid label key " + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif _len(name) > DNS1123_LABEL_MAX:
        errs.append("name part " + max_len_bytes(DNS1123_LABEL_MAX))
    if not _LABEL_KEY_RE.fullmatch(name):
        errs.append("name part " + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_label_value(value: str) -> list[str]:
    errs = []
    if _len(value) > LABEL_VALUE_MAX:
        errs.append(max_len_bytes(LABEL_VALUE_MAX))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def is_c_identifier(value: str) -> list[str]:
    if _C_IDENTIFIER_RE.fullmatch(value):
        return []
    return [regex_error(_C_IDENTIFIER_MSG, _C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName")]


def is_valid_percent(value: str) -> list[str]:
    if _PERCENT_RE.fullmatch(value):
        return []
    return [regex_error("a valid percent string must be a numeric string followed by an ending '%'", _PERCENT_FMT,
                        "1%", "93%")]


def is_relaxed_env_var_name(value: str) -> list[str]:
    """IsRelaxedEnvVarName (RelaxedEnvironmentVariableValidation is GA): printable ASCII but '='."""
    errs = []
    if not value:
        errs.append("environment variable name must be non-empty")
    if any(ord(c) > 127 or not c.isprintable() or c == "=" for c in value):
        errs.append("a valid environment variable name must consist only of printable ASCII characters other than '='")
    return errs


def is_config_map_key(value: str) -> list[str]:
    errs = []
    if _len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_chars(DNS1123_SUBDOMAIN_MAX))
    if not _CONFIG_KEY_RE.fullmatch(value):
        errs.append(regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                                _CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def is_valid_port_num(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else [inclusive_range(1, 65535)]


def is_valid_port_name(port: str) -> list[str]:
    errs = []
    if _len(port) > 15:
        errs.append(max_len_chars(15))
    if not re.fullmatch("[-a-z0-9]+", port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_valid_ip(value: str) -> list[str]:
    """IsValidIP's message (the strict parser: no leading zeros in IPv4, as Go's netip)."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
    return []


def is_valid_cidr(value: str) -> list[str]:
    try:
        ipaddress.ip_network(value, strict=False)
        if "/" not in value:
            raise ValueError(value)
    except ValueError:
        return ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
    return []


def _mask_trailing_dash(name: str) -> str:
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def name_is_dns_subdomain(name: str, prefix: bool = False) -> list[str]:
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool = False) -> list[str]:
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_long_name(name: str, prefix: bool = False) -> list[str]:
    """validate.LongName (DeviceClass names): a DNS subdomain, worded by the content package."""
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name, bytes_unit=True)


_LABEL_UNDERSCORE = "_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_UNDERSCORE = _LABEL_UNDERSCORE + r"(\." + _LABEL_UNDERSCORE + ")*"
_SUBDOMAIN_UNDERSCORE_RE = re.compile(_SUBDOMAIN_UNDERSCORE)


def is_dns1123_subdomain_with_underscore(value: str) -> list[str]:
    """IsDNS1123SubdomainWithUnderscore (DNS search domains, RelaxedDNSSearchValidation is GA)."""
    errs = []
    if _len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_chars(DNS1123_SUBDOMAIN_MAX))
    if not _SUBDOMAIN_UNDERSCORE_RE.fullmatch(value):
        errs.append(regex_error("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                                "'_', '-' or '.', and must start and end with an alphanumeric character",
                                _SUBDOMAIN_UNDERSCORE, "example.com"))
    return errs
