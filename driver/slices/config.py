"""The `slices:` section of the driver config: how to publish when a gate takes a tool away.

Why configurable: with compatibility groups off the scheduler cannot keep MIG, vGPU and shared
modes apart, so each GPU publishes the full device plus exactly one mode. Which mode is a site
decision (MIG for batch clusters, vGPU for VDI hosts, ...), per GPU index or per model.

YAML shape (all keys optional)::

    slices:
      singleMode: auto            # auto | full | mig | time-slicing | mps | vgpu:<profile>
      perModel: {a100-40gb: mig}  # model key (hardware table name) -> mode
      perGpu: {"3": "vgpu:A100X-4C", "0000:0f:00.0": mig}  # GPU index or PCI address -> mode
                                  # (wins over perModel; quote addresses: YAML reads 0000:07:00.0 as a number)
      timeshareModes: [time-slicing, mps]
      timeshareMemoryStep: 1Gi    # requestPolicy step of the shared devices' memory capacity
      bandwidthStep: 100M         # requestPolicy step of a PF's bandwidth counter (valueFrom on)
      vgpuHomogeneous: true       # all time-sliced vGPUs on one GPU must be the same profile
      publishPFs: ["0000:e1:00.0", ens1f1]  # host ports to publish as whole NICs (see below)

`timeshare` is the older name of the `time-slicing` mode. MPS runs the GPU in EXCLUSIVE_PROCESS mode,
so time-slicing and MPS are separate modes that never share a GPU.

A NIC physical function without VFs enabled (or without SR-IOV) is the host's own port (storage,
management): it is published as a `nic` device only when `publishPFs` names it by PCI address (any
case, 4- or nvidia-smi's 8-hex-digit domain) or by interface name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from driver.errors import ConfigError, InputError
from driver.model.pci import normalize_pci_address
from driver.slices.names import parse_size

MODE_AUTO = "auto"
MODE_FULL = "full"
MODE_MIG = "mig"
MODE_TIMESLICING = "time-slicing"
MODE_MPS = "mps"
MODE_TIMESHARE_OLD = "timeshare"  # accepted, means time-slicing
VGPU_PREFIX = "vgpu:"
TIMESHARE_KINDS = (MODE_TIMESLICING, MODE_MPS)

_KEYS = (
    "singleMode",
    "perModel",
    "perGpu",
    "timeshareModes",
    "timeshareMemoryStep",
    "bandwidthStep",
    "vgpuHomogeneous",
    "publishPFs",
)
# Linux dev_valid_name: 1-15 bytes, no '/', ':' or whitespace, not "." or "..".
_IFNAME = re.compile(r"^[^/:\s]{1,15}$")


def check_mode(mode: Any, where: str) -> str:
    """Validate one mode string (normalised: `timeshare` -> `time-slicing`); ConfigError names the path."""
    if not isinstance(mode, str):
        raise ConfigError(f"{where}: expected a string mode, got {mode!r}")
    if mode == MODE_TIMESHARE_OLD:
        return MODE_TIMESLICING
    if mode in (MODE_AUTO, MODE_FULL, MODE_MIG, MODE_TIMESLICING, MODE_MPS):
        return mode
    if mode.startswith(VGPU_PREFIX) and len(mode) > len(VGPU_PREFIX):
        return mode
    raise ConfigError(
        f"{where}: unknown mode {mode!r} (expected auto, full, mig, time-slicing, mps or vgpu:<profile>)"
    )


def _publish_pfs(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(f"slices.publishPFs: expected a list of PCI addresses or interface names, got {raw!r}")
    out = []
    for i, entry in enumerate(raw):
        where = f"slices.publishPFs[{i}]"
        if not isinstance(entry, str) or not entry.strip():
            raise ConfigError(f"{where}: expected a PCI address or an interface name, got {entry!r}")
        if ":" in entry:  # interface names never contain ':' (Linux dev_valid_name)
            try:
                out.append(normalize_pci_address(entry, where))
            except InputError as exc:
                raise ConfigError(str(exc)) from None
        elif _IFNAME.match(entry.strip()):
            out.append(entry.strip())
        else:
            raise ConfigError(f"{where}: {entry!r} is neither a PCI address (DDDD:BB:DD.F) nor an interface name "
                              "(1-15 characters without '/', ':' or blanks)")
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class SliceConfig:
    """Rendering knobs; hashable so it can be a default argument and a cache key."""

    single_mode: str = MODE_AUTO
    per_model: tuple[tuple[str, str], ...] = ()
    per_gpu: tuple[tuple[int | str, str], ...] = ()  # GPU index or PCI address (sysfs form) -> mode
    timeshare_modes: tuple[str, ...] = TIMESHARE_KINDS
    timeshare_memory_step_mib: int = 1024
    bandwidth_step_mbps: int = 100
    vgpu_homogeneous: bool = True
    publish_pfs: tuple[str, ...] = ()  # normalised PCI addresses and interface names

    def publishes_pf(self, address: str, interface: str | None) -> bool:
        """Does `publishPFs` opt this physical function in (by address or interface name)?"""
        return address in self.publish_pfs or (interface is not None and interface in self.publish_pfs)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> SliceConfig:
        """Build from the `slices:` section; ConfigError names the offending key."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ConfigError(f"slices: expected a mapping, got {type(data).__name__}")
        unknown = sorted(set(data) - set(_KEYS))
        if unknown:
            raise ConfigError(f"slices: unknown key(s) {', '.join(unknown)} (known: {', '.join(_KEYS)})")
        single = check_mode(data.get("singleMode", MODE_AUTO), "slices.singleMode")
        per_model = tuple(sorted(_mode_map(data.get("perModel"), "slices.perModel", str).items()))
        per_gpu = tuple(sorted(_mode_map(data.get("perGpu"), "slices.perGpu", _gpu_key).items(),
                               key=lambda item: (isinstance(item[0], str), str(item[0]))))
        modes = data.get("timeshareModes", list(TIMESHARE_KINDS))
        if not isinstance(modes, list) or any(m not in TIMESHARE_KINDS for m in modes):
            raise ConfigError(f"slices.timeshareModes: expected a list from {list(TIMESHARE_KINDS)}, got {modes!r}")
        homogeneous = data.get("vgpuHomogeneous", True)
        if not isinstance(homogeneous, bool):
            raise ConfigError(f"slices.vgpuHomogeneous: expected true or false, got {homogeneous!r}")
        try:
            mem_step = parse_size(data.get("timeshareMemoryStep", "1Gi"), "slices.timeshareMemoryStep")
            bw_step = parse_size(data.get("bandwidthStep", "100M"), "slices.bandwidthStep")
        except InputError as exc:
            raise ConfigError(str(exc)) from None
        if mem_step < 1024 * 1024 or mem_step % (1024 * 1024):
            raise ConfigError(f"slices.timeshareMemoryStep: must be a positive whole number of Mi, got {mem_step} bytes")
        if bw_step < 1_000_000 or bw_step % 1_000_000:
            raise ConfigError(f"slices.bandwidthStep: must be a positive whole number of M (Mbit/s), got {bw_step}")
        return cls(
            single_mode=single,
            per_model=per_model,
            per_gpu=per_gpu,
            timeshare_modes=tuple(m for m in TIMESHARE_KINDS if m in modes),
            timeshare_memory_step_mib=mem_step // (1024 * 1024),
            bandwidth_step_mbps=bw_step // 1_000_000,
            vgpu_homogeneous=homogeneous,
            publish_pfs=_publish_pfs(data.get("publishPFs")),
        )

    def mode_for(self, gpu_index: int, model_name: str, pci_address: str | None = None) -> tuple[str, str]:
        """The configured mode for one GPU and the config path that decided it (for error messages):
        perGpu by PCI address, perGpu by index, then perModel, then singleMode."""
        for key, mode in self.per_gpu:
            if pci_address is not None and key == pci_address:
                return mode, f"slices.perGpu[{pci_address}]"
        for key, mode in self.per_gpu:
            if key == gpu_index:
                return mode, f"slices.perGpu[{gpu_index}]"
        for model, mode in self.per_model:
            if model == model_name:
                return mode, f"slices.perModel[{model_name}]"
        return self.single_mode, "slices.singleMode"


def _gpu_key(key: Any) -> int | str:
    """A perGpu key: a GPU index (int or digits) or a PCI address in any form people type."""
    if isinstance(key, float):
        # YAML 1.1 reads an unquoted 0000:07:00.0 as a base-60 number; the address is lost.
        raise ConfigError(f"slices.perGpu: key {key!r} is a number, not a GPU index or PCI address "
                          "(quote PCI addresses: \"0000:07:00.0\")")
    if isinstance(key, bool):
        raise ValueError(key)
    if isinstance(key, int) or (isinstance(key, str) and re.fullmatch(r"\s*-?\d+\s*", key)):
        index = int(key)
        if index < 0:
            raise ValueError(key)
        return index
    try:
        return normalize_pci_address(key, "slices.perGpu")
    except InputError:
        raise ConfigError(f"slices.perGpu: invalid key {key!r}: expected a GPU index or a PCI address "
                          "such as 0000:07:00.0") from None


def _mode_map(raw: Any, where: str, key_type: Any) -> dict:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(raw).__name__}")
    out = {}
    for key, mode in raw.items():
        try:
            k = key_type(key)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: invalid key {key!r}") from None
        out[k] = check_mode(mode, f"{where}[{key}]")
    return out
