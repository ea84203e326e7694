"""What a personality is: the value that decides how the node's hardware looks to Kubernetes.

A personality is to fake-dra what a device profile is to dra-example-driver
(internal/profiles/profiles.go): everything that differs between drivers behind one interface, so the
renderer, the prepare path and the command line take a value instead of asking "which driver am I?".
It owns, for each DRA driver it presents on the node (NVIDIA's personality presents two: the GPU
driver and, for the NICs, the SR-IOV driver):

- the driver name, the pool layout and slice order, device names, attributes with their types,
  capacities and counter sets (`render`);
- the DeviceClasses the driver's installation creates (`device_classes`);
- the opaque config kinds, decoded strictly and validated with the driver's rules and messages, and
  which config applies to which allocated device (`resolve_configs`);
- what a prepared device looks like to a container: the CDI kind, device and file names, and the
  environment (`cdi`, `device_env`);
- the prepare-time checks against claims already prepared on the node that the driver makes beyond
  fake-dra's own revalidation (`resolve_configs` sees them), and the devices it stops offering while a
  sibling is prepared (`hidden_by`).

Everything here is pure: the state layer does the I/O with what these return.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from driver.errors import InputError
from driver.features import Features
from driver.model.inventory import Inventory
from driver.slices.names import NODE_IDENTITIES, Identities
from driver.slices.pool import Pool


@dataclass(frozen=True)
class CdiNaming:
    """How one driver names its CDI specs: kind `<vendor>/<cls>`, device `<claim UID>-<device>`,
    file `<file_prefix><claim UID>.json`, and env every container of the claim gets."""

    vendor: str
    cls: str
    file_prefix: str
    common_env: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return f"{self.vendor}/{self.cls}"


@dataclass(frozen=True)
class AppliedConfig:
    """An opaque config after decoding, defaults and validation, as it applies to one device.

    `kind` names it for people and logs; `canonical` is its normalized JSON (None for fake-dra's own
    configs, which keep the checkpoint format unchanged), compared when two claims share a device;
    `env` is what it adds to the device's container edits."""

    kind: str
    params: Mapping[str, Any] = field(default_factory=dict)
    canonical: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PreparedElsewhere:
    """A device some other claim has prepared on this node (for `check_prepared`)."""

    claim: str  # the claim's UID
    device: str
    config: str | None  # AppliedConfig.canonical it was prepared with
    admin_access: bool = False


class DriverProfile(ABC):
    """One DRA driver as a personality presents it (see the module docstring)."""

    name: str  # the driver name, e.g. gpu.nvidia.com
    cdi: CdiNaming
    checks_prepared: bool = False  # resolve_configs needs `elsewhere` (the state builds it only then)
    hides_siblings: bool = False  # hidden_by may hide devices: republish after each prepare/unprepare

    @abstractmethod
    def render(self, inventory: Inventory, features: Features, *, node_name: str,
               hidden: frozenset[str] = frozenset(), identities: Identities = NODE_IDENTITIES) -> Pool:
        """The node's pool for this driver (pure; byte-identical for equal inputs). `hidden`: devices
        the driver stops publishing while a sibling of theirs is prepared (NVIDIA's passthrough).

        Every value derived from the node (device UUIDs and anything else that makes a device this
        node's own) comes from `identities`; the node name itself appears only as the pool name and
        `nodeName`. That is the contract a fleet relies on to render a node group once and stamp each
        node from it (driver.fleet.template); its tests hold every driver to it."""

    @abstractmethod
    def device_classes(self) -> list[dict[str, Any]]:
        """The DeviceClass objects this driver's installation creates."""

    def class_name(self, short: str) -> str | None:
        """The DeviceClass a scenario's short class name (gpu, mig, vf, ...) means, or None."""
        return None

    @abstractmethod
    def resolve_configs(self, claim: Any, allocation_config: Any, results: Sequence[Mapping[str, Any]],
                        devices: Mapping[str, Mapping[str, Any]],
                        elsewhere: Sequence[PreparedElsewhere] = ()) -> list[AppliedConfig | None]:
        """The config that applies to each of `results` (this driver's, in order); PrepareError with
        the driver's message when a config is malformed or does not fit its device, or when the
        driver refuses the devices next to what other claims prepared (`elsewhere`). `claim` is the
        driver.state ClaimRef (namespace, name, uid) the messages name."""

    @abstractmethod
    def device_env(self, claim: Any, result: Mapping[str, Any], device: Mapping[str, Any],
                   config: AppliedConfig | None, unrequested: Mapping[str, str] | None) -> dict[str, str]:
        """Env the container sees for one prepared device (besides `cdi.common_env`)."""

    def hidden_by(self, prepared: frozenset[str], devices: Mapping[str, Mapping[str, Any]]) -> frozenset[str]:
        """Devices this driver stops offering (publishing, preparing) while `prepared` are prepared."""
        return frozenset()


def _whole_by_gates(config: Mapping[str, Any]) -> tuple[str, str] | None:
    return None


@dataclass(frozen=True)
class Personality:
    """A registry entry: a name, what it is, the driver-config sections it reads, and how to build
    its driver profiles from a driver config (`build(config, driver_name)`; `driver_name` is the
    `--driver-name` flag, honoured only where the personality lets the name vary).

    `partitioned_by(config)` serves a fleet's `fidelity: whole` (whole GPUs and VFs only, as on a
    cluster without DRAPartitionableDevices): None when the personality publishes only whole devices
    there, else (the driver-config path, what it publishes instead). fake-dra's own driver follows the
    cluster's gates, so for it whole fidelity is a gate and no config is in the way; NVIDIA's plugin
    publishes what its knobs say whatever the cluster, so a knob asking for MIG devices or shared
    GPUs contradicts `whole`."""

    name: str
    summary: str
    sections: tuple[str, ...]
    build: Callable[[Mapping[str, Any], str | None], tuple[DriverProfile, ...]]
    fixed_driver_names: tuple[str, ...] = ()  # empty: the driver name comes from --driver-name
    partitioned_by: Callable[[Mapping[str, Any]], tuple[str, str] | None] = _whole_by_gates

    def drivers(self, config: Mapping[str, Any] | None = None, driver_name: str | None = None) -> tuple[DriverProfile, ...]:
        """The configured driver profiles (InputError/ConfigError for a bad config or driver name)."""
        if driver_name and self.fixed_driver_names and driver_name not in self.fixed_driver_names:
            several = len(self.fixed_driver_names) > 1
            raise InputError(f"--driver-name {driver_name!r}: the {self.name} personality publishes as "
                             f"{' and '.join(self.fixed_driver_names)} (its users' manifests name "
                             f"{'those drivers' if several else 'that driver'}); "
                             f"give {'one of them' if several else 'it'} or leave --driver-name unset")
        return self.build(config or {}, driver_name)
