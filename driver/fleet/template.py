"""A node group's pool rendered once, then stamped for each of its nodes.

Rendering a DGX-A100 pool takes ~35 ms; a 1,000-node fleet would spend most of its time there. Yet
two nodes of one group differ only in the node name (pool name and `nodeName`) and in identities
derived from it (device `uuid`/`parentUUID`). So a group's pool is rendered once per (profile,
driver config, fidelity, gates) for a stand-in node, with a recording `Identities` that hands out
placeholders and remembers what each one stands for (PCI function, device name); stamping a node
fills in the node name and computes each identity with the very derivation `fake-dra run` uses
(driver.slices.names.Identities). Stamped pools share every unchanged value with the template
(only the dicts along the changed paths are copied), so a node costs ~1 ms and little memory.

Fidelity is a value: `full` is what `fake-dra run` publishes; `whole` is the same node rendered
with DRAPartitionableDevices off (whole GPUs and VFs, no counters: what kwok's and run:ai's
simulators publish), i.e. what `fake-dra run --features DRAPartitionableDevices=false` publishes.

If a renderer change ever put a node-derived value somewhere the stamp does not reach, `render`
refuses (it checks that the stand-in name and placeholders occur only where it stamps them), and
the equality tests against `render_pool` for real node names catch a derivation it does not know.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from driver.discovery import discover, make_sysfs
from driver.features import Features
from driver.hardware import load_catalog
from driver.model.inventory import Inventory
from driver.slices import Pool, SliceConfig, render_pool
from driver.slices.names import NODE_IDENTITIES, Identities
from driver.store.codec import json_text

# The stand-in node a template is rendered for: a valid node name no fleet node can have (fleet
# node names end in digits).
TEMPLATE_NODE = "fleet-template-node"
FIDELITY_GATES: Mapping[str, Mapping[str, bool]] = {
    "full": {},
    "whole": {"DRAPartitionableDevices": False},
}
# Placeholders have a UUID's length (so attribute clipping treats them alike) and version nibble 0,
# which no uuid5 has.
_PLACEHOLDER = re.compile(r"00000000-0000-0000-0000-([0-9a-f]{12})")
# Stands for the pool generation in a template's JSON text (no real pool gets near it).
_GENERATION = 987_654_321_987_654_321
_TEXT_HOLES = re.compile(f"({re.escape(TEMPLATE_NODE)}|{_PLACEHOLDER.pattern}|{_GENERATION})")
_NODE, _GEN = "node", "generation"  # hole kinds in text segments (slots are ints)


class _Recorder(Identities):
    """Identities that hand out numbered placeholders and remember (PCI function, device name)."""

    def __init__(self) -> None:
        self.slots: list[tuple[str, str]] = []

    def uuid(self, node_name: str, pci_address: str, device_name: str) -> str:
        self.slots.append((pci_address, device_name))
        return f"00000000-0000-0000-0000-{len(self.slots) - 1:012x}"


@dataclass(frozen=True)
class _Hole:
    """One attribute string of one device that carries identities: text pieces around slot numbers."""

    attribute: str
    pieces: tuple[str | int, ...]  # str: literal text; int: identity slot


@dataclass(frozen=True)
class TemplateKey:
    profile: str
    driver_config: str  # canonical JSON (driver.fleet.spec.NodeGroup.driver_config)
    fidelity: str
    features: Features


@dataclass(frozen=True)
class Template:
    key: TemplateKey
    driver_name: str
    specs: tuple[dict[str, Any], ...]
    slots: tuple[tuple[str, str], ...]
    # Per slice: (device index, holes of that device), in device order.
    holes: tuple[tuple[tuple[int, tuple[_Hole, ...]], ...], ...]
    warnings: tuple[str, ...] = ()
    identities: Identities = field(default=NODE_IDENTITIES, compare=False)
    # Per slice: its spec as the store writes it (JSON, pool generation and count in place), cut at
    # the node name, identities and generation: literal str pieces, and tuples naming the hole.
    texts: tuple[tuple[str | tuple, ...], ...] = field(default=(), compare=False)

    def identities_of(self, node: str) -> list[str]:
        return [self.identities.uuid(node, pci, name) for pci, name in self.slots]

    def spec_texts(self, node: str, generation: int, ids: list[str]) -> list[str]:
        """The JSON text of each stamped spec with pool generation and slice count, as reconcile
        writes it: a store's unchanged slice holds exactly this after `"spec":`."""
        fill = {_NODE: node, _GEN: str(generation)}
        return ["".join(p if isinstance(p, str) else (ids[p[1]] if p[0] == "slot" else fill[p[0]]) for p in text)
                for text in self.texts]

    def stamp(self, node: str, ids: list[str] | None = None) -> Pool:
        """The pool `fake-dra run --node-name NODE` publishes for this group's hardware and gates."""
        ids = self.identities_of(node) if ids is None else ids
        out = []
        for spec, slice_holes in zip(self.specs, self.holes):
            stamped = dict(spec)
            stamped["pool"] = {"name": node}
            stamped["nodeName"] = node
            if slice_holes:
                devices = list(spec["devices"])
                for index, holes in slice_holes:
                    dev = dict(devices[index])
                    attrs = dict(dev["attributes"])
                    for hole in holes:
                        attrs[hole.attribute] = {"string": "".join(p if isinstance(p, str) else ids[p] for p in hole.pieces)}
                    dev["attributes"] = attrs
                    devices[index] = dev
                stamped["devices"] = devices
            out.append(stamped)
        return Pool(name=node, slices=tuple(out), warnings=self.warnings)

    @property
    def devices_per_node(self) -> int:
        return sum(len(s.get("devices") or ()) for s in self.specs)


