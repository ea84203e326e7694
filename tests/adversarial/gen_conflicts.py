"""Generator: claims naming devices that other prepared claims hold, as a racing or buggy scheduler
(or a hostile writer of the store) would produce them: the very same GPU or MIG device, the whole
GPU under a held MIG partition, a MIG partition of a held whole GPU. Each must be refused. When the
workload happens to hold no GPU at that moment, the generator holds a free MIG device itself first,
so every round tests something (a round that tried nothing made the kill-loop test flaky under load)."""

from __future__ import annotations

import uuid

from adversarial.claims import allocated_claim, ref
from adversarial.ledger import held


class Conflicts:
    name = "conflicts"

    def run(self, target) -> int:
        plugin, kubelet = target.plugin, target.kubelet
        claims, _ = held(plugin.state, plugin.cdi)
        devices = sorted({d["device"] for e in claims.values() if e["state"] == "PrepareCompleted"
                          for d in e["devices"] if d["device"].startswith("gpu-")})
        holder = None
        if not devices:  # the workload holds no GPU right now: hold one ourselves, so every round tests
            holder = self._hold_one(target)
            devices = [holder[1]] if holder else []
        tried = 0
        try:
            tried = self._conflict(target, devices)
        finally:
            if holder is not None:
                self._release(target, holder[0])
        return tried

    def _hold_one(self, target) -> tuple[dict, str] | None:
        """Prepare a claim on the first MIG device that is free (the plugin refuses the rest)."""
        names = [d["name"] for s in target.slices for d in (s.get("spec") or {}).get("devices") or ()
                 if "-mig-" in d["name"]]
        for device in names:
            claim = allocated_claim(f"holder-{uuid.uuid4().hex[:10]}", [device])
            target.plugin.store.create("resourceclaims", claim)
            r = ref(claim)
            if not target.kubelet.prepare([r])[r[2]].error:
                return claim, device
            self._release(target, claim)
        return None

    def _release(self, target, claim: dict) -> None:
        r = ref(claim)
        if target.kubelet.unprepare([r])[r[2]]:
            raise AssertionError(f"unprepare of {r[1]} failed")
        target.plugin.store.delete("resourceclaims", r[0], r[1])

    def _conflict(self, target, devices: list[str]) -> int:
        plugin, kubelet = target.plugin, target.kubelet
        tried = 0
        for device in target.rng.sample(devices, min(4, len(devices))):
            gpu = device.split("-mig-")[0]
            overlapping = {device, gpu if gpu != device else f"{gpu}-mig-7g40gb-0"}
            for other in sorted(overlapping):
                claim = allocated_claim(f"conflict-{uuid.uuid4().hex[:10]}", [other])
                plugin.store.create("resourceclaims", claim)
                r = ref(claim)
                answer = kubelet.prepare([r])[r[2]]
                tried += 1
                if not answer.error:
                    raise AssertionError(f"claim on {other} prepared while {device} is held")
                if kubelet.unprepare([r])[r[2]]:  # what the kubelet does when it gives the pod up
                    raise AssertionError(f"unprepare of the refused claim on {other} failed")
                plugin.store.delete("resourceclaims", r[0], r[1])
        return tried


GENERATOR = Conflicts()
