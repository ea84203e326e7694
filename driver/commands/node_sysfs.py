"""`fake-dra node-sysfs`: the DaemonSet's init step — this node's fake sysfs tree, chosen by a node label.

On kind every node is the same container image, so which hardware a node pretends to have comes
from its label (e.g. `fake-dra.example.com/profile=dgx-a100`, set in hack/kind-config.yaml), with a
default profile for unlabelled nodes. The tree is regenerated on every pod start (it lives in an
emptyDir); profiles are deterministic, so device names and UUIDs do not change across restarts.
"""

from __future__ import annotations

import argparse
import logging
import shutil
from pathlib import Path

from driver.commands import common
from driver.errors import InputError

MARKER = ".fake-dra-profile"
log = logging.getLogger("fake-dra.node-sysfs")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "node-sysfs",
        help="write this node's fake sysfs tree, profile from a node label (DaemonSet init step)",
        description="Read the node's labels from the API server and write the fake sysfs tree of the profile "
        "the label names (or --default-profile) into --out.",
    )
    parser.add_argument("--out", required=True, help="directory to (re)write; must be empty or hold a previous tree")
    parser.add_argument("--label", default="fake-dra.example.com/profile", help="node label naming the profile")
    parser.add_argument("--default-profile", default="demo", help="profile for nodes without the label")
    parser.add_argument("--profile", default=None, help="use this profile without asking the API server")
    common.add_node_name(parser)
    common.add_flag(parser, "--kubeconfig", None, "kubeconfig (default: in-cluster)")
    parser.set_defaults(func=run)


def choose_profile(labels: dict[str, str], label: str, default: str) -> str:
    from driver.discovery import PROFILES

    profile = labels.get(label) or default
    if profile not in PROFILES:
        raise InputError(f"node label {label}={profile!r} names no fake sysfs profile (known: {', '.join(sorted(PROFILES))})")
    return profile


def prepare_out(out: Path) -> None:
    """Empty a directory we wrote before (marker present); refuse to touch anything else."""
    if not out.exists():
        return
    if not out.is_dir():
        raise InputError(f"--out {out} is not a directory")
    entries = list(out.iterdir())
    if not entries:
        return
    if not (out / MARKER).is_file():
        raise InputError(f"--out {out} is not empty and holds no {MARKER} marker; refusing to overwrite it")
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def run(args: argparse.Namespace) -> int:
    from driver.discovery import make_sysfs

    out = common.output_dir(args.out, "--out")  # before asking the API server
    if args.profile:
        profile = choose_profile({}, args.label, args.profile)
    else:
        from driver.kube.e2e_client import connect, node_labels

        node = common.require_node_name(args)
        profile = choose_profile(node_labels(connect(args.kubeconfig), node), args.label, args.default_profile)
    prepare_out(out)
    make_sysfs(profile, out)
    (out / MARKER).write_text(profile + "\n")
    log.info("wrote fake sysfs tree", extra={"profile": profile, "out": str(out)})
    print(f"node {getattr(args, 'node_name', None) or '-'}: fake sysfs profile {profile} written to {out}")
    return 0
