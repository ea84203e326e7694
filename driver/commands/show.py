"""`fake-dra show`: draw each GPU's MIG placement map and list vGPU types and NIC PFs with their VFs.

The map is the memory-slice diagram of KEP-4815 (one column per memory slice, one row per profile, a cell
per valid placement, X where the profile's size would fit but NVIDIA allows no placement), because that
picture is what explains why two MIG devices conflict — and it is what our counters encode.
"""

from __future__ import annotations

import argparse
import textwrap
from itertools import groupby

from driver.commands import common
from driver.tables import mib, speed, table
from driver.discovery import discover
from driver.hardware import load_catalog
from driver.model.hardware import GpuModel
from driver.model.inventory import Gpu, Inventory, NicPF


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "show",
        help="draw MIG placement maps, vGPU types and NIC VFs",
        description="Discover --sysfs-root and draw each GPU model's MIG memory-slice placement map, the "
        "vGPU types per GPU and the SR-IOV NIC PFs with their VFs and bandwidth.",
    )
    common.add_sysfs_root(parser)
    common.add_flag(parser, "--driver-config", None, "driver config file (hardware: section adds/overrides models)")
    parser.set_defaults(func=run)


def mig_map(model: GpuModel) -> str:
    """The KEP-4815 style memory-slice diagram of `model` ("" when it has no MIG)."""
    if not model.mig_capable:
        return ""
    n = model.mig_memory_slices
    # The KEP's layout with "Slice N" headings; cells as narrow as the names allow so that eight
    # memory slices fit 100 columns.
    longest = max(7, *(len(p.name) for p in model.mig_profiles))
    width = max(longest, min(longest + 2, (100 - 1) // n - 1))
    border = "+" + "+".join("-" * width for _ in range(n)) + "+"

    def row(cells: list[tuple[int, str]]) -> str:
        # cells: (span in memory slices, label); a span of k columns absorbs k-1 inner borders.
        return "|" + "|".join(label.center(span * width + span - 1) for span, label in cells) + "|"

    lines = [border, row([(1, f"Slice {i}") for i in range(n)]), border]
    for profile in model.mig_profiles:
        starts = set(profile.placements)
        cells: list[tuple[int, str]] = []
        i = 0
        while i < n:
            if i in starts:
                cells.append((profile.memory_slices, profile.name))
                i += profile.memory_slices
            else:
                nxt = min([s for s in starts if s > i] + [n])
                span = min(profile.memory_slices, nxt - i)
                cells.append((span, "X"))
                i += span
        lines += [row(cells), border]
    return "\n".join(lines)


def mig_legend(model: GpuModel) -> str:
    compute = max(p.compute_slices for p in model.mig_profiles)
    return table(
        ["PROFILE", "PLACEMENTS", "MEM SLICES", "COMPUTE", "SMS", "MEMORY", "CE", "DEC", "ENC", "JPEG", "OFA"],
        [
            [p.name, ",".join(map(str, p.placements)), p.memory_slices, f"{p.compute_slices}/{compute}",
             p.multiprocessors, mib(p.memory_mib), p.copy_engines, p.decoders, p.encoders, p.jpeg_engines,
             p.ofa_engines]
            for p in model.mig_profiles
        ],
    )


def _vgpu(gpu: Gpu) -> str:
    known = {p.name.upper(): p for p in gpu.model.vgpu_profiles}
    rows = []
    for t in gpu.mdev_types:
        profile = known.get(t.profile.upper())
        cap = min(t.available_instances, profile.max_instances) if profile else t.available_instances
        rows.append([t.type_id, t.name, mib(profile.framebuffer_mib) if profile else "unknown", cap,
                     len(t.parents), "yes" if profile else "no (not in the hardware table)"])
    return table(["TYPE", "NAME", "FRAMEBUFFER", "INSTANCES", "ON FUNCTIONS", "KNOWN"], rows)


def _nic(nic: NicPF) -> str:
    # Long product names (BlueField-3's is 62 characters) wrap rather than overflow 100 columns.
    head = textwrap.fill(f"NIC {nic.index}: {nic.pci.address} {nic.interface or '(no netdev)'}  {nic.product_name}  "
                         f"{speed(nic.speed_mbps)}  NUMA {nic.pci.numa_node if nic.pci.numa_node is not None else '-'}  "
                         f"{nic.pci.pcie_root or '-'}", width=100, subsequent_indent="    ", break_long_words=False,
                         break_on_hyphens=False)
    share = ""
    if nic.vfs and nic.speed_mbps:
        # What each VF gets when the PF's bandwidth is split statically (without valueFrom).
        share = f", equal share {nic.speed_mbps / len(nic.vfs) / 1000:g} Gb/s each"
    if not nic.sriov:
        return "\n".join([head, "  no SR-IOV: the host's own port (published only if slices.publishPFs names it)"])
    lines = [head, f"  VFs: {len(nic.vfs)} enabled of {nic.total_vfs}{share}"]
    for vf in nic.vfs:
        lines.append(f"    virtfn{vf.index:<3} {vf.pci.address}  {vf.interface or '-'}")
    return "\n".join(lines)


def render(inv: Inventory) -> str:
    out: list[str] = []
    by_model = sorted(inv.gpus, key=lambda g: (g.model.name, g.index))
    for model_name, group in groupby(by_model, key=lambda g: g.model.name):
        gpus = list(group)
        model = gpus[0].model
        ids = ", ".join(f"{g.index} ({g.pci.address})" for g in gpus)
        out.append(textwrap.fill(f"GPU {ids}: {model.product_name} [{model_name}], {mib(model.memory_mib)}, "
                                 f"{model.multiprocessors} SMs", width=100, subsequent_indent="    ",
                                 break_long_words=False, break_on_hyphens=False))
        if model.mig_capable:
            out.append(f"MIG placement map ({model.mig_memory_slices} memory slices):")
            out.append(mig_map(model))
            out.append(mig_legend(model))
        else:
            out.append("MIG: not supported by this model (whole GPU, time-slicing or vGPU only)")
        for g in gpus:
            if g.mdev_types:
                out.append(f"vGPU types on GPU {g.index} ({g.pci.address}):")
                out.append(_vgpu(g))
        out.append("")
    if not inv.gpus:
        out += ["No NVIDIA GPUs found.", ""]
    out += [_nic(n) for n in inv.nics] or ["No NICs found."]
    if inv.warnings:
        out += ["", f"Warnings ({len(inv.warnings)}):"] + [f"  {w}" for w in inv.warnings]
    return "\n".join(out) + "\n"


def run(args: argparse.Namespace) -> int:
    config = common.load_driver_config(args.driver_config)
    inventory = discover(args.sysfs_root, load_catalog(config.get("hardware")))
    print(render(inventory), end="")
    return 0
