"""Names and quantity strings: DNS labels, stable UUIDs, canonical Kubernetes quantities."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from driver.errors import InputError
from driver.model.quantity import format_quantity, parse_quantity
from driver.slices.names import (
    is_dns_label,
    is_dns_subdomain,
    mbps_quantity,
    mib_quantity,
    parse_size,
    profile_label,
    stable_uuid,
)


@pytest.mark.parametrize(
    ("profile", "label"),
    [("1g.5gb", "1g5gb"), ("1g.10gb+me", "1g10gbme"), ("1g.20gb-me", "1g20gb-me"), ("A100-4C", "a100-4c"),
     ("A100D-80C", "a100d-80c"), ("H100 NVL-94C", "h100-nvl-94c")],
)
def test_profile_labels_are_dns_labels(profile, label):
    assert profile_label(profile) == label and is_dns_label(label)


def test_profile_without_usable_characters_is_an_input_error():
    with pytest.raises(InputError, match=r"profile name '\.\.\.'"):
        profile_label("...")


@pytest.mark.parametrize(("mib", "text"), [(40960, "40Gi"), (4864, "4864Mi"), (81920, "80Gi"), (0, "0"),
                                           (1024 * 1024, "1Ti")])
def test_memory_quantities_are_canonical(mib, text):
    assert mib_quantity(mib) == text


@pytest.mark.parametrize(("mbps", "text"), [(100000, "100G"), (12500, "12500M"), (400000, "400G"),
                                            (25000, "25G"), (150, "150M"), (1_000_000, "1T")])
def test_bandwidth_quantities_are_canonical(mbps, text):
    assert mbps_quantity(mbps) == text


@given(st.integers(min_value=1, max_value=10**7))
def test_quantities_round_trip_through_the_shared_parser(n):
    assert parse_quantity(mib_quantity(n)) == n * 2**20
    assert parse_quantity(mbps_quantity(n)) == n * 10**6
    assert format_quantity(parse_quantity(mib_quantity(n)), like=mib_quantity(n)) == mib_quantity(n)


def test_stable_uuid_depends_on_node_address_and_name():
    a = stable_uuid("n1", "0000:07:00.0", "gpu-0")
    assert a == stable_uuid("n1", "0000:07:00.0", "gpu-0")
    assert len({a, stable_uuid("n2", "0000:07:00.0", "gpu-0"), stable_uuid("n1", "0000:08:00.0", "gpu-0"),
                stable_uuid("n1", "0000:07:00.0", "gpu-1")}) == 4


@pytest.mark.parametrize(("text", "value"), [("1Gi", 2**30), ("100M", 10**8), (512, 512), ("7", 7), ("2k", 2000),
                                             ("1.5Gi", 3 * 2**29), ("1e3", 1000)])
def test_parse_size(text, value):
    assert parse_size(text, "x") == value


@pytest.mark.parametrize("text", ["0.5", "1500m", "-1", "Gi", "", "1 Gb", True, -5])
def test_parse_size_rejects_garbage_naming_the_field(text):
    with pytest.raises(InputError, match="slices.someStep"):
        parse_size(text, "slices.someStep")


def test_trailing_newline_is_not_a_valid_name():
    # `$` in re.match accepts "x\n"; names flow into file names and API objects, so match the whole string.
    assert is_dns_label("gpu-0") and not is_dns_label("gpu-0\n")
    assert is_dns_subdomain("fake-dra.example.com") and not is_dns_subdomain("fake-dra.example.com\n")
