"""The vGPU part of a GPU model's table: time-sliced and MIG-backed NVIDIA vGPU types of one board.

Separate from driver.hardware.catalog because vGPU rows have rules of their own: names per board, the
guide's maxima (never memory // framebuffer), mixed-size maxima, and NVIDIA's time-sliced MIG-backed
types, whose maximum per GPU is a multiple of the GPU instances they run on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from driver.errors import ConfigError
from driver.hardware.fields import check_keys, integer, mapping, required, source_text, text, unconfirmed
from driver.model.hardware import MigProfile, VgpuProfile

VGPU_KEYS = {"board_gb", "board_mib", "prefix", "profiles", "mig_backed", "source", "mixed_size"}
_VGPU_ROW_KEYS = {"type", "name", "framebuffer_mib", "max_instances", "source", "unconfirmed"}
# Time-sliced rows only: the guide's "Maximum vGPUs per GPU in Mixed-Size Mode".
_VGPU_MIXED_KEY = "max_mixed"
# MIG-backed rows only: vGPUs per GPU instance (NVIDIA's time-sliced MIG-backed types; default 1).
_PER_INSTANCE_KEY = "per_instance"
_VGPU_SUFFIX = re.compile(r"^(\d+)C$")


def vgpu_profiles(where: str, vgpu: Any, gpu: Mapping[str, Any], sources: Mapping[str, str]) -> tuple[VgpuProfile, ...]:
    """Time-sliced (`profiles`) then MIG-backed (`mig_backed`) vGPU types of one board.

    Instance counts are the table's `max_instances`; the only size check is against the nominal
    framebuffer the vGPU manager divides (`board_mib`, or `board_gb`, else the GPU's memory), because
    the guide's framebuffers are nominal and may exceed what nvidia-smi reports (H200X-141C).
    """
    where = f"{where}.vgpu"
    vgpu = mapping(where, vgpu)
    check_keys(where, vgpu, VGPU_KEYS)
    board_gb = integer(f"{where}.board_gb", vgpu["board_gb"], minimum=1) if "board_gb" in vgpu else None
    board = (
        integer(f"{where}.board_mib", vgpu["board_mib"], minimum=1) if "board_mib" in vgpu
        else board_gb * 1024 if board_gb else gpu["memory_mib"]
    )
    board_what = "board's vGPU framebuffer" if ("board_mib" in vgpu or board_gb) else "GPU's memory_mib"
    prefix = text(f"{where}.prefix", vgpu["prefix"]) if "prefix" in vgpu else None
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
    allowed = _VGPU_ROW_KEYS | ({"mig", _PER_INSTANCE_KEY} if mig_gpu is not None else {_VGPU_MIXED_KEY})
    check_keys(iwhere, item, allowed)
    if ("type" in item) == ("name" in item):
        raise ConfigError(f"{iwhere}: set exactly one of type (suffix after '<prefix>-') and name")
    if "type" in item:
        if ctx.prefix is None:
            raise ConfigError(f"{ctx.where}.prefix: required field missing (rows use type:)")
        name = f"{ctx.prefix}-{text(f'{iwhere}.type', item['type'])}"
    else:
        name = text(f"{iwhere}.name", item["name"])
    mig_profile = None
    max_instances = integer(f"{iwhere}.max_instances", required(iwhere, item, "max_instances"), minimum=1)
    per_instance = 1
    if mig_gpu is not None:
        # The devices of a MIG-backed type are its GPU instance's placements (counters bound them);
        # max_instances is the guide's figure, kept for reports.
        mig_profile = text(f"{iwhere}.mig", required(iwhere, item, "mig"))
        mig = next((p for p in mig_gpu.get("mig_profiles", ()) if p.name == mig_profile), None)
        if mig is None:
            known = sorted(p.name for p in mig_gpu.get("mig_profiles", ()))
            raise ConfigError(f"{iwhere}.mig: {mig_profile!r} is not a MIG profile of this GPU; known: {known or 'none'}")
        if _PER_INSTANCE_KEY in item:
            per_instance = integer(f"{iwhere}.{_PER_INSTANCE_KEY}", item[_PER_INSTANCE_KEY], minimum=1)
            _check_per_instance(iwhere, max_instances, per_instance, mig)
    mixed = None
    if _VGPU_MIXED_KEY in item:
        mixed = integer(f"{iwhere}.{_VGPU_MIXED_KEY}", item[_VGPU_MIXED_KEY], minimum=1)
        if mixed > max_instances:
            raise ConfigError(f"{iwhere}.{_VGPU_MIXED_KEY}: {mixed} is more than max_instances {max_instances} "
                              "(mixed-size mode never holds more instances than equal-size mode)")
    return VgpuProfile(
        name=name,
        framebuffer_mib=integer(f"{iwhere}.framebuffer_mib", required(iwhere, item, "framebuffer_mib"), minimum=1),
        max_instances=max_instances,
        mig_profile=mig_profile,
        source=source_text(f"{iwhere}.source", item.get("source"), ctx.sources, ctx.source),
        unconfirmed=unconfirmed(iwhere, item),
        max_instances_mixed=mixed,
        vgpus_per_instance=per_instance,
    )


def _check_per_instance(iwhere: str, max_instances: int, per_instance: int, mig: MigProfile) -> None:
    """A time-sliced MIG-backed type (vGPU 19+: `DC-1-12C`, 8 per GPU on four 1g.24gb instances, 2 each)
    puts the same number of vGPUs on every instance, so the guide's maximum per GPU is that number times
    the instances; a row that says otherwise is a typo in one of the two."""
    instances = len(mig.placements)
    if per_instance > 1 and per_instance * instances != max_instances:
        raise ConfigError(
            f"{iwhere}.{_PER_INSTANCE_KEY}: {per_instance} vGPUs on each of the {instances} GPU instances of MIG "
            f"profile {mig.name} make {per_instance * instances}, not max_instances {max_instances}"
        )