def features_for(fidelity: str, features: Features) -> Features:
    gates = FIDELITY_GATES[fidelity]
    return features.with_gates(dict(gates)) if gates else features


def _holes_of(spec: Mapping[str, Any]) -> tuple[tuple[int, tuple[_Hole, ...]], ...]:
    found = []
    for index, dev in enumerate(spec.get("devices") or ()):
        holes = []
        for attr, value in (dev.get("attributes") or {}).items():
            text = value.get("string") if isinstance(value, Mapping) else None
            if not isinstance(text, str) or not _PLACEHOLDER.search(text):
                continue
            pieces: list[str | int] = []
            for n, part in enumerate(_PLACEHOLDER.split(text)):
                if n % 2:
                    pieces.append(int(part, 16))
                elif part:
                    pieces.append(part)
            holes.append(_Hole(attr, tuple(pieces)))
        if holes:
            found.append((index, tuple(holes)))
    return tuple(found)


def _texts(specs: tuple[dict[str, Any], ...]) -> tuple[tuple[str | tuple, ...], ...]:
    out = []
    for spec in specs:
        full = {**spec, "pool": {"name": TEMPLATE_NODE, "generation": _GENERATION, "resourceSliceCount": len(specs)}}
        pieces: list[str | tuple] = []
        for n, part in enumerate(_TEXT_HOLES.split(json_text(full))):
            if n % 3 == 0:
                if part:
                    pieces.append(part)
            elif n % 3 == 1:
                pieces.append((_NODE,) if part == TEMPLATE_NODE else (_GEN,) if part == str(_GENERATION) else ())
            elif part is not None:  # the placeholder's slot number (group 2)
                pieces[-1] = ("slot", int(part, 16))
        out.append(tuple(pieces))
    return tuple(out)


def _check_stampable(specs: tuple[dict[str, Any], ...], holes: tuple) -> None:
    """Refuse a template where the stand-in node name or a placeholder sits outside what stamp() sets."""
    text = json.dumps(specs)
    names = text.count(TEMPLATE_NODE)
    if names != 2 * len(specs):  # pool.name and nodeName of each slice
        raise RuntimeError(f"fleet template: the node name occurs {names} times in {len(specs)} slices; "
                           "the renderer put it where stamping does not reach")
    placed = sum(1 for s in holes for _, hs in s for h in hs for p in h.pieces if isinstance(p, int))
    if placed != len(_PLACEHOLDER.findall(text)):
        raise RuntimeError("fleet template: a device identity is outside the device attributes stamping fills in")


class Templates:
    """Templates by key, and the inventories they are rendered from (one fake sysfs tree per
    profile, written once into a temporary directory, as `make-sysfs` would write it)."""

    def __init__(self, driver_name: str) -> None:
        self.driver_name = driver_name
        self._templates: dict[TemplateKey, Template] = {}
        self._inventories: dict[tuple[str, str], Inventory] = {}
        self._trees: dict[str, Path] = {}
        self._tmp: Path | None = None
        self.rendered = 0  # renders made (one per distinct key): what the stamping saves is visible

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
            self._trees.clear()

    def __enter__(self) -> Templates:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _inventory(self, profile: str, config: Mapping[str, Any]) -> Inventory:
        hardware = json.dumps(config.get("hardware") or {}, sort_keys=True)
        key = (profile, hardware)
        inv = self._inventories.get(key)
        if inv is None:
            tree = self._trees.get(profile)
            if tree is None:
                if self._tmp is None:
                    # In memory where there is a tmpfs: a DGX tree is ~1,900 files, ten times faster there.
                    shm = Path("/dev/shm")
                    base = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
                    self._tmp = Path(tempfile.mkdtemp(prefix="fake-dra-fleet-", dir=base))
                tree = self._trees[profile] = self._tmp / profile
                make_sysfs(profile, tree)
            inv = self._inventories[key] = discover(tree, load_catalog(config.get("hardware")))
        return inv

    def get(self, profile: str, driver_config: str, fidelity: str, features: Features) -> Template:
        key = TemplateKey(profile, driver_config, fidelity, features)
        template = self._templates.get(key)
        if template is None:
            template = self._templates[key] = self._render(key)
        return template

    def all(self) -> list[Template]:
        return list(self._templates.values())

    def _render(self, key: TemplateKey) -> Template:
        config = json.loads(key.driver_config)
        recorder = _Recorder()
        pool = render_pool(self._inventory(key.profile, config), features_for(key.fidelity, key.features),
                           node_name=TEMPLATE_NODE, driver_name=self.driver_name,
                           config=SliceConfig.from_dict(config.get("slices")), identities=recorder)
        self.rendered += 1
        holes = tuple(_holes_of(s) for s in pool.slices)
        _check_stampable(pool.slices, holes)
        return Template(key=key, driver_name=self.driver_name, specs=pool.slices, slots=tuple(recorder.slots),
                        holes=holes, warnings=pool.warnings, texts=_texts(pool.slices))

