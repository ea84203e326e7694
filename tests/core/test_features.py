"""Feature gates parse with upstream names; bad input names the offending item and suggests a fix."""

import pytest

from driver.errors import InputError
from driver.features import KNOWN_GATES, NOT_IN_1_37, Features, parse_features


def test_default_follows_a_1_37_cluster_and_override():
    f = parse_features("DRADeviceCompatibilityGroups=false, DRASharedConsumableCapacity=true")
    assert f.compatibility_groups is False
    assert f.shared_consumable_capacity is True
    assert Features().as_gates()["DRAPartitionableDevices"] is True
    # KEP-5941 is not a 1.37 gate: unset unless asked for, which publishing reads as off and the
    # allocator as on (only an apiserver with the gate keeps its fields in a slice).
    assert Features().shared_consumable_capacity is None
    assert Features().enabled("DRASharedConsumableCapacity") is False
    assert Features().for_scheduler().shared_consumable_capacity is True
    assert parse_features("DRASharedConsumableCapacity=false").for_scheduler().shared_consumable_capacity is False
    assert Features.all_on().shared_consumable_capacity is True
    assert parse_features(str(Features())) == Features()
    assert "DRADeviceCompatibilityGroups=false" in str(f)


@pytest.mark.parametrize("gate", ["DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus",
                                  "DRAListTypeAttributes", "DRADeviceTaintRules", "DRAExtendedResource",
                                  "DRAAdminAccess", "DRAPrioritizedList", "DynamicResourceAllocation",
                                  "DRAWorkloadResourceClaims", "GenericWorkload"])
def test_every_1_37_dra_gate_is_accepted(gate):
    f = parse_features(f"{gate}=false")
    assert f.enabled(gate) is False
    assert parse_features(str(f)) == f  # round-trips through its text form


def test_inert_gate_keeps_default_until_set():
    assert Features().enabled("DRAExtendedResource") is True
    assert Features().enabled("DRAWorkloadResourceClaims") is False
    f = parse_features("DRAWorkloadResourceClaims=true")
    assert f.enabled("DRAWorkloadResourceClaims") is True
    assert f.other == (("DRAWorkloadResourceClaims", True),)


def test_table_marks_the_project_only_gate():
    assert NOT_IN_1_37 == {"DRASharedConsumableCapacity"}
    assert KNOWN_GATES["DRADeviceCompatibilityGroups"].stage == "alpha"
    assert KNOWN_GATES["DRAPrioritizedList"].locked


@pytest.mark.parametrize("text,msg", [
    ("Nope=true", "unknown feature gate 'Nope'"),
    ("DRABindingConditions=true", "did you mean 'DRADeviceBindingConditions'"),
    ("drapartitionabledevices=true", "did you mean 'DRAPartitionableDevices'"),
    ("DRAListAttributes=true", "did you mean 'DRAListTypeAttributes'"),
    ("DRAPartitionableDevices", "expected NAME=true|false"),
    ("DRAPartitionableDevices=maybe", "expected NAME=true|false"),
])
def test_bad_gates(text, msg):
    with pytest.raises(InputError, match=msg):
        parse_features(text)


def test_error_names_where_the_gate_came_from():
    with pytest.raises(InputError, match=r"^featuregates.yaml: scheduler: unknown feature gate"):
        parse_features("Bogus=true", where="featuregates.yaml: scheduler")


def test_fractional_capacity_range_is_off_by_default_in_1_37_but_modelled_on():
    # kubernetes PR #140161 added the gate in 1.37 default-off (issue #140594: on-by-default in 1.38).
    gate = KNOWN_GATES["DRAFractionalCapacityRange"]
    assert (gate.default, gate.stage) == (False, "alpha")
    assert Features().fractional_capacity_range is True
    assert parse_features("DRAFractionalCapacityRange=false").enabled("DRAFractionalCapacityRange") is False
