"""`-o jsonpath`: the examples of kubectl's JSONPath reference (kubernetes.io/docs/reference/kubectl/jsonpath),
with today's client-go printing objects and lists as compact JSON (the page still shows Go's map[...] form)."""

from __future__ import annotations

import pytest

from driver.commands._jsonpath import render
from driver.errors import InputError

DOC = {
    "kind": "List",
    "items": [
        {"kind": "None", "metadata": {"name": "127.0.0.1", "labels": {"kubernetes.io/hostname": "127.0.0.1"}},
         "status": {"capacity": {"cpu": "4"}, "addresses": [{"type": "LegacyHostIP", "address": "127.0.0.1"}]}},
        {"kind": "None", "metadata": {"name": "127.0.0.2"},
         "status": {"capacity": {"cpu": "8"}, "addresses": [{"type": "LegacyHostIP", "address": "127.0.0.2"},
                                                            {"type": "another", "address": "127.0.0.3"}]}},
    ],
    "users": [{"name": "myself", "user": {}}, {"name": "e2e", "user": {"username": "admin", "password": "secret"}}],
}


@pytest.mark.parametrize("template,expected", [
    ("kind is {.kind}", "kind is List"),
    ("{.kind}", "List"),
    ("{['kind']}", "List"),
    ("{$.kind}", "List"),
    ("{..name}", "127.0.0.1 127.0.0.2 myself e2e"),
    ("{.items[*].metadata.name}", "127.0.0.1 127.0.0.2"),
    ("{.users[0].name}", "myself"),
    ("{.items[*]['metadata.name', 'status.capacity']}", '127.0.0.1 127.0.0.2 {"cpu":"4"} {"cpu":"8"}'),
    ('{.users[?(@.name=="e2e")].user.password}', "secret"),
    ("{range .items[*]}[{.metadata.name}, {.status.capacity}] {end}",
     '[127.0.0.1, {"cpu":"4"}] [127.0.0.2, {"cpu":"8"}] '),
    ("{['items'][0]['metadata']['name']}", "127.0.0.1"),
    ("{.items[-1:].metadata.name}", "127.0.0.2"),
    ("{.items[-1].metadata.name}", "127.0.0.2"),
    ("{.items[0:2:2].metadata.name}", "127.0.0.1"),
    (r"{.items[0].metadata.labels.kubernetes\.io/hostname}", "127.0.0.1"),
    ('{range .items[*]}{.metadata.name}{"\\t"}{.status.addresses[0].address}{"\\n"}{end}',
     "127.0.0.1\t127.0.0.1\n127.0.0.2\t127.0.0.2\n"),
    ('{.items[*].status.addresses[?(@.type!="LegacyHostIP")].address}', "127.0.0.3"),
    ("{.users[?(@.user.password)].name}", "e2e"),
    ("{.items[0].status.capacity}", '{"cpu":"4"}'),
    ("{.nothing.here}", ""),  # kubectl's default --allow-missing-template-keys
    ("{range .items[*]}{range .status.addresses[*]}{.address} {end}{end}", "127.0.0.1 127.0.0.2 127.0.0.3 "),
])
def test_kubectl_documented_examples(template: str, expected: str) -> None:
    assert render(template, DOC) == expected


def test_numbers_and_booleans_print_as_json() -> None:
    data = {"spec": {"pool": {"generation": 3}, "allNodes": True}, "ratio": 0.5}
    assert render("{.spec.pool.generation} {.spec.allNodes} {.ratio}", data) == "3 true 0.5"
    assert render("{.items[?(@.n>1)].n}", {"items": [{"n": 1}, {"n": 2}, {"n": 3}]}) == "2 3"


@pytest.mark.parametrize("template,message", [
    ("{.items[0}", "unterminated array"),
    ("{.kind", "unclosed action"),
    ("{range .items[*]}{.kind}", "range without end"),
    ("{end}", "not in range"),
    ("{.items[5]}", "array index out of bounds"),
    ("{.items[x]}", "invalid array index x"),
    ("{.kind[0]}", "is not array or slice"),
    ("{.items[::0]}", "step must be > 0"),
    ("{bogus}", "unrecognized identifier bogus"),
    ("{.items[?(@.x==1)}", "unclosed array, expected ]"),
    ("{.items[?(@.x==1}", "unterminated filter"),
    ("{#}", "unrecognized character"),
])
def test_errors_name_the_template(template: str, message: str) -> None:
    with pytest.raises(InputError, match="-o jsonpath: .*" + message.replace("[", r"\[")) as err:
        render(template, DOC)
    assert repr(template) in str(err.value)
