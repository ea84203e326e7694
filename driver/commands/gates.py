"""`fake-dra gates`: print the detected feature gates per component and where each value came from."""

from __future__ import annotations

import argparse
import json

from driver.commands import common
from driver.commands.publish import add_gate_flags, backend_from_args, detector_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "gates", help="detect DRA feature gates of kube-apiserver and kube-scheduler",
        description="Probe the apiserver (dry-run), read scheduler metrics, and show the effective gates.")
    common.add_node_name(parser)
    common.add_driver_name(parser)
    common.add_features(parser)
    common.add_api_flags(parser)
    add_gate_flags(parser)
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text", help="output format")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    backend = backend_from_args(args, write=False)
    report = detector_from_args(args, backend, 30.0).detect()
    if args.output == "json":
        data = report.as_dict()
        data["backend"] = backend.kind
        print(json.dumps(data, indent=2))
        return 0
    print(f"backend: {backend.kind}")
    if report.release:
        print(f"kubernetes: {report.release} (its gate table decides which gates exist)")
    width = max(len(g) for g in report.gates)
    for gate, s in report.gates.items():
        print(f"{gate:<{width}}  effective={_b(s.effective):<5}  ({s.effective_source})")
        print(f"{'':<{width}}    apiserver={_b(s.apiserver):<7} via {s.apiserver_source}")
        print(f"{'':<{width}}    scheduler={_b(s.scheduler):<7} via {s.scheduler_source}")
    print(f"features: {report.features}")
    for w in report.warnings:
        print(f"warning: {w}")
    return 0


def _b(v: bool | None) -> str:
    return "unknown" if v is None else ("on" if v else "off")
