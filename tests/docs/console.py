"""Run the ```console examples of a Markdown page and compare what they print (TEAM.md convention).

- Only fenced blocks whose info string is `console` run; a block whose previous non-blank line is
  `<!-- not-run: <reason> -->` is skipped (it needs a cluster or a container engine).
- A line starting with `$ ` is a command. It continues on the next lines while it ends with `\\`,
  and through the body of a here-document (`<<EOF` ... `EOF`).
- The lines after a command, up to the next `$ `, are its expected output (stdout and stderr as a
  terminal shows them, trailing whitespace ignored): the output must consist of exactly these lines,
  where a line `...` stands for any number of lines. A command with no expected lines is not checked.
- The command must exit 0, unless its first line ends with a comment `# exit N`.

All commands of a page run in ONE bash process, in a fresh temporary directory, with the venv's
`fake-dra` first on PATH, HOME in `.home` and XDG_STATE_HOME in `.state` of that directory, so `cd`, `export` and
background jobs (`fake-dra run ... &`) carry over between commands and blocks like in a terminal.
The shell runs in its own session; when the page ends, every process still in its process group
(a forgotten background plugin included) is terminated, then killed.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(.+?)\s*-->$")
FENCE = re.compile(r"^(```+|~~~+)\s*([^\s`]*)")
EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
RC_MARK = "__FAKE_DRA_DOCS_RC__"
# Environment a user's shell may carry that would change what the examples do.
SCRUBBED_PREFIXES = ("FAKE_DRA_",)
SCRUBBED = ("KUBECONFIG", "NODE_NAME", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "XDG_STATE_HOME",
            "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR")


@dataclass
class Command:
    text: str  # what bash runs (may span lines)
    line: int  # 1-based line of the `$ ` in the page
    expected: list[str] = field(default_factory=list)
    exit_code: int = 0


@dataclass
class Block:
    line: int  # 1-based line of the opening fence
    commands: list[Command]
    skipped: str | None = None


def parse_page(text: str) -> list[Block]:
    """The console blocks of a Markdown page, in order."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    previous = ""  # last non-blank line outside code blocks
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            if lines[i].strip():
                previous = lines[i].strip()
            i += 1
            continue
        marker, info = fence.group(1), fence.group(2)
        start = i
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith(marker):
            body.append(lines[i])
            i += 1
        i += 1  # closing fence
        if info == "console":
            skip = NOT_RUN.match(previous)
            blocks.append(Block(start + 1, parse_block(body, start + 2), skip.group(1) if skip else None))
        previous = ""
    return blocks


