"""The selector cost estimate against kube-apiserver's own figures, and the parser under it.

Every expected cost below is the `expectCost` of the same expression in
k8s.io/dynamic-resource-allocation cel/compile_test.go (`testcases`, list-type attributes on, the
1.37 StoredExpressions environment) - the numbers kube-apiserver compares with the limit.
"""

from __future__ import annotations

import pytest

from driver.celexpr.cost import API_BOUNDS, MAX_U64, Bounds, estimate
from driver.celexpr.syntax import MAX_DEPTH, CelSyntaxError, parse

MAX_ELEMENTS = 64  # max(DeviceAttributeMaxValueLength, ResourceSliceMaxAttributeValuesPerDevice)
DRA = 'device.attributes["dra.example.com"]'
TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"

UPSTREAM = {
    'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))': 6,
    'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))': 6,
    '"no-such-domain" in device.attributes': 3,
    'device.driver == ""': 2,
    'device.driver == "dra.example.com"': 4,
    f"{DRA}.name": 4,
    f'{DRA}["name"]': 4,
    f"{DRA}.name > 0": 5,
    f'{DRA}.name == "fish"': 5,
    f"{DRA}.name.exists(x, x > 0)": 5 + (3 + 3) * MAX_ELEMENTS,
    f'{DRA}.name.exists(x, x == "fish")': 5 + (3 + 3) * MAX_ELEMENTS,
    f"{DRA}.names": 4,
    f'{DRA}.name.includes("fish")': 4 + 48,
    f'{DRA}.name.includes(semver("1.0.0"))': 4 + 48 + 1,
    f"{DRA}.names.size() == 2": 6,
    f'{DRA}.names.all(x, x != "")': 5 + (2 + 2) * MAX_ELEMENTS,
    f'{DRA}.names.all(x, x.isGreaterThan(semver("0.0.1")))': 5 + (2 + 4) * MAX_ELEMENTS,
    f"1 in {DRA}.names": 4 + 64,
    f'{DRA}.name.isGreaterThan(semver("0.0.1"))': 6,
    f'{DRA}.name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)': 7,
    f'{DRA}.name.exists(x, x.isGreaterThan(semver("0.0.1")))': 5 + (3 + 4) * MAX_ELEMENTS,
    'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))': 6,
    '"name" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))': 10,
    '!("name" in device.capacity["dra.example.com"]) || device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))': 11,
    f"{DRA}.a && {DRA}.b && {DRA}.c": 12,
    'device.attributes.exists_one(x, x == "dra.example.com")': 164,
    f'{DRA}.exists_one(x, x == "services")': 133,
    f'{DRA}.services.split("example").size() >= 2': 19,
    f'{DRA}.services.matches("[^a]?sym")': 18,
    'device.capacity.exists_one(x, x == "dra.example.com")': 164,
    'device.capacity["dra.example.com"].exists_one(x, x == "memory")': 133,
    "device.allowMultipleAllocations == true": 3,
    # "expensive": the ValidatingAdmissionPolicy integration test's seven nested all().
    f"{TEN}.all(x, {TEN}.all(y, {TEN}.all(z, {TEN}.all(z2, {TEN}.all(z3, {TEN}.all(z4, {TEN}.all(z5, "
    "int('1'.find('[0-9]*')) < 100)))))))": 85555551,
}
ALL_TEN = (
    'device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) && '
    f'{DRA}.bool && {DRA}.int > 0 && {DRA}.string == "fish" && {DRA}.version.isGreaterThan(semver("0.0.1")) && '
    'device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) && '
    f'{DRA}["bool"] && {DRA}["int"] > 0 && {DRA}["string"] == "fish" && {DRA}["version"].isGreaterThan(semver("0.0.1"))'
)
UPSTREAM[ALL_TEN] = 52


@pytest.mark.parametrize("expression,cost", UPSTREAM.items(), ids=[e[:60] for e in UPSTREAM])
def test_estimate_is_kube_apiservers(expression, cost):
    assert estimate(parse(expression)) == cost


