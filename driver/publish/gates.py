"""Detect which DRA feature gates kube-apiserver and kube-scheduler have, and decide what to publish.

A wrong guess is costly (docs/architecture.md §6, rows "No groups unless the scheduler's gate is on"
and "Gates are detected per component"; defaults in §5): with DRADeviceCompatibilityGroups off in
the apiserver the field is silently stripped; off in the scheduler, every slice declaring groups is
ignored, which makes the whole pool unusable. So each of the four gates is detected per component:

- apiserver: a server-side dry-run create of a small probe slice carrying just that gate's field;
  if the answer lacks the field, the gate is off. Reinforced by dropped-field reports from real
  writes (`note_dropped`), which mark the gate off until the next successful probe says otherwise.
- scheduler: `kubernetes_feature_enabled{name=...}` from a metrics source (the scheduler's /metrics,
  or the apiserver's, or STORE/featuregates.yaml in local mode); if unreachable, an explicit
  `--scheduler-features` flag; otherwise the scheduler is assumed to match the apiserver, with a
  loud warning (skew between the two is exactly the dangerous case).
- effective = apiserver AND scheduler (AND DRAPartitionableDevices for the gates nested inside
  its fields); `--features` overrides win over everything and are reported as such.

Gates not detected (prioritized list, admin access, taints) come from `--features` or the defaults.

Release-aware (driver.features.gates_of): with an API server the detector reads its /version and
uses that release's gate table. A gate the release does not have (DRADeviceCompatibilityGroups in
1.36) is neither probed nor assumed: it is reported as "not a gate of Kubernetes 1.36" and off
unless `--features` sets it, and the fallback defaults are that release's defaults. The
project-only KEP-5941 gate is in no release's table and is still probed (a build carrying its PR
answers the probe).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from driver.errors import FakeDraError, InputError
from driver.features import GATE_FIELDS, KUBERNETES_VERSIONS, PROJECT_ONLY_GATES, TARGET_VERSION, Features, gates_of, kube_minor
from driver.publish.fields import CONSUMABLE, DETECTED_GATES, GROUPS, PARTITIONABLE, SHARED_CONSUMABLE

log = logging.getLogger("fake-dra.gates")

# What a 1.37 cluster has when nothing can be detected: beta gates on, alpha / unmerged ones off
# (publishing groups to a scheduler that ignores them hides the pool, so unknown means off).
DEFAULTS_1_37: dict[str, bool] = {PARTITIONABLE: True, GROUPS: False, CONSUMABLE: True, SHARED_CONSUMABLE: False}
_NESTED_IN_PARTITIONABLE = (GROUPS, SHARED_CONSUMABLE)


def release_defaults(version: str) -> dict[str, bool]:
    """The detected gates' defaults in Kubernetes `version`; a gate that release lacks is off."""
    table = gates_of(version)
    return {g: (table[g].default if g in table else False) for g in DETECTED_GATES}


assert release_defaults(TARGET_VERSION) == DEFAULTS_1_37

SchedulerSource = Callable[[], Mapping[str, bool]]
DryRun = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class GateState:
    gate: str
    apiserver: bool | None
    apiserver_source: str
    scheduler: bool | None
    scheduler_source: str
    effective: bool
    effective_source: str


@dataclass(frozen=True)
class GateReport:
    features: Features
    gates: dict[str, GateState]
    warnings: tuple[str, ...] = ()
    detected_at: float = 0.0
    release: str | None = None  # the apiserver's minor release whose gate table applied; None: not known

    def as_dict(self) -> dict[str, Any]:
        return {
            "kubernetes": self.release,
            "features": str(self.features),
            "gates": {
                g: {"effective": s.effective, "source": s.effective_source,
                    "apiserver": s.apiserver, "apiserverSource": s.apiserver_source,
                    "scheduler": s.scheduler, "schedulerSource": s.scheduler_source}
                for g, s in self.gates.items()
            },
            "warnings": list(self.warnings),
        }


