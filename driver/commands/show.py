"""`fake-dra show`: draw each GPU's MIG placement map and list vGPU types and NIC PFs with their VFs;
`fake-dra show --store`: what is in use on each node of the local object store.

The map is the memory-slice diagram of KEP-4815 (one column per memory slice, one row per profile, a cell
per valid placement, X where the profile's size would fit but NVIDIA allows no placement), because that
picture is what explains why two MIG devices conflict — and it is what our counters encode.

With `--store [DIR]` the same command draws the live usage instead (the demo's partition map, for
any node): per GPU which claim holds which memory slices, vGPUs and time-shares, and the counters
left (memory slices, memory, SMs, engines); per NIC the VFs in use, each claim's bandwidth and the
bandwidth left; every other pool's holders and counter sets. `--node-name` picks one node. Nodes a
fleet made (`fake-dra fleet apply`) are summed per node group instead (MIG slices, VF bandwidth,
devices held): a map per node of a 1,000-node fleet would be a wall of text; `--node-name` still
draws one of them.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from itertools import groupby

from driver.commands import common
from driver.tables import mib, speed, table, terminal_width
from driver.discovery import discover
from driver.errors import InputError, NotFoundError
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
    common.add_flag(parser, "--sysfs-root", None, "root of the sysfs tree to discover (default /sys)")
    common.add_flag(parser, "--driver-config", None, "driver config file (hardware: section adds/overrides models; "
                    "nvidia: and sriov: for those personalities)")
    common.add_flag(parser, "--personality", None, "also list the devices this personality publishes, slice by "
                    "slice (fake-dra, nvidia, sriov; default: hardware only)")
    parser.add_argument("--store", nargs="?", const="", default=None, metavar="DIR",
                        help="draw what the claims of the local object store hold on each node instead of the "
                             "hardware (DIR default: $XDG_STATE_HOME/fake-dra/store, the one `run` uses)")
    common.add_flag(parser, "--node-name", None, "--store: only this node (default: every node with slices); "
                    "--personality: the node the slices are rendered for (default node-1)")
    parser.set_defaults(func=run)


def mig_map(model: GpuModel) -> str:
    """The KEP-4815 style memory-slice diagram of `model` ("" when it has no MIG)."""
    if not model.mig_capable:
        return ""
    n = model.mig_memory_slices
    # The KEP's layout with "Slice N" headings; cells as narrow as the names allow so that eight
    # memory slices fit the terminal (100 columns when it is not one).
    longest = max(7, *(len(p.name) for p in model.mig_profiles))
    width = max(longest, min(longest + 2, (terminal_width() - 1) // n - 1))
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
    # The host's type names ("NVIDIA RTX Pro 6000 Blackwell DC-4-96QGFX") and the verdict wrap at spaces.
    return table(["TYPE", "NAME", "FRAMEBUFFER", "INSTANCES", "ON FUNCTIONS", "KNOWN"], rows, wrap=[1, 5])


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
                                 f"{model.multiprocessors} SMs", width=terminal_width(), subsequent_indent="    ",
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


def _wants_store(args: argparse.Namespace) -> bool:
    """--store draws the store, --sysfs-root or --driver-config the hardware; when both kinds are set,
    the one typed on the command line wins over an exported FAKE_DRA_* variable."""
    if args.store is None:
        return False
    hardware = [f for f, v in (("--sysfs-root", args.sysfs_root), ("--driver-config", args.driver_config),
                               ("--personality", args.personality)) if v]
    if not hardware:
        return True
    from_vars = getattr(args, "from_variables", {})
    store_typed = "--store" not in from_vars
    hardware_typed = [f for f in hardware if f not in from_vars]
    if store_typed and hardware_typed:
        raise InputError(f"--store and {hardware_typed[0]}: `show --store` draws what the store's claims hold, "
                         f"`show {hardware_typed[0]} ...` the hardware; give one")
    if store_typed or hardware_typed:
        return store_typed
    raise InputError(f"--store and {hardware[0]} are both set: give the one you mean on the command line")


def published(inv: Inventory, profiles: list, node: str) -> str:
    """Each driver's slices in publishing order and the devices in them (name, type, profile, memory)."""
    from driver.features import Features
    from driver.model.deviceattrs import attr, capacity

    out = []
    for profile in profiles:
        pool = profile.render(inv, Features(), node_name=node)
        rows = []
        for i, spec in enumerate(pool.slices):
            for cs in spec.get("sharedCounters") or ():
                rows.append([i, cs["name"], "counter set", "-", cs["counters"].get("memory", {}).get("value", "-")])
            for dev in spec.get("devices") or ():
                rows.append([i, dev["name"], attr(dev, "type", profile.name) or "-",
                             attr(dev, "profile", profile.name) or "-", capacity(dev, "memory") or "-"])
        out.append(f"{profile.name}: {len(pool.slices)} slice{'s' * (len(pool.slices) != 1)}, "
                   f"{len(pool.devices())} devices")
        out.append(table(["SLICE", "NAME", "TYPE", "PROFILE", "MEMORY"], rows) if rows else "  (nothing published)")
        out.append("")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    if _wants_store(args):
        return _usage(args)
    config = common.load_driver_config(args.driver_config)
    profiles = []
    if args.personality:  # a bad personality or config is refused before anything is printed
        from driver.commands._personality import profiles_from_args

        profiles = list(profiles_from_args(args, config))
        args.node_name = args.node_name or "node-1"
        common.require_node_name(args)
    inventory = discover(args.sysfs_root or "/sys", load_catalog(config.get("hardware")))
    text = render(inventory)
    if profiles:
        text += (f"\nAs the {args.personality} personality publishes it on node {args.node_name}:\n\n"
                 + published(inventory, profiles, args.node_name))
    print(text, end="")
    return 0


