"""Generator: the hostile kubelet inputs of adversarial.hostile (h12b's catalogue and fuzzer) in the
kill loop and the soak. Those inputs need the node's GPUs and VF bandwidth free (they prepare and
release them, and check that nothing stays reserved), so this generator asks the soak for an idle
node (`needs_idle_node`: the load's pods are let go first) and runs every other eligible cycle: the
whole catalogue the first time, then seeded random variants."""

from __future__ import annotations

from adversarial import hostile
from plugin.harness import DRIVER, NODE


class Hostile:
    name = "hostile"
    needs_idle_node = True
    every = 2  # of the cycles a generator may run in
    fuzz_per_round = 30

    def __init__(self) -> None:
        self._catalogue_done = False

    def run(self, target) -> int:
        p = target.plugin
        node = hostile.Target(p.registry, p.store_dir, p.state, p.cdi, DRIVER, NODE)
        devices = node.devices()
        inputs = hostile.fuzz(devices, target.rng.randrange(2**31), self.fuzz_per_round)
        if not self._catalogue_done:
            inputs = hostile.catalogue(devices) + inputs
            self._catalogue_done = True
        report = hostile.run(node, inputs, client=target.kubelet)
        if report.violations:
            raise AssertionError(f"{len(report.violations)} violations, e.g. " + "; ".join(report.violations[:3]))
        return report.tried


GENERATOR = Hostile()
