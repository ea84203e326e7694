"""`fake-dra fault`: inject or clear a simulated device fault, on one fake sysfs tree or across a fleet.

On one node (`--device <PCI address>`): write or remove the fault file of a fake sysfs tree. The
running plugin's health loop picks the change up within one --health-interval and streams the device
(and every partition or VF on it) as UNHEALTHY with the message (see driver.state.health).

Across a fleet in the local store (`--node`, `--node-group`, `--fraction`): create DeviceTaintRules,
the upstream way to say "this hardware failed" (driver/fleet/faults.py):

    fake-dra fault --node n1 --device gpu-0-mig-1g5gb-0     one device
    fake-dra fault --node n1 --gpu gpu-0                    a GPU and every partition of it
    fake-dra fault --node n1                                every device the node publishes
    fake-dra fault --node-group a100                        every node of a fleet group
    fake-dra fault --fraction 0.01 --seed 7                 1% of the fleet's GPUs, reproducibly
    fake-dra fault --node n1 --clear                        remove the rules that target made
    fake-dra fault --clear --all                            remove every fault rule

The effect is NoExecute by default (kube-scheduler allocates nothing there, and the eviction rule
evicts the pods using the devices); `--effect NoSchedule` only fences them, `None` is a dry run. With
`--sysfs-root` given as well, the GPUs' fault files are written too, so a node agent serving that tree
(`fake-dra run --sysfs-root`) streams the same devices UNHEALTHY.
"""

from __future__ import annotations

import argparse
import os
import sys

from driver.commands import _store, common
from driver.errors import InputError, NotFoundError
from driver.model.pci import normalize_pci_address

# The kubelet's limit for a health message (DRAResourceHealth; docs/architecture.md §3, Health);
# the message is sent as is.
MAX_MESSAGE = 1024
DEFAULT_FLEET_MESSAGE = "simulated fault (fake-dra fault)"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fault",
        help="mark devices unhealthy: a PCI device of a fake sysfs tree, or fleet devices as DeviceTaintRules",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common.add_sysfs_root(parser)
    parser.add_argument("--device",
                        help="sysfs mode: PCI address, e.g. 0000:07:00.0 (nvidia-smi's 00000000:07:00.0, upper case "
                             "and lspci's 07:00.0 are accepted); with --node: a device name its slices publish")
    parser.add_argument("--node", help="fleet mode: the node whose device (--device), GPU (--gpu) or every device fails")
    parser.add_argument("--gpu", help="with --node: a GPU device name; its partitions fail with it")
    parser.add_argument("--node-group", help="fleet mode: every node labelled fake-dra.example.com/node-group=<name>")
    parser.add_argument("--fraction", type=float, help="fleet mode: this share of the fleet's GPUs (0 < f <= 1)")
    parser.add_argument("--seed", type=int, default=0, help="with --fraction: which GPUs (same seed, same GPUs)")
    parser.add_argument("--effect", default="NoExecute", choices=("NoExecute", "NoSchedule", "None"),
                        help="fleet mode: the taint's effect (default NoExecute: evict and fence)")
    parser.add_argument("--all", action="store_true", help="with --clear in fleet mode: every fault rule")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--message", help=f"fault message (one line, at most {MAX_MESSAGE} characters)")
    group.add_argument("--clear", action="store_true", help="remove the fault")
    _store.add_store_flag(parser)
    parser.set_defaults(func=run)


def _fleet_mode(args: argparse.Namespace) -> bool:
    return bool(args.node or args.node_group or args.fraction is not None or args.all)


def _message(args: argparse.Namespace) -> str | None:
    if args.clear:
        if args.message:
            raise InputError("--message: not with --clear")
        return None
    if args.message is None:
        return None
    message = args.message.strip().replace("\n", " ")
    if len(message) > MAX_MESSAGE:
        raise InputError(f"--message: {len(message)} characters; the kubelet accepts at most {MAX_MESSAGE}")
    return message


def run(args: argparse.Namespace) -> int:
    if _fleet_mode(args):
        return _run_fleet(args)
    if not args.device:
        raise InputError("--device: required (a PCI address of a fake sysfs tree; or fault fleet devices with "
                         "--node, --node-group or --fraction)")
    for flag, value in (("--gpu", args.gpu), ("--store", args.store)):
        if value:
            raise InputError(f"{flag}: only in fleet mode (with --node, --node-group or --fraction)")
    message = _message(args)
    if message is None and not args.clear:
        raise InputError("--message: required unless --clear")
    return _run_sysfs(args, normalize_pci_address(args.device, "--device"), message)


