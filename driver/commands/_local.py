"""Local mode's stand-in for the cluster set-up a DRA driver expects: its DeviceClasses in the store.

On a cluster the DeviceClasses come from the deployment (deploy/base/03-deviceclasses.yaml, or the
personality's overlay such as deploy/overlays/nvidia); without one, `fake-dra run` applies the same
objects to the local object store when it starts, so claims can name them right away (`fake-dra
apply --allocate`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from driver.store.apply import commit, plan
from driver.store.objectstore import ObjectStore

log = logging.getLogger("fake-dra.run")


def seed_device_classes(store: ObjectStore, classes: Sequence[dict[str, Any]],
                        logger: logging.Logger = log) -> list[str]:
    """Create or update these DeviceClasses (the personality's drivers') in `store`; returns the
    names that changed. `logger`: the command's own (`run`'s by default; `fleet` passes its own)."""
    docs = [("deviceclasses", i, dc) for i, dc in enumerate(classes, start=1)]
    with store.locked():
        applied = commit(store, plan(store, docs))
    changed = [a.planned.name for a in applied if a.action != "unchanged"]
    if changed:
        logger.info("device classes applied to the local store", extra={"classes": changed})
    return changed
