"""The slice-store contract the reconciler writes through, and its local object store implementation.

The reconciler never talks HTTP or files directly: it calls a SliceBackend, so the exact same
reconcile runs against kube-apiserver (driver.kube.KubeSliceBackend) and the embedded local store
(StoreSliceBackend here). Both raise driver.errors.ConflictError on 409-style races and
NotFoundError on missing objects.

The store backend also plays the apiserver's role for feature gates: STORE/featuregates.yaml
(see LocalGateConfig) says which gates the simulated apiserver and scheduler have, and writes
strip disabled fields exactly as kube-apiserver would, so dropped-field detection, gate probes and
gate flips behave in local mode as they do on a cluster. What is left is validated like the
apiserver validates it (driver.schema): an invalid slice is refused (InvalidObjectError, its 422),
never stored.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import yaml

from driver import schema
from driver.errors import ConfigError, ConflictError, InputError, InvalidObjectError, NotFoundError
from driver.features import Features, KNOWN_GATES, unknown_gate_error
from driver.yamlio import load_one
from driver.publish.fields import (DETECTED_GATES, GROUPS, PARTITIONABLE, SHARED_CONSUMABLE, gates_present, gates_used,
                                   strip_disabled)
from driver.store.objectstore import ObjectStore

log = logging.getLogger("fake-dra.publish")
_DEFAULTS = Features()

SLICES = "resourceslices"
GATE_CONFIG_FILE = "featuregates.yaml"


@runtime_checkable
class SliceBackend(Protocol):
    """Raw ResourceSlice access for one driver on one node (dicts in, dicts out)."""

    kind: str  # "apiserver" or "store": shown in logs and `fake-dra gates`

    def list_slices(self, driver: str, node: str) -> list[dict[str, Any]]:
        """Every slice with spec.driver == driver and spec.nodeName == node."""
        ...

    def create_slice(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create; ConflictError if the name exists. Returns the stored object."""
        ...

    def update_slice(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Replace; metadata.resourceVersion must match (ConflictError otherwise)."""
        ...

    def delete_slice(self, name: str, *, uid: str | None = None, resource_version: str | None = None) -> None:
        """Delete with optional preconditions; NotFoundError if absent, ConflictError if they fail."""
        ...

    def dry_run_create_slice(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Validate and default a slice without persisting it; returns what would be stored."""
        ...

    def node_uid(self, node: str) -> str | None:
        """UID of the Node object (for ownerReferences), None when there is no such Node."""
        ...

    def allocated_devices(self, driver: str, pool: str) -> set[str]:
        """Device names of (driver, pool) referenced by any allocated ResourceClaim."""
        ...


@dataclass(frozen=True)
class LocalGateConfig:
    """STORE/featuregates.yaml: the gates of the simulated control plane in local mode.

    ```yaml
    apiserver: {DRADeviceCompatibilityGroups: false}   # fields of off gates are stripped on write
    scheduler: {DRADeviceCompatibilityGroups: false}   # what `kubernetes_feature_enabled` would say
    ```
    Gates not listed take `Features()`'s default: on, except `DRASharedConsumableCapacity`, which a
    1.37 control plane does not have. A missing file means those defaults in both components.
    """

    apiserver: Mapping[str, bool] = field(default_factory=dict)
    scheduler: Mapping[str, bool] = field(default_factory=dict)
    path: Path | None = None

    @staticmethod
    def write(store_root: str | Path, features: Features) -> Path:
        """Make the simulated apiserver and scheduler have `features`' detected gates (both alike)."""
        from driver.fsutil import atomic_write

        gates = {g: features.enabled(g) for g in DETECTED_GATES}
        path = Path(store_root) / GATE_CONFIG_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, yaml.safe_dump({"apiserver": gates, "scheduler": gates}, sort_keys=False).encode(), 0o644)
        return path

    @classmethod
    def load(cls, store_root: str | Path) -> LocalGateConfig:
        path = Path(store_root) / GATE_CONFIG_FILE
        try:
            text = path.read_text()
        except FileNotFoundError:
            return cls(path=None)
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not UTF-8 text (byte at offset {exc.start})") from None
        try:
            data = load_one(text, str(path)) or {}
        except InputError as exc:
            raise ConfigError(str(exc)) from None
        if not isinstance(data, Mapping):
            raise ConfigError(f"{path}: expected a mapping with keys apiserver/scheduler")
        unknown_keys = set(data) - {"apiserver", "scheduler"}
        if unknown_keys:
            raise ConfigError(f"{path}: unknown keys {sorted(unknown_keys)} (expected apiserver, scheduler)")
        sections = {}
        for section in ("apiserver", "scheduler"):
            gates = data.get(section) or {}
            if not isinstance(gates, Mapping):
                raise ConfigError(f"{path}: {section} must map gate names to true/false")
            for gate, value in gates.items():
                if gate not in KNOWN_GATES:
                    raise ConfigError(str(unknown_gate_error(gate, f"{path}: {section}.{gate}")))
                if not isinstance(value, bool):
                    raise ConfigError(f"{path}: {section}.{gate}: expected true or false, got {value!r}")
            sections[section] = dict(gates)
        return cls(apiserver=sections["apiserver"], scheduler=sections["scheduler"], path=path)

    def disabled(self, component: str) -> set[str]:
        gates = self.apiserver if component == "apiserver" else self.scheduler
        return {g for g in DETECTED_GATES if gates.get(g, _DEFAULTS.enabled(g)) is False}

    def scheduler_gates(self) -> dict[str, bool]:
        return {g: bool(self.scheduler.get(g, _DEFAULTS.enabled(g))) for g in DETECTED_GATES}

    def apiserver_features(self) -> Features:
        """The simulated kube-apiserver's gates: which fields it knows (driver.schema) and keeps."""
        return _DEFAULTS.with_gates(self.apiserver, str(self.path or GATE_CONFIG_FILE))

    def gate_hint(self, store_root: str | Path) -> str:
        """Where a user turns a gate of the simulated control plane on: the end of a schema error."""
        return f"turn it on in {Path(store_root) / GATE_CONFIG_FILE} (apiserver: and scheduler:)"


