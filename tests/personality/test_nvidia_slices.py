"""The nvidia personality's slices held against what NVIDIA's kubelet plugin publishes.

Facts, at kubernetes-sigs/dra-driver-nvidia-gpu@95932046 (cmd/gpu-kubelet-plugin/):
- deviceinfo.go GpuInfo.Attributes: type, uuid, productName, brand, architecture (strings);
  cudaComputeCapability, driverVersion, cudaDriverVersion (versions); the standard pciBusID and
  pcieRoot (strings) and numaNode (int; ints with the driver's DRAListTypeAttributes gate); no index
  or minor. CanonicalName `gpu-<minor>`; capacity `memory` = NVML total (fullGpuCapacity).
- mig.go CommonAttributesMig: the GPU's attributes without uuid, plus parentUUID and profile; static
  MIG devices add uuid (MigDeviceInfo.GetDevice) and `memorySlice<i>` capacities; DynamicMIG devices
  have no uuid. CommonCapacitiesMig: multiprocessors, copyEngines, decoders, encoders, jpegEngines,
  ofaEngines, memory. ToCanonicalName `gpu-%d-mig-%s-%d-%d` (profile without dots, RFC 1123).
- partitions.go: counter set `gpu-<minor>-counter-set`, counters named camelToDNSName of each
  capacity plus `memory-slice-<i>`, at the per-dimension maxima; the full GPU consumes all of it.
- deviceinfo.go VfioDeviceInfo.GetDevice: type vfio, uuid (uuid5 of the PCI address), deviceID,
  vendorID, productName (strings), iommuFDEnabled (bool), capacity addressableMemory.
- driver.go: split layout (counter slice first, one slice per GPU by PCI bus ID, devices sorted by
  name) with DynamicMIG; one slice otherwise.
- Numbers (the A100-40GB counter set 98 SMs, 7 CE, 5 DEC, 0 ENC, 1 JPEG, 1 OFA, 40192Mi; H100's
  81152Mi full-GPU capacity under DynamicMIG against 81559Mi without; GI profile IDs 19/20/15/14/9/5/0)
  are hardware facts from nvidia-smi captures, cited in driver/hardware/data.
"""

from __future__ import annotations

import uuid

import pytest

from driver.errors import ConfigError, InputError
from driver.personality import personality_named
from driver.personality.nvidia import device_classes
from driver.personality.nvidia.settings import parse_settings

from .nodes import devices, node

DYNAMIC = {"nvidia": {"featureGates": {"DynamicMIG": True}}}
GPU_ATTRS = {"type": "string", "uuid": "string", "productName": "string", "brand": "string", "architecture": "string",
             "cudaComputeCapability": "version", "driverVersion": "version", "cudaDriverVersion": "version",
             "resource.kubernetes.io/pciBusID": "string", "resource.kubernetes.io/pcieRoot": "string",
             "resource.kubernetes.io/numaNode": "int"}
MIG_ATTRS = {**{k: v for k, v in GPU_ATTRS.items() if k != "uuid"}, "parentUUID": "string", "profile": "string"}
MIG_CAPACITY = {"multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines", "memory"}


def gpu_slices(slices: list[dict]) -> list[dict]:
    return [s for s in slices if s["spec"]["driver"] == "gpu.nvidia.com"]


def _types(dev: dict) -> dict[str, str]:
    return {name: next(iter(value)) for name, value in dev["attributes"].items()}


def test_a_full_gpu_has_exactly_nvidias_attributes_and_types() -> None:
    slices, _ = node("dgx-a100")
    gpu = devices(slices)["gpu-0"]
    assert _types(gpu) == GPU_ATTRS
    a = gpu["attributes"]
    assert a["type"] == {"string": "gpu"} and a["uuid"]["string"].startswith("GPU-")
    assert a["productName"] == {"string": "NVIDIA A100-SXM4-40GB"} and a["architecture"] == {"string": "Ampere"}
    assert a["brand"] == {"string": "Nvidia"} and a["cudaComputeCapability"] == {"version": "8.0.0"}
    assert a["driverVersion"] == {"version": "580.126.20"} and a["cudaDriverVersion"] == {"version": "13.0.0"}
    assert a["resource.kubernetes.io/pciBusID"] == {"string": "0000:07:00.0"}
    assert gpu["capacity"] == {"memory": {"value": "40Gi"}}
    assert "index" not in a and "minor" not in a


