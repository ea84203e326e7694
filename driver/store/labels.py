"""Label selectors as kubectl's `-l/--selector` takes them (k8s.io/apimachinery/pkg/labels.Parse).

Grammar: requirements separated by commas, all of which must hold:

    key            the label is set            !key           the label is not set
    key=value      equal (also key==value)     key!=value     not equal, or not set
    key in (a,b)   one of the values           key notin (a,b) none of them, or not set
    key>3, key<3   an integer label greater / less than the number

Keys are qualified names (`[prefix/]name`, the prefix a DNS subdomain); values are label values
(at most 63 characters: letters, digits, '-', '_', '.', starting and ending alphanumeric; empty
allowed). An empty selector matches everything. Errors name the selector and what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from driver.errors import InputError
from driver.model.dnsnames import is_dns_subdomain

_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # exists | !exists | = | != | in | notin | > | <
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return has
        if self.op == "!exists":
            return not has
        if self.op in ("=", "in"):
            return has and value in self.values
        if self.op in ("!=", "notin"):
            return not has or value not in self.values
        try:
            number = int(str(value))
        except ValueError:
            return False
        return has and (number > int(self.values[0]) if self.op == ">" else number < int(self.values[0]))


@dataclass(frozen=True)
class Selector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, obj: Mapping) -> bool:
        labels = ((obj.get("metadata") or {}).get("labels")) or {}
        return all(r.matches(labels) for r in self.requirements)

    def index_terms(self) -> dict[str, str | tuple[str, ...]]:
        """The requirements the store's label index answers (driver.store.indexes: `label/<key>` ->
        value), as an `index=` mapping: `key=value` and `key in (...)`, each a condition every match
        meets, so the store reads only the objects they name and `matches` checks the rest.
        `key` (exists) is left to `matches`: a label value that is not a string is not indexed."""
        out: dict[str, str | tuple[str, ...]] = {}
        for r in self.requirements:
            if r.op in ("=", "in"):
                out.setdefault(f"label/{r.key}", r.values[0] if r.op == "=" else r.values)
        return out


def _split(text: str) -> list[str]:
    """Requirements split at commas outside parentheses."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def _key(key: str, where: str) -> str:
    prefix, slash, name = key.rpartition("/")
    if slash and not is_dns_subdomain(prefix):
        raise InputError(f"{where}: key {key!r}: the prefix must be a DNS subdomain")
    if not _NAME.fullmatch(name):
        raise InputError(f"{where}: key {key!r}: a name must be 63 characters or less, begin and end with a letter "
                         "or digit, with '-', '_', '.' between")
    return key


def _value(value: str, where: str) -> str:
    if not _VALUE.fullmatch(value):
        raise InputError(f"{where}: value {value!r}: at most 63 characters, letters, digits, '-', '_', '.', "
                         "beginning and ending with a letter or digit")
    return value


def _requirement(part: str, where: str) -> Requirement:
    text = part.strip()
    if not text:
        raise InputError(f"{where}: an empty requirement (two commas, or one at an end)")
    if text.startswith("!"):
        return Requirement(_key(text[1:].strip(), where), "!exists")
    set_form = re.fullmatch(r"(\S+)\s+(in|notin)\s*\((.*)\)", text)
    if set_form:
        key, op, body = set_form.groups()
        values = tuple(_value(v.strip(), where) for v in body.split(","))
        if values == ("",):
            raise InputError(f"{where}: {op} needs at least one value in the parentheses")
        return Requirement(_key(key, where), op, values)
    if re.search(r"\s(in|notin)\b", text):
        raise InputError(f"{where}: {text!r}: `in` and `notin` take values in parentheses, e.g. 'env in (a,b)'")
    match = re.fullmatch(r"([^=!<>\s]+)\s*(==|!=|=|>|<)\s*(.*)", text)
    if match is None:
        if re.fullmatch(r"[^=!<>()\s]+", text):
            return Requirement(_key(text, where), "exists")
        raise InputError(f"{where}: cannot parse {text!r} (expected key, !key, key=value, key!=value, "
                         "key in (a,b), key notin (a,b))")
    key, op, value = match.groups()
    if op in (">", "<"):
        if not re.fullmatch(r"-?\d+", value.strip()):
            raise InputError(f"{where}: {text!r}: {op} needs an integer")
        return Requirement(_key(key, where), op, (value.strip(),))
    return Requirement(_key(key, where), "=" if op == "==" else op, (_value(value.strip(), where),))


def parse_selector(text: str | None, flag: str = "--selector") -> Selector:
    """Parse a label selector; InputError naming `flag` and the selector when it is malformed."""
    if text is None or not text.strip():
        return Selector()
    where = f"{flag} {text!r}"
    if text.count("(") != text.count(")"):
        raise InputError(f"{where}: unbalanced parentheses")
    return Selector(tuple(_requirement(part, where) for part in _split(text)))
