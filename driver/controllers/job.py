"""The Job controller: pods run to completion, counted once, retried up to backoffLimit.

Rules (kubernetes/kubernetes pkg/controller/job/job_controller.go, indexed_job_utils.go;
pkg/apis/batch/v1 defaults and pkg/registry/batch/job/strategy.go generateSelector):
- defaults: `parallelism` 1, `completions` 1 when neither is set (unset completions with a
  parallelism: done when any pod succeeds and none is active), `backoffLimit` 6,
  `completionMode` NonIndexed; the selector is the job's uid label unless `manualSelector`;
- pods are made from the template with the labels `batch.kubernetes.io/controller-uid`,
  `batch.kubernetes.io/job-name` and the legacy `controller-uid`, `job-name`, generateName
  `<job>-` (Indexed: `<job>-<index>-` and the `batch.kubernetes.io/job-completion-index`
  annotation and label), a controller ownerReference, and the `batch.kubernetes.io/job-tracking`
  finalizer: the controller counts a finished pod in `status.succeeded` / `status.failed` and
  removes the finalizer in the same store transaction (upstream's uncountedTerminatedPods makes the
  same promise in two API calls), so a pod is counted exactly once even if pod GC removes it later;
- active pods wanted: NonIndexed `min(parallelism, completions - succeeded)`; Indexed: the
  lowest indexes neither succeeded nor running, up to `parallelism`; surplus active pods deleted;
- a failed pod is replaced after the pod failure back-off (10 s doubling, at most 6 minutes);
  more failures than `backoffLimit` end the Job: `FailureTarget` then `Failed` (reason
  BackoffLimitExceeded) once its active pods are deleted; enough successes end it with
  `SuccessCriteriaMet` then `Complete` (the 1.31+ conditions), `completionTime` set;
- `suspend: true` deletes the active pods and makes none; `ttlSecondsAfterFinished` deletes a
  finished Job (background) that long after it finished (pkg/controller/ttlafterfinished);
- events: SuccessfulCreate, SuccessfulDelete, Completed, BackoffLimitExceeded, as upstream's.
Not modelled: podFailurePolicy, successPolicy, backoffLimitPerIndex, activeDeadlineSeconds,
podReplacementPolicy (a replacement is made once the failed pod is terminal, upstream's default).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from driver.controllers.base import Result, Writes
from driver.controllers.objects import (Key, condition, controller_ref, is_active, is_ready, is_terminal, meta,
                                        pod_phase, seconds_since, selector_matches, with_condition)
from driver.controllers.replicaset import deletion_rank, pod_from_template
from driver.errors import NotFoundError
from driver.store import deletion
from driver.store.objectstore import ObjectStore, now_timestamp
from driver.store.watch import DELETED, Change

COMPONENT = "job-controller"
TRACKING = "batch.kubernetes.io/job-tracking"
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
UID_LABEL, NAME_LABEL = "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name"
BACKOFF_S, MAX_BACKOFF_S = 10.0, 360.0
JOBS, PODS = "jobs", "pods"


def _int(value: Any, default: int | None) -> int | None:
    return value if isinstance(value, int) and value >= 0 else default


def pod_labels(job: Mapping[str, Any]) -> dict[str, str]:
    m = meta(job)
    uid, name = str(m.get("uid")), str(m.get("name"))
    return {UID_LABEL: uid, NAME_LABEL: name, "controller-uid": uid, "job-name": name}


def is_finished(job: Mapping[str, Any]) -> bool:
    return any((condition(job, c) or {}).get("status") == "True" for c in ("Complete", "Failed"))


class JobController:
    name = COMPONENT
    watches = (JOBS, PODS)

    def resync(self, store: ObjectStore) -> Iterable[Key]:
        for ns, name in store.keys(JOBS, all_namespaces=True):
            yield JOBS, ns, name

    def keys_for(self, store: ObjectStore, change: Change) -> Iterable[Key]:
        if change.resource == JOBS:
            if change.type != DELETED:
                yield change.key
            return
        ref = controller_ref(change.object or {})
        if ref is not None and ref.get("kind") == "Job":
            yield JOBS, change.namespace, str(ref.get("name"))

    def reconcile(self, store: ObjectStore, key: Key) -> Result:
        w = Writes(store, COMPONENT)
        try:
            job = store.get(*key)
        except NotFoundError:
            return Result()
        m, spec = meta(job), job.get("spec") or {}
        uid = str(m.get("uid"))
        selector = spec.get("selector") if spec.get("manualSelector") else {"matchLabels": {UID_LABEL: uid}}
        pods = [p for p in store.list(PODS, key[1])
                if (controller_ref(p) or {}).get("uid") == uid and selector_matches(selector, meta(p).get("labels"))]
        status = dict(job.get("status") or {})
        succeeded, failed = int(status.get("succeeded") or 0), int(status.get("failed") or 0)
        indexed = spec.get("completionMode") == "Indexed"
        done_indexes = _parse_indexes(status.get("completedIndexes"))
        last_failure = None
        for pod in pods:  # count each finished pod once, dropping its tracking finalizer
            if TRACKING not in deletion.finalizers(pod):
                continue
            if is_terminal(pod) or meta(pod).get("deletionTimestamp"):
                if pod_phase(pod) == "Succeeded":
                    succeeded += 1
                    index = (meta(pod).get("annotations") or {}).get(INDEX_KEY)
                    if indexed and str(index).isdigit():
                        done_indexes.add(int(index))
                else:
                    failed += 1
                    last_failure = pod
                w.remove_finalizer(PODS, pod, TRACKING)
        active = [p for p in pods if is_active(p)]
        parallelism = _int(spec.get("parallelism"), 1) or 0
        completions = _int(spec.get("completions"), None if spec.get("parallelism") is not None else 1)
        backoff_limit = _int(spec.get("backoffLimit"), 6)
        now = now_timestamp()
        conditions = status.get("conditions")
        requeue = None
        finished = is_finished(job)
        if indexed and completions is not None:
            complete = len({i for i in done_indexes if i < completions}) >= completions
        elif completions is not None:
            complete = succeeded >= completions
        else:
            complete = succeeded > 0 and not active
        failing = backoff_limit is not None and failed > backoff_limit
        if not finished and not failing and not complete and not spec.get("suspend"):
            requeue = self._manage(w, job, active, succeeded, failed, completions, parallelism, indexed,
                                   done_indexes, last_failure)
            active = [p for p in active if meta(p).get("uid")]
        elif active and (failing or complete or spec.get("suspend")):
            for pod in sorted(active, key=deletion_rank):
                self._delete(w, job, pod)
            active = []
        if not finished and failing:
            conditions = with_condition(conditions, {"type": "FailureTarget", "status": "True",
                                                     "reason": "BackoffLimitExceeded",
                                                     "message": "Job has reached the specified backoff limit"}, now)
            if not active:
                conditions = with_condition(conditions, {"type": "Failed", "status": "True",
                                                         "reason": "BackoffLimitExceeded",
                                                         "message": "Job has reached the specified backoff limit"}, now)
                w.event(job, "BackoffLimitExceeded", "Job has reached the specified backoff limit", "Warning")
        elif not finished and complete:
            conditions = with_condition(conditions, {"type": "SuccessCriteriaMet", "status": "True",
                                                     "reason": "CompletionsReached",
                                                     "message": "Reached expected number of succeeded pods"}, now)
            if not active:
                conditions = with_condition(conditions, {"type": "Complete", "status": "True",
                                                         "reason": "CompletionsReached",
                                                         "message": "Reached expected number of succeeded pods"}, now)
                status["completionTime"] = now
                w.event(job, "Completed", "Job completed")
        new_status = {**status, "succeeded": succeeded, "failed": failed, "active": len(active),
                      "ready": sum(1 for p in active if is_ready(p)), "startTime": status.get("startTime") or now}
        if conditions:
            new_status["conditions"] = conditions
        if indexed:
            new_status["completedIndexes"] = _format_indexes(done_indexes)
        for zero in ("succeeded", "failed", "active"):
            if not new_status[zero] and zero not in status:
                new_status.pop(zero)
        if new_status != (job.get("status") or {}):
            job = w.update(JOBS, {**store.get(*key), "status": new_status}) or job
        ttl = spec.get("ttlSecondsAfterFinished")
        if isinstance(ttl, int) and ttl >= 0 and is_finished(job):
            finished_at = next((c.get("lastTransitionTime") for c in (job.get("status") or {}).get("conditions") or []
                                if c.get("type") in ("Complete", "Failed") and c.get("status") == "True"), None)
            waited = seconds_since(finished_at) or 0.0
            if waited >= ttl:
                try:
                    w.delete(JOBS, job, propagation=deletion.BACKGROUND)
                except NotFoundError:
                    pass
            else:
                requeue = min(requeue or float("inf"), ttl - waited)
        return Result(w.count, requeue_after=requeue)

    def _manage(self, w: Writes, job: dict[str, Any], active: list[dict[str, Any]], succeeded: int, failed: int,
                completions: int | None, parallelism: int, indexed: bool, done: set[int],
                last_failure: Mapping[str, Any] | None) -> float | None:
        if indexed and completions is not None:
            running = {int(i) for p in active if str(i := (meta(p).get("annotations") or {}).get(INDEX_KEY)).isdigit()}
            todo = [i for i in range(completions) if i not in done and i not in running]
            want_new = max(0, min(parallelism - len(active), len(todo)))
            surplus = max(0, len(active) - parallelism)
        else:
            remaining = completions - succeeded if completions is not None else (0 if succeeded else parallelism)
            want = min(parallelism, max(0, remaining))
            want_new, surplus, todo = max(0, want - len(active)), max(0, len(active) - want), []
        for pod in sorted(active, key=deletion_rank)[:surplus]:
            self._delete(w, job, pod)
        if want_new and failed:
            since = seconds_since(((last_failure or {}).get("status") or {}).get("startTime")) if last_failure else None
            wait = min(MAX_BACKOFF_S, BACKOFF_S * 2 ** (failed - 1)) - (since or 0.0)
            if last_failure is not None and wait > 0:
                return wait
        name = str(meta(job).get("name"))
        template = (job.get("spec") or {}).get("template") or {}
        for n in range(want_new):
            if indexed:
                index = str(todo[n])
                pod = pod_from_template(job, template, generate_name=f"{name}-{index}-",
                                        extra_labels={**pod_labels(job), INDEX_KEY: index},
                                        annotations={INDEX_KEY: index})
            else:
                pod = pod_from_template(job, template, generate_name=f"{name}-", extra_labels=pod_labels(job))
            pod["metadata"]["finalizers"] = [*pod["metadata"].get("finalizers", []), TRACKING]
            pod["spec"].setdefault("restartPolicy", "Never")
            created = w.create(PODS, pod)
            active.append(created)
            w.event(job, "SuccessfulCreate", f"Created pod: {meta(created).get('name')}")
        return None

    def _delete(self, w: Writes, job: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        try:
            w.delete(PODS, pod)
        except NotFoundError:
            return
        w.event(job, "SuccessfulDelete", f"Deleted pod: {meta(pod).get('name')}")


def _parse_indexes(text: Any) -> set[int]:
    """status.completedIndexes: `1,3-5,7` -> {1, 3, 4, 5, 7}."""
    out: set[int] = set()
    for part in str(text or "").split(","):
        lo, _, hi = part.partition("-")
        if lo.strip().isdigit():
            out.update(range(int(lo), int(hi if hi.strip().isdigit() else lo) + 1))
    return out


def _format_indexes(indexes: set[int]) -> str:
    out, ordered = [], sorted(indexes)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)
