"""The `nvidia` personality: the node as kubernetes-sigs/dra-driver-nvidia-gpu presents it.

Two DRA drivers, as on a real NVIDIA node: `gpu.nvidia.com` for the GPUs (this package) and, for
the SR-IOV NICs, `sriovnetwork.k8snetworkplumbingwg.io` (driver.personality.sriov), each with its
own pool, slices, DeviceClasses, opaque configs and kubelet plugin. The knobs are NVIDIA's
(the driver config's `nvidia:` section, driver.personality.nvidia.settings). Facts and their
sources: docs/personalities.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from driver.features import Features
from driver.model.deviceattrs import attr
from driver.model.inventory import Inventory
from driver.personality.base import AppliedConfig, CdiNaming, DriverProfile, Personality, PreparedElsewhere
from driver.personality.nvidia import prepare
from driver.personality.nvidia.devices import PCI_BUS_ID
from driver.personality.nvidia.render import render_gpus
from driver.personality.nvidia.settings import DRIVER, NvidiaSettings, parse_settings
from driver.personality.sriov import DRIVER as SRIOV_DRIVER
from driver.personality.sriov import SriovDriver, parse_sriov
from driver.slices.names import NODE_IDENTITIES, Identities
from driver.slices.pool import Pool

NAME = "nvidia"
# deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-{gpu,mig,vfio-gpu}.yaml (resource.k8s.io/v1).
_CLASSES = (("gpu", "gpu.nvidia.com", "gpu"), ("mig", "mig.nvidia.com", "mig"), ("vfio", "vfio.gpu.nvidia.com", "vfio"))


def device_classes() -> list[dict[str, Any]]:
    """The chart's GPU DeviceClasses, as it renders them for resource.k8s.io/v1."""
    out = []
    for short, name, type_value in _CLASSES:
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": (
            f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{type_value}'")}}]}
        if short == "gpu":
            spec["extendedResourceName"] = "nvidia.com/gpu"
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec})
    return out


class NvidiaGpuDriver(DriverProfile):
    name = DRIVER
    checks_prepared = True
    # cdi.go: vendor "k8s." + DriverName, class "claim"; CDI's transient spec name
    # "<vendor>-<class>_<claim UID>"; nvcdi's common edits set NVIDIA_VISIBLE_DEVICES=void.
    cdi = CdiNaming(vendor=f"k8s.{DRIVER}", cls="claim", file_prefix=f"k8s.{DRIVER}-claim_",
                    common_env=("NVIDIA_VISIBLE_DEVICES=void",))

    def __init__(self, settings: NvidiaSettings) -> None:
        self.settings = settings
        self.hides_siblings = settings.gate("PassthroughSupport")

    def render(self, inventory: Inventory, features: Features, *, node_name: str,
               hidden: frozenset[str] = frozenset(), identities: Identities = NODE_IDENTITIES) -> Pool:
        # NVIDIA's plugin publishes the same slices whatever the cluster's gates: it does not probe them.
        return render_gpus(inventory, self.settings, node_name=node_name, hidden=hidden, identities=identities)

    def device_classes(self) -> list[dict[str, Any]]:
        return device_classes()

    def class_name(self, short: str) -> str | None:
        return next((name for s, name, _ in _CLASSES if s == short), None)

    def hidden_by(self, prepared: frozenset[str], devices: Mapping[str, Mapping[str, Any]]) -> frozenset[str]:
        """RemoveSiblingDevices (PassthroughSupport): a prepared GPU hides its VFIO device and the
        other way round, until it is unprepared; the plugin republishes without them."""
        if not self.settings.gate("PassthroughSupport"):
            return frozenset()
        by_address: dict[str, list[str]] = {}
        for name, dev in devices.items():
            kind = attr(dev, "type")
            if kind in ("gpu", "vfio"):
                by_address.setdefault(str(attr(dev, PCI_BUS_ID)), []).append(name)
        hidden = set()
        for names in by_address.values():
            if any(n in prepared for n in names):
                hidden.update(n for n in names if n not in prepared)
        return frozenset(hidden)

    def resolve_configs(self, claim: Any, allocation_config: Any, results: Sequence[Mapping[str, Any]],
                        devices: Mapping[str, Mapping[str, Any]],
                        elsewhere: Sequence[PreparedElsewhere] = ()) -> list[AppliedConfig | None]:
        hidden = self.hidden_by(frozenset(e.device for e in elsewhere), devices)
        return list(prepare.resolve(claim, allocation_config, results, devices, elsewhere, hidden, self.settings))

    def device_env(self, claim: Any, result: Mapping[str, Any], device: Mapping[str, Any],
                   config: AppliedConfig | None, unrequested: Mapping[str, str] | None) -> dict[str, str]:
        env = prepare.hint_env(claim, result, device, config)
        env.update(config.env if config is not None else {})
        return env


def _build(config: Mapping[str, Any], driver_name: str | None) -> tuple[DriverProfile, ...]:
    return NvidiaGpuDriver(parse_settings(config.get("nvidia"))), SriovDriver(parse_sriov(config.get("sriov")))


def _partitioned_by(config: Mapping[str, Any]) -> tuple[str, str] | None:
    return parse_settings(config.get("nvidia")).partitioned_by()


PERSONALITY = Personality(
    name=NAME,
    summary="NVIDIA's DRA driver (gpu.nvidia.com: GPUs, MIG, VFIO; knobs in `nvidia:`) and the SR-IOV DRA "
            "driver for the NICs",
    sections=("hardware", "nvidia", "sriov"),
    build=_build,
    fixed_driver_names=(DRIVER, SRIOV_DRIVER),
    partitioned_by=_partitioned_by,
)
