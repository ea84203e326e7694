"""FAKE_DRA_<FLAG> for every flag of every command, derived from the parser and validated like the flag."""

from __future__ import annotations

import argparse

import pytest

from driver.cli import build_parser, main, parse
from driver.commands._envflags import variable_for, walk
from driver.errors import InputError


def _flags():
    for name, parser in walk(build_parser()):
        for action in parser._actions:
            var = variable_for(action)
            if var is not None:
                yield name or "(global)", action, var


def test_every_flag_of_every_command_has_a_variable_shown_in_help():
    seen = list(_flags())
    assert len(seen) > 100  # every command's flags, not a hand-kept list
    for command, action, var in seen:
        long = next(o for o in action.option_strings if o.startswith("--"))
        assert var == "FAKE_DRA_" + long[2:].replace("-", "_").upper()
        assert f"(env {var})" in action.help, (command, long)
    names = {(c, v) for c, _, v in seen}
    # The flags the README once promised in vain, and the newer ones.
    for expected in [("run", "FAKE_DRA_NO_PUBLISH"), ("run", "FAKE_DRA_LOG_LEVEL"), ("(global)", "FAKE_DRA_LOG_FORMAT"),
                     ("publish", "FAKE_DRA_DELETE_SLICES_ON_EXIT"), ("run", "FAKE_DRA_KUBELET_ROOT"),
                     ("e2e", "FAKE_DRA_JUNIT"), ("allocate", "FAKE_DRA_NODE_NAME"), ("apply", "FAKE_DRA_NODE_NAME"), ("probe", "FAKE_DRA_TIMEOUT")]:
        assert expected in names


def test_every_flag_with_a_default_value_shows_it_in_help(capsys):
    # The README: "`fake-dra COMMAND --help` shows each flag with its default and variable".
    for command, action, _ in _flags():
        if action.nargs == 0 or action.default in (None, "", [], argparse.SUPPRESS):
            continue  # switches are off and unset flags have no value to show
        assert "default" in action.help, (command, action.option_strings, action.help)
    assert main(["run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "seconds between device health refreshes (kubelet lease is 30) (default 5)" in text
    assert "(default /proc/sys/kernel/random/boot_id) (env FAKE_DRA_BOOT_ID_FILE)" in text


def test_help_and_version_have_no_variable():
    parser = build_parser()
    assert all(variable_for(a) is None for a in parser._actions if isinstance(a, (argparse._HelpAction,
                                                                                   argparse._VersionAction)))


@pytest.mark.parametrize("raw,value", [("1", True), ("true", True), ("YES", True), ("on", True),
                                       ("0", False), ("false", False), ("No", False), ("off", False)])
def test_switches_read_booleans(raw, value):
    args = parse(["run"], {"FAKE_DRA_NO_PUBLISH": raw})
    assert args.no_publish is value


@pytest.mark.parametrize("var,raw", [("FAKE_DRA_NO_PUBLISH", "maybe"), ("FAKE_DRA_DELETE_SLICES_ON_EXIT", "maybe"),
                                     ("FAKE_DRA_METRICS_INSECURE_SKIP_VERIFY", "2")])
def test_a_switch_refuses_anything_else_naming_the_variable(var, raw):
    with pytest.raises(InputError, match=f"{var}='{raw}': expected a boolean"):
        parse(["run"], {var: raw})


def test_typed_and_choice_flags_are_converted_and_checked():
    assert parse(["e2e"], {"FAKE_DRA_JOBS": "3"}).jobs == 3
    assert parse(["slices"], {"FAKE_DRA_OUTPUT": "json"}).output == "json"
    assert parse(["discover"], {"FAKE_DRA_LOG_LEVEL": "debug"}).log_level == "DEBUG"
    with pytest.raises(InputError, match="FAKE_DRA_JOBS='x': invalid value for --jobs"):
        parse(["e2e"], {"FAKE_DRA_JOBS": "x"})
    with pytest.raises(InputError, match="FAKE_DRA_OUTPUT='yaml'.*--output.*table, json"):
        parse(["discover"], {"FAKE_DRA_OUTPUT": "yaml"})


def test_a_variable_is_checked_only_for_the_command_that_has_the_flag():
    # --output of `slices` takes yaml; `discover`'s does not; `make-sysfs` has no --output.
    assert parse(["slices"], {"FAKE_DRA_OUTPUT": "yaml"}).output == "yaml"
    assert not hasattr(parse(["make-sysfs"], {"FAKE_DRA_OUTPUT": "yaml"}), "output")


def test_command_line_wins_and_empty_means_unset():
    assert parse(["slices", "-o", "yaml"], {"FAKE_DRA_OUTPUT": "json"}).output == "yaml"
    assert parse(["slices", "--output=yaml"], {"FAKE_DRA_OUTPUT": "json"}).output == "yaml"
    assert parse(["slices"], {"FAKE_DRA_OUTPUT": ""}).output == "yaml"
    # A variable the command line overrides is not used, so it cannot be wrong either.
    assert parse(["discover", "-o", "json"], {"FAKE_DRA_OUTPUT": "yaml"}).output == "json"
    with pytest.raises(InputError, match="FAKE_DRA_OUTPUT"):
        parse(["discover"], {"FAKE_DRA_OUTPUT": "yaml"})


def test_variables_beat_other_fallbacks():
    args = parse(["run"], {"FAKE_DRA_NODE_NAME": "from-var"})
    assert args.node_name == "from-var"


def test_a_required_flag_can_come_from_its_variable():
    assert parse(["allocate", "x.yaml"], {"FAKE_DRA_NODE_NAME": "n1"}).node_name == "n1"
    args = parse(["fault"], {"FAKE_DRA_DEVICE": "0000:07:00.0", "FAKE_DRA_CLEAR": "1"})
    assert args.device == "0000:07:00.0" and args.clear is True


def test_exclusive_flags_the_command_line_chooses_the_member():
    args = parse(["fault", "--device", "0000:07:00.0", "--message", "XID 79"], {"FAKE_DRA_CLEAR": "1"})
    assert args.message == "XID 79" and args.clear is False


def test_repeatable_flags_take_lists_and_the_command_line_replaces_them():
    assert parse(["e2e"], {"FAKE_DRA_SCENARIO": "tour, mig-packing"}).scenario == ["tour", "mig-packing"]
    assert parse(["e2e", "--scenario", "gate-flip"], {"FAKE_DRA_SCENARIO": "tour"}).scenario == ["gate-flip"]


def test_global_flags_after_the_command(capsys):
    assert parse(["discover", "--log-level", "debug", "--log-format", "json"]).log_level == "DEBUG"
    args = parse(["--log-format", "json", "discover"])
    assert args.log_format == "json" and args.log_level == "INFO"
    assert parse(["--log-level", "ERROR", "discover", "--log-level", "debug"]).log_level == "DEBUG"


def test_a_value_checked_by_the_command_still_names_its_variable(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_DRA_TIMEOUT", "0")
    assert main(["probe", "--node-name", "n1"]) == 2
    assert "--timeout: must be positive, got '0' (from FAKE_DRA_TIMEOUT)" in capsys.readouterr().err
    # Given on the command line, it is the flag's fault, not the variable's.
    assert main(["probe", "--node-name", "n1", "--timeout", "0"]) == 2
    assert "FAKE_DRA_TIMEOUT" not in capsys.readouterr().err


def test_delete_slices_on_exit_variable_reaches_the_publisher():
    assert parse(["publish"], {"FAKE_DRA_DELETE_SLICES_ON_EXIT": "true"}).delete_slices_on_exit is True
    assert parse(["publish"], {}).delete_slices_on_exit is False
