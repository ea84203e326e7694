"""The fleet file (`kind: Fleet`): what a fleet is made of, read strictly.

```yaml
apiVersion: fake-dra.example.com/v1alpha1
kind: Fleet
metadata: {name: lab}
spec:
  nodeGroups:
  - name: a100            # nodes a100-0000 ... a100-0299
    count: 300
    profile: dgx-a100     # a bundled profile (make-sysfs --list)
    personality: fake-dra # fake-dra | nvidia | sriov (driver.personality)
    fidelity: full        # full | whole
    labels: {}            # extra Node labels
    driverConfig: {}      # the sections --driver-config takes that the personality reads
```

Why strict: a fleet file describes thousands of objects; a misspelt key (`lables:`) silently ignored
would publish a fleet other than the one written. Every unknown field is an error naming its path
and, when one is close, the field meant. Node names are `<group>-<index>`, the index padded to
four digits, so a node keeps its name when the group's count changes and names sort in index
order (a group of more than 10,000 nodes continues with five digits).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from driver.discovery import PROFILES
from driver.errors import ConfigError, InputError
from driver.hardware import load_catalog
from driver.personality import DEFAULT_PERSONALITY, PERSONALITIES, Personality
from driver.yamlio import load_all

API_VERSION = "fake-dra.example.com/v1alpha1"
KIND = "Fleet"
FIDELITIES = ("full", "whole")
# A Node name doubles as its `kubernetes.io/hostname` label value (at most 63 characters), so a
# group name leaves room for `-` and five index digits.
GROUP_NAME_MAX = 57
MAX_NODES = 100_000  # a sanity bound: 100,000 DGX nodes are ~22 GB of slices
INDEX_DIGITS = 4
# Labels the fleet sets itself; a group may not set them (they say what a node is and who made it).
RESERVED_LABELS = ("type", "kubernetes.io/hostname", "fake-dra.example.com/profile", "fake-dra.example.com/personality",
                   "fake-dra.example.com/fleet", "fake-dra.example.com/node-group")

ANNOTATIONS_LIMIT = 256 * 1024  # bytes of annotations per object (kube-apiserver)
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_LABEL_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

_TOP = ("apiVersion", "kind", "metadata", "spec")
_META = ("name",)
_SPEC = ("nodeGroups",)
_GROUP = ("name", "count", "profile", "personality", "fidelity", "labels", "driverConfig")


@dataclass(frozen=True)
class NodeGroup:
    name: str
    count: int
    profile: str
    fidelity: str = "full"
    labels: tuple[tuple[str, str], ...] = ()
    # The driverConfig sections as canonical JSON: hashable, and equal for equal configs, so groups
    # with the same (personality, profile, config, fidelity) share one rendered template.
    driver_config: str = "{}"
    personality: str = DEFAULT_PERSONALITY

    def node_name(self, index: int) -> str:
        return f"{self.name}-{index:0{INDEX_DIGITS}d}"

    def node_names(self) -> list[str]:
        return [self.node_name(i) for i in range(self.count)]

    def config(self) -> dict[str, Any]:
        return json.loads(self.driver_config)


@dataclass(frozen=True)
class Fleet:
    name: str
    groups: tuple[NodeGroup, ...] = field(default=())

    def nodes(self) -> list[tuple[str, NodeGroup]]:
        """(node name, its group) for every node, group by group, in index order."""
        return [(name, g) for g in self.groups for name in g.node_names()]

    @property
    def size(self) -> int:
        return sum(g.count for g in self.groups)

    def personalities(self) -> list[str]:
        """The personalities the groups use, each once, in file order."""
        return list(dict.fromkeys(g.personality for g in self.groups))


def _unknown(data: Mapping[str, Any], known: tuple[str, ...], where: str, owner: str = "") -> None:
    """InputError for the first key not in `known`: its path, the field meant when one is close, and
    what knows the fields (`owner`) or else the fields known."""
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            known_by = f" ({owner} reads {', '.join(known)})" if owner else f" (known: {', '.join(known)})"
            raise InputError(f"{where}{'.' if where else ''}{key}: unknown field{hint}{known_by if owner or not close else ''}")


def _one_of(value: Any, known: list[str], where: str, what: str) -> str:
    """`value` when it is one of `known`; else InputError naming the path, the closest and the rest."""
    if value is None or value == "":
        raise InputError(f"{where}: required (one of {', '.join(known)})")
    if not isinstance(value, str):
        raise InputError(f"{where}: expected a string, one of {', '.join(known)}; got {value!r}")
    if value not in known:
        close = difflib.get_close_matches(value, known, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise InputError(f"{where}: unknown {what} {value!r}; {hint}known: {', '.join(known)}")
    return value


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: must be a mapping, got {type(value).__name__}")
    return value


def _label_key_ok(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _LABEL_PREFIX.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_LABEL_NAME.fullmatch(name))


def _labels(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    out = []
    for key, val in _mapping(value, where).items():
        if not isinstance(key, str) or not _label_key_ok(key):
            raise InputError(f"{where}: {key!r} is not a valid label key ([prefix/]name, name <= 63 characters)")
        if key in RESERVED_LABELS:
            raise InputError(f"{where}.{key}: set by the fleet itself (reserved: {', '.join(RESERVED_LABELS)})")
        if not isinstance(val, str) or (val and (len(val) > 63 or not _LABEL_NAME.fullmatch(val))):
            raise InputError(f"{where}.{key}: {val!r} is not a valid label value (a string of <= 63 "
                             "alphanumerics, '-', '_' or '.', starting and ending alphanumeric; quote numbers)")
        out.append((key, val))
    # The fleet lists its labels' keys in an annotation of every Node (driver.fleet.nodes), so that
    # a label dropped from the file is removed again: kube-apiserver takes at most 256 KiB of
    # annotations per object (apimachinery ValidateAnnotationsSize, TotalAnnotationSizeLimitB).
    listed = sum(len(k) + 1 for k, _ in out)
    if listed > ANNOTATIONS_LIMIT // 2:
        raise InputError(f"{where}: {len(out):,} labels; their keys alone are {listed:,} bytes of the Node's "
                         f"annotations, and kube-apiserver takes at most {ANNOTATIONS_LIMIT:,} bytes of annotations "
                         f"per object (each Node also needs room for its own): use fewer labels")
    return tuple(sorted(out))


def _driver_config(value: Any, where: str, personality: Personality, fidelity: str) -> str:
    """The sections the personality reads, checked as its drivers check them, as canonical JSON.
    A section another personality reads is an error here (`run` only warns): in a file describing
    thousands of nodes, a section that would be ignored is a mistake."""
    data = _mapping(value, where)
    _unknown(data, personality.sections, where, f"personality {personality.name}")
    try:
        load_catalog(data.get("hardware"))
        personality.drivers(data)  # each driver's own checks (slices:, nvidia:, sriov:)
        conflict = personality.partitioned_by(data) if fidelity == "whole" else None
    except (ConfigError, InputError) as exc:
        raise InputError(f"{where}.{exc}") from None
    if conflict is not None:
        path, what = conflict
        raise InputError(f"{where}.{path}: fidelity whole publishes whole GPUs and VFs only, and this asks the "
                         f"{personality.name} personality for {what}; use fidelity: full, or drop {path}")
    try:
        return json.dumps(data, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where}: not representable as JSON ({exc})") from None


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{where}: expected a whole number, got {value!r}")
    if value < 0 or value > MAX_NODES:
        raise InputError(f"{where}: must be between 0 and {MAX_NODES}, got {value}")
    return value


def _group(data: Any, where: str) -> NodeGroup:
    data = _mapping(data, where)
    _unknown(data, _GROUP, where)
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}.name: required")
    if len(name) > GROUP_NAME_MAX or not _DNS_LABEL.fullmatch(name):
        raise InputError(f"{where}.name: {name!r} is not a DNS label of at most {GROUP_NAME_MAX} characters "
                         "(lower-case alphanumerics and '-'; node names are <name>-<index>)")
    if "count" not in data:
        raise InputError(f"{where}.count: required")
    profile = _one_of(data.get("profile"), sorted(PROFILES), f"{where}.profile", "profile")
    personality = _one_of(data.get("personality", DEFAULT_PERSONALITY), list(PERSONALITIES), f"{where}.personality",
                          "personality")
    fidelity = data.get("fidelity", "full")
    if fidelity not in FIDELITIES:
        raise InputError(f"{where}.fidelity: expected one of {', '.join(FIDELITIES)}, got {fidelity!r}")
    return NodeGroup(name=name, count=_count(data["count"], f"{where}.count"), profile=profile, fidelity=fidelity,
                     labels=_labels(data.get("labels"), f"{where}.labels"),
                     driver_config=_driver_config(data.get("driverConfig"), f"{where}.driverConfig",
                                                  PERSONALITIES[personality], fidelity),
                     personality=personality)


def parse_fleet(data: Any, source: str = "fleet") -> Fleet:
    """A Fleet from one parsed document; InputError naming `source` and the field path."""
    try:
        return _parse(data)
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None


def _parse(data: Any) -> Fleet:
    if not isinstance(data, Mapping):
        raise InputError(f"expected a Fleet object (apiVersion: {API_VERSION}, kind: {KIND}), got {type(data).__name__}")
    _unknown(data, _TOP, "")
    if data.get("apiVersion") != API_VERSION:
        raise InputError(f"apiVersion: expected {API_VERSION}, got {data.get('apiVersion')!r}")
    if data.get("kind") != KIND:
        raise InputError(f"kind: expected {KIND}, got {data.get('kind')!r}")
    meta = _mapping(data.get("metadata"), "metadata")
    _unknown(meta, _META, "metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError("metadata.name: required")
    if len(name) > 63 or not _DNS_LABEL.fullmatch(name):
        raise InputError(f"metadata.name: {name!r} is not a DNS label (it becomes a label value on every Node)")
    spec = _mapping(data.get("spec"), "spec")
    _unknown(spec, _SPEC, "spec")
    raw_groups = spec.get("nodeGroups")
    if raw_groups is None:
        raise InputError("spec.nodeGroups: required (a list; empty for a fleet of no nodes)")
    if not isinstance(raw_groups, list):
        raise InputError(f"spec.nodeGroups: must be a list, got {type(raw_groups).__name__}")
    groups = [_group(g, f"spec.nodeGroups[{i}]") for i, g in enumerate(raw_groups)]
    seen: dict[str, int] = {}
    for i, g in enumerate(groups):
        if g.name in seen:
            raise InputError(f"spec.nodeGroups[{i}].name: {g.name!r} already names spec.nodeGroups[{seen[g.name]}]")
        seen[g.name] = i
    fleet = Fleet(name=name, groups=tuple(groups))
    if fleet.size > MAX_NODES:
        raise InputError(f"spec.nodeGroups: {fleet.size} nodes in all; at most {MAX_NODES}")
    _check_unique_nodes(fleet)
    return fleet


def _check_unique_nodes(fleet: Fleet) -> None:
    """Group `a` with 10,000+ nodes reaches `a-10000`; a group named `a-1000` starts at `a-1000-0000`:
    names cannot collide today, but the check keeps that a property, not an accident."""
    owner: dict[str, str] = {}
    for node, group in fleet.nodes():
        if node in owner:
            raise InputError(f"spec.nodeGroups: node {node!r} would belong to groups {owner[node]!r} and {group.name!r}")
        owner[node] = group.name


def load_fleet(text: str, source: str) -> Fleet:
    """The Fleet of a fleet file's text (exactly one document)."""
    docs = [d for d in load_all(text, source) if d is not None]
    if len(docs) != 1:
        raise InputError(f"{source}: expected one Fleet document, found {len(docs)}")
    return parse_fleet(docs[0], source)
