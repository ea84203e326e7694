"""Composition root: parses the command line, wires roots/clients/features, maps errors to exit codes.

Sub-commands live in driver.commands.<name>; each registers its own parser and returns an exit code.
This module is the one error boundary (docs/cli.md): every failure a user can cause ends in one
line naming the flag, variable or path and an exit code; only a bug shows a traceback, and says so.

Exit codes: 0 success; 1 a check failed (allocation, e2e scenario, probe, --strict); 2 bad input
or environment (flags, variables, files, paths; argparse usage errors); 70 a bug in fake-dra;
130 interrupted; 141 output pipe closed.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import pkgutil
import sys
import traceback
from collections.abc import Mapping, Sequence

from driver import commands
from driver.commands import _envflags
from driver.errors import FakeDraError
from driver.logs import LEVELS, configure_logging

log = logging.getLogger("fake-dra")

EXIT_BAD_INPUT = 2
EXIT_BUG = 70  # sysexits.h EX_SOFTWARE
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for `cmd | head`
BUG_BANNER = "this is a bug in fake-dra; please report it with the traceback below"


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("fake-dra")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


class _Parser(argparse.ArgumentParser):
    """argparse with the boundary's message shape: `fake-dra run: <what is wrong>` and where to look,
    instead of a screenful of usage (a sub-command's usage runs to twenty lines)."""

    # kubectl's habit: flags anywhere among the positionals (`get pods -n NS NAME`). Commands that
    # take it set this on their parser; argparse alone stops filling `NAME...` at the first flag.
    intermixed = False

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: {message}\n(see '{self.prog} --help')\n")

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        # parse_known_intermixed_args calls parse_known_args itself (twice): only the outer call
        # switches to it.
        if self.intermixed and not getattr(self, "_mixing", False):
            self._mixing = True
            try:
                return self.parse_known_intermixed_args(args, namespace)
            finally:
                self._mixing = False
        return super().parse_known_args(args, namespace)

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        # Unknown flags are found by the top-level parser; name the command they were given to.
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            command = getattr(ns, "command", None)
            prog = f"{self.prog} {command}" if command else self.prog
            self.exit(2, f"{prog}: unrecognized arguments: {' '.join(extras)}\n(see '{prog} --help')\n")
        return ns


def _log_level(value: str) -> str:
    return value.upper()


def add_global_flags(parser: argparse.ArgumentParser, *, on_command: bool) -> None:
    """--log-level/--log-format: before the command (defaults live there) or after it (SUPPRESS:
    given after the command it overrides, absent it leaves the top-level value alone)."""
    default_level = argparse.SUPPRESS if on_command else "INFO"
    default_format = argparse.SUPPRESS if on_command else "text"
    parser.add_argument("--log-level", type=_log_level, choices=LEVELS, default=default_level,
                        metavar="LEVEL", help=f"logging level: {', '.join(LEVELS)} (default INFO)")
    parser.add_argument("--log-format", choices=["text", "json"], default=default_format,
                        help="log line format: text for people, json (one object per line) for collectors "
                             "(default text)")


class _VersionAction(argparse.Action):
    """`--version`, looked up only when asked for (importlib.metadata costs ~30 ms at start-up)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show program's version number and exit", **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
        sys.stdout.write(f"fake-dra {version()}\n")
        parser.exit()


def _command_modules(argv: Sequence[str] | None) -> list[str]:
    """The command modules to register: only the one `argv` names when it names one (each command
    module's imports cost start-up time: `fake-dra allocate` need not load the kubelet plugin), else
    all of them (help, usage errors)."""
    names = sorted(info.name for info in pkgutil.iter_modules(commands.__path__)
                   if not info.name.startswith("_") and info.name != "common")
    by_command = {name.replace("_", "-"): name for name in names}
    for arg in argv or ():
        if arg in ("-h", "--help", "--version"):
            break
        if arg in by_command:
            return [by_command[arg]]
    return names


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole CLI; given the command line, only the command it names is registered."""
    parser = _Parser(
        prog="fake-dra",
        description="DRA driver and kubelet plugin for simulated or real GPUs and SR-IOV NICs. "
        "Every flag also reads FAKE_DRA_<FLAG> (see docs/cli.md).",
    )
    parser.add_argument("--version", action=_VersionAction)
    add_global_flags(parser, on_command=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _command_modules(argv):
        module = importlib.import_module(f"{commands.__name__}.{name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    for command_parser in sub.choices.values():
        add_global_flags(command_parser, on_command=True)
    _envflags.annotate_help(parser)
    return parser


class _Parsed:
    """Parsing in two steps so an error about a variable can already name the command."""

    def __init__(self, argv: Sequence[str], environ: Mapping[str, str] | None = None) -> None:
        self.argv = list(argv)
        parser = build_parser(self.argv)
        self._binding = _envflags.bind(parser, os.environ if environ is None else environ)
        self.args = parser.parse_args(self.argv)  # SystemExit: usage error, --help, --version

    def finish(self) -> argparse.Namespace:
        _envflags.finish(self._binding, self.args, self.argv)  # InputError naming a bad variable
        self.from_variables = _envflags.from_variables(self._binding, self.args, self.argv)
        # Commands that must tell a flag typed now from an exported variable (two flags that choose
        # between modes: the command line wins) read it here.
        self.args.from_variables = dict(self.from_variables)
        return self.args


def parse(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> argparse.Namespace:
    """Flags and FAKE_DRA_* variables -> namespace. SystemExit from argparse (usage errors, --help,
    --version); InputError for a bad variable."""
    return _Parsed(argv, environ).finish()


def describe_os_error(exc: OSError) -> str:
    """`path: reason` for an OSError nobody translated (the path is what the user must fix)."""
    reason = exc.strerror or exc.__class__.__name__
    if exc.filename is not None and exc.filename2 is not None:
        return f"{exc.filename} -> {exc.filename2}: {reason}"
    if exc.filename is not None:
        return f"{exc.filename}: {reason}"
    return str(exc) or reason


def _is_own_module(name: str | None) -> bool:
    return bool(name) and name.split(".")[0] == "driver"


def missing_dependency(module: str | None) -> str:
    """The environment, not fake-dra, is broken: a third-party package is not importable from this
    Python (typically `python -m driver` outside the venv the set-up scripts create)."""
    return (f"Python package {module!r} is not installed for {sys.executable}: fake-dra's dependencies are "
            "missing. Run hack/demo.sh or hack/test.sh once (they create .venv), then `. .venv/bin/activate`; "
            "or `pip install -e .` in the clone")


def _silence_stdout() -> None:
    # The reader went away (`fake-dra slices | head`): further writes, including the interpreter's
    # final flush, must not raise again.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = "fake-dra"
    sources: dict[str, str] = {}
    try:
        parsed = _Parsed(argv)
        command = f"fake-dra {parsed.args.command}"
        args = parsed.finish()
        sources = parsed.from_variables
        configure_logging(args.log_level, args.log_format)
        return int(args.func(args) or 0)
    except SystemExit as exc:  # argparse: usage error (2), --help / --version (0)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_BAD_INPUT)
    except FakeDraError as exc:
        print(f"{command}: {_envflags.name_variables(str(exc), sources)}", file=sys.stderr)
        return exc.exit_code
    except ModuleNotFoundError as exc:
        if not _is_own_module(exc.name):
            print(f"{command}: {missing_dependency(exc.name)}", file=sys.stderr)
            return EXIT_BAD_INPUT
        print(f"{command}: internal error: {exc.__class__.__name__}: {exc}\n{BUG_BANNER}:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return EXIT_BUG
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        # The environment refused something we did not check first (disk full, a path that changed
        # under us): not a bug, and the path is what the user needs.
        print(f"{command}: {describe_os_error(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - the boundary: anything else is our bug
        print(f"{command}: internal error: {exc.__class__.__name__}: {exc}\n{BUG_BANNER}:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return EXIT_BUG


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
