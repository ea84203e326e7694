"""The `fake-dra` personality: fake-dra's own driver, vocabulary and features.

One driver (default `fake-dra.example.com`, `--driver-name` may change it) publishing every GPU and
NIC of the node: full GPUs, MIG partitions, vGPUs, time-slicing and MPS shares, VFs with bandwidth,
counters with `valueFrom`, compatibility groups (driver.slices); its own opaque config kinds
(`GpuConfig`, `VfConfig` of fake-dra.example.com/v1alpha1) and FAKE_DRA_* container env. This is
what fake-dra did before personalities existed, byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from driver import DEFAULT_DRIVER_NAME
from driver.errors import PrepareError
from driver.features import Features
from driver.model.deviceattrs import attr
from driver.model.inventory import Inventory
from driver.personality.base import AppliedConfig, CdiNaming, DriverProfile, Personality, PreparedElsewhere
from driver.personality.fakedra.classes import CLASSES, class_name, device_classes
from driver.personality.fakedra.env import device_env
from driver.personality.fakedra.opaque import configs_for_results
from driver.slices import SliceConfig, render_pool
from driver.slices.names import NODE_IDENTITIES, Identities
from driver.slices.pool import Pool

NAME = "fake-dra"
CDI_CLASS = "device"


def cdi_naming(driver_name: str) -> CdiNaming:
    """fake-dra's CDI layout: kind `k8s.<driver>/device`, file `k8s.<driver>_device_<uid>.json`."""
    vendor = f"k8s.{driver_name}"
    return CdiNaming(vendor=vendor, cls=CDI_CLASS, file_prefix=f"{vendor}_{CDI_CLASS}_")


class FakeDraDriver(DriverProfile):
    def __init__(self, driver_name: str = DEFAULT_DRIVER_NAME, config: SliceConfig = SliceConfig()) -> None:
        self.name = driver_name
        self.config = config
        self.cdi = cdi_naming(driver_name)

    def render(self, inventory: Inventory, features: Features, *, node_name: str,
               hidden: frozenset[str] = frozenset(), identities: Identities = NODE_IDENTITIES) -> Pool:
        return render_pool(inventory, features, node_name=node_name, driver_name=self.name, config=self.config,
                           identities=identities)

    def device_classes(self) -> list[dict[str, Any]]:
        return device_classes(self.name)

    def class_name(self, short: str) -> str | None:
        return class_name(short, self.name) if short in CLASSES else None

    def resolve_configs(self, claim: Any, allocation_config: Any, results: Sequence[Mapping[str, Any]],
                        devices: Mapping[str, Mapping[str, Any]],
                        elsewhere: Sequence[PreparedElsewhere] = ()) -> list[AppliedConfig | None]:
        types = [str(attr(devices[r["device"]], "type", self.name) or "") for r in results]
        try:
            configs = configs_for_results(allocation_config, self.name, results, types)
        except PrepareError as exc:
            raise PrepareError(f"claim {claim.namespace}/{claim.name}: {exc}") from None
        return [None if c is None else AppliedConfig(kind=c.kind, params=c.params) for c in configs]

    def device_env(self, claim: Any, result: Mapping[str, Any], device: Mapping[str, Any],
                   config: AppliedConfig | None, unrequested: Mapping[str, str] | None) -> dict[str, str]:
        return device_env(claim, result, device, config, self.name, unrequested)


def _build(config: Mapping[str, Any], driver_name: str | None) -> tuple[DriverProfile, ...]:
    return (FakeDraDriver(driver_name or DEFAULT_DRIVER_NAME, SliceConfig.from_dict(config.get("slices"))),)


PERSONALITY = Personality(
    name=NAME,
    summary="fake-dra's own driver (default fake-dra.example.com): every GPU mode, VFs with bandwidth, counters, "
            "compatibility groups",
    sections=("hardware", "slices"),
    build=_build,
)