def test_h100_memory_is_nvmls_total_and_its_dynamic_mig_capacity_the_largest_profile() -> None:
    legacy, _ = node("h100")
    assert devices(legacy)["gpu-0"]["capacity"] == {"memory": {"value": "81559Mi"}}
    dynamic, _ = node("h100", DYNAMIC)
    capacity = devices(dynamic)["gpu-0"]["capacity"]
    assert capacity["memory"] == {"value": "81152Mi"} and set(capacity) == MIG_CAPACITY


def test_list_type_numa_node_with_nvidias_gate() -> None:
    slices, _ = node("h100", {"nvidia": {"featureGates": {"DRAListTypeAttributes": True}}})
    assert devices(slices)["gpu-0"]["attributes"]["resource.kubernetes.io/numaNode"] == {"ints": [0]}


def test_legacy_layout_is_one_slice_of_full_gpus() -> None:
    slices = gpu_slices(node("dgx-a100")[0])
    assert len(slices) == 1 and slices[0]["spec"]["driver"] == "gpu.nvidia.com"
    assert slices[0]["spec"]["pool"]["name"] == "node-1" and slices[0]["spec"]["nodeName"] == "node-1"
    assert [d["name"] for d in slices[0]["spec"]["devices"]] == [f"gpu-{i}" for i in range(8)]
    assert slices[0]["metadata"]["name"] == "00000-gpu.nvidia.com-node-1"


def test_dynamic_mig_split_layout_counters_first_then_one_slice_per_gpu_sorted_by_name() -> None:
    slices = gpu_slices(node("h100", DYNAMIC)[0])
    assert len(slices) == 9
    assert "devices" not in slices[0]["spec"]
    assert [c["name"] for c in slices[0]["spec"]["sharedCounters"]] == [f"gpu-{i}-counter-set" for i in range(8)]
    for i, spec in enumerate(s["spec"] for s in slices[1:]):
        names = [d["name"] for d in spec["devices"]]
        assert names == sorted(names, key=str.encode) and all(n.startswith(f"gpu-{i}") for n in names)
        assert "sharedCounters" not in spec
    gpu0 = [d["name"] for d in slices[1]["spec"]["devices"]]
    # Every placement of every profile with C == G, plus the full GPU (Hopper toggles MIG without a reset).
    assert len(gpu0) == 26 and "gpu-0" in gpu0
    assert {"gpu-0-mig-1g10gb-19-0", "gpu-0-mig-1g10gb-me-20-6", "gpu-0-mig-1g20gb-15-6", "gpu-0-mig-2g20gb-14-4",
            "gpu-0-mig-3g40gb-9-4", "gpu-0-mig-4g40gb-5-0", "gpu-0-mig-7g80gb-0-0"} <= set(gpu0)


def test_dynamic_mig_devices_have_no_uuid_and_consume_their_memory_slices() -> None:
    slices, _ = node("dgx-a100", {"nvidia": {"featureGates": {"DynamicMIG": True}, "migEnabled": "all"}})
    mig = devices(slices)["gpu-0-mig-3g20gb-9-4"]
    assert _types(mig) == MIG_ATTRS and mig["attributes"]["profile"] == {"string": "3g.20gb"}
    assert set(mig["capacity"]) == MIG_CAPACITY
    [use] = mig["consumesCounters"]
    assert use["counterSet"] == "gpu-0-counter-set"
    assert {k: v["value"] for k, v in use["counters"].items()} == {
        "multiprocessors": "42", "copy-engines": "3", "decoders": "2", "encoders": "0", "jpeg-engines": "0",
        "ofa-engines": "0", "memory": "19968Mi",
        "memory-slice-4": "1", "memory-slice-5": "1", "memory-slice-6": "1", "memory-slice-7": "1"}


