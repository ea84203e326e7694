"""Turns the built-in YAML tables (plus a driver config's `hardware:` section) into a HardwareCatalog.

Every field is checked on load — unknown keys, wrong types, placements that do not fit the memory
slices, profiles bigger than their GPU — so a typo in a config file fails at start-up with a message
naming the model and field instead of publishing impossible partitions.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping
from importlib import resources
from typing import Any

import yaml

from driver.errors import ConfigError
from driver.hardware.fields import (
    check_keys, integer, mapping, required, source_text, sources_section, text, unconfirmed,
)
from driver.hardware.merge import deep_merge, resolve_inherits
from driver.hardware.vgputable import vgpu_profiles
from driver.model.hardware import GpuModel, HardwareCatalog, MigProfile, NicModel

_GPU_KEYS = {
    "device_id", "product_name", "architecture", "memory_mib", "multiprocessors", "copy_engines",
    "decoders", "encoders", "jpeg_engines", "ofa_engines", "mig", "vgpu", "source", "unconfirmed", "subsystem",
}
_MIG_KEYS = {"layout", "profiles"}
_PROFILE_KEYS = {"shape", "sms", "mib", "ce", "dec", "enc", "jpeg", "ofa", "source", "unconfirmed"}
_LAYOUT_KEYS = {"memory_slices", "shapes"}
_SHAPE_KEYS = {"compute_slices", "memory_slices", "placements"}
_NIC_KEYS = {"name", "product_name", "source"}
_SECTIONS = {"gpus", "nics", "mig_layouts", "sources"}
_NIC_KEY = re.compile(r"^([0-9a-fA-F]{4}):([0-9a-fA-F]{4})$")
_SUBSYSTEM = _NIC_KEY  # "<subsystem vendor>:<subsystem device>" in hex, as lspci -nnv prints it


# libyaml when present: the tables are parsed at every start-up and on every `slices`/`discover` run.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def _read_builtin(name: str) -> dict[str, Any]:
    raw_text = resources.files("driver.hardware.data").joinpath(name).read_text(encoding="utf-8")
    data = yaml.load(raw_text, Loader=_Loader) or {}  # noqa: S506 - a safe loader
    if not isinstance(data, dict):  # pragma: no cover - our own files
        raise ConfigError(f"built-in hardware table {name}: not a mapping")
    return data


# gpus-2026.yaml holds the boards of late 2026 (Blackwell, Grace Hopper, H20); its rows may inherit from
# gpus.yaml's, so the files are merged before inheritance is resolved.
BUILTIN_FILES = ("gpus.yaml", "gpus-2026.yaml", "nics.yaml")


def builtin_tables() -> dict[str, Any]:
    """The raw built-in tables (BUILTIN_FILES) as one mapping, before inheritance."""
    merged: dict[str, Any] = {}
    for name in BUILTIN_FILES:
        merged = deep_merge(merged, _read_builtin(name))
    # Deep copy: callers (and overrides) must never alter the cached parse.
    return copy.deepcopy(merged)


def load_catalog(overrides: Mapping[str, Any] | None = None) -> HardwareCatalog:
    """Built-in tables merged with `overrides` (a driver config's `hardware:` section).

    `overrides` may add models (`gpus.<key>` with a new device_id, usually `inherits:` an existing
    model or a `_base`), override fields of existing ones (deep merge, `null` deletes), add
    `mig_layouts`, or add NIC names (`nics."15b3:1021"`). Raises ConfigError naming model and field.
    """
    raw = builtin_tables()
    if overrides:
        if not isinstance(overrides, Mapping):
            raise ConfigError(f"hardware: must be a mapping, got {type(overrides).__name__}")
        unknown = set(overrides) - _SECTIONS
        if unknown:
            raise ConfigError(f"hardware: unknown section(s) {sorted(unknown, key=str)}; expected {sorted(_SECTIONS)}")
        for section in sorted(_SECTIONS):
            value = overrides.get(section)
            if value is not None and not isinstance(value, Mapping):
                raise ConfigError(f"hardware.{section}: must be a mapping, got {type(value).__name__}")
            for key in value or {}:
                if not isinstance(key, str):
                    raise ConfigError(f"hardware.{section}: keys must be strings, got {key!r} (quote it in YAML)")
        raw = deep_merge(raw, overrides)
    layouts = _layouts(raw.get("mig_layouts") or {})
    sources = sources_section(raw.get("sources") or {})
    gpus: dict[int, GpuModel] = {}
    variants: dict[tuple[int, int, int], GpuModel] = {}
    owner: dict[tuple[int, ...], str] = {}
    for key, entry in sorted(resolve_inherits(raw.get("gpus") or {}, "hardware.gpus").items()):
        if key.startswith("_"):
            continue  # abstract base (mixin)
        model = _gpu(key, entry, layouts, sources)
        if model.subsystems:
            for sub_vendor, sub_device in model.subsystems:
                ids = (model.device_id, sub_vendor, sub_device)
                shown = f"0x{model.device_id:04x} with subsystem {sub_vendor:04x}:{sub_device:04x}"
                _claim(owner, ids, key, "subsystem", shown)
                variants[ids] = model
        else:
            _claim(owner, (model.device_id,), key, "device_id", f"0x{model.device_id:04x}")
            gpus[model.device_id] = model
    nics = {}
    for key, entry in sorted((raw.get("nics") or {}).items()):
        nic = _nic(str(key), entry, sources)
        nics[(nic.vendor_id, nic.device_id)] = nic
    return HardwareCatalog(gpus=dict(sorted(gpus.items())), nics=nics, variants=dict(sorted(variants.items())))


def _claim(owner: dict[tuple[int, ...], str], ids: tuple[int, ...], key: str, field_name: str, shown: str) -> None:
    """One model per device ID (and per subsystem variant): a second one is a config error."""
    if ids in owner:
        raise ConfigError(f"hardware.gpus.{key}.{field_name}: {shown} already used by model {owner[ids]!r}")
    owner[ids] = key


# --- MIG layouts ----------------------------------------------------------------------------------

def _layouts(raw: Mapping[str, Any]) -> dict[str, tuple[int, dict[str, tuple[int, int, tuple[int, ...]]]]]:
    """layout name -> (memory slices, shape name -> (compute slices, memory slices, placements))."""
    out = {}
    for name, layout in mapping("hardware.mig_layouts", raw).items():
        where = f"hardware.mig_layouts.{name}"
        layout = mapping(where, layout)
        check_keys(where, layout, _LAYOUT_KEYS)
        total = integer(f"{where}.memory_slices", required(where, layout, "memory_slices"), minimum=1, maximum=32)
        shapes = {}
        for sname, shape in mapping(f"{where}.shapes", required(where, layout, "shapes")).items():
            swhere = f"{where}.shapes.{sname}"
            shape = mapping(swhere, shape)
            check_keys(swhere, shape, _SHAPE_KEYS)
            compute = integer(f"{swhere}.compute_slices", required(swhere, shape, "compute_slices"), minimum=1)
            size = integer(f"{swhere}.memory_slices", required(swhere, shape, "memory_slices"), minimum=1, maximum=total)
            placements = required(swhere, shape, "placements")
            if not isinstance(placements, list) or not placements:
                raise ConfigError(f"{swhere}.placements: must be a non-empty list of start slices")
            starts = tuple(integer(f"{swhere}.placements", p) for p in placements)
            if list(starts) != sorted(set(starts)):
                raise ConfigError(f"{swhere}.placements: must be strictly increasing, got {list(starts)}")
            for start in starts:
                if start + size > total:
                    raise ConfigError(
                        f"{swhere}.placements: start {start} + {size} memory slice(s) exceeds the "
                        f"{total} memory slices of layout {name!r}"
                    )
            shapes[str(sname)] = (compute, size, starts)
        out[str(name)] = (total, shapes)
    return out


# --- GPUs -----------------------------------------------------------------------------------------

def _gpu(key: str, entry: Mapping[str, Any], layouts: Mapping[str, Any], sources: Mapping[str, str]) -> GpuModel:
    where = f"hardware.gpus.{key}"
    check_keys(where, entry, _GPU_KEYS)
    fields: dict[str, Any] = {
        "device_id": integer(f"{where}.device_id", required(where, entry, "device_id"), maximum=0xFFFF),
        "name": key,
        "product_name": text(f"{where}.product_name", required(where, entry, "product_name")),
        "architecture": text(f"{where}.architecture", required(where, entry, "architecture")),
        "memory_mib": integer(f"{where}.memory_mib", required(where, entry, "memory_mib"), minimum=1),
        "multiprocessors": integer(f"{where}.multiprocessors", required(where, entry, "multiprocessors"), minimum=1),
        "source": source_text(f"{where}.source", entry.get("source"), sources, "driver config"),
        "unconfirmed": unconfirmed(where, entry),
        "subsystems": _subsystems(f"{where}.subsystem", entry.get("subsystem")),
    }
    for field in ("copy_engines", "decoders", "encoders", "jpeg_engines", "ofa_engines"):
        fields[field] = integer(f"{where}.{field}", entry.get(field, 0))
    mig = entry.get("mig")
    if mig:
        fields["mig_memory_slices"], fields["mig_profiles"] = _mig(where, mig, layouts, fields, sources)
    vgpu = entry.get("vgpu")
    if vgpu:
        fields["vgpu_profiles"] = vgpu_profiles(where, vgpu, fields, sources)
        mixed = vgpu.get("mixed_size", True)
        if not isinstance(mixed, bool):
            raise ConfigError(f"{where}.vgpu.mixed_size: expected true or false, got {mixed!r}")
        fields["vgpu_mixed_size"] = mixed
    return GpuModel(**fields)


def _subsystems(where: str, value: Any) -> tuple[tuple[int, int], ...]:
    """`subsystem: "10de:14a9"` (or a list of them): the PCI subsystem IDs that select this model."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ConfigError(f"{where}: must name at least one '<vendor>:<device>' subsystem, e.g. '10de:14a9'")
    out = []
    for item in items:
        match = _SUBSYSTEM.match(item) if isinstance(item, str) else None
        if match is None:
            raise ConfigError(f"{where}: {item!r} is not a '<vendor>:<device>' subsystem in hex, e.g. '10de:14a9'")
        out.append((int(match.group(1), 16), int(match.group(2), 16)))
    if len(set(out)) != len(out):
        raise ConfigError(f"{where}: duplicate subsystem in {items}")
    return tuple(out)


def _mig(
    where: str, mig: Any, layouts: Mapping[str, Any], gpu: Mapping[str, Any], sources: Mapping[str, str]
) -> tuple[int, tuple[MigProfile, ...]]:
    where = f"{where}.mig"
    mig = mapping(where, mig)
    check_keys(where, mig, _MIG_KEYS)
    layout_name = text(f"{where}.layout", required(where, mig, "layout"))
    if layout_name not in layouts:
        raise ConfigError(f"{where}.layout: unknown MIG layout {layout_name!r}; known: {sorted(layouts)}")
    total, shapes = layouts[layout_name]
    profiles_raw = mapping(f"{where}.profiles", mig.get("profiles") or {})
    if not profiles_raw:
        raise ConfigError(f"{where}.profiles: a MIG-capable model needs at least one profile")
    limits = {
        "sms": ("multiprocessors", gpu["multiprocessors"]),
        "mib": ("memory_mib", gpu["memory_mib"]),
        "ce": ("copy_engines", gpu["copy_engines"]),
        "dec": ("decoders", gpu["decoders"]),
        "enc": ("encoders", gpu["encoders"]),
        "jpeg": ("jpeg_engines", gpu["jpeg_engines"]),
        "ofa": ("ofa_engines", gpu["ofa_engines"]),
    }
    profiles = []
    for name, spec in profiles_raw.items():
        pwhere = f"{where}.profiles.{name}"
        spec = mapping(pwhere, spec)
        check_keys(pwhere, spec, _PROFILE_KEYS)
        shape_name = text(f"{pwhere}.shape", required(pwhere, spec, "shape"))
        if shape_name not in shapes:
            raise ConfigError(
                f"{pwhere}.shape: unknown shape {shape_name!r} in layout {layout_name!r}; known: {sorted(shapes)}"
            )
        compute, size, placements = shapes[shape_name]
        values = {}
        for short, (long, limit) in limits.items():
            mandatory = short in ("sms", "mib")
            raw_value = required(pwhere, spec, short) if mandatory else spec.get(short, 0)
            value = integer(f"{pwhere}.{short}", raw_value, minimum=1 if mandatory else 0)
            if value > limit:
                # MiB sizes included: both sides are what nvidia-smi reports, never a nominal size.
                raise ConfigError(f"{pwhere}.{short}: {value} exceeds the GPU's {long} ({limit})")
            values[short] = value
        profiles.append(
            MigProfile(
                name=str(name), compute_slices=compute, memory_slices=size,
                multiprocessors=values["sms"], memory_mib=values["mib"], copy_engines=values["ce"],
                decoders=values["dec"], encoders=values["enc"], jpeg_engines=values["jpeg"],
                ofa_engines=values["ofa"], placements=placements,
                source=source_text(f"{pwhere}.source", spec.get("source"), sources, gpu["source"]),
                unconfirmed=unconfirmed(pwhere, spec),
            )
        )
    # Largest first, like nvidia-smi and the KEP diagram; ties by name for a stable order.
    profiles.sort(key=lambda p: (-p.memory_slices, -p.compute_slices, p.name))
    return total, tuple(profiles)


def unconfirmed_rows(catalog: HardwareCatalog) -> list[str]:
    """One line per model with numbers marked as not confirmed against NVIDIA's documentation or a real
    capture: `<model>: <why>; MIG <profile>, <profile>: <why>; vGPU <type>: <why>`, the model's own mark
    first, then its MIG and vGPU rows, rows with the same reason named together."""
    out = []
    for model in catalog.models():
        parts = [model.unconfirmed] if model.unconfirmed else []
        for kind, rows in (("MIG", model.mig_profiles), ("vGPU", model.vgpu_profiles)):
            by_reason: dict[str, list[str]] = {}
            for row in rows:
                if row.unconfirmed:
                    by_reason.setdefault(row.unconfirmed, []).append(row.name)
            parts.extend(f"{kind} {', '.join(names)}: {why}" for why, names in by_reason.items())
        if parts:
            out.append(f"{model.name}: " + "; ".join(parts))
    return out


# --- NICs -----------------------------------------------------------------------------------------

def _nic(key: str, entry: Any, sources: Mapping[str, str]) -> NicModel:
    where = f"hardware.nics.{key}"
    match = _NIC_KEY.match(key)
    if not match:
        raise ConfigError(f"{where}: key must be '<vendor>:<device>' in hex, e.g. '15b3:101d'")
    entry = mapping(where, entry)
    check_keys(where, entry, _NIC_KEYS)
    return NicModel(
        vendor_id=int(match.group(1), 16),
        device_id=int(match.group(2), 16),
        name=text(f"{where}.name", required(where, entry, "name")),
        product_name=text(f"{where}.product_name", required(where, entry, "product_name")),
        source=source_text(f"{where}.source", entry.get("source"), sources, "driver config"),
    )
