"""The conflicts generator tests something in every round, also on a node where nothing is held."""

from __future__ import annotations

import random

from adversarial.gen_conflicts import GENERATOR
from adversarial.ledger import held
from adversarial.soak import Target


def test_on_an_idle_node_it_holds_a_device_itself_and_releases_it(make_plugin):
    plugin = make_plugin()
    kubelet = plugin.start()
    target = Target(plugin, kubelet, None, random.Random(3), plugin.wait_slices())
    tried = GENERATOR.run(target)
    assert tried >= 2, "the held MIG device and its whole GPU were both tried"
    claims, _ = held(plugin.state, plugin.cdi)
    assert claims == {}, "the generator's own holder claim is released again"
    assert plugin.store.list("resourceclaims", "default") == []
    assert plugin.stop() == 0