def _fleet_table(groups: list) -> str:
    def share(used: object, total: object, unit: str = "") -> str:
        return f"{used} of {total}{unit}" if total else "-"

    rows = [[f"{g.fleet}/{g.group}", g.profile, g.personality, g.nodes, share(g.held, g.devices),
             share(int(g.mig_slices_used), g.mig_slices),
             share(f"{float(g.bandwidth_used) / 1e9:g}", f"{float(g.bandwidth) / 1e9:g}", " Gb/s") if g.bandwidth else "-"]
            for g in groups]
    return ("Fleet node groups (`--node-name NODE` draws one node):\n"
            + table(["GROUP", "PROFILE", "PERSONALITY", "NODES", "DEVICES HELD", "MIG SLICES USED",
                     "VF BANDWIDTH USED"], rows))


def _usage(args: argparse.Namespace) -> int:
    """The store's live usage per node (driver.allocator.usage, drawn by driver.e2e.partition_map)."""
    from driver.allocator.usage import usage_of
    from driver.commands._store import open_store
    from driver.e2e.partition_map import render_usage

    args.store = args.store or None  # `--store` alone: the default store
    store = open_store(args, write=False)
    groups: list = []
    if args.node_name:
        from driver.store.scopes import node_scope

        usage = usage_of(*node_scope(store, args.node_name))  # that node's pools only, through the indexes
        pools = usage.for_node(args.node_name)
        if not pools:
            nodes = store.index_values("resourceslices", "node")
            raise NotFoundError(f"--node-name {args.node_name}: no ResourceSlices of that node in the local store "
                                f"{store.root} (nodes: {', '.join(nodes[:10]) or 'none'}"
                                f"{f' and {len(nodes) - 10} more' if len(nodes) > 10 else ''})")
    else:
        from driver.fleet.summary import fleet_nodes, group_usage

        usage = usage_of(store.list("resourceslices"), store.list("resourceclaims", all_namespaces=True))
        members = fleet_nodes(store.list("nodes"))
        groups = group_usage(usage, members)
        pools = [p for _, p in sorted(usage.pools.items(), key=lambda kv: (kv[1].node or "", kv[0]))
                 if p.node not in members]
    if groups:
        print(_fleet_table(groups))
        if pools:
            print()
    if not pools and groups:
        return 0
    if not pools:
        print(f"No ResourceSlices in the local store {store.root}: start `fake-dra run` (or `fake-dra publish "
              "--once`) with this store first.", file=sys.stderr)
        return 0
    print(render_usage(usage, pools))
    return 0
