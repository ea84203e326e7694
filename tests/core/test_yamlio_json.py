"""driver.yamlio's JSON fast path: what it builds is what the YAML path builds, under the same limits
and with the same one-line messages."""

from __future__ import annotations

import json

import pytest
import yaml

from driver import yamlio
from driver.errors import InputError


def both(text: str):
    """What the JSON path and the YAML path make of a text."""
    return yamlio.load_all(text, "f.json"), list(yaml.safe_load_all(text))


@pytest.mark.parametrize("text", [
    '{"a": 1, "b": [1.5, 1e3, 2.5e+3, -0.5, true, false, null, "x\\u00e9\\"y"]}',
    '{"a": {"b": {"c": []}}, "d": ""}\n---\n{"e": 12345678901234567890}\n',
    '[1, 2, {"k": "v"}]',
    '{"a": 1}\n---\n{"b": 2}\n',
    '{"n": NaN, "i": Infinity}',
])
def test_json_documents_read_as_yaml_reads_them(text):
    fast, slow = both(text)
    assert fast == slow


def test_many_documents_one_per_line():
    docs = [{"kind": "ResourceSlice", "metadata": {"name": f"s{i}"}} for i in range(50)]
    assert yamlio.load_all("".join(json.dumps(d) + "\n" for d in docs), "f.json") == docs


def test_yaml_flow_style_is_not_mistaken_for_json():
    assert yamlio.load_all("{apiVersion: v1, kind: Node, metadata: {name: n1}}", "f.yaml") == [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}]


def test_a_duplicate_key_is_refused_with_its_position():
    with pytest.raises(InputError, match=r'^f.json: invalid YAML at line 2, column 3: duplicate key "a"$'):
        yamlio.load_all('{"a": 1,\n  "a": 2}', "f.json")


@pytest.mark.parametrize("depth", [101, 150, 5000])
def test_json_nested_too_deep_is_one_line_never_a_recursion_error(depth):
    for text in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth):
        with pytest.raises(InputError, match=r"^f.json: nests more than 100 levels deep$"):
            yamlio.load_all(text, "f.json")


def test_json_at_the_nesting_limit_is_read_and_brackets_in_strings_do_not_count():
    assert yamlio.load_all("[" * 100 + "]" * 100, "f.json")
    deep_text = json.dumps({"cel": "[[[[" * 200 + '\\"' + "{{" * 100})
    assert yamlio.load_all(deep_text, "f.json") == [json.loads(deep_text)]


def test_two_values_on_one_line_are_left_to_the_yaml_reader():
    with pytest.raises(InputError, match=r"^f.json: invalid YAML at line 1, column 5: did not find expected <document start>"):
        yamlio.load_all("[1] [2]", "f.json")


def test_broken_json_is_reported_by_the_yaml_reader_with_a_position():
    with pytest.raises(InputError, match=r"^f.json: invalid YAML at line 1, column \d+"):
        yamlio.load_all('{"a": [1, 2}', "f.json")
