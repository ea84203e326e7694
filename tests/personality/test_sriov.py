"""The sriov personality held against k8snetworkplumbingwg/dra-driver-sriov@cd9404f0.

Facts: pkg/consts/consts.go (driver name, fully qualified attribute names), pkg/devicestate/
discovery.go (device name from the VF PCI address, attribute values and types, no capacity),
deployments/helm/dra-driver-sriov/templates/deviceclass.yaml (the DeviceClass), pkg/api/
virtualfunction/v1alpha1/api.go (VfConfig, strict decoder), pkg/devicestate/statehelpers.go (class
then claim configs, Override of driver/ifName/netAttachDefName), pkg/cdi/cdi.go (vendor = driver, class
vf), pkg/devicestate/state.go (SRIOVNETWORK_* env).
"""

from __future__ import annotations

import pytest

from driver.errors import ConfigError, InputError, PrepareError
from driver.features import Features
from driver.personality import personality_named
from driver.state.types import ClaimRef

from .nodes import devices, inventory, node

DRIVER = "sriovnetwork.k8snetworkplumbingwg.io"
Q = DRIVER + "/"
REF = ClaimRef("default", "net", "uid-n")


def test_vfs_are_named_after_their_pci_address_with_the_drivers_attributes() -> None:
    slices, classes = node("dgx-a100", personality="sriov")
    assert [s["spec"]["driver"] for s in slices] == [DRIVER] and len(slices) == 1
    devs = devices(slices)
    assert len(devs) == 32 and "0000-0c-00-1" in devs  # 8 PFs x 4 VFs; the storage ports have none
    vf = devs["0000-0c-00-1"]
    assert "capacity" not in vf
    assert vf["attributes"] == {
        Q + "vendor": {"string": "15b3"}, Q + "deviceID": {"string": "101c"}, Q + "pfDeviceID": {"string": "101b"},
        Q + "pciAddress": {"string": "0000:0c:00.1"}, "k8s.cni.cncf.io/deviceID": {"string": "0000:0c:00.1"},
        Q + "PFName": {"string": "enp12s0np0"}, Q + "EswitchMode": {"string": "legacy"}, Q + "vfID": {"int": 0},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"}, Q + "pfPciAddress": {"string": "0000:0c:00.0"},
        "resource.kubernetes.io/pciBusID": {"string": "0000:0c:00.1"}, Q + "linkType": {"string": "ethernet"},
        Q + "rdmaCapable": {"bool": False}, "dra.net/numaNode": {"int": 0}}
    assert classes == [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
                        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}}]


def test_eswitch_mode_from_the_sriov_section() -> None:
    slices, _ = node("dgx-a100", {"sriov": {"eswitchMode": "switchdev"}}, personality="sriov")
    assert devices(slices)["0000-0c-00-1"]["attributes"][Q + "EswitchMode"] == {"string": "switchdev"}
    with pytest.raises(ConfigError, match="sriov.eswitchMode: expected legacy or switchdev"):
        personality_named("sriov").drivers({"sriov": {"eswitchMode": "offload"}})


def vf_config(**fields) -> dict:
    return {"apiVersion": f"{DRIVER}/v1alpha1", "kind": "VfConfig", **fields}


def entry(params: dict, requests: list[str], source: str = "FromClaim") -> dict:
    return {"source": source, "requests": requests, "opaque": {"driver": DRIVER, "parameters": params}}


def test_vf_config_strict_decoding_precedence_and_env() -> None:
    driver = personality_named("sriov").drivers()[0]
    devs = devices([{"spec": s} for s in driver.render(inventory("dgx-a100"), Features(), node_name="n").slices])
    result = {"request": "vf", "driver": DRIVER, "pool": "n", "device": "0000-0c-00-1"}
    [applied] = driver.resolve_configs(REF, [entry(vf_config(netAttachDefName="class-net"), ["vf"], "FromClass"),
                                             entry(vf_config(driver="vfio-pci", netAttachDefName="sriov-net"), ["vf"])],
                                       [result], devs)
    assert applied.params == {"driver": "vfio-pci", "ifName": "", "netAttachDefName": "sriov-net"}
    env = driver.device_env(REF, result, devs["0000-0c-00-1"], applied, None)
    assert env["SRIOVNETWORK_VF_DEVICE_0000_0c_00_1"] == "0000:0c:00.1"
    assert env["SRIOVNETWORK_NET_ATTACH_DEF_NAME"] == "sriov-net"
    with pytest.raises(PrepareError, match='strict decoding error: unknown field "vlan"'):
        driver.resolve_configs(REF, [entry(vf_config(vlan=10), ["vf"])], [result], devs)
    with pytest.raises(PrepareError, match="json: cannot unmarshal string into Go struct field VfConfig.addVhostMount "
                                           "of type bool"):
        driver.resolve_configs(REF, [entry(vf_config(addVhostMount="yes"), ["vf"])], [result], devs)
    assert driver.cdi.kind == f"{DRIVER}/vf" and driver.cdi.file_prefix == f"{DRIVER}-vf_"


def test_the_driver_name_cannot_change() -> None:
    with pytest.raises(InputError, match=f"publishes as {DRIVER}"):
        personality_named("sriov").drivers({}, "net.example.com")
