"""NVIDIA personality errors: slices over the API's limits (render._check_limits) and malformed `nvidia.migDevices`."""

from __future__ import annotations

import pytest

from driver.errors import ConfigError
from driver.personality.nvidia.render import _check_limits
from driver.personality.nvidia.settings import parse_settings


def _devices(n: int, counters: bool = False) -> list[dict]:
    extra = {"consumesCounters": [{"counterSet": "gpu-0-counter-set", "counters": {}}]} if counters else {}
    return [{"name": f"gpu-{i}", **extra} for i in range(n)]


def _counter_sets(n: int) -> list[dict]:
    return [{"name": f"gpu-{i}-counter-set", "counters": {}} for i in range(n)]


@pytest.mark.parametrize(("slices", "message"), [
    ([{"devices": _devices(129)}],
     "the gpu.nvidia.com slice would hold 129 devices, over the API's limit of 128 "
     "(NVIDIA's plugin publishes it as one slice, which the apiserver rejects)"),
    ([{"devices": _devices(65, counters=True)}],
     "the gpu.nvidia.com slice would hold 65 devices, over the API's limit of 64"),
    ([{"devices": _devices(64)}, {"devices": _devices(64) + _devices(1, counters=True)}],  # one device with counters
     "the gpu.nvidia.com slice would hold 65 devices, over the API's limit of 64"),
    ([{"sharedCounters": _counter_sets(9)}],
     "the gpu.nvidia.com counter slice would hold 9 counter sets, over the API's limit of 8 "
     "(NVIDIA's plugin publishes them in one slice)"),
])
def test_a_slice_over_the_api_limits_is_a_config_error(slices, message) -> None:
    with pytest.raises(ConfigError) as err:
        _check_limits(slices)
    assert message in str(err.value)


def test_slices_at_the_limits_pass() -> None:
    _check_limits([{"devices": _devices(128)}, {"devices": _devices(64, counters=True)},
                   {"sharedCounters": _counter_sets(8)}, {}])


@pytest.mark.parametrize(("mig", "message"), [
    (["1g.5gb@0"], "nvidia.migDevices: expected a mapping of GPU minor -> list of \"<profile>@<start>\", got list"),
    ("0: 1g.5gb@0", "nvidia.migDevices: expected a mapping of GPU minor -> list of \"<profile>@<start>\", got str"),
    ({0: "1g.5gb@0"},
     "nvidia.migDevices[0]: expected a list of \"<profile>@<start>\" such as 1g.5gb@0, got '1g.5gb@0'"),
    ({"1": {"1g.5gb": 0}},
     "nvidia.migDevices[1]: expected a list of \"<profile>@<start>\" such as 1g.5gb@0, got {'1g.5gb': 0}"),
    ({0: ["1g.5gb@0"], "all": None},
     "nvidia.migDevices[all]: expected a list of \"<profile>@<start>\" such as 1g.5gb@0, got None"),
])
def test_bad_mig_devices_name_the_gpu(mig, message) -> None:
    with pytest.raises(ConfigError) as err:
        parse_settings({"migDevices": mig})
    assert message in str(err.value)


def test_good_mig_devices_parse() -> None:
    assert parse_settings({"migDevices": {0: ["1g.5gb@0"], "all": []}}).mig_devices == {0: (("1g.5gb", 0),), "all": ()}
