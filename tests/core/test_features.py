"""Feature gates parse with upstream names; bad input names the offending item and suggests a fix."""

import re

import pytest

from driver.errors import InputError
from driver.features import (KNOWN_GATES, KUBERNETES_VERSIONS, NOT_IN_1_37, PROJECT_ONLY_GATES, TARGET_VERSION, Features,
                              gates_of, kube_minor, parse_features, version_gate_errors)


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
    # kubernetes PR #140161 added the gate in 1.37 as beta, default off; its second 1.37 entry (on, with
    # MinCompatibilityVersion 1.37) makes it on by default for a 1.38 binary.
    gate = KNOWN_GATES["DRAFractionalCapacityRange"]
    assert (gate.default, gate.stage) == (False, "beta")
    assert gates_of("1.38")["DRAFractionalCapacityRange"].default is True
    assert Features().fractional_capacity_range is True
    assert parse_features("DRAFractionalCapacityRange=false").enabled("DRAFractionalCapacityRange") is False


# -- the gate table, release by release ------------------------------------------------------------


def test_1_38_has_no_dynamic_resource_allocation_gate():
    """kubernetes/kubernetes#141946 removed it: a 1.38 component given it refuses to start."""
    assert "DynamicResourceAllocation" in gates_of("1.36") and "DynamicResourceAllocation" in gates_of("1.37")
    assert "DynamicResourceAllocation" not in gates_of("1.38")
    (err,) = version_gate_errors({"DynamicResourceAllocation": True}, "v1.38.0")
    assert err.startswith("DynamicResourceAllocation: not a feature gate of Kubernetes 1.38") and "#141946" in err


@pytest.mark.parametrize(("gate", "version", "stage", "default", "locked"), [
    ("DRADeviceTaints", "1.36", "beta", True, False),
    ("DRADeviceTaints", "1.37", "GA", True, False),
    ("DRADeviceTaints", "1.38", "GA", True, True),
    ("DRADeviceTaintRules", "1.36", "beta", False, False),
    ("DRAPrioritizedList", "1.36", "GA", True, False),
    ("DRAPrioritizedList", "1.37", "GA", True, True),
    ("DRAFractionalCapacityRange", "1.37", "beta", False, False),
    ("DRAFractionalCapacityRange", "1.38", "beta", True, False),
    ("DRADeviceBindingConditions", "1.38", "GA", True, False),
    ("DRAListTypeAttributes", "1.38", "beta", True, False),
    ("DRAOptionalNodeOperations", "1.38", "beta", True, False),
    ("ResourceHealthStatus", "1.37", "beta", True, False),
])
def test_gate_states_per_release(gate, version, stage, default, locked):
    spec = gates_of(version)[gate]
    assert (spec.stage, spec.default, spec.locked) == (stage, default, locked)


@pytest.mark.parametrize("gate", ["DRADeviceCompatibilityGroups", "DRAFractionalCapacityRange", "DRADerivedAttributes",
                                  "DRAOptionalNodeOperations"])
def test_gates_new_in_1_37_are_not_1_36_gates(gate):
    assert gate not in gates_of("1.36") and gate in gates_of("1.37")
    assert version_gate_errors({gate: True}, "1.36") and not version_gate_errors({gate: True}, "1.37")


def test_the_1_37_column_is_the_gate_table_the_project_targets():
    assert TARGET_VERSION == "1.37" and TARGET_VERSION in KUBERNETES_VERSIONS
    for name, spec in gates_of("1.37").items():
        gate = KNOWN_GATES[name]
        assert (gate.default, gate.stage, gate.locked) == (spec.default, spec.stage, spec.locked), name
    assert set(KNOWN_GATES) - set(gates_of("1.37")) == NOT_IN_1_37 | {"DRASharedConsumableCapacity"}
    assert PROJECT_ONLY_GATES == {"DRASharedConsumableCapacity"}
    assert all(KNOWN_GATES[g].source for g in KNOWN_GATES), "every row names its source"


def test_locked_gates_refuse_the_other_value():
    assert version_gate_errors({"DRADeviceTaints": False}, "1.38") == ["DRADeviceTaints: locked to true in Kubernetes 1.38"]
    assert version_gate_errors({"DRADeviceTaints": False}, "1.37") == []


@pytest.mark.parametrize(("text", "minor"), [("v1.38.0-alpha.1+abc", "1.38"), ("1.37", "1.37"), ("1.36.4", "1.36")])
def test_kube_minor(text, minor):
    assert kube_minor(text) == minor


@pytest.mark.parametrize(("version", "msg"), [("1.35", "no gate table for Kubernetes 1.35 (known: 1.36, 1.37, 1.38)"),
                                              ("latest", "'latest' is not a Kubernetes version")])
def test_unknown_versions_are_refused(version, msg):
    with pytest.raises(InputError, match=re.escape(msg)):
        gates_of(version)
