#!/usr/bin/env python3
"""Benchmark strict input validation (driver.schema) and print the figures.

1. Start-up share in `fake-dra allocate` of one claim on the demo node (the command's median wall
   time is printed too, interpreter start included): importing driver.schema
   (measured in a fresh interpreter that has already imported what `allocate` imports anyway),
   loading the compact schema, and validating every document (the project's DeviceClasses, the
   demo node's slices, one claim): first call (compiles the schema nodes it reaches) and steady.
   Budget (issue 19): the whole `allocate` under 300 ms wall, validation a small share of it.
2. Fleet-size input: the fleet benchmark's (hack/fleet_input.py: N nodes of 8 A100s with 19 MIG
   devices each; 1,000 nodes are 131 MB of JSON, more than the issue's 68 MB), read as `allocate`
   reads it, then one check per object; MB/s of JSON checked. The walk is linear: a dict lookup and
   a type check per field.

Usage: .venv/bin/python hack/bench_schema.py [--nodes N] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from driver.discovery import discover  # noqa: E402
from driver.discovery.fakesysfs import make_sysfs  # noqa: E402
from driver.e2e.manifests import device_classes  # noqa: E402
from driver.features import Features  # noqa: E402
from driver.hardware import load_catalog  # noqa: E402
from driver.slices import render_pool, to_resource_slices  # noqa: E402

DRIVER = "fake-dra.example.com"


def node_slices(profile: str, node: str) -> list[dict]:  # the demo node of part 1
    sysfs = Path(tempfile.mkdtemp(prefix="fdra-bench-")) / "sys"
    make_sysfs(profile, sysfs)
    return to_resource_slices(render_pool(discover(sysfs, load_catalog()), Features(), node_name=node, driver_name=DRIVER))


def import_ms(runs: int) -> float:
    """Median cost of `import driver.schema` on top of what `fake-dra allocate` imports anyway."""
    code = ("import time, driver.allocator, driver.commands.allocate as _a, driver.features, driver.model.quantity\n"
            "import sys; [sys.modules.pop(m) for m in list(sys.modules) if m.startswith('driver.schema')]\n"
            "t = time.perf_counter(); import driver.schema; print((time.perf_counter() - t) * 1000)")
    # driver.commands.allocate imports driver.schema itself: measure a fresh import of it after dropping it.
    times = [float(subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout)
             for _ in range(runs)]
    return statistics.median(times)


def allocate_wall_ms(docs: list[dict], runs: int) -> float:
    """Median wall time of the whole command, interpreter start included, on these documents."""
    with tempfile.TemporaryDirectory(prefix="fdra-bench-") as tmp:
        path = Path(tmp) / "input.yaml"
        path.write_text("---\n".join(json.dumps(d) + "\n" for d in docs))
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "driver", "allocate", "--node-name", "node-1", str(path)],
                           cwd=ROOT, capture_output=True, check=True)
            times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def startup(runs: int) -> None:
    from driver import schema
    from driver.schema import compact

    docs = [*device_classes(), *node_slices("demo", "node-1"),
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                 "deviceClassName": f"mig.{DRIVER}",
                 "selectors": [{"cel": {"expression": 'device.attributes["fake-dra.example.com"].profile == "1g.5gb"'}}]}}]}}}]
    compact.load_data.cache_clear()
    compact.schema_for.cache_clear()
    t0 = time.perf_counter()
    compact.load_data()
    t1 = time.perf_counter()
    for doc in docs:
        schema.check(doc, Features(), "bench")
    t2 = time.perf_counter()
    steady = []
    for _ in range(runs):
        t = time.perf_counter()
        for doc in docs:
            schema.check(doc, Features(), "bench")
        steady.append(time.perf_counter() - t)
    size = len(json.dumps(docs))
    total = allocate_wall_ms(docs, min(runs, 5))
    print(f"`fake-dra allocate` of one claim on the demo node ({len(docs)} documents, {size / 1000:.0f} kB): "
          f"{total:.0f} ms wall (median); of which validation:")
    print(f"  import driver.schema      {import_ms(min(runs, 5)):6.1f} ms (median, fresh interpreter)")
    print(f"  load the compact schema   {(t1 - t0) * 1000:6.1f} ms")
    print(f"  validate, first call      {(t2 - t1) * 1000:6.1f} ms (compiles the nodes it reaches)")
    print(f"  validate, steady          {statistics.median(steady) * 1000:6.1f} ms (median of {runs})")


def fleet(nodes: int) -> None:
    """The fleet benchmark's own input (hack/fleet_input.py), read as `fake-dra allocate` reads it:
    driver.yamlio's JSON path with the garbage collector off, then one check per object."""
    import gc
    import importlib.util

    from driver import schema
    from driver.yamlio import load_all

    spec = importlib.util.spec_from_file_location("fleet_input", ROOT / "hack" / "fleet_input.py")
    assert spec is not None and spec.loader is not None
    fleet_input = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fleet_input)
    with tempfile.TemporaryDirectory(prefix="fdra-bench-") as tmp:
        cluster, _, _ = fleet_input.write(Path(tmp), nodes)
        text = cluster.read_text()
    gc.disable()
    try:
        t0 = time.perf_counter()
        docs = load_all(text, cluster.name)
        t1 = time.perf_counter()
        for doc in docs:
            schema.check(doc, Features(shared_consumable_capacity=True), "bench")
        t2 = time.perf_counter()
    finally:
        gc.enable()
    mb = len(text) / 1e6
    print(f"fleet: hack/fleet_input.py, {nodes} nodes, {len(docs)} objects, {mb:.1f} MB of JSON (GC off, as allocate reads):")
    print(f"  read (driver.yamlio)      {t1 - t0:6.2f} s")
    print(f"  validate every object     {t2 - t1:6.2f} s ({mb / (t2 - t1):.0f} MB/s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000, help="fleet nodes (default 1,000: 131 MB)")
    parser.add_argument("--runs", type=int, default=20, help="steady-state repetitions (default 20)")
    args = parser.parse_args()
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    startup(args.runs)
    fleet(args.nodes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
