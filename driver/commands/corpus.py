"""`fake-dra corpus export DIR`: a conformance corpus other allocators can be tested against.

Writes one scenario per bundled hardware profile and driver personality: the node's ResourceSlices as
`fake-dra run` publishes them, the driver's DeviceClasses, ResourceClaims, and the reference
allocator's expected allocation (or reason) for each, with a README and a versioned index
(driver/fleet/corpus.py documents the format; docs/allocator.md, "Conformance corpus").

    fake-dra corpus export corpus/                    every profile x personality
    fake-dra corpus export corpus/ --profile demo     one profile
    fake-dra corpus check corpus/                     read it back through the reference allocator
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from driver.commands import common
from driver.errors import InputError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("corpus", help="export (or check) an allocator conformance corpus",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    export = verbs.add_parser("export", help="write the corpus into DIR")
    export.add_argument("dir", metavar="DIR")
    export.add_argument("--profile", action="append", help="only this hardware profile (repeatable)")
    export.add_argument("--force", action="store_true", help="replace a corpus already in DIR")
    common.add_driver_name(export)
    common.add_features(export)
    export.set_defaults(func=run_export)
    check = verbs.add_parser("check", help="run DIR's scenarios through the reference allocator")
    check.add_argument("dir", metavar="DIR")
    check.set_defaults(func=run_check)


def run_export(args: argparse.Namespace) -> int:
    from driver import DEFAULT_DRIVER_NAME
    from driver.cli import version
    from driver.fleet.corpus import export

    features = common.features_from(args)
    index = export(Path(args.dir), driver_name=args.driver_name or DEFAULT_DRIVER_NAME, generator=f"fake-dra {version()}",
                   profiles=args.profile, features=features, force=args.force)
    print(f"wrote {len(index['scenarios'])} scenarios ({sum(s['claims'] for s in index['scenarios'])} claims) to "
          f"{args.dir}; skipped {len(index['skipped'])}", file=sys.stderr)
    return 0


def run_check(args: argparse.Namespace) -> int:
    from driver.fleet.corpus import check_scenario, read_corpus

    root = Path(args.dir)
    if not root.is_dir():
        raise InputError(f"{root}: not a directory")
    _, scenarios = read_corpus(root)
    problems = [p for s in scenarios for p in check_scenario(s)]
    for problem in problems:
        print(problem)
    print(f"{len(scenarios) - len({p.split(':', 1)[0] for p in problems})} of {len(scenarios)} scenarios agree",
          file=sys.stderr)
    return 1 if problems else 0
