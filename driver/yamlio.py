"""The one way fake-dra reads YAML that someone else wrote: manifests, store objects, scenario and
config files.

Why one module: PyYAML's behaviour on hostile input changes between releases and between its two
loaders. The pure-Python loader recurses once per nesting level (a 5,000-deep document is a
RecursionError), libyaml's composer overflows the C stack much deeper, and libyaml 0.2.6 (bundled from
PyYAML 6.0.4 on) refuses more than 1,000 levels with a message of its own. PyYAML also keeps the last of
two equal keys, where kube-apiserver's strict field validation (kubectl's default) refuses the object.
Every caller here gets the same one-line messages whatever PyYAML version is installed:

- ``SOURCE: invalid YAML at line L, column C: <problem>`` (or ``at character offset N`` for a character
  YAML does not allow);
- ``SOURCE: nests more than 100 levels deep`` (Kubernetes objects nest about 15 deep);
- ``SOURCE: invalid YAML at line L, column C: duplicate key "k"``;
- ``SOURCE: expands to more than 1000000 values (YAML aliases)`` (a "billion laughs" document: the
  values aliases add, over the whole text; values written out are bounded by the text's size).

Construction is a lean walk over libyaml's composed nodes (strings, maps and sequences inline, every
other tag through PyYAML's SafeConstructor), ~4x faster than ``yaml.load(..., CSafeLoader)`` and
building the same objects: a prepare call reads its claim through it.

JSON is YAML, and fleet-sized inputs come as JSON (a 1,000-node cluster's slices are ~70 MB): a text
that starts with ``{`` or ``[`` is first read as a stream of JSON documents (one after the other,
optionally separated by ``---`` lines) with the standard library's C decoder, ~50x faster than libyaml,
building what the YAML path would build (numbers resolved as YAML 1.1 resolves them) under the same
depth limit and messages. The value cap is not applied there: it guards against YAML aliases, which
JSON cannot write, so a JSON document holds only the values its bytes spell out. Anything the JSON reader does not accept (YAML flow style such as ``{a: 1}``, a
duplicate key, which is reported with its position) goes the YAML way.
"""

from __future__ import annotations

import gc
import json
import re
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from driver.errors import InputError

# libyaml's C loader is ~10x faster than the pure-Python one; fall back only where it is missing.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"

MAX_NESTING = 100  # Kubernetes objects nest ~15 deep; every parser we may run under copes with 100
MAX_VALUES = 1_000_000  # values after expanding aliases
_NESTING_CHARS = "[{-?:"  # every nesting level needs one of these or a new line (a cheap upper bound)
_SCAN_BELOW = 1000  # documents whose bound is below this cannot hurt any parser: no event scan


class YamlInputError(InputError):
    """A YAML text that cannot be read; the message names the source and, where known, the position."""


def load_all(text: str, source: str) -> list[Any]:
    """Every document of a multi-document YAML text, in order (an empty document is None)."""
    docs = _load_json(text, source)
    if docs is not None:
        return docs
    _check_nesting(text, source)
    loader = _Loader(text)
    try:
        docs: list[Any] = []
        expanded = 0
        while loader.check_node():
            node = loader.get_node()
            # A walker per document: anchors do not cross documents, and the nodes of a finished
            # document are freed, so their id()s may come back in the next one.
            walker = _Walker(loader, source, expanded)
            docs.append(None if node is None else walker.build(node, 0))
            expanded = walker.expanded
        return docs
    except yaml.YAMLError as exc:
        raise _error(exc, source) from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4,300 digits
        raise YamlInputError(f"{source}: invalid YAML: {type(exc).__name__}: {str(exc)[:200]}") from None
    finally:
        loader.dispose()


def load_one(text: str, source: str) -> Any:
    """The single document of a YAML text (None when empty); more than one document is an error."""
    docs = load_all(text, source)
    if len(docs) > 1:
        raise YamlInputError(f"{source}: expected one YAML document, found {len(docs)}")
    return docs[0] if docs else None


