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
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from driver.errors import ConfigError
from driver.hardware.merge import deep_merge, resolve_inherits
from driver.model.hardware import GpuModel, HardwareCatalog, MigProfile, NicModel, VgpuProfile

_GPU_KEYS = {
    "device_id", "product_name", "architecture", "memory_mib", "multiprocessors", "copy_engines",
    "decoders", "encoders", "jpeg_engines", "ofa_engines", "mig", "vgpu", "source", "unconfirmed", "subsystem",
}
_MIG_KEYS = {"layout", "profiles"}
_PROFILE_KEYS = {"shape", "sms", "mib", "ce", "dec", "enc", "jpeg", "ofa", "source", "unconfirmed"}
_VGPU_KEYS = {"board_gb", "board_mib", "prefix", "profiles", "mig_backed", "source", "mixed_size"}
_VGPU_ROW_KEYS = {"type", "name", "framebuffer_mib", "max_instances", "source", "unconfirmed"}
# Time-sliced rows only: the guide's "Maximum vGPUs per GPU in Mixed-Size Mode".
_VGPU_MIXED_KEY = "max_mixed"
_LAYOUT_KEYS = {"memory_slices", "shapes"}
_SHAPE_KEYS = {"compute_slices", "memory_slices", "placements"}
_NIC_KEYS = {"name", "product_name", "source"}
_SECTIONS = {"gpus", "nics", "mig_layouts", "sources"}
_VGPU_SUFFIX = re.compile(r"^(\d+)C$")
_NIC_KEY = re.compile(r"^([0-9a-fA-F]{4}):([0-9a-fA-F]{4})$")
_SUBSYSTEM = _NIC_KEY  # "<subsystem vendor>:<subsystem device>" in hex, as lspci -nnv prints it


# libyaml when present: the tables are parsed at every start-up and on every `slices`/`discover` run.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def _read_builtin(name: str) -> dict[str, Any]:
    text = resources.files("driver.hardware.data").joinpath(name).read_text(encoding="utf-8")
    data = yaml.load(text, Loader=_Loader) or {}  # noqa: S506 - a safe loader
    if not isinstance(data, dict):  # pragma: no cover - our own files
        raise ConfigError(f"built-in hardware table {name}: not a mapping")
    return data


def builtin_tables() -> dict[str, Any]:
    """The raw built-in tables (gpus.yaml + nics.yaml) as one mapping, before inheritance."""
    # Deep copy: callers (and overrides) must never alter the cached parse.
    return copy.deepcopy(deep_merge(_read_builtin("gpus.yaml"), _read_builtin("nics.yaml")))


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
    sources = _sources(raw.get("sources") or {})
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


# --- field helpers ---------------------------------------------------------------------------------

