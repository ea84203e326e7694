"""Preparing claims as NVIDIA's kubelet plugin does: which config applies, its checks and messages, CDI.

Facts, at kubernetes-sigs/dra-driver-nvidia-gpu@95932046:
- cmd/gpu-kubelet-plugin/device_state.go: the error chain ("error preparing devices for claim
  <ns>/<name>:<uid>: prepare devices failed: ..."), getDeviceConfigsWithDefaults (defaults first,
  then class, then claim configs), getConfigResultsMap ("allocatable not found for device %q",
  "cannot apply GpuConfig to device %q of type %q (request: %v)"), the VFIO group limit,
  "error validating GPU config: ...", validateNoOverlappingPreparedDevices ("requested device %s is
  already allocated to different claim %s", "... has conflicting configuration with already prepared
  claim %s"), applySharingConfig (MPS with consumable shares, MpsConfig with TimeSlicing).
- api/nvidia.com/resource/v1beta1/validate.go, sharing.go, iommu.go: the validation messages.
- apimachinery's strict JSON serializer: "strict decoding error: unknown field ..." (also asserted by
  NVIDIA's tests/bats/test_cd_misc.bats); "no kind ... is registered for version ...".
- allocatable.go RemoveSiblingDevices: a prepared GPU's VFIO sibling is gone from the allocatable
  devices (and the republished slice) until it is unprepared.
- cdi.go / nvcdi: kind k8s.gpu.nvidia.com/claim, device `<claimUID>-<device>`, NVIDIA_VISIBLE_DEVICES=void;
  sharing.go GetCDIContainerEdits: CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from driver.errors import PrepareError
from driver.features import Features
from driver.personality import PreparedElsewhere, personality_named
from driver.state.cdi import CdiWriter
from driver.state.checkpoint import CheckpointStore
from driver.state.pool import PoolCache
from driver.state.prepare import DeviceState
from driver.state.types import ClaimRef

from state.conftest import FakeClaims
from .nodes import devices, inventory

NODE = "node-1"
REF = ClaimRef("default", "c", "uid-1")
PREFIX = "error preparing devices for claim default/c:uid-1: prepare devices failed: "


def gpu_driver(**nvidia: Any):
    return personality_named("nvidia").drivers({"nvidia": nvidia})[0]


def pool(profile: str = "h100", **nvidia: Any) -> dict[str, dict]:
    driver = gpu_driver(**nvidia)
    return devices([{"spec": s} for s in driver.render(inventory(profile), Features(), node_name=NODE).slices])


def res(device: str, request: str = "gpu", **extra: Any) -> dict[str, Any]:
    return {"request": request, "driver": "gpu.nvidia.com", "pool": NODE, "device": device, **extra}


def opaque(params: dict[str, Any], requests: list[str] | None = None, source: str = "FromClaim") -> dict[str, Any]:
    entry: dict[str, Any] = {"source": source, "opaque": {"driver": "gpu.nvidia.com", "parameters": params}}
    if requests is not None:
        entry["requests"] = requests
    return entry


def gpu_config(**sharing: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", **({"sharing": sharing} if sharing else {})}


def resolve(config: list, results: list, gates: dict[str, bool] | None = None, elsewhere=(), profile="h100",
            **nvidia: Any):
    nv = {"featureGates": gates or {}, **nvidia}
    return gpu_driver(**nv).resolve_configs(REF, config, results, pool(profile, **nv), elsewhere)


@pytest.mark.parametrize(("params", "gates", "message"), [
    (gpu_config(strategy="TimeSlicing"), {},
     'error validating GPU config: "TimeSlicing" is selected as the GPU sharing strategy, but the '
     '"TimeSlicingSettings" feature gate is not enabled'),
    (gpu_config(strategy="MPS"), {},
     'error validating GPU config: "MPS" is selected as the GPU sharing strategy, but the "MPSSupport" feature gate '
     "is not enabled"),
    (gpu_config(strategy="Exclusive"), {"TimeSlicingSettings": True},
     "error validating GPU config: unknown GPU sharing strategy: Exclusive, supported GPU sharing strategies: "
     "TimeSlicing, MPS"),
    (gpu_config(strategy="TimeSlicing", timeSlicingConfig={"interval": "Forever"}), {"TimeSlicingSettings": True},
     "error validating GPU config: unknown time-slice interval: Forever, supported time-slice intervals: Default, "
     "Short, Medium, Long"),
    (gpu_config(strategy="MPS", mpsConfig={"defaultActiveThreadPercentage": 101}), {"MPSSupport": True},
     "error validating GPU config: active thread percentage must not be greater than 100"),
    (gpu_config(strategy="MPS", mpsConfig={"defaultActiveThreadPercentage": -1}), {"MPSSupport": True},
     "error validating GPU config: active thread percentage must not be negative"),
    (gpu_config(strategy="TimeSlicing", mpsConfig={}), {"TimeSlicingSettings": True, "MPSSupport": True},
     "error applying config: error getting timeslice config for requests '[gpu]' in claim 'uid-1': cannot use "
     "MpsConfig with the 'TimeSlicing' strategy"),
    (gpu_config(strategy="MPS", timeSlicingConfig={"interval": "Long"}), {"TimeSlicingSettings": True, "MPSSupport": True},
     "error applying config: error getting MPS configuration: cannot use TimeSlicingConfig with the 'MPS' strategy"),
    (gpu_config(strategy="MPS", mpsConfig={"defaultPerDevicePinnedMemoryLimit": {"3": "1Gi"}}), {"MPSSupport": True},
     "error starting MPS control daemon: error transforming DefaultPerDevicePinnedMemoryLimit into string: invalid "
     "device: invalid device index: 3"),
    (gpu_config(strategy="MPS", mpsConfig={"defaultPinnedDeviceMemoryLimit": "100Ki"}), {"MPSSupport": True},
     "invalid limit: default value set too low: 100Ki"),
    ({**gpu_config(), "sharing": {"strategy": "MPS", "bogus": 1}, "extra": True}, {},
     'error getting opaque device configs: error decoding config parameters: strict decoding error: unknown field '
     '"sharing.bogus", unknown field "extra"'),
    ({**gpu_config(strategy="MPS"), "sharing": {"strategy": 3}}, {},
     "error decoding config parameters: json: cannot unmarshal number into Go struct field GpuSharing.sharing.strategy "
     "of type v1beta1.GpuSharingStrategy"),
    ({"apiVersion": "resource.nvidia.com/v1", "kind": "GpuConfig"}, {},
     'error decoding config parameters: no kind "GpuConfig" is registered for version "resource.nvidia.com/v1"'),
    ({"apiVersion": "resource.nvidia.com/v1beta1"}, {}, "error decoding config parameters: Object 'Kind' is missing in"),
    ({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "MigDeviceConfig"}, {},
     'cannot apply MigDeviceConfig to device "gpu-0" of type "gpu" (request: gpu)'),
    ({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomainChannelConfig", "domainID": "x"}, {},
     "runtime object is not a recognized configuration"),
])
def test_config_errors_carry_nvidias_messages(params, gates, message) -> None:
    with pytest.raises(PrepareError) as err:
        resolve([opaque(params, ["gpu"])], [res("gpu-0")], gates)
    assert str(err.value).startswith(PREFIX) and message in str(err.value), str(err.value)


def test_a_nil_time_slicing_interval_is_refused_instead_of_crashing() -> None:
    """NVIDIA's Validate dereferences the interval of `timeSlicingConfig: {}` (a panic there)."""
    with pytest.raises(PrepareError, match="timeSlicingConfig.interval is not set"):
        resolve([opaque(gpu_config(strategy="TimeSlicing", timeSlicingConfig={}), ["gpu"])], [res("gpu-0")],
                {"TimeSlicingSettings": True})