def test_ampere_with_mig_mode_on_offers_every_placement_but_not_the_full_gpu() -> None:
    slices, _ = node("dgx-a100", {"nvidia": {"featureGates": {"DynamicMIG": True}, "migEnabled": "all"}})
    per_gpu = [d["name"] for d in slices[1]["spec"]["devices"]]
    assert "gpu-0" not in per_gpu and len(per_gpu) == 25  # 1g.5gb x7, +me x7, 1g.10gb x4, 2g x3, 3g x2, 4g, 7g
    counters = {k: v["value"] for k, v in slices[0]["spec"]["sharedCounters"][0]["counters"].items()}
    assert counters == {"multiprocessors": "98", "copy-engines": "7", "decoders": "5", "encoders": "0",
                        "jpeg-engines": "1", "ofa-engines": "1", "memory": "40192Mi",
                        **{f"memory-slice-{i}": "1" for i in range(8)}}


def test_ampere_with_mig_mode_off_keeps_the_full_gpu_without_counters_under_dynamic_mig() -> None:
    """isDynamicMIGCapable is false for Ampere without MIG mode: full GPU only, NVML memory, no counters;
    the node is MIG-capable, so the split layout (an empty counter slice first) still applies."""
    slices = gpu_slices(node("dgx-a100", DYNAMIC)[0])
    assert len(slices) == 9 and slices[0]["spec"].keys() == {"driver", "pool", "nodeName"}
    gpu = devices(slices)["gpu-0"]
    assert gpu["capacity"] == {"memory": {"value": "40Gi"}} and "consumesCounters" not in gpu


def test_the_full_gpu_consumes_every_counter_of_its_set() -> None:
    slices, _ = node("h100", DYNAMIC)
    [use] = devices(slices)["gpu-3"]["consumesCounters"]
    [counter_set] = [c for c in slices[0]["spec"]["sharedCounters"] if c["name"] == "gpu-3-counter-set"]
    assert use["counterSet"] == "gpu-3-counter-set" and use["counters"] == counter_set["counters"]


def test_static_mig_only_existing_devices_with_uuid_and_memory_slice_capacities() -> None:
    slices, _ = node("dgx-a100", {"nvidia": {"migDevices": {0: ["1g.5gb@0", "1g.5gb+me@1", "3g.20gb@4"]}}})
    devs = devices(slices)
    assert "gpu-0" not in devs and "gpu-1" in devs
    assert sorted(n for n in devs if n.startswith("gpu-0")) == [
        "gpu-0-mig-1g5gb-19-0", "gpu-0-mig-1g5gb-me-20-1", "gpu-0-mig-3g20gb-9-4"]
    mig = devs["gpu-0-mig-3g20gb-9-4"]
    assert _types(mig) == {**MIG_ATTRS, "uuid": "string"} and mig["attributes"]["uuid"]["string"].startswith("MIG-")
    assert set(mig["capacity"]) == MIG_CAPACITY | {f"memorySlice{i}" for i in (4, 5, 6, 7)}
    assert "consumesCounters" not in mig


def test_passthrough_publishes_a_vfio_device_beside_each_gpu_without_mig_devices() -> None:
    slices, _ = node("dgx-a100", {"nvidia": {"featureGates": {"PassthroughSupport": True},
                                             "migDevices": {1: ["7g.40gb@0"]}}})
    devs = devices(slices)
    assert "gpu-vfio-0" in devs and "gpu-0" in devs and "gpu-vfio-1" not in devs
    vfio = devs["gpu-vfio-0"]
    assert _types(vfio) == {"type": "string", "uuid": "string", "deviceID": "string", "vendorID": "string",
                            "productName": "string", "iommuFDEnabled": "bool",
                            "resource.kubernetes.io/pciBusID": "string", "resource.kubernetes.io/pcieRoot": "string",
                            "resource.kubernetes.io/numaNode": "int"}
    a = vfio["attributes"]
    assert a["uuid"] == {"string": str(uuid.uuid5(uuid.NAMESPACE_DNS, "0000:07:00.0"))}
    assert a["deviceID"] == {"string": "0x20b0"} and a["vendorID"] == {"string": "0x10de"}
    assert a["productName"] == {"string": "GA100 [A100 SXM4 40GB]"}
    # 64 GiB BAR1 + 32 MiB BAR3, rounded up to a power of two.
    assert vfio["capacity"] == {"addressableMemory": {"value": "128Gi"}}


