"""Feature gates parse with upstream names; bad input names the offending item."""

import pytest

from driver.errors import InputError
from driver.features import Features, parse_features


def test_default_all_on_and_override():
    f = parse_features("DRADeviceCompatibilityGroups=false, DRASharedConsumableCapacity=true")
    assert f.compatibility_groups is False
    assert f.shared_consumable_capacity is True
    assert Features().as_gates()["DRAPartitionableDevices"] is True
    assert "DRADeviceCompatibilityGroups=false" in str(f)


@pytest.mark.parametrize("text,msg", [("Nope=true", "unknown feature gate 'Nope'"),
                                      ("DRAPartitionableDevices", "expected NAME=true|false"),
                                      ("DRAPartitionableDevices=maybe", "expected NAME=true|false")])
def test_bad_gates(text, msg):
    with pytest.raises(InputError, match=msg):
        parse_features(text)
