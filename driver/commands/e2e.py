"""`fake-dra e2e`: run the MIG/vGPU scenarios on the local backend or against a kind cluster.

    fake-dra e2e [--backend local|kind] [--scenario NAME ...] [--junit FILE]
    fake-dra e2e --list
    fake-dra e2e --render-manifests deploy     (regenerate deploy/ DeviceClasses + examples)

Exit 0 when every scenario passed (or was skipped), 1 when a check failed, 2 for bad input.
"""

from __future__ import annotations

import argparse
import os
import sys

from driver.commands import common
from driver.errors import InputError


def default_jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "e2e",
        help="run the e2e scenarios (local: no cluster; kind: against $KUBECONFIG)",
        description="Run e2e scenarios. local: the reference allocator plays the scheduler and the harness "
        "plays the kubelet over the real plugin sockets. kind: a real cluster; the reference allocator "
        "predicts each outcome and the harness compares it with what the cluster did.",
    )
    parser.add_argument("--backend", choices=["local", "kind"], default="local", help="where to run (default local)")
    parser.add_argument("--scenario", action="extend", nargs="+", default=[], metavar="NAME",
                        help="run only this scenario (repeatable; default all)")
    parser.add_argument("--scenarios-dir", default=None, help="directory of scenario YAML files (default: bundled)")
    parser.add_argument("--junit", metavar="FILE",
                        help="write a JUnit XML report (its directory must exist; checked before the run)")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument("--keep", action="store_true", help="local: keep each scenario's temp dir (logs, store, CDI)")
    parser.add_argument("--jobs", type=int, default=default_jobs(),
                        help="local: scenarios run side by side (default: CPUs, at most 4)")
    parser.add_argument("--render-manifests", metavar="DEPLOY_DIR",
                        help="write the generated manifests (DeviceClasses, examples) under DEPLOY_DIR and exit")
    common.add_flag(parser, "--kubeconfig", None, "kind: kubeconfig (default $KUBECONFIG)")
    common.add_driver_name(parser)
    common.add_flag(parser, "--personality", None, "run only the scenarios of this personality (a scenario names "
                    "its own with `personality:`; default: every scenario)")
    parser.set_defaults(func=run)


def _progress(result) -> None:
    """Each scenario as it finishes, on stderr (the report itself goes to stdout at the end)."""
    from driver.e2e.report import progress_line

    print(progress_line(result), file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from driver.e2e.manifests import claim_object, render_deploy_files
    from driver.e2e.report import render_table, write_junit
    from driver.e2e.runner import run_all
    from driver.e2e.scenario import load_scenarios

    # Output paths first: a bad --junit must not surface only after every scenario ran.
    junit = common.output_file(args.junit, "--junit") if args.junit else None
    deploy = common.output_dir(args.render_manifests, "--render-manifests") if args.render_manifests else None
    if args.jobs < 1:
        raise InputError(f"--jobs: must be at least 1, got {args.jobs}")
    common.require_driver_name(args)
    scenarios = load_scenarios(args.scenarios_dir, args.scenario)
    if args.personality:
        from driver.personality import personality_named

        personality_named(args.personality)  # a typo is an error, not an empty run
        scenarios = [s for s in scenarios if s.personality == args.personality]
    if args.list:
        for s in scenarios:
            tags = ("" if s.kind else "(local only) ") + (f"[{s.personality}] " if s.personality != "fake-dra" else "")
            print(f"{s.name:<24} {tags}{s.reason}")
        return 0
    if deploy is not None:
        root = deploy
        for rel, text in render_deploy_files(load_scenarios(args.scenarios_dir), args.driver_name).items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            print(f"wrote {target}")
        return 0

    def make_claim(name, requests, **kw):
        return claim_object(name, requests, driver_name=args.driver_name, **kw)

    if args.backend == "local":
        from driver.e2e.local import LocalBackend

        kept: list[tuple[str, str]] = []
        report = run_all(scenarios, lambda: LocalBackend(driver_name=args.driver_name, keep=args.keep, kept=kept),
                         make_claim, jobs=args.jobs, on_result=_progress)
        for name, directory in sorted(kept):
            print(f"kept {name}: {directory} (store/, cdi/, state/, plugin.log)")
    else:
        from driver.e2e.kind import KindBackend, unreachable_reason

        why = unreachable_reason(args.kubeconfig)
        if why is not None:
            print(f"fake-dra e2e --backend kind: skipped: {why}", file=sys.stderr)
            return 0
        backend = KindBackend(kubeconfig=args.kubeconfig, driver_name=args.driver_name)
        report = run_all(scenarios, lambda: backend, make_claim, skip=backend.skip_reason, on_result=_progress)
    print(render_table(report))
    if junit is not None:
        write_junit(report, junit)
        print(f"JUnit XML written to {junit}")
    return 0 if report.ok else 1