def probe_slice(gate: str, node: str, driver: str) -> tuple[dict[str, Any], Callable[[dict[str, Any]], bool]]:
    """A minimal valid slice that carries exactly `gate`'s field, and a check that it survived."""
    spec: dict[str, Any] = {"driver": driver, "nodeName": node,
                            "pool": {"name": f"{node}-gate-probe", "generation": 1, "resourceSliceCount": 1}}
    counters = {"c": {"value": "1"}}
    if gate == PARTITIONABLE:
        spec["sharedCounters"] = [{"name": "probe", "counters": counters}]
        check = lambda s: bool(s.get("sharedCounters"))  # noqa: E731
    elif gate == GROUPS:
        spec["devices"] = [{"name": "probe", "consumesCounters": [
            {"counterSet": "probe", "counters": counters, "compatibilityGroups": ["probe"]}]}]
        check = lambda s: bool(_first_consumption(s).get("compatibilityGroups"))  # noqa: E731
    elif gate == CONSUMABLE:
        spec["devices"] = [{"name": "probe", "allowMultipleAllocations": True,
                            "capacity": {"c": {"value": "1", "requestPolicy": {"default": "1"}}}}]
        check = lambda s: ((s.get("devices") or [{}])[0]).get("allowMultipleAllocations") is not None  # noqa: E731
    elif gate == SHARED_CONSUMABLE:
        spec["devices"] = [{"name": "probe", "capacity": {"bandwidth": {"value": "1"}}, "consumesCounters": [
            {"counterSet": "probe", "counters": {"bandwidth": {"valueFrom": {"capacityName": "bandwidth"}}}}]}]
        check = lambda s: "valueFrom" in (_first_consumption(s).get("counters") or {}).get("bandwidth", {})  # noqa: E731
    else:
        raise ValueError(f"no probe for gate {gate}")
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
           "metadata": {"name": f"{node}-{driver}-probe-{gate.lower()}"[:253]}, "spec": spec}
    return obj, lambda stored: check(stored.get("spec") or {})


def _first_consumption(spec: Mapping[str, Any]) -> dict[str, Any]:
    devices = spec.get("devices") or [{}]
    entries = devices[0].get("consumesCounters") or [{}]
    return entries[0]


_METRIC_RE = re.compile(r'^kubernetes_feature_enabled\{([^}]*)\}\s+([0-9.eE+-]+)')
_NAME_RE = re.compile(r'name="([^"]+)"')


def parse_feature_metrics(text: str) -> dict[str, bool]:
    """`kubernetes_feature_enabled{name="G",stage="ALPHA"} 1` lines -> {G: True}."""
    gates: dict[str, bool] = {}
    for line in text.splitlines():
        m = _METRIC_RE.match(line.strip())
        if not m:
            continue
        name = _NAME_RE.search(m.group(1))
        if name:
            gates[name.group(1)] = float(m.group(2)) > 0
    return gates


