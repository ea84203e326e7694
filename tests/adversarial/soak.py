"""The kill loop and the soak: a real plugin process under load is killed over and over (SIGKILL at
a random moment, a self-kill at a chosen step of prepare/unprepare, SIGTERM with a successor
starting at once while calls straddle the grace period, and a SIGKILL after which the checkpoint is
damaged (corrupt, deleted, or of a newer version) and the next process is killed at a step of its
recovery), hostile-input generators run against it between kills, the load's kubelets cancel some
prepares in flight (mid-read when reads are stalled) and unprepare their claims, and after every
death the disk is checked (adversarial.ledger): no acknowledged prepare lost, no device held twice,
no claim held again after its unprepare was answered. A leak check then runs thousands of prepare/unprepare cycles
against one process and reports RSS and fd growth.

Generators plug in without touching this file: every module `adversarial/gen_*.py` that defines
`GENERATOR` (an object with `name: str` and `run(target: Target) -> int`, the number of inputs it
tried) is run against the live process in every cycle whose process carries no test hook (the
SIGKILL cycles: a process armed to kill itself at a step, or to stall there for a hand-over, would
turn the generator's calls into kills or stalls); optionally `every = N`: in every N-th such cycle
only; `needs_idle_node = True`: the load lets all its pods go first, for generators that need
every device free, like gen_hostile. A generator may send anything; the soak then requires the process to be alive and the
ledger invariants to hold; a generator raises (AssertionError) for a wrong answer it can see itself. Run from the CI suite
(tests/adversarial/test_kill_loop.py, a few cycles) or as `hack/soak.sh` (longer, prints figures).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from adversarial.ledger import Ledger, Verdict, check
from adversarial.workload import Workload
from driver.commands.run import CALL_STEPS, RECOVERY_STEPS
from driver.plugin.client import KubeletClient
from plugin.harness import Plugin
from waiting import GENEROUS_S

KILLS = ("sigkill", "crash-at-step", "handover", "recovery")
DAMAGE = ("corrupt", "deleted", "newer-version")  # what a recovery kill does to checkpoint.json


@dataclass
class Target:
    """What a generator gets: the live process (dirs, store, log), a kubelet client, the ledger."""

    plugin: Plugin
    kubelet: KubeletClient
    ledger: Ledger
    rng: random.Random
    slices: list[dict[str, Any]]


class Generator(Protocol):
    name: str

    def run(self, target: Target) -> int: ...


def load_generators(only: set[str] | None = None) -> list[Generator]:
    import adversarial

    out = []
    for info in sorted(pkgutil.iter_modules(adversarial.__path__), key=lambda m: m.name):
        if info.name.startswith("gen_"):
            gen = getattr(importlib.import_module(f"adversarial.{info.name}"), "GENERATOR", None)
            if gen is not None and (only is None or gen.name in only):
                out.append(gen)
    return out


@dataclass
class Figures:
    inputs_tried: int = 0
    kubelet_calls: int = 0
    cancelled_calls: int = 0
    saw_cancellation: int = 0  # claims of cancelled calls the plugin refused or rolled back (its log)
    overruled: int = 0  # claims an unprepare overruled while their prepare was in flight (its log)
    generator_inputs: dict[str, int] = field(default_factory=dict)
    kills: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KILLS, 0))
    kills_survived: int = 0
    claims_lost: int = 0
    double_bookings: int = 0
    stale_holds: int = 0
    orphan_specs: int = 0
    conflicts_refused: int = 0
    leak_cycles: int = 0
    rss_kib: tuple[int, int] | None = None
    fds: tuple[int, int] | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.claims_lost or self.double_bookings or self.stale_holds or self.orphan_specs or self.problems)

    def add(self, verdict: Verdict, when: str) -> None:
        self.claims_lost += len(verdict.lost)
        self.double_bookings += len(verdict.double_bookings)
        self.stale_holds += len(verdict.stale)
        self.orphan_specs += len(verdict.orphans)
        if not verdict.ok:
            self.problems.append(f"{when}: {verdict}")

    def report(self) -> str:
        kills = ", ".join(f"{k} {n}" for k, n in self.kills.items())
        gens = ", ".join(f"{k} {n}" for k, n in self.generator_inputs.items()) or "none"
        lines = [
            "soak figures",
            f"  inputs tried       {self.inputs_tried}  (kubelet calls {self.kubelet_calls}, {self.cancelled_calls} "
            f"of them prepares cancelled in flight and then unprepared; generators: {gens}; "
            f"leak-check calls {2 * self.leak_cycles})",
            f"  kills survived     {self.kills_survived}/{sum(self.kills.values())}  ({kills})",
            f"  cancellations      {self.saw_cancellation} claims of cancelled calls kept nothing, "
            f"{self.overruled} prepares overruled by the claim's unprepare",
            f"  claims lost        {self.claims_lost}",
            f"  double-bookings    {self.double_bookings}",
            f"  stale holds        {self.stale_holds}   orphan CDI specs {self.orphan_specs}",
            f"  conflicts refused  {self.conflicts_refused}  (claims naming a device another claim holds)",
        ]
        if self.rss_kib:
            a, b = self.rss_kib
            lines.append(f"  RSS growth         {b - a:+d} KiB over {self.leak_cycles} prepare/unprepare cycles "
                         f"({a} -> {b} KiB)")
        if self.fds:
            a, b = self.fds
            lines.append(f"  fd growth          {b - a:+d}  ({a} -> {b})")
        lines.append(f"  problems           {len(self.problems)}")
        lines += [f"    - {p}" for p in self.problems[:20]]
        return "\n".join(lines)


@dataclass
class SoakConfig:
    cycles: int = 6
    burst_s: tuple[float, float] = (0.5, 2.0)  # how long the load runs before the kill
    threads: int = 3
    leak_cycles: int = 300
    seed: int = 1
    generators: set[str] | None = None  # None: every gen_* module
    grace_s: float = 2.0
    progress: bool = False  # a line per cycle on stderr (hack/soak.sh)


class Soak:
    def __init__(self, sysfs_template: Path, root: Path, config: SoakConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.sysfs_template = sysfs_template
        self.root = root
        self.ledger = Ledger()
        self.figures = Figures()
        self.workload = Workload(self.ledger, config.seed, threads=config.threads)
        self.generators = load_generators(config.generators)
        self._started: list[Plugin] = []
        self._slices: list[dict[str, Any]] | None = None
        self._node = self._plugin()  # the node's directories (every process uses the same)
        self._bag: list[str] = []
        self._rounds: dict[str, int] = {}  # generator name -> eligible cycles seen

    # -- processes ----------------------------------------------------------------------------

    def _plugin(self) -> Plugin:
        plugin = Plugin(self.sysfs_template, root=self.root, extra_args=("--grace-period", str(self.config.grace_s)))
        self._started.append(plugin)
        return plugin

    def close(self) -> None:
        """Kill every plugin process still running (an interrupted or failed soak leaves none)."""
        for plugin in self._started:
            if plugin.proc is not None and plugin.proc.poll() is None:
                plugin.proc.kill()
                plugin.proc.wait()
            for c in plugin.clients:
                c.close()

    def _env_for(self, kill: str) -> dict[str, str]:
        env = {"FAKE_DRA_TEST_MODE": "1"}
        # Reads as slow as an API server's (a pause at prepare-read), so the load's cancellations
        # land mid-read; in a hand-over a long stall at a step as well, which some calls straddle.
        pauses = {"prepare-read": round(self.rng.uniform(0.04, 0.12), 3)}
        if kill == "crash-at-step":
            env["FAKE_DRA_CRASH_AT"] = self.rng.choice(CALL_STEPS)
        if kill == "handover":
            step = self.rng.choice(("prepare-read", "prepare-started", "prepare-cdi-written"))
            pauses[step] = round(self.rng.uniform(0.5, 2 * self.config.grace_s + 2), 2)
        if kill in ("crash-at-step", "handover"):
            env["FAKE_DRA_PAUSE_AT"] = ",".join(f"{step}:{seconds}" for step, seconds in pauses.items())
        return env

    def _serve(self, plugin: Plugin) -> None:
        self.workload.plugin = plugin
        self.workload.kubelet = plugin.client()
        self.workload.kubelet.register()
        if self._slices is None:
            self._slices = plugin.wait_slices()

    # -- the loop -------------------------------------------------------------------------------

    def _next_kill(self) -> str:
        """Every kind in turn, in a shuffled order per round, so a short run still covers all."""
        if not self._bag:
            self._bag = self.rng.sample(KILLS, len(KILLS))
        return self._bag.pop()

    def run(self) -> Figures:
        kill = self._next_kill()
        plugin = self._plugin()
        plugin.start(env=self._env_for(kill))
        self._serve(plugin)
        for cycle in range(self.config.cycles):
            if kill in ("sigkill", "recovery"):  # a process without test hooks: no self-kill, no stalled steps
                self._generators(plugin, cycle)
            plugin, kill = self._cycle(plugin, kill, cycle)
        plugin = self._unarmed(plugin)  # the wind-down runs on a process without test hooks
        self.workload.drain()
        self.figures.add(self._check(), "after the final drain")
        if plugin.stop() != 0:
            self.figures.problems.append("the last process did not stop cleanly on SIGTERM")
        self._leak_check()
        self.figures.kubelet_calls = self.workload.calls
        self.figures.cancelled_calls = self.workload.cancelled
        # Every process of the node appends to the same log; one "prepare failed" line per claim.
        failed = [line for line in self._node.log_text().splitlines() if "prepare failed for claim" in line]
        self.figures.saw_cancellation = sum("cancelled by the caller" in line for line in failed)
        self.figures.overruled = sum("unprepared while this prepare was still in flight" in line for line in failed)
        self.figures.conflicts_refused = self.workload.refused_conflicts
        self.figures.inputs_tried = (self.figures.kubelet_calls + sum(self.figures.generator_inputs.values())
                                     + 2 * self.figures.leak_cycles)
        self.figures.problems += self.workload.problems
        return self.figures

    def _cycle(self, plugin: Plugin, kill: str, cycle: int) -> tuple[Plugin, str]:
        stop = threading.Event()
        workers = self.workload.burst(stop)
        time.sleep(self.rng.uniform(*self.config.burst_s))
        nxt = self._next_kill()
        successor: Plugin | None = None
        self.figures.kills[kill] += 1
        assert plugin.proc is not None
        if kill in ("sigkill", "recovery"):
            plugin.proc.send_signal(signal.SIGKILL)
        elif kill == "crash-at-step":
            if _wait_dead(plugin, 5.0) is None:  # the armed step did not come up: kill anyway
                plugin.proc.send_signal(signal.SIGKILL)
        else:
            plugin.proc.send_signal(signal.SIGTERM)
            successor = self._plugin()
            successor.spawn(env=self._env_for(nxt))  # waits for the state lock, then serves
        rc = _wait_dead(plugin, 4 * self.config.grace_s + GENEROUS_S)
        stop.set()
        for w in workers:
            w.join(GENEROUS_S)
        if rc is None:
            self.figures.problems.append(f"cycle {cycle}: {kill}: the process did not exit")
            plugin.proc.kill()
            plugin.proc.wait()
        elif kill == "handover" and rc not in (0, 1):
            self.figures.problems.append(f"cycle {cycle}: SIGTERM exit code {rc}")
        for c in plugin.clients:
            c.close()
        plugin.proc = None
        recovery = self._recovery_kill(cycle) if kill == "recovery" else ""
        if not recovery:  # a recovery kill is checked once the next process has recovered
            self._checked(cycle, kill, rc)
        nxt_plugin = successor or self._plugin()
        try:
            if successor is None:
                nxt_plugin.start(env=self._env_for(nxt))
            else:
                nxt_plugin.wait_registered(60)
        except AssertionError as exc:
            if not (successor is not None and nxt == "crash-at-step" and _wait_dead(successor, 0) == -signal.SIGKILL):
                self.figures.problems.append(f"cycle {cycle}: restart failed: {exc}")
                raise
            # The load's last calls reached the successor (their channels follow the socket path)
            # and one hit its armed step: a kill like any other, checked like any other.
            nxt_plugin, nxt = self._extra_kill(successor, cycle)
        if recovery:
            self._checked(cycle, f"{kill} ({recovery})", rc)
        self._serve(nxt_plugin)
        return nxt_plugin, nxt

    def _checked(self, cycle: int, kill: str, rc: int | None) -> None:
        verdict = self._check()
        self.figures.add(verdict, f"cycle {cycle} after {kill}")
        self._say(f"cycle {cycle + 1}/{self.config.cycles}: {kill} (exit {rc}), {self.workload.calls} calls so far, "
                  f"{'ok' if verdict.ok else verdict}")
        if verdict.ok:
            self.figures.kills_survived += 1

    def _recovery_kill(self, cycle: int) -> str:
        """After a SIGKILL: damage checkpoint.json, then start a process armed to kill itself at a
        step of the recovery that damage calls for. The next process must recover what it left."""
        damage, step = self.rng.choice(DAMAGE), self.rng.choice(RECOVERY_STEPS)
        cp = self._node.state / "checkpoint.json"
        if damage == "deleted":
            cp.unlink(missing_ok=True)
        elif cp.exists() and damage == "corrupt":
            cp.write_bytes(cp.read_bytes()[: self.rng.randrange(0, max(1, cp.stat().st_size))])
        elif cp.exists():
            doc = json.loads(cp.read_text())
            doc["version"] = doc.get("version", 1) + 1
            cp.write_text(json.dumps(doc))
        armed = self._plugin()
        served = armed.log_text().count("kubelet plugin serving")
        armed.spawn(env={"FAKE_DRA_TEST_MODE": "1", "FAKE_DRA_CRASH_AT": step})
        assert armed.proc is not None
        give_up = time.monotonic() + GENEROUS_S
        while armed.proc.poll() is None and time.monotonic() < give_up:
            if armed.log_text().count("kubelet plugin serving") > served:
                armed.proc.kill()  # nothing to recover (no evidence on disk): it serves; killed all the same
                break
            time.sleep(0.05)
        rc = _wait_dead(armed, GENEROUS_S)
        if rc != -signal.SIGKILL:
            self.figures.problems.append(f"cycle {cycle}: the process armed at {step} exited {rc}")
        armed.proc = None
        return f"checkpoint {damage}, then killed at {step}"

    def _extra_kill(self, dead: Plugin, cycle: int) -> tuple[Plugin, str]:
        self.figures.kills["crash-at-step"] += 1
        dead.proc = None
        verdict = self._check()
        self.figures.add(verdict, f"cycle {cycle}: successor killed at its step")
        if verdict.ok:
            self.figures.kills_survived += 1
        self._say(f"cycle {cycle + 1}: the successor hit its crash step early; {'ok' if verdict.ok else verdict}")
        nxt = self._next_kill()
        plugin = self._plugin()
        plugin.start(env=self._env_for(nxt))
        return plugin, nxt

    def _say(self, line: str) -> None:
        if self.config.progress:
            print(f"soak: {line}", file=sys.stderr, flush=True)

    def _unarmed(self, plugin: Plugin) -> Plugin:
        """Replace the current process (armed for the next kill) by a plain one: SIGTERM, restart."""
        rc = plugin.stop()
        if rc not in (0, 1):
            self.figures.problems.append(f"the armed process exited {rc} on an idle SIGTERM")
        plain = self._plugin()
        plain.start()
        self._serve(plain)
        return plain

    def _generators(self, plugin: Plugin, cycle: int) -> None:
        for gen in self.generators:
            rounds = self._rounds[gen.name] = self._rounds.get(gen.name, -1) + 1
            if rounds % getattr(gen, "every", 1):
                continue
            if getattr(gen, "needs_idle_node", False):
                self.workload.drain()  # let every pod go: the generator needs all devices free
            target = Target(plugin, self.workload.kubelet, self.ledger, random.Random(self.rng.random()),
                            self._slices or [])
            try:
                n = gen.run(target)
            except Exception as exc:  # noqa: BLE001 - a generator's own failure is a finding
                self.figures.problems.append(f"cycle {cycle}: generator {gen.name}: {type(exc).__name__}: {exc}")
                n = 0
            self.figures.generator_inputs[gen.name] = self.figures.generator_inputs.get(gen.name, 0) + n
            if plugin.proc is None or plugin.proc.poll() is not None:
                self.figures.problems.append(f"cycle {cycle}: generator {gen.name} killed the plugin")
                raise RuntimeError(f"generator {gen.name} killed the plugin:\n{plugin.log_text()[-3000:]}")
            verdict = self._check()
            self.figures.add(verdict, f"cycle {cycle} after generator {gen.name}")

    def _check(self) -> Verdict:
        return check(self.ledger, self._node.state, self._node.cdi, self._slices or [])

    # -- leaks ----------------------------------------------------------------------------------

    def _leak_check(self) -> None:
        """Prepare/unprepare with a new claim UID each cycle against one process."""
        n = self.config.leak_cycles
        if n <= 0:
            return
        from adversarial.claims import allocated_claim, ref

        plugin = self._plugin()
        kubelet = plugin.start()
        warm = max(1, n // 10)
        first: tuple[int, int] | None = None
        devices = ("gpu-0-mig-1g5gb-0", "nic-0-vf-0", "gpu-1")
        for i in range(n):
            claim = allocated_claim(f"leak-{i}", [devices[i % len(devices)]])
            plugin.store.create("resourceclaims", claim)
            r = ref(claim)
            error = kubelet.prepare([r])[r[2]].error or kubelet.unprepare([r])[r[2]]
            if error:
                self.figures.problems.append(f"leak cycle {i}: {error}")
                break
            plugin.store.delete("resourceclaims", r[0], r[1])
            if i + 1 == warm:
                first = _rss_fds(plugin.proc.pid)
            if (i + 1) % 1000 == 0:
                self._say(f"leak check: {i + 1}/{n} cycles, RSS/fds {_rss_fds(plugin.proc.pid)}")
        last = _rss_fds(plugin.proc.pid)
        self.figures.leak_cycles = n
        if first:
            self.figures.rss_kib = (first[0], last[0])
            self.figures.fds = (first[1], last[1])
        if plugin.stop() != 0:
            self.figures.problems.append("the leak-check process did not stop cleanly")


def _wait_dead(plugin: Plugin, timeout: float) -> int | None:
    assert plugin.proc is not None
    try:
        return plugin.proc.wait(timeout)
    except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired
        return None


def _rss_fds(pid: int) -> tuple[int, int]:
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def run_soak(config: SoakConfig, sysfs_template: Path | None = None) -> Figures:
    """One soak in a fresh temp root (a short /tmp path: AF_UNIX socket paths are limited)."""
    scratch = Path(tempfile.mkdtemp(prefix="fds-", dir="/tmp"))
    try:
        if sysfs_template is None:
            from driver.discovery import make_sysfs

            sysfs_template = scratch / "template"
            make_sysfs("demo", sysfs_template)
        root = scratch / "n"
        root.mkdir()
        soak = Soak(sysfs_template, root, config)
        try:
            return soak.run()
        finally:
            soak.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--mode" in argv:  # --mode kill (this loop, the default) or churn (adversarial.churn)
        i = argv.index("--mode")
        mode = argv[i + 1] if i + 1 < len(argv) else ""
        del argv[i:i + 2]
        if mode == "churn":
            from adversarial.churn import main as churn_main

            return churn_main(argv)
        if mode != "kill":
            print(f"hack/soak.sh: --mode: expected kill or churn, got {mode!r}", file=sys.stderr)
            return 2
    ap = argparse.ArgumentParser(prog="hack/soak.sh", description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", type=int, default=40, help="kills (SIGKILL, crash at a step, SIGTERM hand-over)")
    ap.add_argument("--leak-cycles", type=int, default=10_000, help="prepare/unprepare cycles of the leak check")
    ap.add_argument("--threads", type=int, default=4, help="concurrent kubelet workers")
    ap.add_argument("--seed", type=int, default=int(time.time()), help="random seed (printed; rerun with it)")
    ap.add_argument("--generators", default=None, help="comma-separated generator names (default: all)")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: no plugin process is left behind
    config = SoakConfig(cycles=args.cycles, leak_cycles=args.leak_cycles, threads=args.threads, seed=args.seed,
                        generators=set(args.generators.split(",")) if args.generators else None, progress=True)
    print(f"soak: seed {config.seed}, {config.cycles} kill cycles, {config.leak_cycles} leak cycles, "
          f"generators: {[g.name for g in load_generators(config.generators)] or 'none'}", flush=True)
    t0 = time.monotonic()
    figures = run_soak(config)
    print(figures.report())
    print(f"  took               {time.monotonic() - t0:.0f} s")
    return 0 if figures.ok else 1


if __name__ == "__main__":
    sys.exit(main())
