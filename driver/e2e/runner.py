"""Runs scenarios step by step on a backend and collects the checks into a report.

The runner owns the scenario semantics (what each action means, template references between
steps, timing, error containment); a backend only performs actions and reports Observations. A
scenario that crashes the harness is reported as a failed scenario with the error, and the next
scenario still runs.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from driver import schema
from driver.e2e.observe import Observation, check_step
from driver.e2e.report import Check, RunReport, ScenarioResult
from driver.e2e.scenario import Scenario, Step
from driver.errors import FakeDraError, InputError
from driver.features import Features

log = logging.getLogger("fake-dra.e2e")

# ${claim:NAME.attr} -> attribute of the first device allocated to claim NAME;
# ${device:type=vgpu.attr} -> attribute of the first published device whose attributes match.
_REF_RE = re.compile(r"\$\{(claim|device):([a-zA-Z0-9=,_-]+)\.([A-Za-z]+)\}")


class Backend(Protocol):
    """What the runner needs from a cluster (real or simulated). Every action returns facts."""

    name: str

    def start(self, scenario: Scenario) -> None: ...
    def stop(self) -> None: ...
    def create_claim(self, name: str, obj: dict[str, Any]) -> Observation: ...
    def run_pod(self, name: str, claims: Sequence[str], podgroup: str | None, skewed: bool) -> Observation: ...
    def delete_pod(self, name: str) -> Observation: ...
    def delete_claim(self, name: str) -> Observation: ...
    def create_podgroup(self, name: str, claim: str) -> Observation: ...
    def delete_podgroup(self, name: str) -> Observation: ...
    def set_gates(self, gates: Mapping[str, bool]) -> Observation: ...
    def fault(self, device: str, message: str, clear: bool) -> Observation: ...
    def restart_plugin(self, signal: str) -> Observation: ...
    def observe(self) -> Observation: ...
    def claim_devices(self) -> dict[str, list[dict[str, Any]]]: ...
    def published_devices(self) -> list[dict[str, Any]]: ...


def resolve_refs(text: str, backend: Backend) -> str:
    """Fill ${claim:...} / ${device:...} references from the state reached so far."""

    def one(match: re.Match[str]) -> str:
        kind, target, attr = match.groups()
        if kind == "claim":
            devices = backend.claim_devices().get(target, [])
            if not devices:
                raise InputError(f"{match.group(0)}: claim {target!r} has no allocated device yet")
            dev = devices[0]
        else:
            wanted = dict(part.split("=", 1) for part in target.split(",") if "=" in part)
            found = [d for d in backend.published_devices() if all(str(d.get(k)) == v for k, v in wanted.items())]
            if not found:
                raise InputError(f"{match.group(0)}: no published device has {target}")
            dev = found[0]
        value = dev.get(attr)
        if value is None and attr == "parentUUID":
            value = dev.get("uuid")  # a whole device is its own parent
        if value is None:
            raise InputError(f"{match.group(0)}: device {dev.get('name')} has no attribute {attr!r}")
        return str(value)

    return _REF_RE.sub(one, text)


def _resolved_requests(requests: Sequence[Mapping[str, Any]], backend: Backend) -> list[dict[str, Any]]:
    out = []
    for req in requests:
        req = dict(req)
        if isinstance(req.get("selector"), str):
            req["selector"] = resolve_refs(req["selector"], backend)
        out.append(req)
    return out


def run_step(step: Step, backend: Backend, make_claim: Callable[..., dict[str, Any]],
             features: Features = Features()) -> Observation:
    """One step; a claim is checked as kube-apiserver checks it (driver.schema, with the scenario's
    `features`) before either backend sees it, so a scenario's raw constraints or config with a
    typo fail the same way in local mode and on a cluster."""
    a = step.args
    if step.action == "claim":
        obj = make_claim(a["name"], _resolved_requests(a["requests"], backend),
                         constraints=a.get("constraints"), config=a.get("config"))
        meta = obj.get("metadata") or {}
        schema.check(obj, features, f"ResourceClaim {meta.get('namespace')}/{meta.get('name')}")
        return backend.create_claim(a["name"], obj)
    if step.action == "pod":
        return backend.run_pod(a["name"], list(a.get("claims") or []), a.get("podgroup"), a.get("scheduler") == "skewed")
    if step.action == "delete-pod":
        return backend.delete_pod(a["name"])
    if step.action == "delete-claim":
        return backend.delete_claim(a["name"])
    if step.action == "podgroup":
        return backend.create_podgroup(a["name"], a["claim"])
    if step.action == "delete-podgroup":
        return backend.delete_podgroup(a["name"])
    if step.action == "gates":
        return backend.set_gates(dict(a["set"]))
    if step.action == "fault":
        return backend.fault(a["device"], str(a.get("message", "simulated fault")), bool(a.get("clear", False)))
    if step.action == "restart-plugin":
        return backend.restart_plugin(str(a.get("signal", "TERM")))
    if step.action == "observe":
        return backend.observe()
    if step.action == "delete-node":
        return backend.delete_node(a["name"])
    raise InputError(f"unknown action {step.action!r}")  # parse_scenario rejects these earlier


def _diagnostics(backend: Backend) -> str:
    """Extra context a backend can give when a step blew up (e.g. the plugin's last log lines)."""
    hook = getattr(backend, "diagnostics", None)
    try:
        extra = hook() if hook is not None else ""
    except Exception:  # noqa: BLE001 - diagnostics must never mask the real error
        extra = ""
    return f" [{extra}]" if extra else ""


def run_scenario(scenario: Scenario, backend: Backend, make_claim: Callable[..., dict[str, Any]]) -> ScenarioResult:
    result = ScenarioResult(scenario.name, scenario.reason)
    started = time.monotonic()
    current = "setup"
    # A backend may hand a scenario to a variant of itself (the local backend: several nodes).
    backend = getattr(backend, "for_scenario", lambda s: backend)(scenario)
    try:
        backend.start(scenario)
        for step in scenario.steps:
            current = step.label
            obs = run_step(step, backend, make_claim, scenario.features)
            checks = check_step(step, obs, backend.claim_devices())
            result.checks.extend(checks)
            log.debug("step done", extra={"scenario": scenario.name, "step": step.label,
                                          "ok": all(c.ok for c in checks), "notes": obs.notes})
    except FakeDraError as exc:
        result.error = f"{current}: {exc}{_diagnostics(backend)}"
    except Exception as exc:  # a harness bug must not hide the other scenarios' results
        result.error = f"{current}: {type(exc).__name__}: {exc}{_diagnostics(backend)}"
        log.error("scenario crashed", extra={"scenario": scenario.name, "trace": traceback.format_exc()})
    finally:
        try:
            backend.stop()
        except Exception as exc:  # noqa: BLE001 - teardown trouble is reported, not raised
            result.checks.append(Check("teardown", "clean stop", "ok", f"{type(exc).__name__}: {exc}", False))
        result.seconds = time.monotonic() - started
    return result


def run_all(
    scenarios: Sequence[Scenario],
    new_backend: Callable[[], Backend],
    make_claim: Callable[..., dict[str, Any]],
    skip: Callable[[Scenario], str | None] = lambda s: None,
    jobs: int = 1,
    on_result: Callable[[ScenarioResult], None] | None = None,
) -> RunReport:
    """Run every scenario on a fresh backend; with jobs > 1 scenarios run side by side.

    Parallel runs are safe only for backends whose scenarios share nothing (the local backend
    gives each its own directory, plugin process and sockets); results keep scenario order.
    `on_result` is called with each result as soon as its scenario finishes (progress output),
    one call at a time.
    """
    probe = new_backend()
    report = RunReport(probe.name)
    announce = threading.Lock()

    def one(scenario: Scenario) -> ScenarioResult:
        why_not = skip(scenario)
        if why_not is not None:
            result = ScenarioResult(scenario.name, scenario.reason, skipped=why_not)
        else:
            result = run_scenario(scenario, new_backend(), make_claim)
        if on_result is not None:
            with announce:
                on_result(result)
        return result

    if jobs <= 1 or len(scenarios) <= 1:
        report.scenarios.extend(one(s) for s in scenarios)
    else:
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="e2e") as pool:
            report.scenarios.extend(pool.map(one, scenarios))
    return report
