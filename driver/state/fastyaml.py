"""Load a YAML document into plain Python objects ~4x faster than yaml.load(CSafeLoader).

Why: every NodePrepareResources call fetches its claim from the local object store, and with
libyaml only the *parser* is C: PyYAML's constructor still runs ~10 Python calls per node, which
made the claim parse the largest single cost of a prepare (~1 ms of ~2.3 ms CPU). The composer
(C parser + the standard implicit resolver, so every scalar gets exactly the tag SafeLoader would
give it) is kept; only construction is replaced by one tight walk that handles the three tags
a Kubernetes object consists of (str, map, seq) inline and hands every other node (int, bool,
null, float, timestamp, binary, set, merge keys, anchors shared between nodes, ...) to the
standard SafeConstructor. The result is therefore identical to yaml.load(..., CSafeLoader).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"


def load(text: str) -> Any:
    """Like yaml.load(text, Loader=CSafeLoader) (raises yaml.YAMLError the same way)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        return _Walker(loader).build(node)
    finally:
        loader.dispose()


class _Walker:
    def __init__(self, loader: Any) -> None:
        self.loader = loader
        # An aliased node (anchor/alias) must become one shared object, as PyYAML makes it.
        self.seen: dict[int, Any] = {}

    def build(self, node: Node) -> Any:
        done = self.seen.get(id(node))
        if done is not None:
            return done
        tag = node.tag
        if type(node) is ScalarNode and tag == _STR:
            return node.value
        if type(node) is MappingNode and tag == _MAP:
            if any(k.tag == _MERGE for k, _ in node.value):
                return self._fallback(node)
            out: dict[Any, Any] = {}
            self.seen[id(node)] = out
            for k, v in node.value:
                key = self.build(k)
                try:
                    out[key] = self.build(v)
                except TypeError:  # unhashable key: let PyYAML raise its usual error
                    return self._fallback(node)
            return out
        if type(node) is SequenceNode and tag == _SEQ:
            seq: list[Any] = []
            self.seen[id(node)] = seq
            seq.extend(self.build(v) for v in node.value)
            return seq
        return self._fallback(node)

    def _fallback(self, node: Node) -> Any:
        value = self.loader.construct_object(node, deep=True)
        self.seen[id(node)] = value
        return value