def test_hidden_siblings_leave_the_slice() -> None:
    config = {"nvidia": {"featureGates": {"PassthroughSupport": True}}}
    gpu = personality_named("nvidia").drivers(config)[0]
    slices, _ = node("h100", config)
    hidden = gpu.hidden_by(frozenset({"gpu-0", "gpu-vfio-1"}), devices(slices))
    assert hidden == {"gpu-vfio-0", "gpu-1"}
    shown = devices(node("h100", config, hidden=hidden)[0])
    assert {"gpu-0", "gpu-vfio-1"} <= set(shown) and not hidden & set(shown)


@pytest.mark.parametrize(("mode", "memory", "shares"), [
    ("memory", {"default": "81559Mi", "validRange": {"min": "1Mi", "max": "81559Mi", "step": "1Mi"}}, None),
    ("unlimited", {"default": "0", "validRange": {"min": "0", "max": "81559Mi", "step": "1Mi"}}, None),
    ("4", {"default": "0", "validRange": {"min": "0", "max": "81559Mi", "step": "1Mi"}},
     {"value": "4", "requestPolicy": {"default": "1", "validRange": {"min": "1", "max": "4", "step": "1"}}}),
])
def test_consumable_shares_policies_as_nvidias_apply_consumable_shares(mode, memory, shares) -> None:
    config = {"nvidia": {"featureGates": {"ConsumableShares": True, "PassthroughSupport": True},
                         "consumableShares": mode}}
    devs = devices(node("h100", config)[0])
    gpu = devs["gpu-0"]
    assert gpu["allowMultipleAllocations"] is True
    assert gpu["capacity"]["memory"] == {"value": "81559Mi", "requestPolicy": memory}
    assert gpu["capacity"].get("shares") == shares
    assert "allowMultipleAllocations" not in devs["gpu-vfio-0"]  # not VFIO devices