class StoreSliceBackend:
    """SliceBackend over the local ObjectStore, simulating apiserver field stripping per gate config."""

    kind = "store"

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self.requests = 0  # same meaning as the API backend's counter: calls made on the store
        # Subtrees of slices already admitted (schema.Proven): a fleet's stamped slices share most.
        self._proven: schema.Proven | None = None

    def gate_config(self) -> LocalGateConfig:
        return LocalGateConfig.load(self.store.root)

    def list_slices(self, driver: str, node: str) -> list[dict[str, Any]]:
        self.requests += 1
        return [s for s in self.store.list(SLICES, index={"node": node})
                if (s.get("spec") or {}).get("driver") == driver]

    def _admit(self, obj: dict[str, Any], old_name: str | None) -> dict[str, Any]:
        """What kube-apiserver does to a write before storing it: drop the fields of gates it has
        off (keeping those the stored object uses), then validate what is left against the 1.37
        schema with its gates. An object that is invalid after stripping (a counter whose only
        `valueFrom` was dropped has no value left) is refused with InvalidObjectError (its 422),
        never stored for a later reader to trip over."""
        config = self.gate_config()
        off = config.disabled("apiserver")
        spec = obj.get("spec") or {}
        keep: set[str] = set()
        # gates_present looks only where gated fields can be; the stored object is read, and its
        # gates found exactly, only when the new object has a field a disabled gate would drop.
        if off and gates_present(spec) & _dropped(off):
            if old_name:
                keep = gates_used(self.store.get(SLICES, None, old_name).get("spec") or {})
            obj = {**obj, "spec": strip_disabled(spec, off, keep)}  # strip_disabled copies
        known = config.apiserver_features().with_gates({g: True for g in keep})
        on = schema.gates_on(known)
        if self._proven is None or self._proven.gates_on != on:
            self._proven = schema.Proven(on)
        problems = schema.errors(obj, "ResourceSlice", known, proven=self._proven)
        if problems:
            # Only a refusal pays for walking every field: which gates' fields were dropped.
            stripped = (off - keep) & gates_used(spec) if off else set()
            name = (obj.get("metadata") or {}).get("name")
            why = (f" (it dropped the fields of {', '.join(sorted(stripped))}, off for the simulated kube-apiserver "
                   f"in {self.store.root / GATE_CONFIG_FILE})" if stripped else "")
            shown = "; ".join(str(p) for p in problems[:5])
            raise InvalidObjectError(f"ResourceSlice {name}: the local store refused it as invalid (422): {shown}{why}",
                                     stripped)
        return obj

    def create_slice(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.requests += 1
        obj = self._admit(obj, None)
        name = obj["metadata"]["name"]
        problem = self._unreadable(name)
        if problem is not None:
            # `list` leaves such a file out, so every pass would try this create again and fail:
            # the pool would never be published. Leave the file to its owner and take another name
            # (the index prefix, which reconcile matches slices by, stays).
            other = self._free_name(name)
            log.warning(f"{problem}; it sits at this node's slice name {name}, so that slice is published as {other}",
                        extra={"store": str(self.store.root), "slice": other})
            obj = {**obj, "metadata": {**obj["metadata"], "name": other}}
        return self.store.create(SLICES, obj)

    def _unreadable(self, name: str) -> str | None:
        """Why the file at slice `name` cannot be read, or None (nothing there, or a readable object:
        a real conflict, which reconcile settles by listing again)."""
        if not self.store.exists(SLICES, None, name):
            return None
        try:
            self.store.get(SLICES, None, name)
        except NotFoundError:
            return None
        except InputError as exc:
            return str(exc)
        return None

    def _free_name(self, name: str) -> str:
        for n in range(1, 1000):
            suffix = f"-{n}"
            candidate = name[:253 - len(suffix)].rstrip("-.") + suffix
            if not self.store.exists(SLICES, None, candidate):
                return candidate
        raise InputError(f"local store {self.store.root}: no free name for slice {name}")

    def update_slice(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.requests += 1
        name = obj["metadata"]["name"]
        if not self.store.exists(SLICES, None, name):  # kube-apiserver reads the old object before validating
            self.store.get(SLICES, None, name)  # raises the store's NotFoundError
        return self.store.update(SLICES, self._admit(obj, name))

    def delete_slice(self, name: str, *, uid: str | None = None, resource_version: str | None = None) -> None:
        self.requests += 1
        if uid is not None:
            current = self.store.get(SLICES, None, name)
            if current["metadata"].get("uid") != uid:
                raise ConflictError(f"resourceslice {name}: uid precondition failed (stored {current['metadata'].get('uid')})")
        self.store.delete(SLICES, None, name, resource_version=resource_version)

    def dry_run_create_slice(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.requests += 1
        return self._admit(copy.deepcopy(obj), None)

    def node_uid(self, node: str) -> str | None:
        self.requests += 1
        try:
            return self.store.get("nodes", None, node)["metadata"].get("uid")
        except NotFoundError:
            return None

    def allocated_devices(self, driver: str, pool: str) -> set[str]:
        self.requests += 1
        return self.store.allocated_devices(driver, pool)


def _dropped(off: set[str] | frozenset[str]) -> set[str]:
    """The gates whose fields a write loses when `off` are disabled (partitionable devices' fields
    hold those of compatibility groups and KEP-5941, which go with them)."""
    out = set(off)
    if PARTITIONABLE in out:
        out |= {GROUPS, SHARED_CONSUMABLE}
    return out


def store_backend(store: ObjectStore) -> StoreSliceBackend:
    """The embedded default backend (the local object store)."""
    return StoreSliceBackend(store)
