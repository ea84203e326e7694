"""A node's kubelet and a scheduler, simplified, as the load of the kill loop and the soak.

Worker threads each keep a few pods: a new pod gets a claim allocated by the reference allocator
(driver.allocator, against what the store says is allocated) and is prepared until the plugin
acknowledges; a pod that goes away is unprepared until acknowledged, then its claim is deleted
(deallocated). Workers allocate concurrently from the same snapshot now and then, so two claims can
name the same device, as a racing scheduler would: the plugin must refuse the second. Now and then a
pod is deleted while its prepare is in flight: the kubelet cancels that call after a few
milliseconds (mid-read when the plugin stalls its reads, `prepare-read`) and unprepares the claim,
which must then never be held again (the Ledger's stale holds). Only acknowledged answers go into
the Ledger; a call that dies with the process is simply retried, which is what the kubelet does.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from dataclasses import dataclass

import grpc

from adversarial.ledger import ClaimTuple, Ledger
from driver.errors import AllocationError
from plugin.harness import DRIVER, Plugin, request
from waiting import GENEROUS_S


def _profile(profile: str) -> list[dict]:
    return [{"cel": {"expression": f'device.attributes["{DRIVER}"].profile == "{profile}"'}}]


# What pods ask for: mostly small partitions and VFs (many fit), sometimes a whole GPU.
REQUESTS = (
    [request("gpu", "mig", selectors=_profile("1g.5gb"))],
    [request("gpu", "mig", selectors=_profile("2g.10gb"))],
    [request("net", "vf", capacity={"requests": {"bandwidth": "10G"}})],
    [request("gpu", "gpu")],
)


@dataclass
class Pod:
    ref: ClaimTuple
    state: str = "want"  # want (prepare until acknowledged) -> ready -> leaving (unprepare) -> gone
    failures: int = 0


class Workload:
    def __init__(self, ledger: Ledger, seed: int, threads: int = 3, pods_per_thread: int = 4,
                 cancel_rate: float = 0.25) -> None:
        self.ledger = ledger
        self.seed = seed
        self.threads = threads
        self.pods_per_thread = pods_per_thread
        self.plugin: Plugin | None = None  # the process currently serving (set by the driver)
        self.kubelet = None
        self.calls = 0
        self.cancelled = 0  # prepares the kubelet cancelled in flight (then unprepared their claim)
        self.cancel_rate = cancel_rate
        self.refused_conflicts = 0
        self.problems: list[str] = []
        self._pods: list[list[Pod]] = [[] for _ in range(threads)]
        self._lock = threading.Lock()
        self._round = 0

    # -- one burst of load --------------------------------------------------------------------

    def burst(self, stop: threading.Event) -> list[threading.Thread]:
        """Start the workers; they run until `stop` is set. Join the returned threads."""
        self._round += 1
        workers = [threading.Thread(target=self._work, args=(i, stop), daemon=True) for i in range(self.threads)]
        for w in workers:
            w.start()
        return workers

    def _work(self, i: int, stop: threading.Event) -> None:
        rng = random.Random(self.seed * 1_000_003 + self._round * 101 + i)
        pods = self._pods[i]
        while not stop.is_set():
            try:
                self._step(rng, pods)
            except grpc.RpcError:
                time.sleep(0.05)  # the plugin is gone or going: the kubelet retries later
            except Exception as exc:  # noqa: BLE001 - keep the load going, report at the end
                self.note(f"worker {i}: {type(exc).__name__}: {exc}")
                time.sleep(0.05)

    def note(self, problem: str) -> None:
        with self._lock:
            self.problems.append(problem)

    def _step(self, rng: random.Random, pods: list[Pod]) -> None:
        want = [p for p in pods if p.state == "want"]
        leaving = [p for p in pods if p.state == "leaving"]
        ready = [p for p in pods if p.state == "ready"]
        if leaving:
            self._unprepare(pods, rng.choice(leaving))
        elif want:
            pod = rng.choice(want)
            if rng.random() < self.cancel_rate:
                self._cancelled_prepare(rng, pods, pod)
            else:
                self._prepare(pod)
        elif len(pods) < self.pods_per_thread and rng.random() < 0.7:
            self._new_pod(rng, pods)
        elif ready:
            rng.choice(ready).state = "leaving"
        else:
            time.sleep(0.01)

    def _new_pod(self, rng: random.Random, pods: list[Pod]) -> None:
        assert self.plugin is not None
        try:
            ref = self.plugin.allocate(f"w-{uuid.uuid4().hex[:12]}", rng.choice(REQUESTS))
        except AllocationError:  # the node is full: let a pod go instead
            ready = [p for p in pods if p.state == "ready"]
            if ready:
                rng.choice(ready).state = "leaving"
            return
        pods.append(Pod(ref))

    def _prepare(self, pod: Pod) -> None:
        kubelet = self.kubelet
        with self._lock:
            self.calls += 1
        self._answered(pod, kubelet.prepare([pod.ref])[pod.ref[2]])

    def _answered(self, pod: Pod, answer) -> None:  # noqa: ANN001 - a KubeletClient ClaimResult
        if not answer.error:
            self.ledger.acked_prepare(pod.ref)
            pod.state = "ready"
            return
        pod.failures += 1
        if "shutting down" in answer.error or "deadline" in answer.error:
            return  # a hand-over in progress: retry on the successor
        if pod.failures >= 3:  # e.g. a device another claim holds (a racing scheduler): give up the pod
            with self._lock:
                self.refused_conflicts += 1
            pod.state = "leaving"

    def _cancelled_prepare(self, rng: random.Random, pods: list[Pod], pod: Pod) -> None:
        """The pod is deleted while its prepare is in flight: the kubelet cancels the call, then
        unprepares the claim (kubernetes pkg/kubelet/cm/dra/manager.go: the claim is in the
        kubelet's cache from before the call, so its unprepare follows)."""
        kubelet = self.kubelet
        with self._lock:
            self.calls += 1
        call = kubelet.start_prepare([pod.ref])
        time.sleep(rng.uniform(0.0, 0.04))
        if not call.cancel():  # it finished first: an ordinary answer
            self._answered(pod, kubelet.prepare_result(call.result())[pod.ref[2]])
            return
        with self._lock:
            self.cancelled += 1
        pod.state = "leaving"
        self._unprepare(pods, pod)  # until acknowledged (the loop retries a failed one)

    def _unprepare(self, pods: list[Pod], pod: Pod) -> None:
        assert self.plugin is not None
        kubelet = self.kubelet
        with self._lock:
            self.calls += 1
        self.ledger.unprepare_sent(pod.ref[2])
        if kubelet.unprepare([pod.ref])[pod.ref[2]]:
            return
        self.ledger.acked_unprepare(pod.ref[2])
        self.plugin.store.delete("resourceclaims", pod.ref[0], pod.ref[1])
        pods.remove(pod)

    # -- wind-down ----------------------------------------------------------------------------

    def drain(self, timeout_s: float = GENEROUS_S) -> None:
        """Let every pod go (unprepare until acknowledged), single-threaded, against self.plugin."""
        deadline = time.monotonic() + timeout_s
        for pods in self._pods:
            for pod in pods:
                pod.state = "leaving"
            while pods and time.monotonic() < deadline:
                try:
                    self._unprepare(pods, pods[0])
                except grpc.RpcError:
                    time.sleep(0.1)