@dataclass
class GateDetector:
    """Detects gates on demand; `due()` says when the publisher should call `detect()` again."""

    node_name: str
    driver_name: str
    dry_run: DryRun | None = None
    apiserver_label: str = "apiserver dry-run"
    scheduler_source: SchedulerSource | None = None
    scheduler_label: str = "scheduler metrics"
    scheduler_flags: Mapping[str, bool] | None = None
    overrides: Mapping[str, bool] = field(default_factory=dict)
    base: Features = field(default_factory=Features)
    interval_s: float = 300.0
    clock: Callable[[], float] = time.monotonic
    server_version: Callable[[], str] | None = None  # kube-apiserver's /version gitVersion
    _last: GateReport | None = field(default=None, init=False, repr=False)
    _next_at: float = field(default=0.0, init=False, repr=False)
    _dropped: set[str] = field(default_factory=set, init=False, repr=False)

    @property
    def last(self) -> GateReport | None:
        return self._last

    def due(self) -> bool:
        return self._last is None or self.clock() >= self._next_at

    def note_dropped(self, gates: set[str]) -> None:
        """A real write lost these gates' fields: treat them as off in the apiserver and re-detect now."""
        known = {g for g in gates if g in DETECTED_GATES}
        if known:
            self._dropped |= known
        self._next_at = 0.0

    def note_write_failure(self) -> None:
        self._next_at = 0.0

    def detect(self) -> GateReport:
        warnings: list[str] = []
        release = self._release(warnings)
        defaults = release_defaults(release or TARGET_VERSION)
        # A project-only gate (KEP-5941) is in no release's table but may be in a build carrying its
        # PR: it is still probed, never judged absent.
        absent = {g for g in DETECTED_GATES if release and g not in gates_of(release) and g not in PROJECT_ONLY_GATES}
        api = self._apiserver(warnings, absent, release)
        sched = self._scheduler(api, warnings, absent)
        states: dict[str, GateState] = {}
        effective: dict[str, bool] = {}
        for gate in DETECTED_GATES:
            a_val, a_src = api[gate]
            s_val, s_src = sched[gate]
            if gate in self.overrides:
                val, src = bool(self.overrides[gate]), "--features override"
            elif gate in absent:
                val, src = False, f"not a gate of Kubernetes {release}"
            elif a_val is None or s_val is None:
                val, src = defaults[gate], f"Kubernetes {release or TARGET_VERSION} default (detection failed)"
            else:
                val, src = a_val and s_val, "apiserver AND scheduler"
            effective[gate] = val
            states[gate] = GateState(gate, a_val, a_src, s_val, s_src, val, src)
        if not effective[PARTITIONABLE]:
            for gate in _NESTED_IN_PARTITIONABLE:
                if effective[gate] and gate not in self.overrides:
                    effective[gate] = False
                    states[gate] = replace(states[gate], effective=False,
                                           effective_source=states[gate].effective_source + ", off: needs " + PARTITIONABLE)
        extra = {g: v for g, v in self.overrides.items() if g not in DETECTED_GATES}
        features = self.base.with_gates({**effective, **extra})
        report = GateReport(features, states, tuple(warnings), self.clock(), release)
        if self._last is None or self._last.features != features:
            log.info("feature gates detected", extra={"features": str(features),
                     "sources": {g: s.effective_source for g, s in states.items()}})
        self._last = report
        self._next_at = self.clock() + self.interval_s
        return report

    def _release(self, warnings: list[str]) -> str | None:
        """The apiserver's minor release when it has a gate table here; None: not known (local store,
        /version unreachable, or a release outside KUBERNETES_VERSIONS, each with a warning)."""
        if self.server_version is None:
            return None
        try:
            text = self.server_version()
        except (FakeDraError, OSError) as exc:
            warnings.append(f"kube-apiserver version unknown ({exc}): gates judged by the Kubernetes {TARGET_VERSION} table")
            return None
        try:
            minor = kube_minor(text, "kube-apiserver /version")
        except InputError as exc:
            warnings.append(f"{exc}: gates judged by the Kubernetes {TARGET_VERSION} table")
            return None
        if minor not in KUBERNETES_VERSIONS:
            warnings.append(f"kube-apiserver is {text}: no gate table for {minor} here (known: "
                            f"{', '.join(KUBERNETES_VERSIONS)}); gates judged by the Kubernetes {TARGET_VERSION} table")
            return None
        return minor

    def _apiserver(self, warnings: list[str], absent: Collection[str] = (),
                   release: str | None = None) -> dict[str, tuple[bool | None, str]]:
        out: dict[str, tuple[bool | None, str]] = {}
        for gate in DETECTED_GATES:
            if gate in absent:
                out[gate] = (False, f"not probed: not a gate of Kubernetes {release}")
                continue
            if self.dry_run is None:
                out[gate] = (None, "not probed (no apiserver)")
                continue
            obj, survived = probe_slice(gate, self.node_name, self.driver_name)
            try:
                stored = self.dry_run(obj)
            except InputError:
                raise  # a broken local gate file is the user's to fix, not "gate unknown"
            except FakeDraError as exc:
                if getattr(exc, "status", None) == 422:
                    out[gate] = (False, f"{self.apiserver_label}: probe rejected ({exc})")
                else:
                    out[gate] = (None, f"{self.apiserver_label} failed: {exc}")
                    warnings.append(f"{gate}: apiserver probe failed: {exc}")
                continue
            on = survived(stored)
            out[gate] = (on, f"{self.apiserver_label}: field {'kept' if on else 'stripped'}")
        # A real write that lost fields outranks the probe (e.g. HA apiservers with different gates);
        # it counts for this detection only, the next periodic probe starts fresh.
        for gate in sorted(self._dropped):
            out[gate] = (False, "fields dropped by the apiserver on a real write")
        self._dropped.clear()
        return out

    def _scheduler(self, api: Mapping[str, tuple[bool | None, str]], warnings: list[str],
                   absent: Collection[str] = ()) -> dict[str, tuple[bool | None, str]]:
        metrics: Mapping[str, bool] | None = None
        failure = ""
        if self.scheduler_source is not None:
            try:
                metrics = self.scheduler_source()
            except InputError:
                raise
            except (FakeDraError, OSError, ValueError) as exc:
                failure = f"{self.scheduler_label} unreachable: {exc}"
                warnings.append(failure)
        out: dict[str, tuple[bool | None, str]] = {}
        for gate in DETECTED_GATES:
            if gate in absent:
                out[gate] = (False, api[gate][1].replace("not probed: ", "not read: "))
            elif metrics is not None:
                # A binary that does not know a gate does not implement it.
                out[gate] = (bool(metrics.get(gate, False)),
                             f"{self.scheduler_label}" + ("" if gate in metrics else " (gate unknown to it)"))
            elif self.scheduler_flags is not None and gate in self.scheduler_flags:
                out[gate] = (bool(self.scheduler_flags[gate]), "--scheduler-features flag")
            else:
                out[gate] = (api[gate][0], "ASSUMED equal to apiserver")
        assumed = [g for g in DETECTED_GATES if out[g][1].startswith("ASSUMED") and g not in self.overrides
                   and g not in absent]
        if assumed:
            msg = ("kube-scheduler feature gates are NOT known; assuming they match the apiserver for "
                   + ", ".join(assumed) + ". If the scheduler has DRADeviceCompatibilityGroups off while the "
                   "apiserver has it on, the whole pool becomes unschedulable. Configure "
                   "--scheduler-metrics-url or --scheduler-features." + (f" ({failure})" if failure else ""))
            warnings.append(msg)
            log.warning(msg)
        return out