def parse_block(body: list[str], first_line: int) -> list[Command]:
    commands: list[Command] = []
    i = 0
    while i < len(body):
        line = body[i]
        if not line.startswith("$ "):
            if commands:
                commands[-1].expected.append(line.rstrip())
            elif line.strip():
                raise ValueError(f"line {first_line + i}: output before the first `$ ` command: {line!r}")
            i += 1
            continue
        start = i
        parts = [line[2:]]
        while parts[-1].endswith("\\") and i + 1 < len(body):
            i += 1
            parts.append(body[i])
        words = [m.group(2) for m in HEREDOC.finditer("\n".join(parts))]
        for word in words:
            i += 1
            while i < len(body) and body[i].strip() != word:
                parts.append(body[i])
                i += 1
            if i < len(body):
                parts.append(body[i])
        cmd = Command("\n".join(parts), first_line + start)
        code = EXIT.search(parts[0])
        if code:
            cmd.exit_code = int(code.group(1))
        commands.append(cmd)
        i += 1
    for cmd in commands:
        while cmd.expected and not cmd.expected[-1].strip():
            cmd.expected.pop()
    return commands


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whole-output match where an expected line `...` stands for any number of lines."""
    exp = [e.rstrip() for e in expected]
    act = [a.rstrip() for a in actual]
    while act and not act[-1]:
        act.pop()
    memo: dict[tuple[int, int], bool] = {}

    def go(i: int, j: int) -> bool:
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(exp):
            ok = j == len(act)
        elif exp[i] == "...":
            ok = any(go(i + 1, k) for k in range(j, len(act) + 1))
        else:
            ok = j < len(act) and exp[i] == act[j] and go(i + 1, j + 1)
        memo[(i, j)] = ok
        return ok

    return go(0, 0)


class Shell:
    """One bash process for a page; `run` executes a command and returns (exit code, output)."""

    def __init__(self, workdir: Path, path_prepend: Path | None = None) -> None:
        self.workdir = workdir
        env = {k: v for k, v in os.environ.items()
               if k not in SCRUBBED and not k.startswith(SCRUBBED_PREFIXES)}
        home = workdir / ".home"
        home.mkdir(exist_ok=True)
        # The state home stays short: `run` puts its unix sockets under it (AF_UNIX paths <= 107 bytes).
        env.update(HOME=str(home), XDG_STATE_HOME=str(workdir / ".state"), COLUMNS="100", LC_ALL="C.UTF-8")
        bindir = path_prepend or Path(sys.executable).parent
        env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
        self.out_dir = workdir / ".docs-runner"
        self.out_dir.mkdir(exist_ok=True)
        self.proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc"], cwd=workdir, env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.count = 0

    def run(self, command: str, timeout_s: float) -> tuple[int, list[str]]:
        self.count += 1
        out = self.out_dir / f"{self.count}.out"
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{{ {command}\n}} >'{out}' 2>&1 </dev/null\necho {RC_MARK} $?\n")
        self.proc.stdin.flush()
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout_s
        stray: list[str] = []
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise TimeoutError(f"no answer within {timeout_s:.0f} s")
                line = self.proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"the shell exited (code {self.proc.wait()}); earlier output: {stray}")
                if line.startswith(RC_MARK):
                    code = int(line.split()[1])
                    break
                stray.append(line.rstrip("\n"))
        finally:
            sel.close()
        text = out.read_text(errors="replace") if out.exists() else ""
        return code, text.splitlines()

    def close(self, grace_s: float = 5.0) -> list[str]:
        """End the shell and every process left in its group; returns what had to be killed
        (other than the shell itself)."""
        left: list[str] = []
        try:
            pgid = os.getpgid(self.proc.pid)
        except ProcessLookupError:
            pgid = None
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        if pgid is not None:
            time.sleep(0.05)  # let a job forked just before the end exec, so it shows by its name
            left = [p for p in _group_members(pgid) if p.split(":", 1)[0] != str(self.proc.pid)]
            _signal_group(pgid, signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline and _group_members(pgid):
                time.sleep(0.1)
            if _group_members(pgid):
                _signal_group(pgid, signal.SIGKILL)
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return left


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _group_members(pgid: int) -> list[str]:
    """Command lines of the live processes in process group `pgid` (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[2]) != pgid or fields[0] == "Z":
                continue
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError, IndexError):
            continue
        out.append(f"{entry.name}: {cmdline}")
    return out


@dataclass
class Failure:
    line: int
    command: str
    why: str

    def __str__(self) -> str:
        return f"line {self.line}: $ {self.command.splitlines()[0]}\n{self.why}"


def run_page(page: Path, workdir: Path, timeout_s: float = 120.0) -> tuple[list[Failure], int]:
    """Run every console block of `page` in `workdir`; (failures, commands run). Stops at the first
    failure, since later commands usually depend on earlier ones."""
    blocks = parse_page(page.read_text(encoding="utf-8"))
    shell = Shell(workdir)
    ran = 0
    failures: list[Failure] = []
    try:
        for block in blocks:
            if block.skipped is not None:
                continue
            for cmd in block.commands:
                ran += 1
                try:
                    code, output = shell.run(cmd.text, timeout_s)
                except (TimeoutError, RuntimeError) as exc:
                    failures.append(Failure(cmd.line, cmd.text, str(exc)))
                    return failures, ran
                problems = []
                if code != cmd.exit_code:
                    problems.append(f"exit code {code}, expected {cmd.exit_code}")
                if cmd.expected and not matches(cmd.expected, output):
                    problems.append("output differs")
                if problems:
                    shown = "\n".join(f"    {line}" for line in output) or "    (no output)"
                    wanted = "\n".join(f"    {line}" for line in cmd.expected) or "    (not checked)"
                    failures.append(Failure(cmd.line, cmd.text,
                                            f"{'; '.join(problems)}\n  expected:\n{wanted}\n  got:\n{shown}"))
                    return failures, ran
    finally:
        strays = shell.close()  # a background job the page never stopped
        if strays and not failures:
            failures.append(Failure(0, "(end of page)", "background processes still running when the page ended "
                                    "(stop them in the page, e.g. `kill %1`):\n" + "\n".join(strays)))
    return failures, ran
