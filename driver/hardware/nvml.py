"""What NVML reports about a GPU model beyond its capability numbers (data/nvml.yaml).

Why a table of its own: NVIDIA's DRA driver publishes NVML's view of a GPU (CUDA compute
capability, brand, the pci.ids name of a passthrough device, the GPU-instance profile IDs in MIG
device names), and none of that is in sysfs. The rows are keyed by the model key of gpus.yaml, so a
new board gets its row next to its capability numbers; a driver config may add or override rows
(the `nvidia:` section's `models:`) for simulated boards.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from driver.errors import ConfigError
from driver.model.hardware import GpuModel, MigProfile

_MODEL_KEYS = {"cuda", "brand", "pci_name", "bars_mib", "addressing_mode", "gi_profile_ids", "placement_units", "source",
               "unconfirmed"}
_CUDA = re.compile(r"^(\d+)\.(\d+)$")
# go-nvlib MigProfileInfo.String(): "[<c>c.]<g>g.<gb>gb" then "+<attributes>" or "-<negated attributes>".
_PROFILE_SUFFIX = re.compile(r"^(?:\d+c\.)?\d+g\.\d+gb(?P<suffix>[+-].*)?$")
# go-nvlib GetBrandAsString's values (vendor/github.com/NVIDIA/go-nvlib/pkg/nvlib/device/device.go).
BRANDS = ("Unknown", "Quadro", "Tesla", "NVS", "Grid", "GeForce", "Titan", "NvidiaVApps", "NvidiaVPC", "NvidiaVCS",
          "NvidiaVWS", "NvidiaCloudGaming", "QuadroRTX", "NvidiaRTX", "Nvidia", "GeForceRTX", "TitanRTX")
ADDRESSING_MODES = ("HMM", "ATS", "None")


@dataclass(frozen=True)
class NvmlFacts:
    """NVML's view of one GPU model."""

    model: str
    cuda: str  # "8.0"
    brand: str  # "Nvidia"
    pci_name: str  # "GA100 [A100 SXM4 40GB]"
    bars_mib: tuple[int, ...]  # 64-bit memory BARs
    addressing_mode: str | None = None
    gi_profile_ids: Mapping[str, int] = field(default_factory=dict)  # explicit per-profile IDs
    # NVML's GPU-instance placements count in units finer than a memory slice on some GPUs (the RTX PRO
    # 6000 Blackwell: a 12-unit grid for 4 memory slices); names and memory-slice counters use them.
    placement_units: int = 1
    source: str = ""
    unconfirmed: str = ""

    @property
    def cuda_version(self) -> str:
        """The semver form the driver publishes: "8.0" -> "8.0.0"."""
        major, minor = _CUDA.fullmatch(self.cuda).groups()  # type: ignore[union-attr]
        return f"{int(major)}.{int(minor)}.0"

    def nvml_placement(self, start: int, memory_slices: int) -> range:
        """The NVML placement units a GPU instance at memory slice `start` spanning `memory_slices` covers
        (nvmlGpuInstancePlacement_t start .. start + size)."""
        return range(start * self.placement_units, (start + memory_slices) * self.placement_units)

    @property
    def addressable_memory_bytes(self) -> int:
        """Sum of the 64-bit BARs rounded up to a power of two (nvpci GetTotalAddressableMemory(true))."""
        total = sum(self.bars_mib) * 2**20
        return 1 << (total - 1).bit_length() if total else 0


@dataclass(frozen=True)
class NvmlTable:
    models: Mapping[str, NvmlFacts]
    layout_ids: Mapping[int, Mapping[str, int]]  # memory-slice count -> shape -> GI profile ID

    def facts(self, model: GpuModel) -> NvmlFacts:
        found = self.models.get(model.name)
        if found is None:
            raise ConfigError(f"GPU model {model.name!r} ({model.product_name}) has no NVML facts (cuda, brand, "
                              "pci_name, bars_mib): add a row to driver/hardware/data/nvml.yaml or under "
                              f"nvidia.models.{model.name} in the driver config")
        return found

    def gi_profile_id(self, model: GpuModel, profile: MigProfile) -> int:
        """NVML's GPU-instance profile ID of `profile` on `model` (ConfigError when unknown)."""
        explicit = self.facts(model).gi_profile_ids.get(profile.name)
        if explicit is not None:
            return explicit
        shape = profile_shape(profile)
        found = self.layout_ids.get(model.mig_memory_slices, {}).get(shape)
        if found is None:
            raise ConfigError(f"GPU model {model.name!r}: no NVML GPU-instance profile ID for MIG profile "
                              f"{profile.name!r} (shape {shape} on {model.mig_memory_slices} memory slices); add "
                              f"gi_profile_ids to its row in driver/hardware/data/nvml.yaml or nvidia.models")
        return found


