"""`fake-dra demo`: the README's main command — the whole driver on a laptop, in under a minute.

It writes the bundled `demo` fake sysfs tree (2x A100-40GB, one vGPU-capable, a 100G ConnectX NIC
with 8 VFs) to a temporary directory, shows what discovery found and what the node publishes,
then runs the e2e scenarios on the local backend (the reference allocator as scheduler, the real
plugin process over real unix sockets as the kubelet sees it) and prints the report with the GPU
partition map before and after the tour scenario. No cluster, no container engine, no network.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from driver import DEFAULT_DRIVER_NAME
from driver.commands import common
from driver.tables import terminal_width
from driver.errors import InputError

TOUR = "tour"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the local demo: fake node, published slices, e2e scenarios, partition maps",
        description="Discover the bundled fake node, print its inventory and ResourceSlices, run the e2e "
        "scenarios locally and print the report with the GPU partition map before and after.",
    )
    parser.add_argument("--profile", default="demo",
                        help="fake sysfs profile of the node (default demo; the scenarios are written for demo, "
                             "so another profile needs --inventory-only)")
    parser.add_argument("--scenario", action="extend", nargs="+", default=[], metavar="NAME",
                        help="run only these scenarios (repeatable; default all)")
    parser.add_argument("--inventory-only", action="store_true", help="stop after inventory and slices")
    parser.add_argument("--junit", metavar="FILE", help="also write the e2e report as JUnit XML")
    common.add_flag(
        parser, "--features", None,
        "gates G=true|false,... for the inventory and for every scenario, on top of each scenario's own gates "
        "(checks that rely on a scenario's gates may then fail: that is what the gate changes)")
    common.add_flag(parser, "--personality", None, "show the node as this personality publishes it (nvidia: "
                    "NVIDIA's GPU and SR-IOV drivers) and run only its scenarios (default fake-dra)")
    parser.set_defaults(func=run)


def _section(out: TextIO, title: str) -> None:
    out.write(f"\n== {title} {'=' * max(0, terminal_width() - 4 - len(title))}\n")
    out.flush()


def _wrapped(text: str, indent: str = "    ") -> str:
    return textwrap.fill(text, width=terminal_width(), subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)


def _inventory_lines(inv: Any) -> list[str]:
    lines = []
    for g in inv.gpus:
        vgpu = f", vGPU types: {len(g.mdev_types)}" if g.mdev_types else ""
        lines.append(f"gpu-{g.index}  {g.pci.address}  {g.model.product_name}  {g.model.memory_mib // 1024} GiB, "
                     f"{g.model.multiprocessors} SMs, MIG {'yes' if g.model.mig_capable else 'no'}{vgpu}")
    for n in inv.nics:
        speed = f"{n.speed_mbps // 1000} Gb/s" if n.speed_mbps else "link down"
        lines.append(f"nic-{n.index}  {n.pci.address}  {n.product_name or 'NIC'} ({n.interface})  {speed}, "
                     f"{n.num_vfs}/{n.total_vfs} VFs enabled")
    lines.extend(f"warning: {w}" for w in inv.warnings)
    return lines


def _type(device: dict) -> str:
    """The device's `type` attribute (a driver without one, the SR-IOV driver's VFs: "device")."""
    value = device["attributes"].get("type")
    return next(iter(value.values())) if value else "device"


def _slice_lines(pool: Any, driver: str = DEFAULT_DRIVER_NAME) -> list[str]:
    devices = pool.devices()
    types = Counter(_type(d) for d in devices.values())
    groups: dict[str, set[str]] = {}
    for d in devices.values():
        t = _type(d)
        for cc in d.get("consumesCounters") or []:
            groups.setdefault(t, set()).update(cc.get("compatibilityGroups") or [])
    lines = [
        ("" if driver == DEFAULT_DRIVER_NAME else f"{driver}: ") +
        f"{len(pool.slices)} slices in pool {pool.name!r}: {len(pool.counter_sets())} counter sets, {len(devices)} devices "
        f"({', '.join(f'{n} {t}' for t, n in sorted(types.items()))})",
    ]
    for t in sorted(groups):
        lines.append(_wrapped(f"  {t:<10} compatibility groups: {', '.join(sorted(groups[t])) or '(none)'}",
                              indent=" " * 35))
    for name, cs in pool.counter_sets().items():
        shown = ", ".join(f"{k}={v.get('value')}" for k, v in list(cs["counters"].items())[:3])
        more = len(cs["counters"]) - 3
        lines.append(f"  counter set {name}: {shown}{f' (+{more} more)' if more > 0 else ''}")
    return lines


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from driver.discovery import discover, make_sysfs, profile_named
    from driver.e2e import partition_map
    from driver.e2e.scenario import load_scenarios
    from driver.e2e.local import NODE as DEMO_NODE
    from driver.commands._personality import profiles_from_args
    from driver.hardware import load_catalog
    from driver.personality import DEFAULT_PERSONALITY
    from driver.slices import to_resource_slices

    out = out or sys.stdout
    if args.junit:
        common.output_file(args.junit, "--junit")  # before a minute of scenarios, not after
    features = common.features_from(args)
    profile_named(args.profile, "--profile")  # a typo is not "another profile": name the known ones
    if args.profile != "demo" and not args.inventory_only:
        raise InputError(
            f"--profile {args.profile}: the e2e scenarios are written for the 'demo' node (their steps name its "
            "devices), so they would not test anything on another one; add --inventory-only to look at "
            f"{args.profile}, or run scenarios written for it with `fake-dra e2e --scenarios-dir DIR`")
    personality = getattr(args, "personality", None) or DEFAULT_PERSONALITY
    profiles = profiles_from_args(args, config={})
    # A typo'd --scenario is refused before the inventory, not after it.
    scenarios = None if args.inventory_only else [s for s in load_scenarios(names=args.scenario)
                                                  if s.personality == personality or args.scenario]
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="fake-dra-demo-"))
    try:
        sysfs = work / "sysfs"
        make_sysfs(args.profile, sysfs)
        inventory = discover(sysfs, load_catalog())
        pools = [(p.name, p.render(inventory, features, node_name=DEMO_NODE)) for p in profiles]
        _section(out, f"Node inventory (fake sysfs profile {args.profile!r} in {sysfs})")
        out.write("\n".join(_inventory_lines(inventory)) + "\n")
        off = [g for g, on in features.as_gates().items() if not on]
        as_whom = "" if personality == DEFAULT_PERSONALITY else f", as the {personality} personality publishes them"
        _section(out, f"ResourceSlices of node {DEMO_NODE} (gates off: {', '.join(off) or 'none'}{as_whom})")
        out.write("\n".join(line for driver, pool in pools for line in _slice_lines(pool, driver)) + "\n")
        if personality == DEFAULT_PERSONALITY:  # the map draws fake-dra's counters and groups
            _section(out, "GPU partition map (before: nothing allocated)")
            out.write(partition_map.render(to_resource_slices(pools[0][1]), [], DEFAULT_DRIVER_NAME) + "\n")
        if args.inventory_only:
            return 0
        return _run_e2e(args, scenarios, out, started)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_e2e(args: argparse.Namespace, scenarios: list, out: TextIO, started: float) -> int:
    from driver.commands.e2e import default_jobs
    from driver.e2e import partition_map
    from driver.e2e.local import LocalBackend
    from driver.e2e.manifests import claim_object
    from driver.e2e.report import RunReport, progress_line, render_summary, render_table, write_junit
    from driver.e2e.runner import run_all
    from driver.features import parse_gates

    gates = parse_gates(args.features) if args.features else {}
    if gates:
        # The cluster the scenarios run on gets these gates, over what each scenario asks for.
        scenarios = [dataclasses.replace(s, features=s.features.with_gates(gates)) for s in scenarios]
    finals: dict = {}
    jobs = default_jobs()
    _section(out, f"E2E scenarios on the local backend ({len(scenarios)}, {jobs} at a time)")
    out.write(_wrapped("The reference allocator plays kube-scheduler, the harness plays the kubelet over the "
                       "real plugin's gRPC sockets, the local object store plays the API server.", indent="") + "\n")
    if gates:
        shown = ", ".join(f"{g}={'true' if v else 'false'}" for g, v in gates.items())
        out.write(_wrapped(f"--features: every scenario runs with {shown}, over its own gates; checks that "
                           "rely on a scenario's gates may fail, which shows what the gate changes.", indent="") + "\n")
    out.flush()

    notes = {s.name: gate_note(s.features) for s in scenarios}

    def announce(result: Any) -> None:
        out.write(f"  {progress_line(result)}{notes.get(result.name, '')}\n")
        out.flush()

    report = run_all(scenarios, lambda: LocalBackend(final_states=finals), claim_object, jobs=jobs,
                     on_result=announce)
    tour = next((r for r in report.scenarios if r.name == TOUR), None)
    if tour is not None:
        scenario = next(s for s in scenarios if s.name == TOUR)
        _section(out, f"Scenario {TOUR!r} step by step")
        out.write(_wrapped(tour.reason, indent="") + "\n\nWhat each step asks for:\n")
        out.write("\n".join(step_lines(scenario)) + "\n\nWhat was checked:\n")
        out.write(render_table(RunReport(report.backend, [tour])) + "\n")
    _section(out, f"E2E report: {len(scenarios)} scenarios")
    out.write(render_summary(report) + "\n")
    final = finals.get(TOUR)
    if final is not None:
        _section(out, f"GPU partition map (after scenario {TOUR!r})")
        out.write(partition_map.render(final.slices, final.claims, DEFAULT_DRIVER_NAME) + "\n")
    if args.junit:
        write_junit(report, args.junit)
        out.write(f"\nJUnit XML written to {args.junit}\n")
    out.write(f"\ndemo finished in {time.monotonic() - started:.1f} s\n")
    return 0 if report.ok else 1


def gate_note(features: Any) -> str:
    """The gates a scenario runs with that a Kubernetes 1.37 cluster does not have by default, e.g.
    `, with DRASharedConsumableCapacity=true` (KEP-5941 valueFrom): the demo says when it turns a gate
    on or off, rather than only the scenario file's comment."""
    from driver.features import Features

    default = Features().as_gates()
    changed = [f"{g}={'true' if on else 'false'}" for g, on in features.as_gates().items() if default.get(g) != on]
    return f", with {', '.join(changed)}" if changed else ""