def fixed_report(features: Features, source: str = "--features override") -> GateReport:
    """A report for a publisher run with fixed features (no detection)."""
    states = {
        g: GateState(g, None, "not probed", None, "not probed", getattr(features, GATE_FIELDS[g]), source)
        for g in DETECTED_GATES
    }
    return GateReport(features, states)


def http_metrics_source(
    url: str, *, token_file: str | None = None, ca_file: str | None = None, insecure: bool = False,
    timeout_s: float = 5.0,
) -> SchedulerSource:
    """Scheduler gates from a Prometheus endpoint, e.g. https://127.0.0.1:10259/metrics.

    kube-scheduler serves /metrics over HTTPS with authentication: pass a bearer token file (a
    service account allowed `get` on the `/metrics` non-resource URL) and its CA, or `insecure`.
    """
    import ssl
    import urllib.error
    import urllib.request

    def fetch() -> Mapping[str, bool]:
        headers = {"Accept": "text/plain"}
        if token_file:
            try:
                headers["Authorization"] = "Bearer " + open(token_file).read().strip()
            except OSError as exc:
                raise FakeDraError(f"--metrics-token-file {token_file}: {exc.strerror}") from None
        ctx = None
        if url.startswith("https:"):
            ctx = ssl.create_default_context(cafile=ca_file)
            if insecure:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
        req = urllib.request.Request(url, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout_s, context=ctx) as resp:
                text = resp.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            raise FakeDraError(f"{url}: HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise FakeDraError(f"{url}: {getattr(exc, 'reason', exc)}") from None
        gates = parse_feature_metrics(text)
        if not gates:
            raise FakeDraError(f"{url}: no kubernetes_feature_enabled samples (not a Kubernetes component's /metrics?)")
        return gates

    return fetch
