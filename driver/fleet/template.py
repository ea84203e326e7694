"""A node group's pools rendered once, then stamped for each of its nodes.

Rendering a DGX-A100 pool takes ~35 ms; a 1,000-node fleet would spend most of its time there. Yet
two nodes of one group differ only in the node name (pool name and `nodeName`) and in identities
derived from it (device `uuid`/`parentUUID`, NVIDIA's `GPU-`/`MIG-` UUIDs). So a group's pools (one
per driver of its personality: NVIDIA's has two) are rendered once per (personality, profile,
driver config, fidelity, gates) for a stand-in node, with a recording `Identities` that hands out
placeholders and remembers what each one stands for (PCI function, device name); stamping a node
fills in the node name and computes each identity with the very derivation `fake-dra run` uses
(driver.slices.names.Identities, which every personality's renderer takes: DriverProfile.render).
Stamped pools share every unchanged value with the template (only the dicts along the changed
paths are copied), so a node costs ~1 ms and little memory.

Fidelity is a value: `full` is what `fake-dra run` publishes; `whole` is the same node rendered
with DRAPartitionableDevices off (whole GPUs and VFs, no counters: what kwok's and run:ai's
simulators publish), i.e. what `fake-dra run --features DRAPartitionableDevices=false` publishes.
Personalities whose driver does not follow the cluster's gates (NVIDIA's, the SR-IOV driver's)
publish whole devices at `whole` by their configuration, which the fleet file checks
(driver.personality.Personality.partitioned_by).

If a renderer change ever put a node-derived value somewhere the stamp does not reach, `render`
refuses (it checks that the stand-in name and placeholders occur only where it stamps them), and
the equality tests against each driver's render for real node names catch a derivation it does not
know.
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
from driver.errors import InputError
from driver.features import Features
from driver.hardware import load_catalog
from driver.model.inventory import Inventory
from driver.personality import DEFAULT_PERSONALITY, PERSONALITIES, DriverProfile, personality_named
from driver.slices import Pool
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
    personality: str = DEFAULT_PERSONALITY


@dataclass(frozen=True)
class Template:
    """One driver's pool of a node group, ready to stamp."""

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


@dataclass(frozen=True)
class GroupTemplate:
    """Every driver's template of a node group, in the personality's driver order."""

    key: TemplateKey
    drivers: tuple[Template, ...]

    @property
    def slices_per_node(self) -> int:
        return sum(len(t.specs) for t in self.drivers)

    @property
    def devices_per_node(self) -> int:
        return sum(t.devices_per_node for t in self.drivers)

    @property
    def driver_names(self) -> tuple[str, ...]:
        return tuple(t.driver_name for t in self.drivers)

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(w for t in self.drivers for w in t.warnings)


def own_driver_name(personality: str, driver_name: str) -> str | None:
    """The name `--driver-name` gives a personality's driver: fake-dra's takes it, NVIDIA's and the
    SR-IOV driver's keep the names their users' manifests select on (None: the personality's own)."""
    return None if personality_named(personality).fixed_driver_names else driver_name


def fleet_drivers(driver_name: str) -> tuple[str, ...]:
    """Every driver a fleet node may carry slices of: the fake-dra personality's (`driver_name`) and
    each other personality's. The fleet owns these drivers' slices on its Nodes, so a group whose
    personality changes loses the old drivers' slices, even after an apply cut short between the
    Node's update and their removal. InputError when `driver_name` is another personality's driver
    (fake-dra's groups would publish under NVIDIA's name)."""
    fixed = [n for p in PERSONALITIES.values() for n in p.fixed_driver_names]
    owners = [p.name for p in PERSONALITIES.values() if driver_name in p.fixed_driver_names]
    if owners:
        raise InputError(f"--driver-name {driver_name!r}: in a fleet it names the fake-dra personality's driver, and "
                         f"{'personalities' if len(owners) > 1 else 'personality'} {' and '.join(owners)} "
                         f"publish{'' if len(owners) > 1 else 'es'} {driver_name}; choose another name or leave it unset")
    return (driver_name, *dict.fromkeys(fixed))


def device_classes(personalities: list[str], driver_name: str) -> list[dict[str, Any]]:
    """The DeviceClasses the drivers of these personalities install (what `run` seeds into the local
    store for one node), each class once."""
    out: dict[str, dict[str, Any]] = {}
    for name in personalities:
        for driver in personality_named(name).drivers({}, own_driver_name(name, driver_name)):
            for dc in driver.device_classes():
                out.setdefault(dc["metadata"]["name"], dc)
    return list(out.values())


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
    """Group templates by key, and the inventories they are rendered from (one fake sysfs tree per
    profile, written once into a temporary directory, as `make-sysfs` would write it).
    `driver_name` names the fake-dra personality's driver (`--driver-name`)."""

    def __init__(self, driver_name: str) -> None:
        self.driver_name = driver_name
        self._templates: dict[TemplateKey, GroupTemplate] = {}
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

    def inventory(self, profile: str, config: Mapping[str, Any]) -> Inventory:
        """The inventory a group of `profile` is rendered from (its fake sysfs tree, discovered)."""
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

    def get(self, profile: str, driver_config: str, fidelity: str, features: Features,
            personality: str = DEFAULT_PERSONALITY) -> GroupTemplate:
        """The group template; ConfigError/InputError when the personality cannot render the
        profile with this config (the caller names the group)."""
        key = TemplateKey(profile, driver_config, fidelity, features, personality)
        template = self._templates.get(key)
        if template is None:
            template = self._templates[key] = self._render(key)
        return template

    def all(self) -> list[GroupTemplate]:
        return list(self._templates.values())

    def profiles(self, personality: str, config: Mapping[str, Any]) -> tuple[DriverProfile, ...]:
        """The personality's driver profiles for a group's driver config (fake-dra's named `driver_name`)."""
        return personality_named(personality).drivers(config, own_driver_name(personality, self.driver_name))

    def _render(self, key: TemplateKey) -> GroupTemplate:
        config = json.loads(key.driver_config)
        inventory = self.inventory(key.profile, config)
        features = features_for(key.fidelity, key.features)
        drivers = []
        for driver in self.profiles(key.personality, config):
            recorder = _Recorder()
            pool = driver.render(inventory, features, node_name=TEMPLATE_NODE, identities=recorder)
            holes = tuple(_holes_of(s) for s in pool.slices)
            _check_stampable(pool.slices, holes)
            drivers.append(Template(key=key, driver_name=driver.name, specs=pool.slices, slots=tuple(recorder.slots),
                                    holes=holes, warnings=pool.warnings, texts=_texts(pool.slices)))
        self.rendered += 1
        return GroupTemplate(key=key, drivers=tuple(drivers))

