"""Every flag of every command also reads `FAKE_DRA_<FLAG>`: derived from the parser, validated like the flag.

Why derived: a hand-kept list drifts (the README once promised variables that `--no-publish`,
`--log-level` and `--log-format` did not have). Walking the finished parser gives each long option
its variable, shows it in `--help`, and converts the value with the flag's own type and choices, so
`FAKE_DRA_NO_PUBLISH=maybe` is an error that names the variable instead of a silent true or false.

Rules (docs/cli.md):
- `--some-flag` reads `FAKE_DRA_SOME_FLAG`; the command line wins over the variable, the variable
  over other fallbacks (`NODE_NAME`, `KUBECONFIG`) and the built-in default. Empty means unset.
- On/off flags take 1/true/yes/on or 0/false/no/off (any case); anything else is an error.
- Repeatable flags (`--scenario`) take a comma- or space-separated list.
- A variable is checked only for the command being run, and only when the command line does not
  give the flag: `FAKE_DRA_OUTPUT=yaml` suits `slices` and is an error only when running a command
  whose `--output` has no `yaml` without `-o`.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from driver.errors import InputError

PREFIX = "FAKE_DRA_"
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")
_NOT_FLAGS = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)


def variable_for(action: argparse.Action) -> str | None:
    """FAKE_DRA_<FLAG> for an optional flag (`--no-publish` -> FAKE_DRA_NO_PUBLISH); None otherwise."""
    if isinstance(action, _NOT_FLAGS):
        return None
    longs = [o for o in action.option_strings if o.startswith("--")]
    if not longs:
        return None
    return PREFIX + longs[0][2:].replace("-", "_").upper()


def walk(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """The top-level parser (name "") and each sub-command's parser (by command name)."""
    yield "", parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name, sub


def _shown_default(action: argparse.Action) -> str | None:
    """The default `--help` should state when the help text does not: a value, not off/none/empty."""
    default = action.default
    if action.nargs == 0 or default is None or default == argparse.SUPPRESS or isinstance(default, bool):
        return None
    if isinstance(default, (list, tuple, dict)) or default == "":
        return None
    if "default" in (action.help or "").lower():
        return None
    return str(default)


def annotate_help(parser: argparse.ArgumentParser) -> None:
    """Append `(default X)` where the help does not say it, and `(env FAKE_DRA_<FLAG>)`, to the help
    of every flag, once: `fake-dra COMMAND --help` shows each flag's default and variable."""
    for _, p in walk(parser):
        for action in p._actions:
            var = variable_for(action)
            if var is None or action.help == argparse.SUPPRESS or (action.help and var in action.help):
                continue
            default = _shown_default(action)
            if default is not None:
                action.help = f"{action.help} (default {default})" if action.help else f"(default {default})"
            action.help = f"{action.help} (env {var})" if action.help else f"(env {var})"


def parse_bool(raw: str, var: str, flag: str) -> bool:
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise InputError(f"{var}={raw!r}: expected a boolean for {flag} "
                     f"({'/'.join(TRUE_WORDS)} or {'/'.join(FALSE_WORDS)})")


def _is_list(action: argparse.Action) -> bool:
    return action.nargs in ("+", "*") or isinstance(action, (argparse._AppendAction, argparse._ExtendAction))


def convert(action: argparse.Action, raw: str, var: str) -> Any:
    """The value the flag would have had if given `raw` on the command line; InputError naming `var`."""
    flag = next(o for o in action.option_strings if o.startswith("--"))
    if action.nargs == 0:  # on/off switches: store_true/store_false/store_const/count
        on = parse_bool(raw, var, flag)
        if isinstance(action, argparse._CountAction):
            return 1 if on else 0
        return action.const if on else (not action.const if isinstance(action.const, bool) else None)
    items = [i for i in re.split(r"[,\s]+", raw.strip()) if i] if _is_list(action) else [raw]
    if not items:
        raise InputError(f"{var}={raw!r}: expected at least one value for {flag}")
    values = []
    for item in items:
        try:
            value = action.type(item) if callable(action.type) else item
        except (TypeError, ValueError, argparse.ArgumentTypeError) as exc:
            kind = getattr(action.type, "__name__", "value")
            detail = str(exc) if isinstance(exc, argparse.ArgumentTypeError) else f"not a valid {kind}"
            raise InputError(f"{var}={raw!r}: invalid value for {flag}: {detail}") from None
        if action.choices is not None and value not in action.choices:
            choices = ", ".join(map(str, action.choices))
            raise InputError(f"{var}={raw!r}: invalid value for {flag}: {item!r} is not one of {choices}")
        values.append(value)
    return values if _is_list(action) else values[0]