_REF_WORDS = {"claim": "of claim", "device": "of the device with"}


def _readable_selector(expression: str) -> str:
    """A request's CEL selector with the driver's attribute prefix and the harness's ${...}
    references spelled out, e.g. `profile == "1g.5gb" && parentUUID == <uuid of gpu-0>`."""
    text = re.sub(r'device\.attributes\["[^"]+"\]\.', "", expression)

    def ref(m: re.Match[str]) -> str:
        kind, target, attr = m.groups()
        target = target.removeprefix("name=")
        return f"<{attr} of {'claim ' if kind == 'claim' else ''}{target}>"

    return re.sub(r'"?\$\{(claim|device):([a-zA-Z0-9=,_-]+)\.([A-Za-z]+)\}"?', ref, text)


def _step_text(step: Any) -> str:
    a = step.args
    if step.action == "claim":
        parts = []
        for req in a["requests"]:
            what = f"{int(req.get('count', 1))} x {req['class']}"
            if req.get("capacity"):
                what += " with " + ", ".join(f"{k} {v}" for k, v in dict(req["capacity"]).items())
            if req.get("selector"):
                what += f" where {_readable_selector(str(req['selector']))}"
            parts.append(f"request {req['name']}: {what}")
        return f"claim {a['name']}: " + "; ".join(parts)
    if step.action == "pod":
        uses = ", ".join(a.get("claims") or []) or "-"
        group = f" in podgroup {a['podgroup']}" if a.get("podgroup") else ""
        sched = " (scheduled by a scheduler that ignores compatibility groups)" if a.get("scheduler") == "skewed" else ""
        return f"pod {a['name']} uses claim {uses}{group}{sched}"
    if step.action == "fault":
        return f"fault device {a['device']}" + (" cleared" if a.get("clear") else f": {a.get('message', 'simulated fault')}")
    if step.action == "gates":
        return "gates " + ", ".join(f"{g}={'true' if v else 'false'}" for g, v in dict(a["set"]).items())
    target = a.get("name") or a.get("signal") or ""
    return f"{step.action} {target}".rstrip()


def step_lines(scenario: Any) -> list[str]:
    """Each step of a scenario as a sentence: what is requested, and why when the file says so."""
    out = []
    for step in scenario.steps:
        text = f"{step.index:>3}. {_step_text(step)}" + (f" -- {step.why}" if step.why else "")
        out.append(_wrapped(text, indent="       "))
    return out
