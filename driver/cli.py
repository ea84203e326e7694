"""Composition root: parses the command line, wires roots/clients/features, maps errors to exit codes.

Sub-commands live in driver.commands.<name>; each registers its own parser and returns an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from collections.abc import Sequence

from driver import commands
from driver.errors import FakeDraError
from driver.logs import configure_logging

log = logging.getLogger("fake-dra")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fake-dra",
        description="DRA driver and kubelet plugin for simulated or real GPUs and SR-IOV NICs.",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    parser.add_argument("--log-format", choices=["text", "json"], default="text", help="log line format")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name == "common":
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.log_level, args.log_format)
    try:
        return int(args.func(args) or 0)
    except FakeDraError as exc:
        print(f"fake-dra {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