def test_device_classes_are_the_charts() -> None:
    """deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-{gpu,mig,vfio-gpu}.yaml."""
    classes = {c["metadata"]["name"]: c["spec"] for c in device_classes()}
    assert classes == {
        "gpu.nvidia.com": {"selectors": [{"cel": {"expression":
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}],
            "extendedResourceName": "nvidia.com/gpu"},
        "mig.nvidia.com": {"selectors": [{"cel": {"expression":
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"}}]},
        "vfio.gpu.nvidia.com": {"selectors": [{"cel": {"expression":
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'"}}]},
    }


def test_cdi_naming_is_nvidias() -> None:
    """cdi.go: vendor k8s.gpu.nvidia.com, class claim; transient spec <vendor>-<class>_<uid>; nvcdi's
    common edits NVIDIA_VISIBLE_DEVICES=void."""
    cdi = personality_named("nvidia").drivers()[0].cdi
    assert (cdi.kind, cdi.file_prefix, cdi.common_env) == (
        "k8s.gpu.nvidia.com/claim", "k8s.gpu.nvidia.com-claim_", ("NVIDIA_VISIBLE_DEVICES=void",))


@pytest.mark.parametrize(("gates", "message"), [
    ({"DynamicMIG": True, "PassthroughSupport": True},
     "feature gate DynamicMIG is currently mutually exclusive with PassthroughSupport"),
    ({"DynamicMIG": True, "NVMLDeviceHealthCheck": True},
     "feature gate DynamicMIG is currently mutually exclusive with NVMLDeviceHealthCheck"),
    ({"DynamicMIG": True, "MPSSupport": True}, "feature gate DynamicMIG is currently mutually exclusive with MPSSupport"),
    ({"PassthroughSupport": True, "NVMLDeviceHealthCheck": True},
     "feature gate PassthroughSupport is currently mutually exclusive with NVMLDeviceHealthCheck"),
    ({"DeviceMetadata": True}, "feature gate DeviceMetadata requires PassthroughSupport to also be enabled"),
    ({"IMEXDaemonsWithDNSNames": False},
     "feature gate ComputeDomainCliques requires IMEXDaemonsWithDNSNames to also be enabled"),
    ({"DynamicMig": True}, "unrecognized feature gate: DynamicMig"),
])
def test_nvidias_gate_rules_and_messages(gates, message) -> None:
    """pkg/featuregates/featuregates.go ValidateFeatureGates, and featuregate's unknown-gate error."""
    with pytest.raises(ConfigError, match=message):
        parse_settings({"featureGates": gates})


@pytest.mark.parametrize(("raw", "message"), [
    ({"consumableShares": "memory"}, "--consumable-shares requires feature gate ConsumableShares to be enabled"),
    ({"featureGates": {"ConsumableShares": True}, "consumableShares": "0"}, "invalid value for --consumable-shares"),
    ({"featureGates": {"ConsumableShares": True}, "consumableShares": "lots"}, "must be 'disabled', 'memory'"),
    ({"migDevices": {0: ["1g.5gb"]}}, r"nvidia.migDevices\[0\]\[0\]: expected \"<profile>@<start memory slice>\""),
    ({"migDevices": {"gpu0": ["1g.5gb@0"]}}, "key 'gpu0' is not a GPU minor number"),
    ({"driverVersion": "r580"}, "nvidia.driverVersion: expected a version"),
    ({"featureGates": {"DynamicMIG": "yes"}}, r"nvidia.featureGates.DynamicMIG: expected true or false"),
    ({"mode": "x"}, "nvidia: unknown key"),
])
def test_bad_nvidia_sections_name_the_key(raw, message) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_settings(raw)


@pytest.mark.parametrize(("mig", "message"), [
    ({0: ["1g.6gb@0"]}, r"nvidia.migDevices\[0\]\[0\]: NVIDIA A100-SXM4-40GB has no MIG profile '1g.6gb'"),
    ({0: ["3g.20gb@2"]}, r"3g.20gb cannot start at memory slice 2 .*placements: 0, 4"),
    ({0: ["3g.20gb@0", "2g.10gb@2"]}, r"\[1\]: 2g.10gb@2 overlaps 3g.20gb@0 on memory slice 2"),
])
def test_static_mig_devices_are_checked_against_the_model(mig, message) -> None:
    with pytest.raises(ConfigError, match=message):
        node("dgx-a100", {"nvidia": {"migDevices": mig}})


@pytest.mark.parametrize(("config", "message"), [
    ({"migDevices": {8: ["1g.5gb@0"]}}, r"nvidia.migDevices\[8\]: the node has no GPU with minor 8 \(minors 0-7\)"),
    ({"migEnabled": [0, 12]}, r"nvidia.migEnabled\[12\]: the node has no GPU with minor 12 \(minors 0-7\)"),
])
def test_a_gpu_minor_the_node_lacks_is_refused(config, message) -> None:
    with pytest.raises(ConfigError, match=message):
        node("dgx-a100", {"nvidia": config})
    with pytest.raises(ConfigError, match="no GPUs"):
        node("no-gpu", {"nvidia": config})


def test_mig_on_a_gpu_without_mig_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"nvidia.migEnabled: GPU 4 \(Tesla T4\) does not support MIG"):
        node("vgpu-host", {"nvidia": {"migEnabled": [4, 0]}})


def test_the_driver_name_is_nvidias_and_cannot_change() -> None:
    with pytest.raises(InputError, match="publishes as gpu.nvidia.com and sriovnetwork.k8snetworkplumbingwg.io"):
        personality_named("nvidia").drivers({}, "nvidia.example.com")


def test_two_drivers_on_one_node() -> None:
    """The GPUs as gpu.nvidia.com, the NICs as the SR-IOV driver, each its own pool of the node."""
    slices, classes = node("dgx-a100")
    assert sorted({s["spec"]["driver"] for s in slices}) == ["gpu.nvidia.com", "sriovnetwork.k8snetworkplumbingwg.io"]
    assert {c["metadata"]["name"] for c in classes} == {"gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com",
                                                        "sriovnetwork.k8snetworkplumbingwg.io"}


@pytest.mark.parametrize(("raw", "message"), [
    ("DynamicMIG", "nvidia: expected a mapping"),
    ({"featureGates": ["DynamicMIG"]}, "nvidia.featureGates: expected a mapping"),
    ({"migEnabled": "some"}, "nvidia.migEnabled: expected a list of GPU minors"),
    ({"migEnabled": [True]}, "nvidia.migEnabled: key True is not a GPU minor"),
    ({"migDevices": [0]}, "nvidia.migDevices: expected a mapping"),
    ({"migDevices": {0: "1g.5gb@0"}}, r"nvidia.migDevices\[0\]: expected a list"),
    ({"iommuFD": "yes"}, "nvidia.iommuFD: expected true or false"),
    ({"cudaDriverVersion": 13.0}, None),  # a YAML float is a version too
    ({"consumableShares": True}, "nvidia.consumableShares: invalid value True"),
    ({"models": ["a100"]}, "nvidia.models: must be a mapping"),
    ({"models": {"a100-40gb": "x"}}, r"nvidia.models.a100-40gb: must be a mapping"),
    ({"models": {"a100-40gb": {"cuda": "8.1"}}}, None),  # merged over the built-in row
])
def test_more_bad_nvidia_sections(raw, message) -> None:
    if message is None:
        parse_settings(raw)
        return
    with pytest.raises(ConfigError, match=message):
        parse_settings(raw)


def test_not_simulated_gates_are_accepted_with_a_warning() -> None:
    settings = parse_settings({"featureGates": {"FabricManagerPartitioning": True}})
    assert settings.gate("FabricManagerPartitioning")
    assert any("Fabric Manager partitions" in w for w in settings.warnings)
    pool = personality_named("nvidia").drivers({"nvidia": {"featureGates": {"FabricManagerPartitioning": True}}})[0]
    from driver.features import Features

    from .nodes import inventory

    assert any("not simulated" in w for w in pool.render(inventory("h100"), Features(), node_name="n").warnings)


def test_static_mig_mode_without_devices_publishes_nothing_for_that_gpu_and_says_so() -> None:
    from driver.features import Features

    from .nodes import inventory

    driver = personality_named("nvidia").drivers({"nvidia": {"migEnabled": [0]}})[0]
    pool = driver.render(inventory("dgx-a100"), Features(), node_name="n")
    assert not any(n.startswith("gpu-0") for n in pool.devices())
    assert any("gpu-0: MIG mode is on but no MIG devices exist" in w for w in pool.warnings)


def test_a_gpu_bound_to_vfio_pci_is_invisible_to_nvml_but_offered_for_passthrough() -> None:
    from dataclasses import replace

    from driver.features import Features
    from driver.model.inventory import Inventory

    from .nodes import inventory

    inv = inventory("h100", 2)
    bound = Inventory(gpus=(replace(inv.gpus[0], pci=replace(inv.gpus[0].pci, driver="vfio-pci")), inv.gpus[1]))
    plain = personality_named("nvidia").drivers()[0].render(bound, Features(), node_name="n")
    assert sorted(plain.devices()) == ["gpu-1"]
    passthrough = personality_named("nvidia").drivers({"nvidia": {"featureGates": {"PassthroughSupport": True}}})[0]
    assert sorted(passthrough.render(bound, Features(), node_name="n").devices()) == ["gpu-1", "gpu-vfio-0",
                                                                                      "gpu-vfio-1"]