def problem(exc: Exception) -> str:
    """One line for a PyYAML error, `` at line L, column C: <problem>`` (its str() spans several lines
    and names "<unicode string>" instead of the file)."""
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        return f" at line {mark.line + 1}, column {mark.column + 1}: {getattr(exc, 'problem', None) or exc}"
    if getattr(exc, "reason", None) is not None and getattr(exc, "position", None) is not None:
        # ReaderError: a character YAML does not allow (a control character, a lone surrogate).
        char = getattr(exc, "character", None)
        code = ord(char) if isinstance(char, str) else char
        shown = f"character #x{code:04x}" if isinstance(code, int) else "a character"
        return f" at character offset {exc.position}: {shown} is not allowed in YAML ({exc.reason})"
    return ": " + " ".join(str(exc).split())


def _is_depth_refusal(exc: yaml.YAMLError) -> bool:
    # libyaml 0.2.6: "exceeded maximum nesting depth" while increasing the flow or indent level.
    return "nesting depth" in str(getattr(exc, "problem", None) or exc)


def _error(exc: yaml.YAMLError, source: str) -> YamlInputError:
    if isinstance(exc, _TooComplex):
        return YamlInputError(f"{source}: {exc}")
    if _is_depth_refusal(exc):
        return YamlInputError(f"{source}: nests more than {MAX_NESTING} levels deep")
    return YamlInputError(f"{source}: invalid YAML{problem(exc)}")


def _check_nesting(text: str, source: str) -> None:
    """Refuse a text nested deeper than MAX_NESTING before a recursive composer sees it."""
    bound = text.count("\n") + sum(text.count(c) for c in _NESTING_CHARS)
    if bound <= _SCAN_BELOW:
        return
    loader = _Loader(text)
    depth = 0
    try:
        while True:
            event = loader.get_event()
            if event is None:
                return
            kind = type(event)
            if kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                depth += 1
                if depth > MAX_NESTING:
                    raise _TooComplex(f"nests more than {MAX_NESTING} levels deep")
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                depth -= 1
    except yaml.YAMLError as exc:
        raise _error(exc, source) from None
    finally:
        loader.dispose()


class _TooComplex(yaml.YAMLError):
    """Nested too deeply or expanding (through aliases) to too many values: our refusal, not a parser's."""


class _Walker:
    def __init__(self, loader: Any, source: str, expanded: int = 0) -> None:
        self.loader = loader
        self.source = source
        # An aliased node (anchor/alias) must become one shared object, as PyYAML makes it.
        self.seen: dict[int, Any] = {}
        self.size: dict[int, int] = {}  # expanded value count of each collection node
        self.values = 0  # values of this document, aliases expanded (sizes the aliased nodes)
        # Values that aliases add, over the whole text, so many documents cannot add up to a bomb.
        # Only those count against MAX_VALUES: a value written out in the text costs its bytes, and a
        # large multi-document file (500 upstream slices of list attributes, 35 MB) is as many
        # objects as kubectl sends one by one, each under kube-apiserver's own limits.
        self.expanded = expanded

    def _count(self, n: int) -> None:
        self.values += n

    def build(self, node: Node, depth: int) -> Any:
        done = self.seen.get(id(node))
        if done is not None:
            n = self.size.get(id(node), 1)
            self._count(n)
            self.expanded += n
            if self.expanded > MAX_VALUES:
                raise _TooComplex(f"expands to more than {MAX_VALUES} values (YAML aliases)")
            return done
        tag = node.tag
        if type(node) is ScalarNode and tag == _STR:
            self.values += 1
            return node.value
        if depth >= MAX_NESTING:
            raise _TooComplex(f"nests more than {MAX_NESTING} levels deep")
        before = self.values
        if type(node) is MappingNode and tag == _MAP:
            if any(k.tag == _MERGE for k, _ in node.value):
                return self._fallback(node)
            out: dict[Any, Any] = {}
            self.seen[id(node)] = out
            for k, v in node.value:
                key = self.build(k, depth + 1)
                try:
                    if key in out:
                        mark = k.start_mark
                        raise YamlInputError(f"{self.source}: invalid YAML at line {mark.line + 1}, "
                                             f"column {mark.column + 1}: duplicate key {_show(key)}")
                    out[key] = self.build(v, depth + 1)
                except TypeError:  # unhashable key: let PyYAML raise its usual error
                    return self._fallback(node)
            self.size[id(node)] = self.values - before + 1
            self._count(1)
            return out
        if type(node) is SequenceNode and tag == _SEQ:
            seq: list[Any] = []
            self.seen[id(node)] = seq
            seq.extend(self.build(v, depth + 1) for v in node.value)
            self.size[id(node)] = self.values - before + 1
            self._count(1)
            return seq
        return self._fallback(node)

    def _fallback(self, node: Node) -> Any:
        value = self.loader.construct_object(node, deep=True)
        self.seen[id(node)] = value
        self._count(1)
        return value


