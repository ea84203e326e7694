#!/usr/bin/env python3
"""Benchmark the CEL selector limits (driver.celexpr.limits) and print the figures, with the load.

1. The probes of issue 29 (7 and 9 nested all(), 6 nested map(), over literal lists and over a
   device's attributes): time and peak memory, each in a fresh process, to refuse the selector at
   write (check_selector_limits) and to stop it at run time on a demo GPU (Selector.matches).
   Without the limits the CEL library took 13 s, >20 s and 280-461 MB on them.
2. What the limits cost: parsing and estimating a selector at compile time (once per expression),
   and the check before each evaluation on a device.
3. How long a selector just under the limit runs in our evaluator (cel-go: ~0.1 s), by kind of
   work: loops over literals, over the device's attributes, and calls into Python functions.

Usage: .venv/bin/python hack/bench_cel_limits.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DRIVER = "fake-dra.example.com"
ATTRS = f'device.attributes["{DRIVER}"]'
TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"


def nested(depth: int, over: str = TEN, method: str = "all") -> str:
    inner = "v0 == v0" if method == "all" else "v0"
    for i in reversed(range(depth)):
        inner = f"{over}.{method}(v{i}, {inner})"
    return inner if method == "all" else f"{inner}.size() > 0"


PROBES = {
    "7 nested all() over a list": nested(7),
    "9 nested all() over a list": nested(9),
    "6 nested map() over a list": nested(6, method="map"),
    "7 nested all() over attributes": nested(7, ATTRS),
    "6 nested map() over attributes": nested(6, ATTRS, "map"),
}

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from driver.celexpr import CelRuntimeError, check_selector_limits, compile_selector, device_variable
from driver.errors import InputError
expression, phase, device_json = sys.argv[2], sys.argv[3], sys.argv[4]
device = device_variable("fake-dra.example.com", json.loads(device_json))
compile_selector("device.driver == 'x'", "warm-up")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
try:
    if phase == "write":
        check_selector_limits(expression, "selector")
        outcome = "accepted"
    else:
        outcome = str(compile_selector(expression, "selector").matches(device))
except (InputError, CelRuntimeError) as exc:
    outcome = str(exc).split(": ", 1)[-1][:60]
took = time.perf_counter() - t0
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"ms": took * 1000, "rss_growth_kib": after - before, "outcome": outcome}))
"""


def demo_gpu() -> dict:
    """A GPU of the demo fake node as the driver publishes it (its attributes and capacities)."""
    from driver.discovery import discover, make_sysfs
    from driver.features import Features
    from driver.hardware import load_catalog
    from driver.slices import render_pool

    with tempfile.TemporaryDirectory() as tmp:
        make_sysfs("demo", Path(tmp) / "sys")
        pool = render_pool(discover(Path(tmp) / "sys", load_catalog()), Features.all_on(), node_name="n1",
                           driver_name=DRIVER)
    return pool.devices()["gpu-0"]


def probes(device: dict) -> None:
    print(f"1. Issue 29's probes on {device['name']} ({len(device.get('attributes') or {})} attributes), "
          "each in a fresh process")
    print(f"   {'probe':34s} {'refused at write':>24s} {'stopped at run time':>24s}")
    for name, expression in PROBES.items():
        cells = []
        for phase in ("write", "run"):
            out = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), expression, phase, json.dumps(device)],
                                 capture_output=True, text=True, check=True, timeout=600)
            r = json.loads(out.stdout)
            cells.append(f"{r['ms']:7.1f} ms, +{r['rss_growth_kib']:5d} KiB")
        print(f"   {name:34s} {cells[0]:>24s} {cells[1]:>24s}")


def overhead(device: dict, quick: bool) -> None:
    from driver.celexpr import compile_selector, device_variable
    from driver.celexpr.environment import _compile
    from driver.celexpr.limits import selector_costs

    print("2. What the limits cost")
    typical = [f'device.driver == "{DRIVER}" && {ATTRS}.type == "mig"',
               f'{ATTRS}.profile == "1g.5gb" && device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("4Gi"))',
               f'{ATTRS}.productName.startsWith("NVIDIA") || {ATTRS}.type in ["gpu", "mig", "vgpu"]',
               nested(3, ATTRS)]
    runs = 200 if quick else 2000
    for expression in typical:
        t0 = time.perf_counter()
        for _ in range(runs // 10):
            selector_costs(expression)
        estimate_us = (time.perf_counter() - t0) / (runs // 10) * 1e6
        _compile.cache_clear()
        t0 = time.perf_counter()
        for _ in range(runs // 10):
            _compile.cache_clear()
            _compile(expression)
        compile_us = (time.perf_counter() - t0) / (runs // 10) * 1e6
        print(f"   compile {compile_us:7.0f} us, of which the estimate {estimate_us:6.0f} us: {expression[:70]}")
    variable = device_variable(DRIVER, device)
    selector = compile_selector(typical[0], "bench")
    n = 20000 if quick else 200000
    t0 = time.perf_counter()
    for _ in range(n):
        selector.check_budget(variable)
    print(f"   check before each evaluation on a device: {(time.perf_counter() - t0) / n * 1e9:.0f} ns")


def near_the_limit(device: dict) -> None:
    from driver.celexpr import compile_selector, device_variable
    from driver.celexpr.limits import runtime_bound

    print("3. Selectors just under the limit, in our evaluator (cel-go: ~0.1 s each)")
    variable = device_variable(DRIVER, device)
    cases = {
        "loops over literals": nested(5),
        "loops over the device's attributes": nested(5, ATTRS),
        "calls of quantity() in loops": f'{TEN}.all(a, {TEN}.all(b, {TEN}.all(c, '
                                        'quantity("1Gi").isGreaterThan(quantity("1Mi")))))',
        "calls of lowerAscii() in loops": f'{TEN}.all(a, {TEN}.all(b, {TEN}.all(c, "ABC".lowerAscii() == "abc")))',
    }
    for name, expression in cases.items():
        selector = compile_selector(expression, "bench")
        bound = runtime_bound(expression, variable.bounds)
        t0 = time.perf_counter()
        try:
            outcome = selector.matches(variable)
        except Exception as exc:  # noqa: BLE001 - printed
            outcome = f"stopped: {exc}"
        took = time.perf_counter() - t0
        print(f"   {name:34s} bound on this device {bound:>9,d} units: {took:6.2f} s "
              f"({took * 1e9 / max(1, bound):5.0f} ns/unit) -> {outcome}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    device = demo_gpu()
    probes(device)
    overhead(device, args.quick)
    near_the_limit(device)


if __name__ == "__main__":
    main()
