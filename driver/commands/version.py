"""`fake-dra version`: fake-dra's version and the Kubernetes version it plays, as `kubectl version` prints them.

    fake-dra version              Client Version: fake-dra 0.1.0
                                  Server Version: v1.37.0
    fake-dra version -o json      {"clientVersion": {...}, "serverVersion": {...}}
    fake-dra version --client     the first line only

The "server" is what the local object store and the scheduler stand-in play: a Kubernetes 1.37
kube-apiserver (its schema, apiVersions, gates and validation; docs/cli.md) and kube-scheduler.
Field names as kubectl's `-o json|yaml` (k8s.io/apimachinery pkg/version.Info: major, minor,
gitVersion, platform). `fake-dra --version` stays the one-line form. Exit 0.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys

import yaml

KUBERNETES_MAJOR, KUBERNETES_MINOR = "1", "37"
KUBERNETES_VERSION = f"v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR}.0"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "version", help="fake-dra's version and the Kubernetes version it plays (kubectl version)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", choices=["json", "yaml"], default=None, help="json or yaml")
    parser.add_argument("--client", action="store_true", help="fake-dra's own version only")
    parser.set_defaults(func=run)


def _platform() -> str:
    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine().lower())
    return f"{sys.platform}/{machine}"


def _installed() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("fake-dra")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def run(args: argparse.Namespace) -> int:
    mine = _installed()
    major, _, rest = mine.partition(".")
    info = {"clientVersion": {"gitVersion": mine, "major": major, "minor": rest.partition(".")[0],
                              "platform": _platform()}}
    if not args.client:
        info["serverVersion"] = {"gitVersion": KUBERNETES_VERSION, "major": KUBERNETES_MAJOR,
                                 "minor": KUBERNETES_MINOR, "platform": _platform()}
    if args.output == "json":
        print(json.dumps(info, indent=2))
    elif args.output == "yaml":
        sys.stdout.write(yaml.safe_dump(info, sort_keys=True, default_flow_style=False))
    else:
        print(f"Client Version: fake-dra {mine}")
        if not args.client:
            print(f"Server Version: {KUBERNETES_VERSION}")
    return 0