def test_class_configs_yield_to_claim_configs_and_later_entries_win() -> None:
    gates = {"TimeSlicingSettings": True}
    config = [opaque(gpu_config(strategy="TimeSlicing", timeSlicingConfig={"interval": "Short"}), ["gpu"], "FromClass"),
              opaque(gpu_config(strategy="TimeSlicing", timeSlicingConfig={"interval": "Medium"}), ["gpu"]),
              opaque(gpu_config(strategy="TimeSlicing", timeSlicingConfig={"interval": "Long"}), ["gpu"])]
    [applied] = resolve(config, [res("gpu-0")], gates)
    assert applied.params["sharing"]["timeSlicingConfig"] == {"interval": "Long"}
    # A class config stays below a claim config whatever their order in the allocation.
    [applied] = resolve(list(reversed(config[:2])), [res("gpu-0")], gates)
    assert applied.params["sharing"]["timeSlicingConfig"] == {"interval": "Medium"}


def test_defaults_apply_by_type_and_a_requestless_config_only_to_its_type() -> None:
    mig = pool("h100", featureGates={"DynamicMIG": True})
    name = next(n for n in mig if "-mig-" in n)
    driver = gpu_driver(featureGates={"DynamicMIG": True, "TimeSlicingSettings": True})
    applied = driver.resolve_configs(REF, [opaque(gpu_config(strategy="TimeSlicing"))],
                                     [res("gpu-0"), res(name, "mig")], mig)
    assert applied[0].params["sharing"]["timeSlicingConfig"] == {"interval": "Default"}  # Normalize's default
    assert applied[1].kind == "MigDeviceConfig" and applied[1].params == {}