def profile_shape(profile: MigProfile) -> str:
    """`1g.5gb+me` with 1 compute and 1 memory slice -> "1g/1m+me"; `1g.24gb-me` -> "1g/1m-me"."""
    found = _PROFILE_SUFFIX.fullmatch(profile.name)
    suffix = (found["suffix"] or "") if found else ""
    return f"{profile.compute_slices}g/{profile.memory_slices}m{suffix}"


@functools.cache
def _builtin() -> dict[str, Any]:
    text = resources.files("driver.hardware.data").joinpath("nvml.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    if not isinstance(data, dict):  # pragma: no cover - our own file
        raise ConfigError("built-in table nvml.yaml: not a mapping")
    return data


def load_nvml_table(overrides: Mapping[str, Any] | None = None, where: str = "nvidia.models") -> NvmlTable:
    """The built-in table with `overrides` (model key -> row, merged field by field over a built-in
    row of the same key) on top. ConfigError names the row and field."""
    raw = _builtin()
    sources = {str(k): str(v) for k, v in (raw.get("sources") or {}).items()}
    rows: dict[str, dict[str, Any]] = {str(k): dict(v) for k, v in (raw.get("models") or {}).items()}
    if overrides is not None:
        if not isinstance(overrides, Mapping):
            raise ConfigError(f"{where}: must be a mapping of GPU model key -> NVML facts, got {type(overrides).__name__}")
        for key, row in overrides.items():
            if not isinstance(row, Mapping):
                raise ConfigError(f"{where}.{key}: must be a mapping, got {type(row).__name__}")
            rows[str(key)] = {**rows.get(str(key), {}), **row}
    models = {key: _facts(key, row, sources, where if overrides and key in overrides else "nvml.yaml models")
              for key, row in sorted(rows.items())}
    layout_ids = {int(k): {str(s): int(i) for s, i in v.items()} for k, v in (raw.get("gi_profile_ids") or {}).items()}
    return NvmlTable(models=models, layout_ids=layout_ids)


def _facts(key: str, row: Mapping[str, Any], sources: Mapping[str, str], where: str) -> NvmlFacts:
    here = f"{where}.{key}"
    unknown = sorted(set(row) - _MODEL_KEYS, key=str)
    if unknown:
        raise ConfigError(f"{here}: unknown field(s) {unknown}; allowed: {sorted(_MODEL_KEYS)}")
    for required in ("cuda", "brand", "pci_name", "bars_mib"):
        if required not in row:
            raise ConfigError(f"{here}.{required}: required field missing")
    cuda = row["cuda"]
    if not isinstance(cuda, str) or not _CUDA.fullmatch(cuda):
        raise ConfigError(f"{here}.cuda: expected \"<major>.<minor>\" (quoted), got {cuda!r}")
    brand = row["brand"]
    if brand not in BRANDS:
        raise ConfigError(f"{here}.brand: {brand!r} is not a brand go-nvlib reports ({', '.join(BRANDS)})")
    pci_name = row["pci_name"]
    if not isinstance(pci_name, str) or not pci_name.strip():
        raise ConfigError(f"{here}.pci_name: must be a non-empty string, got {pci_name!r}")
    bars = row["bars_mib"]
    if (not isinstance(bars, list) or not bars
            or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in bars)):
        raise ConfigError(f"{here}.bars_mib: must be a non-empty list of positive MiB sizes, got {bars!r}")
    mode = row.get("addressing_mode")
    if mode is not None and mode not in ADDRESSING_MODES:
        raise ConfigError(f"{here}.addressing_mode: expected one of {', '.join(ADDRESSING_MODES)}, got {mode!r}")
    ids = row.get("gi_profile_ids")
    ids = {} if ids is None else ids  # absent or null; a falsy 0, "" or [] is a mistake, said below
    if not isinstance(ids, Mapping) or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                                for v in ids.values()):
        raise ConfigError(f"{here}.gi_profile_ids: must map MIG profile names to non-negative integers, got {ids!r}")
    units = row.get("placement_units", 1)
    if isinstance(units, bool) or not isinstance(units, int) or units < 1:
        raise ConfigError(f"{here}.placement_units: must be a positive integer (NVML placement units per memory "
                          f"slice), got {units!r}")
    source = row.get("source") or []
    items = source if isinstance(source, list) else [source]
    return NvmlFacts(model=key, cuda=cuda, brand=brand, pci_name=pci_name, bars_mib=tuple(bars),
                     addressing_mode=mode, gi_profile_ids={str(k): v for k, v in ids.items()}, placement_units=units,
                     source="; ".join(sources.get(str(s), str(s)) for s in items),
                     unconfirmed=str(row.get("unconfirmed") or ""))