_JSON_START = re.compile(r"\s*[\[{]")
_GAP = re.compile(r"(?:\s|^---[ \t]*$)*", re.M)  # whitespace and `---` separator lines
_YAML_FLOAT = re.compile(r"[-+]?(?:[0-9][0-9_]*)?\.[0-9.]*(?:[eE][-+][0-9]+)?$")  # PyYAML's float (needs a dot)
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')


class _NotJson(Exception):
    """The text is not a stream of JSON documents: read it as YAML."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _NotJson()  # the YAML path reports the key with its line and column
    return out


def _yaml_float(text: str) -> Any:
    """A JSON number with a fraction or exponent as YAML 1.1 reads it: a float only with a dot (and a
    signed exponent), else the string itself (PyYAML reads 1e3 as "1e3")."""
    return float(text) if _YAML_FLOAT.match(text) else text


def _not_a_constant(name: str) -> Any:
    raise _NotJson()  # NaN / Infinity are not JSON; YAML reads them as strings


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_float=_yaml_float, parse_constant=_not_a_constant)


def _load_json(text: str, source: str) -> list[Any] | None:
    """The documents of a text of JSON documents, or None when it is not one (then it is YAML)."""
    if not _JSON_START.match(text):
        return None
    docs: list[Any] = []
    pos = _GAP.match(text, 0).end()  # type: ignore[union-attr]
    collecting = gc.isenabled()
    gc.disable()  # millions of new containers, none of them garbage: collections would only rescan them
    try:
        while pos < len(text):
            doc, pos = _DECODER.raw_decode(text, pos)
            docs.append(doc)
            gap = _GAP.match(text, pos).end()  # type: ignore[union-attr]
            if gap < len(text) and "\n" not in text[pos:gap]:
                return None  # two values on one line: not a stream of documents (YAML says why)
            pos = gap
    except (_NotJson, ValueError):
        return None
    except RecursionError:
        raise YamlInputError(f"{source}: nests more than {MAX_NESTING} levels deep") from None
    finally:
        if collecting:
            gc.enable()
    _check_json_nesting(text, source)
    return docs


def _check_json_nesting(text: str, source: str) -> None:
    """Refuse JSON nested deeper than MAX_NESTING, as the YAML path does, without walking the
    documents in Python (C-speed string operations only): escaped backslashes and quotes are
    dropped, then everything but quotes and brackets, then what lies between quotes (the strings),
    and the brackets left are reduced pairwise, one nesting level per pass."""
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return
    unescaped = text.replace("\\\\", "").replace('\\"', "")  # no escaped quote is left
    structure = unescaped.encode("utf-8", "surrogatepass").translate(None, _NOT_STRUCTURE)
    structure = b"".join(structure.split(b'"')[::2])  # every other piece between quotes is a string's inside
    for _ in range(MAX_NESTING):
        if not structure:
            return
        structure = structure.replace(b"{}", b"").replace(b"[]", b"")
    if structure:
        raise YamlInputError(f"{source}: nests more than {MAX_NESTING} levels deep")


def _show(key: Any) -> str:
    text = str(key)
    return '"' + (text if len(text) <= 60 else text[:57] + "...") + '"'