def test_dynamic_mig_devices_are_of_type_migdyn_in_messages() -> None:
    mig = pool("h100", featureGates={"DynamicMIG": True})
    with pytest.raises(PrepareError, match=r'cannot apply GpuConfig to device "gpu-0-mig-1g10gb-19-0" of type '
                                           r'"migdyn" \(request: m\)'):
        gpu_driver(featureGates={"DynamicMIG": True}).resolve_configs(
            REF, [opaque(gpu_config(), ["m"])], [res("gpu-0-mig-1g10gb-19-0", "m")], mig)


def test_time_slicing_on_a_mig_device_is_accepted_and_does_nothing() -> None:
    mig = pool("dgx-a100", migDevices={0: ["3g.20gb@0"]})
    driver = gpu_driver(migDevices={0: ["3g.20gb@0"]}, featureGates={"TimeSlicingSettings": True})
    [applied] = driver.resolve_configs(REF, [opaque({"apiVersion": "resource.nvidia.com/v1beta1",
                                                     "kind": "MigDeviceConfig", "sharing": {"strategy": "TimeSlicing"}},
                                                    ["m"])], [res("gpu-0-mig-3g20gb-9-0", "m")], mig)
    assert applied.kind == "MigDeviceConfig" and applied.env == {}


def test_mig_device_config_has_no_time_slicing_config_field() -> None:
    with pytest.raises(PrepareError, match='unknown field "sharing.timeSlicingConfig"'):
        resolve([opaque({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "MigDeviceConfig",
                         "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {}}}, ["gpu"])], [res("gpu-0")])


def test_vfio_configs_their_policy_and_the_one_group_limit() -> None:
    gates = {"PassthroughSupport": True}
    vfio = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "VfioDeviceConfig"}
    [applied] = resolve([], [res("gpu-vfio-0")], gates)
    assert applied.kind == "VfioDeviceConfig" and applied.params == {"iommu": {"backendPolicy": "LegacyOnly",
                                                                               "enableAPIDevice": False}}
    with pytest.raises(PrepareError, match="unknown IOMMU backend policy: Any, supported IOMMU backend policies: "
                                           "LegacyOnly, PreferIommuFD"):
        resolve([opaque({**vfio, "iommu": {"backendPolicy": "Any"}}, ["gpu"])], [res("gpu-vfio-0")], gates)
    with pytest.raises(PrepareError, match="claim default/c:uid-1 contains 2 VFIO device groups, but at most one is "
                                           "supported per claim"):
        resolve([opaque(vfio, ["a"]), opaque(vfio, ["b"])], [res("gpu-vfio-0", "a"), res("gpu-vfio-1", "b")], gates)


def test_configs_of_other_drivers_are_skipped_and_non_opaque_ones_refused() -> None:
    other = {"source": "FromClaim", "opaque": {"driver": "other.example.com", "parameters": {"anything": 1}}}
    assert resolve([other], [res("gpu-0")])[0].kind == "GpuConfig"
    with pytest.raises(PrepareError, match="only opaque parameters are supported by this driver"):
        resolve([{"source": "FromClaim", "requests": ["gpu"]}], [res("gpu-0")])


def test_a_device_prepared_for_another_claim_is_refused_unless_shared_alike() -> None:
    other = [PreparedElsewhere(claim="uid-0", device="gpu-0", config=None)]
    with pytest.raises(PrepareError, match=r"unable to prepare claim uid-1: requested device gpu-0 is already "
                                           r"allocated to different claim uid-0$"):
        resolve([], [res("gpu-0")], elsewhere=other)
    shares = {"ConsumableShares": True}
    same = resolve([], [res("gpu-0")], shares, consumableShares="memory")[0].canonical
    assert resolve([], [res("gpu-0")], shares, elsewhere=[PreparedElsewhere("uid-0", "gpu-0", same)],
                   consumableShares="memory")[0].canonical == same
    with pytest.raises(PrepareError, match="requested device gpu-0 has conflicting configuration with already "
                                           "prepared claim uid-0"):
        resolve([opaque(gpu_config(strategy="TimeSlicing"), ["gpu"])], [res("gpu-0")],
                {**shares, "TimeSlicingSettings": True}, elsewhere=[PreparedElsewhere("uid-0", "gpu-0", same)],
                consumableShares="memory")


def test_a_prepared_gpu_hides_its_vfio_sibling_from_other_claims() -> None:
    gates = {"PassthroughSupport": True}
    with pytest.raises(PrepareError, match=r'prepare devices failed: allocatable not found for device "gpu-vfio-0"$'):
        resolve([], [res("gpu-vfio-0")], gates, elsewhere=[PreparedElsewhere("uid-0", "gpu-0", None)])
    resolve([], [res("gpu-vfio-1")], gates, elsewhere=[PreparedElsewhere("uid-0", "gpu-0", None)])


def _state(tmp: Path, claims: FakeClaims, **nvidia: Any) -> DeviceState:
    driver = gpu_driver(**nvidia)
    rendered = driver.render(inventory("h100"), Features(), node_name=NODE)
    return DeviceState(driver_name=driver.name, claims=claims, pool=PoolCache(lambda: rendered),
                       cdi=CdiWriter(tmp / "cdi", driver.name, driver.cdi), profile=driver,
                       checkpoint=CheckpointStore(tmp / "state", driver_name=driver.name, node_name=NODE, boot_id="b"))


def test_prepare_writes_nvidias_cdi_spec_and_refuses_the_sibling_through_the_plugin_state() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="fdp-nv-"))
    claims = FakeClaims()
    state = _state(tmp, claims, featureGates={"PassthroughSupport": True})
    try:
        gpu = claims.add("whole", [res("gpu-0")], uid="11111111-1111-1111-1111-111111111111")
        vfio = claims.add("pass", [res("gpu-vfio-0")], uid="22222222-2222-2222-2222-222222222222")
        out = state.prepare([gpu, vfio])
        assert not out[gpu.uid].error
        assert out[vfio.uid].error == ('error preparing devices for claim default/pass:' + vfio.uid +
                                       ': prepare devices failed: allocatable not found for device "gpu-vfio-0"')
        [dev] = out[gpu.uid].devices
        assert dev.cdi_device_ids == (f"k8s.gpu.nvidia.com/claim={gpu.uid}-gpu-0",)
        spec = json.loads((tmp / "cdi" / f"k8s.gpu.nvidia.com-claim_{gpu.uid}.json").read_text())
        assert spec["kind"] == "k8s.gpu.nvidia.com/claim"
        assert spec["containerEdits"] == {"env": ["NVIDIA_VISIBLE_DEVICES=void"]}
        assert [d["name"] for d in spec["devices"]] == [f"{gpu.uid}-gpu-0"]
        assert not any(e.startswith("NVIDIA_VISIBLE_DEVICES=") for e in spec["devices"][0]["containerEdits"]["env"])
        assert state.prepared_devices() == {"gpu-0"}
        assert state.unprepare([gpu]) == {gpu.uid: ""}
        assert not state.prepare([vfio])[vfio.uid].error  # the sibling is allocatable again
    finally:
        state.close()