def _run_sysfs(args: argparse.Namespace, bdf: str, message: str | None) -> int:
    from driver.discovery import FAULT_FILE, set_fault

    root = common.existing_dir(args.sysfs_root, "--sysfs-root")
    try:
        set_fault(root, bdf, message)
    except OSError as exc:
        where = root / "bus" / "pci" / "devices" / bdf / FAULT_FILE
        raise InputError(f"--sysfs-root {root}: cannot write {where}: {exc.strerror or exc} (faults are injected "
                         "into fake sysfs trees made by make-sysfs)") from None
    print(f"{bdf}: {'fault cleared' if args.clear else 'fault set'}", file=sys.stderr)
    return 0


def _target(args: argparse.Namespace):
    from driver.fleet.faults import Target

    chosen = [flag for flag, on in (("--node", args.node), ("--node-group", args.node_group),
                                    ("--fraction", args.fraction is not None)) if on]
    if len(chosen) > 1:
        raise InputError(f"{chosen[1]}: not with {chosen[0]} (give one target)")
    if (args.device or args.gpu) and not args.node:
        raise InputError(f"{'--device' if args.device else '--gpu'}: needs --node in fleet mode")
    if args.device and args.gpu:
        raise InputError("--gpu: not with --device (one device, or one GPU with its partitions)")
    if args.fraction is not None and not 0 < args.fraction <= 1:
        raise InputError(f"--fraction: must be in (0, 1], got {args.fraction:g}")
    return Target(node=args.node, device=args.device, gpu=args.gpu, group=args.node_group,
                  fraction=args.fraction, seed=args.seed)


def _run_fleet(args: argparse.Namespace) -> int:
    from driver.fleet.faults import fault_rules, is_fault_rule, rule_name, select
    from driver.store.apply import commit, plan

    message = _message(args)
    if args.all and not args.clear:
        raise InputError("--all: only with --clear (remove every fault rule)")
    target = None if args.all else _target(args)
    root = common.store_dir(args, write=False)
    if not root.is_dir():
        raise InputError(f"--store {root}: no local store there (apply a fleet or run a node first)")
    store = _store.open_store(args, write=True)
    # /sys is the default: only a fake tree named on purpose is mirrored (never the host's).
    explicit_sysfs = bool(args.sysfs_root) and os.path.realpath(args.sysfs_root) != "/sys"
    with store.locked():
        if args.all:
            names = [r["metadata"]["name"] for r in store.list("devicetaintrules") if is_fault_rule(r)]
            for name in names:
                store.delete("devicetaintrules", None, name)
            print(f"removed {len(names)} fault rule(s)", file=sys.stderr)
            return 0
        assert target is not None
        selected = select(target, store.list("resourceslices"), store.list("nodes"))
        if args.clear:
            removed = 0
            for sel in selected:
                try:
                    store.delete("devicetaintrules", None, rule_name(sel))
                    removed += 1
                except NotFoundError:
                    continue
            print(f"{target.describe()}: removed {removed} fault rule(s)", file=sys.stderr)
        else:
            rules = fault_rules(selected, effect=args.effect, message=message or DEFAULT_FLEET_MESSAGE)
            applied = commit(store, plan(store, [("fault", i, r) for i, r in enumerate(rules, start=1)]))
            made = sum(a.action != "unchanged" for a in applied)
            print(f"{target.describe()}: {len(rules)} DeviceTaintRule(s) with effect {args.effect} "
                  f"({made} new or changed)", file=sys.stderr)
        if explicit_sysfs:
            _mirror_sysfs(args, store, selected, None if args.clear else (message or DEFAULT_FLEET_MESSAGE))
    return 0


def _mirror_sysfs(args: argparse.Namespace, store, selected, message: str | None) -> None:
    """Write (or clear) the fault files of the selected devices' PCI functions in --sysfs-root, so a
    node agent serving that tree reports them UNHEALTHY (driver.state.health reads these files)."""
    from driver.discovery import set_fault

    root = common.existing_dir(args.sysfs_root, "--sysfs-root")
    wanted = {(s.driver, s.pool, s.device) for s in selected}
    pools = {(s.driver, s.pool) for s in selected if s.device is None}
    addresses = set()
    for s in store.list("resourceslices"):
        spec = s.get("spec") or {}
        for dev in spec.get("devices") or ():
            key = (spec.get("driver"), (spec.get("pool") or {}).get("name"), dev.get("name"))
            if key in wanted or key[:2] in pools:
                bdf = ((dev.get("attributes") or {}).get("pciBusID") or {}).get("string")
                if bdf:
                    addresses.add(bdf)
    for bdf in sorted(addresses):
        try:
            set_fault(root, bdf, message)
        except OSError:
            continue  # a device of another node: not in this tree
