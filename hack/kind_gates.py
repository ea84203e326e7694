#!/usr/bin/env python3
"""Refuse a kind config that names a feature gate its Kubernetes release does not have.

kube-apiserver, kube-scheduler, kube-controller-manager and the kubelet refuse to start when given a
gate their release lacks (1.38 removed `DynamicResourceAllocation`, kubernetes/kubernetes#141946;
1.36 has no `DRADeviceCompatibilityGroups`), or a locked gate set to the other value. A kind config's
top-level `featureGates` reach all four, so hack/kind-create.sh asks this script first and the
failure is one line naming the gate instead of a cluster that never comes up.

    hack/kind_gates.py --image kindest/node:v1.38.0 hack/kind-config.yaml
    hack/kind_gates.py --version 1.38 hack/kind-config.yaml

Exit 0 (the gates fit, or the image names no version: then it says so and checks nothing), 2 with
one line per problem. The tables are driver/features.py's (stdlib only: runs without the venv).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from driver.errors import InputError  # noqa: E402
from driver.features import KUBERNETES_VERSIONS, kube_minor, version_gate_errors  # noqa: E402


def feature_gates(config: Path) -> dict[str, bool]:
    """The `featureGates:` mapping of a kind config: `NAME: true|false` lines (JSON and YAML flow
    maps included), read without a YAML library so the script runs on a bare python3."""
    text = config.read_text()
    block = re.search(r"^featureGates:[ \t]*(\{.*\})?[ \t]*\n((?:[ \t]+\S.*\n|[ \t]*#.*\n|\s*\n)*)", text, re.M)
    if not block:
        return {}
    if block.group(1):
        flow = re.sub(r"([A-Za-z0-9]+)\s*:", r'"\1":', block.group(1))
        return {k: bool(v) for k, v in json.loads(flow).items()}
    gates = {}
    for line in block.group(2).splitlines():
        m = re.match(r"^\s+([A-Za-z0-9]+):\s*(true|false)\s*(#.*)?$", line, re.I)
        if m:
            gates[m.group(1)] = m.group(2).lower() == "true"
    return gates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--version", help="Kubernetes release, e.g. 1.38 or v1.38.0")
    group.add_argument("--image", help="kind node image, e.g. kindest/node:v1.38.0 (the tag names the release)")
    parser.add_argument("config", type=Path)
    args = parser.parse_args(argv)
    version = args.version
    if args.image:
        tag = re.search(r":(v\d+\.\d+[^@]*)", args.image)
        if not tag:
            print(f"kind_gates: {args.image}: no version in the tag; feature gates not checked", file=sys.stderr)
            return 0
        version = tag.group(1)
    try:
        minor = kube_minor(version, "--version")
        if minor not in KUBERNETES_VERSIONS:
            print(f"kind_gates: no gate table for Kubernetes {minor} (known: {', '.join(KUBERNETES_VERSIONS)}); "
                  f"feature gates of {args.config} not checked", file=sys.stderr)
            return 0
        errors = version_gate_errors(feature_gates(args.config), minor)
    except (InputError, OSError, ValueError) as exc:
        print(f"kind_gates: {args.config}: {exc}", file=sys.stderr)
        return 2
    for err in errors:
        print(f"{args.config}: featureGates.{err}", file=sys.stderr)
    return 2 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
