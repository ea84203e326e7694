"""A NIC physical function without VFs (or without SR-IOV) is the host's own port: never published
unless `slices.publishPFs` names it, by PCI address (any case, 4- or 8-hex-digit domain) or interface."""

from __future__ import annotations

import pytest
from builders import nic
from conftest import of_type

from driver.discovery import discover, make_sysfs
from driver.errors import ConfigError
from driver.features import Features
from driver.hardware import load_catalog
from driver.model.inventory import Inventory
from driver.slices import SliceConfig, check_pool, render_pool

DRIVER = "fake-dra.example.com"


@pytest.fixture(scope="module")
def no_gpu(tmp_path_factory):
    root = tmp_path_factory.mktemp("no-gpu")
    make_sysfs("no-gpu", root)
    return discover(root, load_catalog())


def render(inventory, config=None, features=Features()):
    return render_pool(inventory, features, node_name="n1", driver_name=DRIVER, config=SliceConfig.from_dict(config))


def test_plain_port_is_not_published_by_default(no_gpu):
    pool = render(no_gpu)
    assert of_type(pool, "nic") == {} and len(of_type(pool, "vf")) == 8
    assert pool.warnings == ()


@pytest.mark.parametrize("entry", ["eno1", "0000:02:00.0", "0000:02:00.0".upper(), "00000000:02:00.0"])
def test_plain_port_opted_in_by_address_or_interface(no_gpu, entry):
    pool = render(no_gpu, {"publishPFs": [entry]})
    (port,) = of_type(pool, "nic").values()
    assert port["name"] == "nic-1"  # numbered after the SR-IOV PF, whose VFs keep their names
    assert port["attributes"]["interface"] == {"string": "eno1"}
    assert port["attributes"]["totalVFs"] == {"int": 0}
    assert port["capacity"] == {"bandwidth": {"value": "1G"}}
    assert "nic-0-vf-7" in pool.devices() and check_pool(pool) == []


def test_opting_in_a_pf_with_vfs_publishes_its_vfs_and_says_so(no_gpu):
    pool = render(no_gpu, {"publishPFs": ["ens2f0"]})
    assert of_type(pool, "nic") == {} and len(of_type(pool, "vf")) == 8
    assert pool.warnings == ("nic-0 (0000:31:00.0): named in slices.publishPFs but has 8 VFs enabled; "
                             "its VFs are published, not the PF",)


def test_an_entry_that_matches_nothing_is_a_warning(no_gpu):
    pool = render(no_gpu, {"publishPFs": ["0000:99:00.0", "ens9"]})
    assert list(pool.warnings) == [
        "slices.publishPFs: '0000:99:00.0' matches no network function on this node",
        "slices.publishPFs: 'ens9' matches no network function on this node",
    ]


def test_sriov_pf_with_no_vfs_is_the_hosts_until_named():
    inv = Inventory(nics=(nic(0, vfs=0), nic(1, vfs=4)))
    assert "nic-0" not in render(inv).devices()
    assert "nic-0" in render(inv, {"publishPFs": ["ens0f0"]}).devices()


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("eno1", "slices.publishPFs: expected a list"),
        ([""], r"slices.publishPFs\[0\]: expected a PCI address or an interface name"),
        ([3], r"slices.publishPFs\[0\]: expected a PCI address"),
        (["0000:07:00"], r"slices.publishPFs\[0\]: invalid PCI address '0000:07:00'"),
        (["0000:07:20.0"], r"slices.publishPFs\[0\]: invalid PCI address '0000:07:20.0': device number 20"),
        (["a-very-long-interface-name"], r"slices.publishPFs\[0\]: .* is neither"),
        (["eth 0"], r"slices.publishPFs\[0\]: 'eth 0' is neither"),
    ],
)
def test_bad_publish_pfs_entries_name_the_entry(value, needle):
    with pytest.raises(ConfigError, match=needle):
        SliceConfig.from_dict({"publishPFs": value})


def test_addresses_are_normalised_once():
    cfg = SliceConfig.from_dict({"publishPFs": ["00000000:0A:00.1", "0000:0a:00.1", "0a:00.1", " eno1 "]})
    assert cfg.publish_pfs == ("0000:0a:00.1", "eno1")
