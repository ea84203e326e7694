"""Build a GateDetector for a backend from command-line style settings (shared by publish, gates, run).

The detector itself only knows callables; this module decides where they come from:
- apiserver probes: the backend's dry-run create (API server, or the local store simulating one);
- scheduler gates: `--scheduler-metrics-url` (a URL, or `apiserver` for the apiserver's own /metrics
  through the authenticated client), or in local mode the `scheduler:` section of
  STORE/featuregates.yaml; else `--scheduler-features`; else assumed equal to the apiserver.
"""

from __future__ import annotations

from collections.abc import Mapping

from driver.errors import ConfigError, InputError
from driver.features import Features
from driver.publish.backend import GATE_CONFIG_FILE, SliceBackend, StoreSliceBackend
from driver.publish.fields import SHARED_CONSUMABLE
from driver.publish.gates import GateDetector, SchedulerSource, http_metrics_source, parse_feature_metrics


def make_detector(
    backend: SliceBackend,
    *,
    node_name: str,
    driver_name: str,
    overrides: Mapping[str, bool] | None = None,
    scheduler_metrics_url: str | None = None,
    scheduler_flags: Mapping[str, bool] | None = None,
    metrics_token_file: str | None = None,
    metrics_ca_file: str | None = None,
    metrics_insecure: bool = False,
    interval_s: float = 30.0,
    base: Features | None = None,
) -> GateDetector:
    source: SchedulerSource | None = None
    label = "scheduler metrics"
    if scheduler_metrics_url == "apiserver":
        metrics_text = getattr(backend, "metrics_text", None)
        if metrics_text is None:
            raise InputError("--scheduler-metrics-url apiserver needs an API server (not the local store)")
        source = lambda: parse_feature_metrics(metrics_text())  # noqa: E731
        label = "apiserver /metrics (standing in for the scheduler's)"
    elif scheduler_metrics_url:
        if not scheduler_metrics_url.startswith(("http://", "https://")):
            raise InputError(f"--scheduler-metrics-url {scheduler_metrics_url!r}: expected an http(s) URL or 'apiserver'")
        source = http_metrics_source(scheduler_metrics_url, token_file=metrics_token_file, ca_file=metrics_ca_file,
                                     insecure=metrics_insecure)
        label = f"scheduler metrics {scheduler_metrics_url}"
    elif isinstance(backend, StoreSliceBackend):
        gate_config = backend.gate_config
        source = lambda: gate_config().scheduler_gates()  # noqa: E731
        label = f"STORE/{GATE_CONFIG_FILE}"
    return GateDetector(
        node_name=node_name,
        driver_name=driver_name,
        dry_run=backend.dry_run_create_slice,
        apiserver_label="apiserver dry-run" if backend.kind == "apiserver" else f"local store dry-run (STORE/{GATE_CONFIG_FILE})",
        scheduler_source=source,
        scheduler_label=label,
        scheduler_flags=scheduler_flags,
        overrides=dict(overrides or {}),
        base=base or Features(),
        interval_s=interval_s,
        server_version=getattr(backend, "server_version", None),
    )


def check_local_switch(backend: SliceBackend, overrides: Mapping[str, bool]) -> None:
    """KEP-5941 has one switch in local mode: STORE/featuregates.yaml, the simulated control plane's
    gates (a real cluster's apiserver and scheduler flags). `run`/`publish` detect it from there; a
    `--features DRASharedConsumableCapacity=true` the file does not back would publish `valueFrom`
    counters the simulated apiserver refuses and a scheduler cannot charge, so the plugin refuses to
    start, naming the file. (`=false` is always fine: a driver may publish static shares.)"""
    if not isinstance(backend, StoreSliceBackend) or overrides.get(SHARED_CONSUMABLE) is not True:
        return
    config = backend.gate_config()
    off = [c for c in ("apiserver", "scheduler") if SHARED_CONSUMABLE in config.disabled(c)]
    if not off:
        return
    path = backend.store.root / GATE_CONFIG_FILE
    raise ConfigError(
        f"--features {SHARED_CONSUMABLE}=true: the local store's simulated kube-{' and kube-'.join(off)} "
        f"{'has' if len(off) == 1 else 'have'} it off; turn KEP-5941 on in {path} (apiserver: "
        f"{{{SHARED_CONSUMABLE}: true}} and scheduler: {{{SHARED_CONSUMABLE}: true}}; that file is its one switch "
        f"in local mode, and `run` then publishes valueFrom by itself), or drop it from --features")
