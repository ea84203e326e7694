"""Network interfaces of PCI functions: names and hardware (MAC) addresses from sysfs, as discovery and
the plugin's prepare-time lookup read them, including damaged trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from driver.discovery import discover
from driver.discovery.netdev import netdev_for_pci, netdev_of

NIC = "0000:0c:00.0"


def dev(root: Path, bdf: str) -> Path:
    return (root / "bus/pci/devices" / bdf).resolve()


def first_vf(root: Path) -> Path:
    return (dev(root, NIC) / "virtfn0").resolve()


def test_discovery_reads_the_mac_of_pfs_and_vfs(pristine, catalog) -> None:
    root = pristine("mini")
    inv = discover(root, catalog)
    nic = next(n for n in inv.nics if n.pci.address == NIC)
    assert nic.hardware_address == (dev(root, NIC) / "net" / nic.interface / "address").read_text().strip()
    vf = nic.vfs[0]
    want = (first_vf(root) / "net" / vf.interface / "address").read_text().strip()
    assert vf.hardware_address == want and len(want.split(":")) == 6
    assert len({v.hardware_address for v in nic.vfs}) == len(nic.vfs), "every VF has its own MAC"


def test_lookup_by_pci_address_matches_discovery(pristine, catalog) -> None:
    root = pristine("mini")
    vf = next(n for n in discover(root, catalog).nics if n.pci.address == NIC).vfs[1]
    nd = netdev_for_pci(root, vf.pci.address)
    assert nd is not None and (nd.interface, nd.hardware_address) == (vf.interface, vf.hardware_address)


@pytest.mark.parametrize("address", ["../0000:0c:00.0", "0000:0C:00.0", "0000:0c:00.0\n", "", None, 7])
def test_lookup_refuses_anything_but_a_pci_address(pristine, address) -> None:
    assert netdev_for_pci(pristine("mini"), address) is None


def test_lookup_of_a_function_without_netdev_or_gone(pristine) -> None:
    root = pristine("mini")
    assert netdev_for_pci(root, "0000:07:00.0") is None, "a GPU has no net/"
    assert netdev_for_pci(root, "0000:ee:00.0") is None, "vanished function"


def test_upper_case_and_infiniband_addresses_are_accepted(tree) -> None:
    root = tree()
    vf = first_vf(root)
    (iface,) = [p.name for p in (vf / "net").iterdir()]
    (vf / "net" / iface / "address").write_text("0E:42:00:C0:00:00\n")
    assert netdev_of(str(vf)).hardware_address == "0e:42:00:c0:00:00"
    ib = ":".join(["80", "00", "02", "08", "fe", "80"] + ["00"] * 8 + ["02", "c9", "03", "00", "0a", "bc"][:6])
    (vf / "net" / iface / "address").write_text(ib + "\n")
    assert netdev_of(str(vf)).hardware_address == ib


@pytest.mark.parametrize("content", ["not-a-mac", "0e:42:00:c0:00:", "0e-42-00-c0-00-00", "0e:42:00:c0:00:0g"])
def test_garbled_address_is_a_warning_and_keeps_the_interface(tree, catalog, content) -> None:
    root = tree()
    vf = first_vf(root)
    (iface,) = [p.name for p in (vf / "net").iterdir()]
    (vf / "net" / iface / "address").write_text(content + "\n")
    inv = discover(root, catalog)
    got = next(n for n in inv.nics if n.pci.address == NIC).vfs[0]
    assert (got.interface, got.hardware_address) == (iface, None)
    hits = [w for w in inv.warnings if f"net/{iface}/address" in w]
    assert len(hits) == 1 and "garbled value" in hits[0] and "hardware address unknown" in hits[0]


def test_missing_address_is_silent(tree, catalog) -> None:
    root = tree()
    vf = first_vf(root)
    (iface,) = [p.name for p in (vf / "net").iterdir()]
    (vf / "net" / iface / "address").unlink()
    inv = discover(root, catalog)
    assert next(n for n in inv.nics if n.pci.address == NIC).vfs[0].hardware_address is None
    assert not [w for w in inv.warnings if "address" in w]


def test_net_that_is_not_a_directory_and_bad_interface_names(tree, catalog) -> None:
    root = tree()
    vf = first_vf(root)
    (iface,) = [p.name for p in (vf / "net").iterdir()]
    (vf / "net" / "a b").mkdir()  # whitespace: not a kernel interface name
    warnings: list[tuple[str, str]] = []
    nd = netdev_of(str(vf), lambda path, problem: warnings.append((path, problem)))
    assert nd is not None and nd.interface == iface, "the bad name is skipped"
    assert warnings == [(str(vf / "net" / "a b"), "not a valid interface name; ignored")]

    other = (dev(root, NIC) / "virtfn1").resolve()
    import shutil
    shutil.rmtree(other / "net")
    (other / "net").write_text("")
    inv = discover(root, catalog)
    assert next(n for n in inv.nics if n.pci.address == NIC).vfs[1].interface is None
    assert any(w.startswith(str(other / "net")) and "interface unknown" in w for w in inv.warnings)
