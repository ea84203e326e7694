"""kube-scheduler's own DRA benchmark workloads (scheduler_perf, read from ../shared/upstream) apply
unchanged and schedule as kube-scheduler schedules them: small instances, through the renderer and
runner hack/bench_scheduler_perf.py uses."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "hack"))

import bench_scheduler_perf as bench  # noqa: E402
import gotemplate  # noqa: E402
import scheduler_perf as sp  # noqa: E402

from driver.store import ObjectStore  # noqa: E402

UPSTREAM = sp.find_upstream(ROOT)
needs_upstream = pytest.mark.skipif(UPSTREAM is None, reason="../shared/upstream/scheduler_perf is not here")


def _workloads() -> dict[str, sp.Workload]:
    return {w.label: w for w in sp.load_workloads(UPSTREAM)} if UPSTREAM else {}


@needs_upstream
@pytest.mark.parametrize("label", [
    "SchedulingWithResourceClaimTemplate/fast",  # one claim from a template per pod, 1 DRA node of 10 devices
    "SchedulingWithResourceClaimTemplate/match_fast",  # 5 requests with matchAttribute on the PCI root
    "SchedulingWithResourceClaim/fast",  # five pods share each claim
    "Partitionable/fast",  # pools published for every node by nodeSelector, counters, pre-allocated claims
    "ExtendedResource/fast",  # example.com/gpu-N served by DeviceClasses (KEP-5004)
])
def test_a_small_instance_binds_every_pod_and_books_no_device_twice(label, tmp_path):
    workload = _workloads()[label]
    result = bench.run(workload, tmp_path, in_process=True)
    assert result.measured > 0
    assert (result.bound, result.double_booked) == (result.measured, 0)


@needs_upstream
def test_the_index_count_instance_scales_the_objects(tmp_path):
    """SchedulingWithResourceClaimTemplate with 3 DRA nodes: 3 nodes, 3 slices of 10 devices each
    on their own node, and the pods (generateName) named by the store."""
    workload = _workloads()["SchedulingWithResourceClaimTemplate/fast"]
    workload.params.update(nodesWithDRA=3, nodesWithoutDRA=0, measurePods=25)
    store = ObjectStore(tmp_path / "store")
    setup = sp.set_up(store, workload)
    assert sorted(setup.nodes) == ["scheduler-perf-dra-0", "scheduler-perf-dra-1", "scheduler-perf-dra-2"]
    slices = store.list("resourceslices")
    assert [(s["spec"]["nodeName"], len(s["spec"]["devices"])) for s in slices] == [
        ("scheduler-perf-dra-0", 10), ("scheduler-perf-dra-1", 10), ("scheduler-perf-dra-2", 10)]
    assert sp.create_measured(store, workload, setup) == 25
    names = [p["metadata"]["name"] for p in store.list("pods", "test")]
    assert len(names) == 25 and all(n.startswith("test-dra") and len(n) == len("test-dra") + 5 for n in names)
    result = bench.schedule(store, workload, in_process=True)
    assert result[0] > 0
    assert bench.bound_in(store, {"test"}) == 25 and bench.double_booked(store) == 0


def test_go_templates_as_scheduler_perf_renders_them():
    data = {"Index": 7, "Count": 9, "numDevices": "3", "selectors": [{"cel": {"expression": "a < b"}}]}
    source = ("{{$n := or .numDevices 10}}{{$r := or .numRoots 2}}{{range ($n | Int)}}[{{.}}:{{Mod . $r}}]{{end}} "
              "{{DivideInt .Index 5}} {{SubtractInt 3 .Index}} {{.missing}} {{(or .selectors nil) | JSON}} "
              "{{(or .constraints nil) | JSON}} {{if ge .Index 5}}big{{else if ge .Index 2}}mid{{else}}small{{end}} "
              "{{- \" x\" }}")
    assert gotemplate.render(source, data) == \
        '[0:0][1:1][2:0] 1 -4 <no value> [{"cel":{"expression":"a \\u003c b"}}] null big x'


@pytest.mark.parametrize("source, message", [
    ("{{range .x}}", "no {{end}}"),
    ("{{Nope 1}}", "function 'Nope' not defined"),
    ("{{DivideInt 1 0}}", "DivideInt: division by zero"),
    ("{{Int .missing}}", "Int: cannot convert <no value>"),
    ("{{end}}", "unexpected end"),
])
def test_what_the_renderer_cannot_render_is_named(source, message):
    with pytest.raises(gotemplate.TemplateError, match=message.replace("(", r"\(").replace("{", r"\{")):
        gotemplate.render(source, {}, "t.yaml")


_MEASURE_TWO = """
import json, sys
import bench_scheduler_perf as bench
big = bench.run_child([sys.executable, "-c", "x = bytearray(300 * 2**20)"])
small = bench.run_child([sys.executable, "-c", "import sys; print('done'); sys.exit(3)"])
print(json.dumps([big, small]))
"""


def test_each_schedule_process_is_measured_on_its_own():
    """A child's peak RSS is its own, not the largest of every child before it (RUSAGE_CHILDREN).
    Measured from a small parent, as the benchmark runs: a child's ru_maxrss starts from what its
    parent held when it forked, and this test's process may hold hundreds of MB by then."""
    import json
    import subprocess

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "hack"), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", _MEASURE_TWO], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=True)
    big, small = json.loads(done.stdout.splitlines()[-1])
    assert big[0] == 0 and big[4] > 300
    assert (small[0], small[1]) == (3, "done\n") and small[4] < 150