def test_unknown_sizes_saturate_instead_of_overflowing():
    # A list of unknown length (here: a converted value) makes the comprehension unbounded.
    assert estimate(parse('string(device.driver).split("").all(x, string(x).split("").all(y, y + y == ""))')) == MAX_U64


def test_string_doubling_is_seen_through_concatenation():
    doubled = "device.driver"
    costs = []
    for _ in range(4):
        doubled = f"({doubled} + {doubled})"
        costs.append(estimate(parse(f'{doubled} == ""')))
    assert costs == sorted(costs) and costs[-1] > 16 * 63 * 0.1


def test_device_sizes_drive_the_estimate():
    nested = f"{DRA}.all(a, {DRA}.all(b, {DRA}[a] == {DRA}[b]))"
    small = Bounds(driver=10, domain=15, ident=8, entries=2, value=8)
    assert estimate(parse(nested), small) < estimate(parse(nested), API_BOUNDS)
    assert estimate(parse(nested), Bounds(entries=2000)) > 1_000_000


def test_strict_charges_what_our_evaluator_copies():
    grown = "[" + ",".join(["0"] * 5000) + "].map(x, x).size() > 0"
    assert estimate(parse(grown)) < 1_000_000 < estimate(parse(grown), strict=True)
    literal = "[" + ", ".join(["1"] * 100) + "].size() > 0"
    assert estimate(parse(literal), strict=True) == estimate(parse(literal)) + 100


def test_strict_bounds_what_string_conversion_prints():
    # cel-go leaves string()'s size unknown, so admission's estimate saturates; our runtime bound
    # knows a printed attribute is no longer than its value or a number, so it does not cancel
    derived = "'numa' + string(device.attributes['gpu.example.com'].numa)"
    small = Bounds(driver=10, domain=15, ident=8, entries=2, value=8)
    assert estimate(parse(derived), small) == MAX_U64
    assert estimate(parse(derived), small, strict=True) < 100


@pytest.mark.parametrize("text", [
    "1" + " + 1" * MAX_DEPTH,
    "a" + ".b" * MAX_DEPTH,
    "x" + "[0]" * MAX_DEPTH,
])
def test_nesting_deeper_than_cel_gos_parser_allows_is_refused(text):
    with pytest.raises(CelSyntaxError, match="max recursion depth exceeded"):
        parse(text)


def test_long_logical_chains_and_negation_runs_are_not_deep():
    # cel-go balances && / || chains and folds pairs of ! and -: neither nests.
    parse(" && ".join(["device.driver == 'x'"] * 2000))
    parse(" || ".join(["true"] * 2000))
    assert parse("!" * 1001 + "true").name == "!_"
    assert parse("--1").value == 1 and parse("-1").value == -1


def test_macros_expand_as_cel_go_expands_them():
    tree = parse("[1].map(x, x > 0, x * 2)")
    assert tree.kind == "comp" and tree.iter_var == "x"
    step = tree.args[3]
    assert step.name == "_?_:_" and step.args[1].name == "_+_"
    assert parse("has(device.x)").test_only
    assert parse("[1].all(a, b, true)").kind == "call"  # not a two-argument macro: an ordinary call


@pytest.mark.parametrize("text,message", [
    ("a.?b", "unsupported syntax '.?'"),
    ("a[?0]", "unsupported syntax '[?'"),
    ("as", "reserved identifier"),
    ("has(a)", "invalid argument to has() macro"),
    ("[1].map(1, x)", "must be a simple name"),
    ("1 +", "unexpected"),
    ("#", "unexpected character"),
])
def test_syntax_errors(text, message):
    with pytest.raises(CelSyntaxError, match=message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?").replace("[", r"\[")):
        parse(text)


def test_literals_decode_for_their_length():
    assert parse(r'"\u00e9\x41\101\n"').value == "éAA\n"
    assert parse(r"r'\n'").value == "\\n"
    assert parse("b'ab'").value == b"ab"
    assert parse("'''a'b'''").value == "a'b"
    assert (parse("0x1F").value, parse("7u").lit_type, parse(".5e1").value) == (31, "uint", 5.0)