@dataclass
class Bound:
    """One flag whose default now comes from its variable."""

    action: argparse.Action
    var: str
    original_default: Any


@dataclass
class Binding:
    """What `bind` did, so `finish` can report errors for the command actually run."""

    bound: dict[str, list[Bound]] = field(default_factory=dict)
    problems: dict[str, list[tuple[argparse.Action, str]]] = field(default_factory=dict)
    groups: dict[str, list[argparse._MutuallyExclusiveGroup]] = field(default_factory=dict)


def bind(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> Binding:
    """Make each set FAKE_DRA_<FLAG> the default of its flag (before parsing, so a required flag
    can come from its variable). Conversion problems are kept, not raised: they matter only for the
    command being run (see `finish`)."""
    out = Binding()
    for name, p in walk(parser):
        for action in p._actions:
            var = variable_for(action)
            if var is None or action.default == argparse.SUPPRESS:
                continue
            raw = environ.get(var)
            if raw is None or raw == "":
                continue
            action.required = False
            for group in p._mutually_exclusive_groups:
                if action in group._group_actions:
                    group.required = False  # the variable answers "one of ... is required"
                    out.groups.setdefault(name, []).append(group)
            try:
                value = convert(action, raw, var)
            except InputError as exc:
                out.problems.setdefault(name, []).append((action, str(exc)))
                continue
            out.bound.setdefault(name, []).append(Bound(action, var, action.default))
            action.default = value
    return out


def _on_command_line(action: argparse.Action, argv: Sequence[str]) -> bool:
    for token in argv:
        if token == "--":
            return False
        for opt in action.option_strings:
            if token == opt or (opt.startswith("--") and token.startswith(opt + "=")) or (
                    not opt.startswith("--") and not token.startswith("--") and token.startswith(opt)):
                return True
    return False


def from_variables(binding: Binding, args: argparse.Namespace, argv: Sequence[str]) -> dict[str, str]:
    """Long flag -> variable, for the flags of the command run whose value came from a variable."""
    out: dict[str, str] = {}
    for name in ("", getattr(args, "command", None) or ""):
        for b in binding.bound.get(name, []):
            if not _on_command_line(b.action, argv):
                out[next(o for o in b.action.option_strings if o.startswith("--"))] = b.var
    return out


def name_variables(message: str, sources: Mapping[str, str]) -> str:
    """Add `(from FAKE_DRA_X)` to an error about a flag whose value came from FAKE_DRA_X, so a
    value checked by the command (a PCI address, a positive duration) still names the variable."""
    named = [var for flag, var in sources.items() if re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", message)]
    return f"{message} (from {', '.join(named)})" if named else message


def finish(binding: Binding, args: argparse.Namespace, argv: Sequence[str]) -> None:
    """After parsing: raise the first bad variable of the command run; let the command line win where
    argparse would otherwise merge it with the variable (repeatable flags, exclusive groups)."""
    for name in ("", getattr(args, "command", None) or ""):
        for action, problem in binding.problems.get(name, []):
            if not _on_command_line(action, argv):  # given on the command line, the variable is unused
                raise InputError(problem)
    for name in ("", getattr(args, "command", None) or ""):
        bound = binding.bound.get(name, [])
        for b in bound:
            merges = isinstance(b.action, (argparse._AppendAction, argparse._ExtendAction))
            if merges and _on_command_line(b.action, argv):
                # argparse appended the command line's items to the variable's; keep only the former.
                value = getattr(args, b.action.dest)
                setattr(args, b.action.dest, value[len(b.action.default):])
        for group in binding.groups.get(name, []):
            given = [a for a in group._group_actions if _on_command_line(a, argv)]
            if not given:
                continue
            for b in bound:
                if b.action in group._group_actions and b.action not in given:
                    setattr(args, b.action.dest, b.original_default)  # the command line chose another member