def _check_keys(where: str, entry: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = set(entry) - allowed
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {sorted(unknown, key=str)}; allowed: {sorted(allowed)}")


def _int(where: str, value: Any, *, minimum: int = 0, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{where}: must be an integer, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ConfigError(f"{where}: must be {bound}, got {value}")
    return value


def _str(where: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: must be a non-empty string, got {value!r}")
    return value


def _mapping(where: str, value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: must be a mapping, got {type(value).__name__}")
    return value


def _required(where: str, entry: Mapping[str, Any], key: str) -> Any:
    if key not in entry:
        raise ConfigError(f"{where}.{key}: required field missing")
    return entry[key]


def _sources(raw: Any) -> dict[str, str]:
    """The `sources:` section: short key -> citation text."""
    out = {}
    for key, text in _mapping("hardware.sources", raw).items():
        out[str(key)] = _str(f"hardware.sources.{key}", text)
    return out


def source_text(where: str, value: Any, sources: Mapping[str, str], default: str = "") -> str:
    """A row's `source:` (one key/text or a list of them) as citation text; keys of `sources:` are
    expanded, anything else is taken literally (a driver config may cite in prose)."""
    if value is None:
        return default
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ConfigError(f"{where}: must name at least one source")
    texts = []
    for item in items:
        item = _str(where, item)
        texts.append(sources.get(item, item))
    return "; ".join(texts)


def _unconfirmed(where: str, entry: Mapping[str, Any]) -> str:
    value = entry.get("unconfirmed")
    return "" if value is None else _str(f"{where}.unconfirmed", value)


# --- MIG layouts ----------------------------------------------------------------------------------

def _layouts(raw: Mapping[str, Any]) -> dict[str, tuple[int, dict[str, tuple[int, int, tuple[int, ...]]]]]:
    """layout name -> (memory slices, shape name -> (compute slices, memory slices, placements))."""
    out = {}
    for name, layout in _mapping("hardware.mig_layouts", raw).items():
        where = f"hardware.mig_layouts.{name}"
        layout = _mapping(where, layout)
        _check_keys(where, layout, _LAYOUT_KEYS)
        total = _int(f"{where}.memory_slices", _required(where, layout, "memory_slices"), minimum=1, maximum=32)
        shapes = {}
        for sname, shape in _mapping(f"{where}.shapes", _required(where, layout, "shapes")).items():
            swhere = f"{where}.shapes.{sname}"
            shape = _mapping(swhere, shape)
            _check_keys(swhere, shape, _SHAPE_KEYS)
            compute = _int(f"{swhere}.compute_slices", _required(swhere, shape, "compute_slices"), minimum=1)
            size = _int(f"{swhere}.memory_slices", _required(swhere, shape, "memory_slices"), minimum=1, maximum=total)
            placements = _required(swhere, shape, "placements")
            if not isinstance(placements, list) or not placements:
                raise ConfigError(f"{swhere}.placements: must be a non-empty list of start slices")
            starts = tuple(_int(f"{swhere}.placements", p) for p in placements)
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
    _check_keys(where, entry, _GPU_KEYS)
    fields: dict[str, Any] = {
        "device_id": _int(f"{where}.device_id", _required(where, entry, "device_id"), maximum=0xFFFF),
        "name": key,
        "product_name": _str(f"{where}.product_name", _required(where, entry, "product_name")),
        "architecture": _str(f"{where}.architecture", _required(where, entry, "architecture")),
        "memory_mib": _int(f"{where}.memory_mib", _required(where, entry, "memory_mib"), minimum=1),
        "multiprocessors": _int(f"{where}.multiprocessors", _required(where, entry, "multiprocessors"), minimum=1),
        "source": source_text(f"{where}.source", entry.get("source"), sources, "driver config"),
        "unconfirmed": _unconfirmed(where, entry),
        "subsystems": _subsystems(f"{where}.subsystem", entry.get("subsystem")),
    }
    for field in ("copy_engines", "decoders", "encoders", "jpeg_engines", "ofa_engines"):
        fields[field] = _int(f"{where}.{field}", entry.get(field, 0))
    mig = entry.get("mig")
    if mig:
        fields["mig_memory_slices"], fields["mig_profiles"] = _mig(where, mig, layouts, fields, sources)
    vgpu = entry.get("vgpu")
    if vgpu:
        fields["vgpu_profiles"] = _vgpu(where, vgpu, fields, sources)
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
    mig = _mapping(where, mig)
    _check_keys(where, mig, _MIG_KEYS)
    layout_name = _str(f"{where}.layout", _required(where, mig, "layout"))
    if layout_name not in layouts:
        raise ConfigError(f"{where}.layout: unknown MIG layout {layout_name!r}; known: {sorted(layouts)}")
    total, shapes = layouts[layout_name]
    profiles_raw = _mapping(f"{where}.profiles", mig.get("profiles") or {})
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
        spec = _mapping(pwhere, spec)
        _check_keys(pwhere, spec, _PROFILE_KEYS)
        shape_name = _str(f"{pwhere}.shape", _required(pwhere, spec, "shape"))
        if shape_name not in shapes:
            raise ConfigError(
                f"{pwhere}.shape: unknown shape {shape_name!r} in layout {layout_name!r}; known: {sorted(shapes)}"
            )
        compute, size, placements = shapes[shape_name]
        values = {}
        for short, (long, limit) in limits.items():
            required = short in ("sms", "mib")
            raw_value = _required(pwhere, spec, short) if required else spec.get(short, 0)
            value = _int(f"{pwhere}.{short}", raw_value, minimum=1 if required else 0)
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
                unconfirmed=_unconfirmed(pwhere, spec),
            )
        )
    # Largest first, like nvidia-smi and the KEP diagram; ties by name for a stable order.
    profiles.sort(key=lambda p: (-p.memory_slices, -p.compute_slices, p.name))
    return total, tuple(profiles)


def _vgpu(where: str, vgpu: Any, gpu: Mapping[str, Any], sources: Mapping[str, str]) -> tuple[VgpuProfile, ...]:
    """Time-sliced (`profiles`) then MIG-backed (`mig_backed`) vGPU types of one board.

    Instance counts are the table's `max_instances`; the only size check is against the nominal
    framebuffer the vGPU manager divides (`board_mib`, or `board_gb`, else the GPU's memory), because
    the guide's framebuffers are nominal and may exceed what nvidia-smi reports (H200X-141C).
    """
    where = f"{where}.vgpu"
    vgpu = _mapping(where, vgpu)
    _check_keys(where, vgpu, _VGPU_KEYS)
    board_gb = _int(f"{where}.board_gb", vgpu["board_gb"], minimum=1) if "board_gb" in vgpu else None
    board = (
        _int(f"{where}.board_mib", vgpu["board_mib"], minimum=1) if "board_mib" in vgpu
        else board_gb * 1024 if board_gb else gpu["memory_mib"]
    )
    board_what = "board's vGPU framebuffer" if ("board_mib" in vgpu or board_gb) else "GPU's memory_mib"
    prefix = _str(f"{where}.prefix", vgpu["prefix"]) if "prefix" in vgpu else None
    default_source = source_text(f"{where}.source", vgpu.get("source"), sources, gpu["source"])
    ctx = _VgpuContext(where, prefix, board_gb, default_source, sources)
    out = []
    for key, mig_backed in (("profiles", False), ("mig_backed", True)):
        items = vgpu.get(key) or []
        if not isinstance(items, list):
            raise ConfigError(f"{where}.{key}: must be a list")
        for i, item in enumerate(items):
            iwhere = f"{where}.{key}[{i}]"
            profile = _vgpu_row(iwhere, item, ctx, gpu if mig_backed else None)
            limit_total = profile.framebuffer_mib * (1 if mig_backed else profile.max_instances)
            if limit_total > board:
                shown = f"{profile.framebuffer_mib} MiB" if mig_backed else (
                    f"{profile.max_instances} x {profile.framebuffer_mib} MiB")
                raise ConfigError(f"{iwhere}: {shown} exceeds the {board_what} ({board} MiB)")
            out.append(profile)
    names = [p.name.upper() for p in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: duplicate vGPU profile names {[p.name for p in out]}")
    return tuple(out)


@dataclass(frozen=True)
class _VgpuContext:
    where: str
    prefix: str | None
    board_gb: int | None
    source: str
    sources: Mapping[str, str]


def _vgpu_row(iwhere: str, item: Any, ctx: _VgpuContext, mig_gpu: Mapping[str, Any] | None) -> VgpuProfile:
    """One vGPU table row; `mig_gpu` is the GPU's fields when the row is MIG-backed."""
    if isinstance(item, str) and mig_gpu is None:
        # Compact driver-config form for simulated boards: "<n>C" -> n GiB, board_gb // n instances.
        match = _VGPU_SUFFIX.match(item)
        if not match:
            raise ConfigError(f"{iwhere}: {item!r} is not a C-series suffix like '4C'")
        if ctx.prefix is None:
            raise ConfigError(f"{ctx.where}.prefix: required field missing (for suffix {item!r})")
        if ctx.board_gb is None:
            raise ConfigError(f"{ctx.where}.board_gb: required field missing (for suffix {item!r})")
        gb = int(match.group(1))
        if gb == 0 or gb > ctx.board_gb:
            raise ConfigError(f"{iwhere}: {item} framebuffer exceeds board_gb {ctx.board_gb}")
        return VgpuProfile(name=f"{ctx.prefix}-{item}", framebuffer_mib=gb * 1024,
                           max_instances=ctx.board_gb // gb, source=ctx.source)
    if not isinstance(item, Mapping):
        form = "a mapping" if mig_gpu is not None else "a suffix string like '4C' or a mapping"
        raise ConfigError(f"{iwhere}: must be {form}")
    allowed = _VGPU_ROW_KEYS | ({"mig"} if mig_gpu is not None else {_VGPU_MIXED_KEY})
    _check_keys(iwhere, item, allowed)
    if ("type" in item) == ("name" in item):
        raise ConfigError(f"{iwhere}: set exactly one of type (suffix after '<prefix>-') and name")
    if "type" in item:
        if ctx.prefix is None:
            raise ConfigError(f"{ctx.where}.prefix: required field missing (rows use type:)")
        name = f"{ctx.prefix}-{_str(f'{iwhere}.type', item['type'])}"
    else:
        name = _str(f"{iwhere}.name", item["name"])
    mig_profile = None
    if mig_gpu is not None:
        # The devices of a MIG-backed type are its GPU instance's placements (counters bound them);
        # max_instances is the guide's figure, kept for reports.
        mig_profile = _str(f"{iwhere}.mig", _required(iwhere, item, "mig"))
        known = sorted(p.name for p in mig_gpu.get("mig_profiles", ()))
        if mig_profile not in known:
            raise ConfigError(f"{iwhere}.mig: {mig_profile!r} is not a MIG profile of this GPU; known: {known or 'none'}")
    max_instances = _int(f"{iwhere}.max_instances", _required(iwhere, item, "max_instances"), minimum=1)
    mixed = None
    if _VGPU_MIXED_KEY in item:
        mixed = _int(f"{iwhere}.{_VGPU_MIXED_KEY}", item[_VGPU_MIXED_KEY], minimum=1)
        if mixed > max_instances:
            raise ConfigError(f"{iwhere}.{_VGPU_MIXED_KEY}: {mixed} is more than max_instances {max_instances} "
                              "(mixed-size mode never holds more instances than equal-size mode)")
    return VgpuProfile(
        name=name,
        framebuffer_mib=_int(f"{iwhere}.framebuffer_mib", _required(iwhere, item, "framebuffer_mib"), minimum=1),
        max_instances=max_instances,
        mig_profile=mig_profile,
        source=source_text(f"{iwhere}.source", item.get("source"), ctx.sources, ctx.source),
        unconfirmed=_unconfirmed(iwhere, item),
        max_instances_mixed=mixed,
    )


def unconfirmed_rows(catalog: HardwareCatalog) -> list[str]:
    """One line per model and table row whose numbers are marked as not confirmed against NVIDIA's
    documentation or a real capture: `<model>[ MIG <profile> | vGPU <type>]: <why>`."""
    out = []
    for model in catalog.models():
        if model.unconfirmed:
            out.append(f"{model.name}: {model.unconfirmed}")
        out.extend(f"{model.name} MIG {p.name}: {p.unconfirmed}" for p in model.mig_profiles if p.unconfirmed)
        out.extend(f"{model.name} vGPU {v.name}: {v.unconfirmed}" for v in model.vgpu_profiles if v.unconfirmed)
    return out


# --- NICs -----------------------------------------------------------------------------------------

def _nic(key: str, entry: Any, sources: Mapping[str, str]) -> NicModel:
    where = f"hardware.nics.{key}"
    match = _NIC_KEY.match(key)
    if not match:
        raise ConfigError(f"{where}: key must be '<vendor>:<device>' in hex, e.g. '15b3:101d'")
    entry = _mapping(where, entry)
    _check_keys(where, entry, _NIC_KEYS)
    return NicModel(
        vendor_id=int(match.group(1), 16),
        device_id=int(match.group(2), 16),
        name=_str(f"{where}.name", _required(where, entry, "name")),
        product_name=_str(f"{where}.product_name", _required(where, entry, "product_name")),
        source=source_text(f"{where}.source", entry.get("source"), sources, "driver config"),
    )
