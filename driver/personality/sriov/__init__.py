"""The `sriov` personality: SR-IOV VFs as k8snetworkplumbingwg/dra-driver-sriov publishes them.

Driver `sriovnetwork.k8snetworkplumbingwg.io`, one pool named after the node, one slice
(pkg/driver/driver.go PublishResources); one device per VF, named after the VF's PCI address with
':' and '.' turned into '-' (`0000-3b-02-0`), with the attributes of pkg/devicestate/discovery.go,
written fully qualified as the driver writes them, and no capacity. Its DeviceClass selects on the
driver alone; its opaque config is `VfConfig` (sriovnetwork.k8snetworkplumbingwg.io/v1alpha1),
decoded strictly. The NVIDIA personality presents the node's NICs through this driver too.

Not simulated: the real driver publishes only VFs a SriovResourcePolicy selects (opt-in) and reads
extra attributes from DeviceAttributes objects; here every VF of a PF with a network interface is
published. Link types are Ethernet and VFs are not RDMA-capable (fake sysfs trees have no RDMA
devices); the eswitch mode is `legacy` unless the `sriov:` section says `switchdev`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from driver.errors import ConfigError, InputError, PrepareError
from driver.features import Features
from driver.model.deviceattrs import attr
from driver.model.inventory import Inventory
from driver.personality.base import AppliedConfig, CdiNaming, DriverProfile, Personality, PreparedElsewhere
from driver.personality.gojson import BOOL, STRING, DecodeError, Scheme, Struct
from driver.slices.names import NODE_IDENTITIES, Identities, env_token
from driver.slices.pool import Pool

NAME = "sriov"
DRIVER = "sriovnetwork.k8snetworkplumbingwg.io"  # pkg/consts/consts.go: DriverName (also the API group)
MULTUS = "k8s.cni.cncf.io"
PCI_BUS_ID, PCIE_ROOT = "resource.kubernetes.io/pciBusID", "resource.kubernetes.io/pcieRoot"
NUMA = "dra.net/numaNode"  # the dranet-compatible attribute, -1 when unknown
VF_CONFIG = "VfConfig"
SCHEME = Scheme(
    group_version=f"{DRIVER}/v1alpha1",
    kinds={VF_CONFIG: Struct(VF_CONFIG, {"driver": STRING, "addVhostMount": BOOL, "ifName": STRING,
                                         "netAttachDefName": STRING, "netAttachDefNamespace": STRING})},
    name="github.com/k8snetworkplumbingwg/dra-driver-sriov/pkg/api/virtualfunction/v1alpha1/api.go:88",
)
_SETTINGS_KEYS = ("eswitchMode",)


@dataclass(frozen=True)
class SriovSettings:
    """The `sriov:` section: what devlink would report (legacy or switchdev eswitch mode)."""

    eswitch_mode: str = "legacy"


def parse_sriov(raw: Any) -> SriovSettings:
    if raw is None:
        return SriovSettings()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"sriov: expected a mapping, got {type(raw).__name__}")
    unknown = sorted(set(map(str, raw)) - set(_SETTINGS_KEYS))
    if unknown:
        raise ConfigError(f"sriov: unknown key(s) {', '.join(unknown)} (known: {', '.join(_SETTINGS_KEYS)})")
    mode = raw.get("eswitchMode", "legacy")
    if mode not in ("legacy", "switchdev"):
        raise ConfigError(f"sriov.eswitchMode: expected legacy or switchdev, got {mode!r}")
    return SriovSettings(eswitch_mode=mode)


def device_name(pci_address: str) -> str:
    """`0000:3b:02.0` -> `0000-3b-02-0` (discovery.go)."""
    return pci_address.replace(":", "-").replace(".", "-")


def _q(name: str) -> str:
    return f"{DRIVER}/{name}"


def render_vfs(inventory: Inventory, settings: SriovSettings, node_name: str) -> Pool:
    devices = []
    for nic in sorted(inventory.nics, key=lambda n: n.pci.address):
        if not nic.interface:  # "Unable to get interface name for device, skipping"
            continue
        numa = nic.pci.numa_node if nic.pci.numa_node is not None else -1
        for vf in nic.vfs:
            attrs: dict[str, dict[str, Any]] = {
                _q("vendor"): {"string": f"{nic.pci.vendor_id:04x}"},
                _q("deviceID"): {"string": f"{vf.pci.device_id:04x}"},
                _q("pfDeviceID"): {"string": f"{nic.pci.device_id:04x}"},
                _q("pciAddress"): {"string": vf.pci.address},
                f"{MULTUS}/deviceID": {"string": vf.pci.address},
                _q("PFName"): {"string": nic.interface},
                _q("EswitchMode"): {"string": settings.eswitch_mode},
                _q("vfID"): {"int": vf.index},
                PCIE_ROOT: {"string": nic.pci.pcie_root or ""},
                _q("pfPciAddress"): {"string": nic.pci.address},
                PCI_BUS_ID: {"string": vf.pci.address},
                _q("linkType"): {"string": "ethernet"},
                _q("rdmaCapable"): {"bool": False},
                NUMA: {"int": numa},
            }
            devices.append({"name": device_name(vf.pci.address), "attributes": dict(sorted(attrs.items()))})
    spec: dict[str, Any] = {"driver": DRIVER, "pool": {"name": node_name}, "nodeName": node_name}
    if devices:
        spec["devices"] = devices
    return Pool(name=node_name, slices=(spec,))


def device_classes() -> list[dict[str, Any]]:
    """deployments/helm/dra-driver-sriov/templates/deviceclass.yaml."""
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
             "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}}]


def resolve_vf_configs(claim: Any, allocation_config: Any, results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """getMapOfOpaqueDeviceConfigForDevice: class then claim configs, each decoded strictly, merged
    per request over the default (Override copies driver, ifName and netAttachDefName only)."""
    entries = allocation_config or []
    by_source: dict[str, list[Mapping[str, Any]]] = {"FromClass": [], "FromClaim": []}
    prefix = "error creating map of opaque device config for device"
    for entry in entries if isinstance(entries, list) else []:
        entry = entry if isinstance(entry, Mapping) else {}
        source = entry.get("source")
        if source not in by_source:
            raise PrepareError(f"{prefix}: invalid config source: {'' if source is None else source}")
        by_source[str(source)].append(entry)
    per_request: dict[str, dict[str, Any]] = {}
    for entry in by_source["FromClass"] + by_source["FromClaim"]:
        opaque = entry.get("opaque")
        if not isinstance(opaque, Mapping):
            raise PrepareError(f"{prefix}: only opaque parameters are supported by this driver")
        if opaque.get("driver") != DRIVER:
            continue
        try:
            _, fields = SCHEME.decode(opaque.get("parameters"))
        except DecodeError as exc:
            raise PrepareError(f"{prefix}: error decoding config parameters: {exc}") from None
        for request in entry.get("requests") or []:
            merged = per_request.setdefault(str(request), {"driver": "", "ifName": "", "netAttachDefName": ""})
            for key in ("driver", "ifName", "netAttachDefName"):
                if fields.get(key):
                    merged[key] = fields[key]
    return [per_request.get(str(r.get("request")), {"driver": "", "ifName": "", "netAttachDefName": ""})
            for r in results]


class SriovDriver(DriverProfile):
    name = DRIVER
    # pkg/cdi/cdi.go: vendor = the driver name, class "vf"; transient spec "<vendor>-vf_<claim UID>".
    cdi = CdiNaming(vendor=DRIVER, cls="vf", file_prefix=f"{DRIVER}-vf_")

    def __init__(self, settings: SriovSettings = SriovSettings()) -> None:
        self.settings = settings

    def render(self, inventory: Inventory, features: Features, *, node_name: str,
               hidden: frozenset[str] = frozenset(), identities: Identities = NODE_IDENTITIES) -> Pool:
        # Nothing of a VF is derived from the node: names and attributes come from PCI addresses, the
        # PF's interface and IDs, which every node of one hardware profile shares (as on real nodes).
        return render_vfs(inventory, self.settings, node_name)

    def device_classes(self) -> list[dict[str, Any]]:
        return device_classes()

    def class_name(self, short: str) -> str | None:
        return DRIVER if short == "vf" else None

    def resolve_configs(self, claim: Any, allocation_config: Any, results: Sequence[Mapping[str, Any]],
                        devices: Mapping[str, Mapping[str, Any]],
                        elsewhere: Sequence[PreparedElsewhere] = ()) -> list[AppliedConfig | None]:
        configs = resolve_vf_configs(claim, allocation_config, results)
        return [AppliedConfig(kind=VF_CONFIG, params=c, canonical=json.dumps(c, sort_keys=True)) for c in configs]

    def device_env(self, claim: Any, result: Mapping[str, Any], device: Mapping[str, Any],
                   config: AppliedConfig | None, unrequested: Mapping[str, str] | None) -> dict[str, str]:
        """applyConfigOnDevice's env (the VFIO and RDMA device nodes it adds do not exist here)."""
        params = config.params if config is not None else {}
        address = str(attr(device, _q("pciAddress")) or "")
        token = str(result["device"]).replace("-", "_")
        env = {f"SRIOVNETWORK_VF_DEVICE_{token}": address,
               "SRIOVNETWORK_NET_ATTACH_DEF_NAME": str(params.get("netAttachDefName", ""))}
        env[f"FAKE_DRA_{env_token(str(result['device']))}_CLAIM"] = f"{claim.namespace}/{claim.name}"
        return env


def _build(config: Mapping[str, Any], driver_name: str | None) -> tuple[DriverProfile, ...]:
    return (SriovDriver(parse_sriov(config.get("sriov"))),)


PERSONALITY = Personality(
    name=NAME,
    summary=f"the SR-IOV DRA driver ({DRIVER}): one device per VF, named after its PCI address",
    sections=("hardware", "sriov"),
    build=_build,
    fixed_driver_names=(DRIVER,),
)
