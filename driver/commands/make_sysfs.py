"""`fake-dra make-sysfs`: write a fake sysfs tree for a named node profile (demo, dgx-a100, ...).

The trees feed `discover`, `slices`, `run` and the e2e harness on machines without the hardware.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from driver.commands import common
from driver.discovery import PROFILES, make_sysfs, profile_named
from driver.discovery.fakesysfs import first_gpus
from driver.errors import InputError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "make-sysfs",
        help="write a fake sysfs tree for a node profile",
        description="Write a realistic fake sysfs tree of a node profile into --out, for discover, slices, "
        "run and the e2e harness on a machine without the hardware. `--list` describes the profiles.",
    )
    parser.add_argument("--profile", default="demo", help=f"one of {', '.join(PROFILES)} (default demo)")
    parser.add_argument("--out", metavar="DIR", help="output directory (created; must be empty)")
    parser.add_argument("--gpus", type=_count, metavar="N", help="keep only the first N GPUs of the profile (by PCI "
                        "address; NICs, switches and the rest stay): a small node for quick tests")
    parser.add_argument("--list", action="store_true", help="list the profiles and exit")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.list:
        width = max(len(name) for name in PROFILES)
        for profile in PROFILES.values():
            print(f"{profile.name:{width}}  {profile.description}")
        return 0
    spec = profile_named(args.profile, "--profile")  # before --out is created or checked
    if args.gpus is not None:
        first_gpus(spec, args.gpus)  # a count the profile cannot give is refused before --out too
    if not args.out:
        raise InputError("--out DIR is required (where to write the tree)")
    out = common.output_dir(args.out, "--out", must_be_empty=True)
    _write_whole(args.profile, out, args.gpus)
    kept = f" with its first {args.gpus} GPU{'s' * (args.gpus != 1)}" if args.gpus is not None else ""
    print(f"wrote profile {args.profile}{kept} to {args.out} (use --sysfs-root {args.out})")
    return 0


def _count(value: str) -> int:
    number = int(value)  # ValueError: argparse says "invalid int value"
    if number < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {number}")
    return number


_count.__name__ = "int"


def _write_whole(profile: str, out: Path, gpus: int | None = None) -> None:
    """Write the tree in a staging directory and move it into place, so an interrupted run (Ctrl-C,
    a full disk) leaves no half tree that discovery would read as a smaller node and that a second
    run refuses as "not empty". The tree's symlinks are relative, so moving keeps them valid. An
    existing (empty) --out is kept, not replaced: it may be someone's working directory."""
    out = out.absolute()
    exists = out.is_dir()
    if not exists:
        out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".make-sysfs.partial-", dir=out if exists else out.parent))
    try:
        tree = staging / "tree"
        make_sysfs(profile, tree, gpus)
        if exists:
            for entry in sorted(tree.iterdir()):  # bus, class, devices: three renames
                os.rename(entry, out / entry.name)
        else:
            os.rename(tree, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
