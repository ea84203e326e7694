"""`fake-dra completion bash|zsh`: generated from the parser, and working in a real bash."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from driver.cli import build_parser, main
from driver.commands._envflags import walk

CLAIM = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: %s}\n"
         "spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c}}]}}\n")


def _script(capsys, shell: str) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def test_every_command_and_flag_is_in_the_script(capsys):
    script = _script(capsys, "bash")
    for name, parser in walk(build_parser()):
        if name:
            assert name in script.split("_fake_dra_commands=")[1].splitlines()[0], name
        for action in parser._actions:
            for opt in action.option_strings:
                assert opt in script, (name, opt)


@pytest.fixture()
def complete(tmp_path, capsys):
    script = tmp_path / "fake-dra.bash"
    script.write_text(_script(capsys, "bash"))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "fake-dra").write_text(f"#!/bin/sh\nexec {sys.executable} -m driver \"$@\"\n")
    (bindir / "fake-dra").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_DRA_")}
    env["PATH"] = f"{bindir}:{env['PATH']}"
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])

    def run(*words: str) -> tuple[int, list[str]]:
        line = " ".join(f"'{w}'" for w in words)
        code = (f"source {script}; COMP_WORDS=({line}); COMP_CWORD=$((${{#COMP_WORDS[@]}}-1)); "
                "_fake_dra; rc=$?; printf '%s\\n' \"$rc\" \"${COMPREPLY[@]}\"")
        out = subprocess.run(["bash", "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True)
        rc, *words_out = out.stdout.splitlines()
        return int(rc), words_out
    return run


def test_bash_completes_commands_flags_values_kinds_and_names(complete, tmp_path, capsys):
    assert complete("fake-dra", "desc") == (0, ["describe"])
    assert complete("fake-dra", "--log-level", "W") == (0, ["WARNING"])
    assert complete("fake-dra", "get", "--all-n") == (0, ["--all-namespaces"])
    assert complete("fake-dra", "get", "-o", "j") == (0, ["json", "jsonpath="])
    assert complete("fake-dra", "completion", "") == (0, ["bash", "zsh"])
    assert complete("fake-dra", "describe", "resourceclaims")[1] == ["resourceclaims"]
    assert complete("fake-dra", "get", "po")[1] == ["po", "pod", "podgroup", "podgroups", "pods"]
    assert complete("fake-dra", "apply", "-f", "") == (1, []), "a path: the shell's file names"
    store = tmp_path / "store"
    (tmp_path / "c.yaml").write_text(CLAIM % "alpha" + "---\n" + CLAIM % "beta")
    assert main(["apply", "-f", str(tmp_path / "c.yaml"), "--store", str(store)]) == 0
    capsys.readouterr()
    assert complete("fake-dra", "get", "--store", str(store), "resourceclaims", "") == (0, ["alpha", "beta"])
    assert complete("fake-dra", "delete", "resourceclaim", "alpha", "--store", str(store), "b") == (0, ["beta"])
    assert complete("fake-dra", "get", "--store", str(store), "-n", "other", "resourceclaims", "")[1] == []


def test_zsh_script_wraps_the_bash_one(capsys):
    script = _script(capsys, "zsh")
    assert script.startswith("#compdef fake-dra\n") and "bashcompinit" in script and "complete -o default" in script
    if shutil.which("zsh"):
        subprocess.run(["zsh", "-n", "-c", script], check=True, timeout=60)
