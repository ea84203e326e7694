"""driver.yamlio: the objects PyYAML's safe loader builds, and the project's own one-line messages for
every YAML text it refuses, whatever PyYAML (and libyaml) version is installed."""

from __future__ import annotations

import pytest
import yaml

from driver import yamlio
from driver.errors import InputError

DOCS = [
    ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, uid: u, generation: 3}\n"
     "status:\n  allocation:\n    devices:\n      results:\n      - {device: gpu-0, pool: n1, adminAccess: false}\n"),
    "a: 1\nb: 1.5\nc: true\nd: null\ne: ~\nf: '007'\ng: 0x1f\nh: 2024-01-02\ni: yes\nj: [1, 'x', no]\n",
    "base: &b {x: 1, y: [1, 2]}\nref: *b\nlist: &l [a, b]\nagain: *l\n",
    "base: &b {x: 1, y: 2}\nmerged:\n  <<: *b\n  y: 3\n",
    "- a\n- {b: c}\n- [1, 2]\n",
    "just a string\n",
    "",
    "!!set {a, b}\n",
    "k: !!binary aGVsbG8=\nt: !!str 12\n",
    "a: 1\n---\nb: [2]\n---\n",
]


@pytest.mark.parametrize("text", DOCS)
def test_builds_what_pyyaml_builds(text):
    assert yamlio.load_all(text, "f.yaml") == list(yaml.load_all(text, Loader=yaml.CSafeLoader))


def test_keeps_aliases_shared():
    doc = yamlio.load_one("base: &b {x: [1]}\nref: *b\n", "f.yaml")
    assert doc["ref"] is doc["base"]


@pytest.mark.parametrize("text, message", [
    ("a: [\n", "f.yaml: invalid YAML at line 2, column 1: "),
    ("!!python/object:os.system x\n", "f.yaml: invalid YAML at line 1, column 1: could not determine a constructor"),
    ("a: \x01\n", "f.yaml: invalid YAML at character offset 3: character #x0001 is not allowed in YAML"),
    ("spec:\n  selectors: []\n  selectors: [x]\n", 'f.yaml: invalid YAML at line 3, column 3: duplicate key "selectors"'),
])
def test_refusals_are_one_line_and_name_the_source(text, message):
    with pytest.raises(InputError) as err:
        yamlio.load_all(text, "f.yaml")
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


@pytest.mark.parametrize("depth", [101, 1_500, 5_000, 100_000])
@pytest.mark.parametrize("shape", ["flow", "block"])
def test_deep_nesting_is_our_message_at_any_depth(depth, shape):
    if shape == "flow":
        text = "a: " + "[" * depth + "]" * depth + "\n"
    else:
        if depth > 5_000:
            pytest.skip("a block document this deep is megabytes of indentation")
        text = "".join("  " * i + "k:\n" for i in range(depth)) + "  " * depth + "v\n"
    with pytest.raises(InputError, match=r"^f\.yaml: nests more than 100 levels deep$"):
        yamlio.load_all(text, "f.yaml")


def test_a_parsers_own_depth_refusal_becomes_our_message():
    # libyaml 0.2.6 (PyYAML >= 6.0.4) refuses > 1,000 levels itself, before our scan counts to 100.
    refusal = yaml.parser.ParserError("while increasing flow level", None, "exceeded maximum nesting depth", None)
    assert str(yamlio._error(refusal, "f.yaml")) == "f.yaml: nests more than 100 levels deep"


def test_nesting_at_the_limit_is_read():
    text = "a: " + "[" * 99 + "]" * 99 + "\n"
    assert yamlio.load_one(text, "f.yaml")["a"] is not None


def test_alias_bomb_is_refused():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8)]
    with pytest.raises(InputError, match="expands to more than 1000000 values"):
        yamlio.load_all("\n".join(lines) + "\n", "f.yaml")


def test_load_one_refuses_several_documents():
    with pytest.raises(InputError, match="f.yaml: expected one YAML document, found 2"):
        yamlio.load_one("a: 1\n---\nb: 2\n", "f.yaml")
    assert yamlio.load_one("", "f.yaml") is None
