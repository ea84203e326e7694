"""The seeded churn soak of the local control plane (issue 26's invariants, issue 29's soak additions).

Everything goes through the documented commands, each a `fake-dra ... --store DIR` subprocess, as a
user or a script drives the local mode: a small fleet (`fleet apply`), claim templates, Deployments,
Jobs and bare pods applied, Deployments scaled and their template changed (`apply` of a changed
object), pods, claims, nodes (`delete node`) and workloads deleted (every `--cascade`), the fleet
shrunk and grown, user-made claims allocated by `apply --allocate` and shared by pods. Meanwhile
`fake-dra cluster` runs without pause in the background, and two `fake-dra schedule` loops run at
once over the same store (concurrent schedulers, and deletions landing while they schedule). Rows of
hostile content (tests/storeutil.py plant_row: wrong shapes, oversized, not text, not JSON, a key
that disagrees with its metadata) are planted mid-churn, and the commands that meet them must answer
with a one-line error naming the bad object (never exit 70, never a traceback).

Then the background stops, `fake-dra cluster --until-settled --timeout 120` runs, and the settled
store is checked with adversarial.invariants (`violations`, `shortfalls`), counted as
- double-booked: devices held by two claims that may not share them;
- stale: reservations of gone pods, pods on gone nodes, slices of gone nodes, claims outliving their
  pod, claims allocated for nobody, objects stuck being deleted;
- lost: a live workload without the pods it wants, or a bound pod whose claim is not allocated for it.
Run from tests/adversarial/test_churn.py (a small instance) and `hack/soak.sh --mode churn` (longer).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from adversarial.churn_manifests import (claim_template, deployment, fleet, job, shared_claim, solo_pod)
from adversarial.churn_figures import ChurnFigures, classify
from adversarial.invariants import shortfalls, violations
from driver.store import ObjectStore
from storeutil import plant_row
from waiting import GENEROUS_S

ALLOWED_RC = (0, 1, 2)  # done; failed (not found, conflict, does not fit); bad input. Never 70 (a crash, driver/cli.py).
OPS = ("deploy", "scale", "retemplate", "job", "solo", "shared", "delete-pod", "delete-claim", "delete-node",
       "delete-workload", "fleet", "hostile")
WEIGHTS = (3, 3, 1, 2, 3, 2, 4, 2, 1, 2, 2, 1)


@dataclass
class ChurnConfig:
    seed: int = 1
    steps: int = 12
    schedulers: int = 2  # `fake-dra schedule` loops beside `fake-dra cluster`
    max_nodes: int = 3
    settle_timeout_s: int = 120
    row_checks: int | None = None  # hostile rows asked about one by one at the end (None: all)
    progress: bool = False


class Churn:
    def __init__(self, root: Path, config: ChurnConfig) -> None:
        self.root = Path(root)
        self.store_dir = self.root / "store"
        self.files = self.root / "files"
        self.files.mkdir(parents=True, exist_ok=True)
        self.config = config
        self.rng = random.Random(config.seed)
        self.figures = ChurnFigures(seed=config.seed)
        self._lock = threading.Lock()
        self._serial = 0
        self._nodes = 1
        self._background: list[subprocess.Popen] = []

    # -- commands -------------------------------------------------------------------------------

    def fake_dra(self, *argv: str, timeout: float = 2 * GENEROUS_S) -> subprocess.CompletedProcess:
        """One documented command over the store; a crash, a traceback or an unexpected exit code is
        a problem. The answer goes back for the caller's own checks."""
        cmd = [sys.executable, "-m", "driver", "--log-level", "WARNING", *argv, "--store", str(self.store_dir)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        with self._lock:
            with open(self.root / "commands.log", "a") as log:  # for a human reading a failed run
                first = (done.stderr.strip().splitlines() or [""])[0][:300]
                log.write(f"{done.returncode} fake-dra {' '.join(argv)}  {first}\n")
            self.figures.commands += 1
            self.figures.exits[done.returncode] += 1
            if done.returncode not in ALLOWED_RC or "Traceback" in done.stderr:
                self.figures.problems.append(f"`fake-dra {' '.join(argv)}` exited {done.returncode}: "
                                             f"{done.stderr.strip()[-800:]}")
        return done

    def _file(self, *docs: dict[str, Any]) -> str:
        self._serial += 1
        path = self.files / f"m{self._serial}.yaml"
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        return str(path)

    def apply(self, *docs: dict[str, Any], extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
        return self.fake_dra("apply", "-f", self._file(*docs), *extra)

    def _say(self, line: str) -> None:
        if self.config.progress:
            print(f"churn: {line}", file=sys.stderr, flush=True)

    # -- reads (choosing what to change; every write goes through a command) -------------------------

    def _names(self, resource: str) -> list[str]:
        return sorted((o.get("metadata") or {}).get("name") for o in ObjectStore(self.store_dir).list(resource, all_namespaces=True))

    # -- the background: the control plane and two more writers -------------------------------------

    def _start_background(self, stop: threading.Event) -> list[threading.Thread]:
        log = open(self.root / "cluster.log", "w")  # noqa: SIM115 - closed with the process
        self._background.append(subprocess.Popen(
            [sys.executable, "-m", "driver", "--log-level", "WARNING", "cluster", "--store", str(self.store_dir)],
            stdout=log, stderr=subprocess.STDOUT))
        log.close()

        def schedule_loop() -> None:
            while not stop.is_set():
                self.fake_dra("schedule")
                with self._lock:
                    self.figures.schedule_runs += 1

        threads = [threading.Thread(target=schedule_loop, daemon=True) for _ in range(self.config.schedulers)]
        for t in threads:
            t.start()
        return threads

    def _stop_background(self, stop: threading.Event, threads: list[threading.Thread]) -> None:
        stop.set()
        for t in threads:
            t.join(2 * GENEROUS_S)
        for proc in self._background:
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(GENEROUS_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
                self.figures.problems.append("`fake-dra cluster` did not stop on SIGTERM")
            if rc != 0:
                tail = (self.root / "cluster.log").read_text()[-1500:]
                self.figures.problems.append(f"`fake-dra cluster` exited {rc}: {tail}")
        self._background.clear()

    def close(self) -> None:
        for proc in self._background:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    # -- the churn ------------------------------------------------------------------------------------

    def run(self) -> ChurnFigures:
        t0 = time.monotonic()
        self._nodes = self.config.max_nodes
        self.fake_dra("fleet", "apply", "-f", self._file(fleet(self._nodes)))
        self.apply(claim_template("mig-1g", "1g.5gb"), claim_template("mig-2g", "2g.10gb"))
        self.apply(deployment("web", 2, "mig-1g"))
        stop = threading.Event()
        threads = self._start_background(stop)
        try:
            for step in range(self.config.steps):
                op = self.rng.choices(OPS, WEIGHTS)[0]
                self.figures.ops[op] += 1
                getattr(self, "_op_" + op.replace("-", "_"))()
                self.figures.steps += 1
                self._say(f"step {step + 1}/{self.config.steps}: {op}")
            if not self.figures.ops["hostile"]:
                self._op_hostile()  # every run meets hostile rows at least once
        finally:
            self._stop_background(stop, threads)
        self._hostile_answers()
        settle = self.fake_dra("cluster", "--until-settled", "--timeout", str(self.config.settle_timeout_s))
        if settle.returncode != 0:
            self.figures.problems.append(f"did not settle: {settle.stderr.strip()[-800:]}")
        self._check()
        self.figures.seconds = time.monotonic() - t0
        return self.figures

    def _check(self) -> None:
        store = ObjectStore(self.store_dir)
        double, stale, lost = classify(violations(store))
        self.figures.double_booked += double
        self.figures.stale += stale
        self.figures.lost += lost + shortfalls(store)
        for resource in ("nodes", "resourceslices", "deployments", "jobs", "pods", "resourceclaims"):
            self.figures.settled[resource] = len(store.list(resource, all_namespaces=True))

    # -- operations, each a documented command ------------------------------------------------------

    def _op_deploy(self) -> None:
        name = f"web{self.rng.randrange(4)}"
        replicas = self.rng.randrange(1, 4)
        self.apply(deployment(name, replicas, self.rng.choice(("mig-1g", "mig-2g"))))

    def _op_scale(self) -> None:
        live = self._names("deployments")
        if not live:
            return self._op_deploy()
        name = self.rng.choice(live)
        template = json.loads(json.dumps(ObjectStore(self.store_dir).get("deployments", "default", name)))
        replicas = self.rng.randrange(0, 5)
        self.apply(deployment(name, replicas, _template_of(template)))

    def _op_retemplate(self) -> None:
        live = self._names("deployments")
        if not live:
            return self._op_deploy()
        name = self.rng.choice(live)
        current = ObjectStore(self.store_dir).get("deployments", "default", name)
        other = "mig-2g" if _template_of(current) == "mig-1g" else "mig-1g"
        self.apply(deployment(name, current["spec"].get("replicas", 1), other, image=f"busybox:{self._serial}"))

    def _op_job(self) -> None:
        name = f"train{self.rng.randrange(3)}"
        if name in self._names("jobs"):  # a Job's template cannot change: a new one replaces it
            self.fake_dra("delete", "job", name, "--ignore-not-found")
        self.apply(job(name, completions=self.rng.randrange(1, 4), parallelism=self.rng.randrange(1, 3),
                       delay_ms=self.rng.randrange(100, 1500)))

    def _op_solo(self) -> None:
        self.apply(solo_pod(f"solo{self.rng.randrange(6)}", template=self.rng.choice(("mig-1g", "mig-2g"))))

    def _op_shared(self) -> None:
        """A user-made claim allocated by `apply --allocate` (a writer racing the schedulers), then
        pods sharing it by name."""
        nodes = self._names("nodes")
        if not nodes:
            return
        name = f"shared{self.rng.randrange(3)}"
        if name not in self._names("resourceclaims"):
            self.apply(shared_claim(name), extra=("--allocate", "--node-name", self.rng.choice(nodes)))
        for i in range(self.rng.randrange(1, 3)):
            self.apply(solo_pod(f"{name}-user{i}", claim=name))

    def _op_delete_pod(self) -> None:
        pods = self._names("pods")
        if pods:
            force = ("--grace-period=0", "--force") if self.rng.random() < 0.3 else ()
            self.fake_dra("delete", "pod", self.rng.choice(pods), "--ignore-not-found", *force)

    def _op_delete_claim(self) -> None:
        claims = self._names("resourceclaims")
        if claims:
            self.fake_dra("delete", "resourceclaim", self.rng.choice(claims), "--ignore-not-found")

    def _op_delete_node(self) -> None:
        nodes = self._names("nodes")
        if nodes:
            self.fake_dra("delete", "node", self.rng.choice(nodes), "--ignore-not-found")

    def _op_delete_workload(self) -> None:
        choices = [("deployment", n) for n in self._names("deployments")] + [("job", n) for n in self._names("jobs")]
        choices += [("replicaset", n) for n in self._names("replicasets")]
        if not choices:
            return
        kind, name = self.rng.choice(choices)
        cascade = self.rng.choice(("background", "foreground", "orphan"))
        self.fake_dra("delete", kind, name, f"--cascade={cascade}", "--ignore-not-found")

    def _op_fleet(self) -> None:
        self._nodes = self.rng.randrange(1, self.config.max_nodes + 1)
        self.fake_dra("fleet", "apply", "-f", self._file(fleet(self._nodes)))

    # -- hostile rows ---------------------------------------------------------------------------------

    def _op_hostile(self) -> None:
        """Plant rows no fake-dra writer would write (as a hand with the sqlite3 shell would), then
        ask the commands about them and about everything else."""
        from adversarial.churn_manifests import hostile_rows

        for resource, namespace, name, value in hostile_rows(self.rng):
            plant_row(self.store_dir, resource, namespace, name, value)
            self.figures.hostile_rows += 1
        self._lists(("get", "pods", "-A"))

    def _lists(self, *commands: tuple[str, ...]) -> None:
        for argv in commands:
            done = self.fake_dra(*argv)
            self.figures.hostile_answers += 1
            if done.returncode != 0:
                self.figures.problems.append(f"`{' '.join(argv)}` beside hostile rows exited {done.returncode}: "
                                             f"{done.stderr.strip()[-500:]}")

    def _hostile_answers(self) -> None:
        """Each bad row is an error for that object alone: a one-line error naming it from `get`
        and `describe` of it, `delete` removes it, and the lists and `schedule` go on answering
        (`cluster` and the `schedule` loops met the rows mid-churn)."""
        from adversarial.churn_manifests import HOSTILE_NAMES

        self._lists(("get", "pods", "-A"), ("get", "nodes"), ("schedule",))
        store = ObjectStore(self.store_dir)
        planted = [(r, ns, n) for r, ns, n in HOSTILE_NAMES if _has_row(store, r, ns, n)]
        if self.config.row_checks is not None:
            planted = self.rng.sample(planted, min(len(planted), self.config.row_checks))
        for resource, namespace, name in planted:
            ns = ("-n", namespace) if namespace else ()
            for verb in ("get", "describe") if self.rng.random() < 0.5 else ("get",):
                done = self.fake_dra(verb, resource, name, *ns)
                errors = [line for line in done.stderr.splitlines() if line.strip()]
                self.figures.hostile_answers += 1
                if done.returncode == 0 or len(errors) != 1 or name not in errors[0]:
                    self.figures.problems.append(f"`{verb} {resource} {name}` over a hostile row answered "
                                                 f"{done.returncode} with {errors!r}")
            self.fake_dra("delete", resource, name, *ns)
            if _has_row(store, resource, namespace, name):
                self.figures.problems.append(f"`delete {resource} {name}` left its hostile row")


def _has_row(store: ObjectStore, resource: str, namespace: str | None, name: str) -> bool:
    from storeutil import raw_row

    return raw_row(store.root, resource, namespace, name) is not None


def _template_of(deploy: dict[str, Any]) -> str:
    claims = ((deploy.get("spec") or {}).get("template") or {}).get("spec", {}).get("resourceClaims") or [{}]
    return claims[0].get("resourceClaimTemplateName") or "mig-1g"


def run_churn(config: ChurnConfig, root: Path) -> ChurnFigures:
    churn = Churn(root, config)
    try:
        return churn.run()
    finally:
        churn.close()


def main(argv: list[str] | None = None) -> int:
    """`hack/soak.sh --mode churn`: print the figures; exit 1 when any count is not 0."""
    import argparse
    import shutil
    import tempfile

    ap = argparse.ArgumentParser(prog="hack/soak.sh --mode churn", description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=200, help="churn operations")
    ap.add_argument("--schedulers", type=int, default=2, help="`fake-dra schedule` loops beside `fake-dra cluster`")
    ap.add_argument("--nodes", type=int, default=4, help="most nodes the fleet grows to")
    ap.add_argument("--seed", type=int, default=int(time.time()), help="random seed (printed; rerun with it)")
    ap.add_argument("--keep", action="store_true", help="keep the store and logs (path printed)")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: no background process is left behind
    import logging

    logging.getLogger("fake-dra.store").setLevel(logging.ERROR)  # this process's reads meet the planted rows too
    config = ChurnConfig(seed=args.seed, steps=args.steps, schedulers=args.schedulers, max_nodes=args.nodes,
                         progress=True)
    root = Path(tempfile.mkdtemp(prefix="fds-churn-", dir="/tmp"))
    print(f"churn soak: seed {config.seed}, {config.steps} steps, {config.schedulers} schedulers beside "
          f"`fake-dra cluster`, up to {config.max_nodes} nodes, in {root}", flush=True)
    try:
        figures = run_churn(config, root)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(figures.report())
    return 0 if figures.ok else 1
