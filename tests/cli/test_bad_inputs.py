"""Every sub-command, walked with the mistakes a newcomer makes: no traceback, a message naming the
flag, variable or path, and the documented exit code (docs/cli.md).

The table must cover every registered command: adding a command without bad-input cases fails
`test_every_command_is_walked`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from driver.cli import build_parser, main
from driver.commands._envflags import walk


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]
    needles: tuple[str, ...]  # every one must appear in stderr
    code: int = 2
    env: dict[str, str] = field(default_factory=dict)

    @property
    def command(self) -> str:
        return next(a for a in self.argv if not a.startswith("-") and a not in ("LOUD",))

    def __str__(self) -> str:
        env = " ".join(f"{k}={v}" for k, v in self.env.items())
        return f"{env} {' '.join(a[:40] for a in self.argv)}".strip()


NODE = ("--node-name", "n1")
RUN = ("run", "--sysfs-root", "sys", *NODE, "--store", "store")
PUBLISH = ("publish", "--once", "--sysfs-root", "sys", *NODE)

FLEET = ("fleet", "apply", "-f", "fleet.yaml")

CASES = [
    # fleet
    Case(("fleet", "apply", "-f", "missing.yaml"), ("-f missing.yaml", "cannot read")),
    Case(("fleet", "apply"), ("-f/--filename: required",)),
    Case(("fleet", "launch", "-f", "fleet.yaml"), ("ACTION", "invalid choice: 'launch'")),
    Case(("fleet", "apply", "-f", "fleet-typo.yaml"), ("fleet-typo.yaml: spec.nodeGroups[0].lables: unknown field; "
                                                       "did you mean 'labels'?",)),
    Case(("fleet", "apply", "-f", "fleet-profile.yaml"), ("spec.nodeGroups[0].profile: unknown profile 'dgx-a10'; "
                                                          "did you mean 'dgx-a100'?",)),
    Case(("fleet", "apply", "-f", "broken.yaml"), ("broken.yaml: invalid YAML at line 2",)),
    Case(("fleet", "apply", "-f", "classes-only.yaml"), ("classes-only.yaml: apiVersion: expected fake-dra.example.com/v1alpha1",)),
    Case(("fleet", "delete", "-f", "fleet.yaml", "--dry-run"), ("--dry-run: only with `fleet apply`",)),
    Case((*FLEET, "--etcd-budget", "lots"), ("--etcd-budget", "lots")),
    Case((*FLEET, "--qps", "0"), ("--qps: must be positive",)),
    Case(FLEET, ("--burst", "FAKE_DRA_BURST"), env={"FAKE_DRA_BURST": "many"}),
    Case(("fleet", "run", "-f", "fleet.yaml", "--interval", "-5"), ("--interval: must be positive",)),
    Case(("fleet", "run", "-f", "-"), ("-f -: fleet run re-reads its file every pass",)),
    Case((*FLEET, "--store", "afile"), ("--store", "afile", "not a directory")),
    Case((*FLEET, "--features", "DRAPartitionable=false", "--store", "store"), ("DRAPartitionable",)),
    # schedule
    Case(("schedule", "--policy", "random"), ("--policy", "invalid choice: 'random'")),
    Case(("store", "import", "no-such-dir", "--store", "store"), ("no-such-dir is not a directory",)),
    Case(("cluster", "--until-settled", "--timeout", "soon"), ("--timeout", "'soon'")),
    Case(("cluster", "--timeout", "5"), ("--timeout goes with --until-settled",)),
    Case(("cluster", "--terminated-pod-gc-threshold", "-3"), ("--terminated-pod-gc-threshold: must be 0 or more",)),
    Case(("cluster", "--store", "afile"), ("--store", "afile", "not a directory")),
    Case(("delete", "pod", "x", "--cascade", "sideways"), ("--cascade", "background, foreground or orphan")),
    Case(("delete", "pod", "x", "--grace-period", "0"), ("--grace-period=0 needs --force",)),
    Case(("delete", "pod", "x", "--grace-period", "soon"), ("--grace-period", "'soon'")),
    Case(("schedule", "--percentage-of-nodes-to-score", "101"), ("--percentage-of-nodes-to-score: must be between 0 and 100",)),
    Case(("schedule", "--percentage-of-nodes-to-score", "half"), ("--percentage-of-nodes-to-score", "'half'")),
    Case(("schedule", "--store", "afile"), ("--store", "afile", "not a directory")),
    Case(("schedule", "--store", "binary-store"), ("featuregates.yaml", "not UTF-8")),
    # allocate
    Case(("allocate", "--node-name", "n1", "binary.yaml"), ("binary.yaml", "not UTF-8")),
    Case(("allocate", "--node-name", "n1", "classes-only.yaml"), ("classes-only.yaml", "no claims to allocate")),
    Case(("allocate", "--node-name", "n1", "missing.yaml"), ("missing.yaml", "No such file")),
    Case(("allocate", "--node-name", "n1", "adir"), ("adir", "Is a directory")),
    Case(("allocate", "--node-name", "n1", "broken.yaml"), ("broken.yaml: invalid YAML at line 2, column 1",)),
    Case(("allocate", "--node-name", "n1", "control.yaml"), ("control.yaml: invalid YAML at character offset 38",
                                                         "#x0001")),
    Case(("apply", "-f", "control.yaml", "--store", "store"), ("control.yaml: invalid YAML at character offset 38",)),
    # Nested deeper than any object: the project's message whatever PyYAML says (6.0.4's libyaml refuses
    # > 1,000 levels in its own words; the pure-Python loader ran out of stack at ~1,000).
    Case(("apply", "-f", "deep.yaml", "--store", "store"), ("deep.yaml: nests more than 100 levels deep",)),
    Case(("allocate", "--node-name", "n1", "deep.yaml"), ("deep.yaml: nests more than 100 levels deep",)),
    Case(("apply", "-f", "dupkey.yaml", "--store", "store"), ('dupkey.yaml: invalid YAML at line 3, column 1: duplicate key "metadata"',)),
    Case(("e2e", "--scenarios-dir", "control-scenarios", "--list"), ("control-scenarios/x.yaml: invalid YAML at character offset",)),
    Case(("slices", "--sysfs-root", "sys", *NODE, "--driver-config", "control.yaml"),
         ("driver config control.yaml: invalid YAML at character offset 38",)),
    Case(("allocate", "--node-name", "n1", "classes-only.yaml", "scalar.yaml"), ("scalar.yaml: document 1", "got str")),
    Case(("allocate", "--node-name", "n1", "--budget", "0", "classes-only.yaml"), ("--budget",)),
    Case(("allocate", "--node-name", "n1", "classes-only.yaml"), ("FAKE_DRA_BUDGET", "--budget"), env={"FAKE_DRA_BUDGET": "lots"}),
    # apply / get / delete (the local object store)
    Case(("apply", "-f", "binary.yaml", "--store", "store"), ("binary.yaml", "not UTF-8")),
    Case(("apply", "-f", "missing.yaml", "--store", "store"), ("missing.yaml", "cannot read")),
    Case(("apply", "-f", "adir", "--store", "store"), ("-f adir", "no .json, .yaml, .yml files in it", "-R")),
    Case(("apply", "-f", "classes-only.yaml", "--store", "afile"), ("--store", "afile", "not a directory")),
    Case(("apply", "-f", "classes-only.yaml", "--store", "/proc/store"), ("--store", "/proc/store", "cannot write")),
    Case(("apply", "-f", "classes-only.yaml", "--store", "store"), ("FAKE_DRA_OUTPUT", "table"),
         env={"FAKE_DRA_OUTPUT": "table"}),
    Case(("apply", "-f", "sts.yaml", "--store", "store"), ("sts.yaml: document 1 (StatefulSet d)", "kind")),
    Case(("apply", "-f", "deploy.yaml", "--store", "store"), ("deploy.yaml: document 1 (Deployment d)", "spec.selector: Required value")),
    Case(("apply", "-f", "badpod.yaml", "--store", "store"),
         ("badpod.yaml: document 1 (Pod p)", "spec.resourceClaims[0]: Invalid value: {\"name\":\"gpu\"}: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",)),
    Case(("get", "rc"), ('resource type "rc"',)),
    Case(("get",), ("required: KIND\n",)),  # not "KIND, NAME": the names are optional
    Case(("get", "resourceclaims", "--store", "afile"), ("--store", "afile", "not a directory")),
    Case(("get", "resourceclaims"), ("FAKE_DRA_OUTPUT", "xml"), env={"FAKE_DRA_OUTPUT": "xml"}),
    Case(("get", "resourceclaims", "x", "-A"), ("across all namespaces",)),
    Case(("delete", "resourceclaims"), ("NAME",)),
    Case(("delete", "-f", "binary.yaml"), ("binary.yaml", "not UTF-8")),
    Case(("delete", "-f", "adir"), ("-f adir", "no .json, .yaml, .yml files in it")),
    Case(("delete", "resourceclaim", "x", "--store", "/proc/store"), ("--store", "/proc/store", "cannot write")),
    Case(("apply", "--store", "store"), ("-f FILE is required",)),
    Case(("apply", "-f", "adir", "-R", "--store", "store"), ("-f adir", "or below it")),
    Case(("get", "resourceclaims", "-l", "team in ml"), ("--selector 'team in ml'", "parentheses")),
    Case(("get", "resourceclaims", "x", "-l", "a=b"), ("--selector", "not both")),
    Case(("get", "resourceclaims", "-o", "jsonpath={.items["), ("--output", "jsonpath template", "unclosed action")),
    Case(("get", "resourceclaims", "-o", "jsonpath"), ("--output", "needs a template")),
    Case(("delete", "resourceclaims", "x", "--all"), ("NAMEs or --all/--selector, not both",)),
    Case(("delete", "resourceclaims", "-A"), ("--all-namespaces goes with --all or --selector",)),
    Case(("delete", "resourceclaims", "-l", "!"), ("--selector '!'",)),
    Case(("delete", "-f", "adir", "-R"), ("-f adir", "or below it")),
    Case(("get", "pods", "--field-selector", "spec.bogus=1", "--store", "store"),
         ("--field-selector", "field label not supported: spec.bogus")),
    Case(("get", "pods", "--field-selector", "nonsense", "--store", "store"), ("can't understand 'nonsense'",)),
    Case(("get", "pods", "--sort-by", "{{bad", "--store", "store"), ("unexpected path string",)),
    Case(("get", "pods", "-o", "custom-columns=NAME", "--store", "store"), ("--output", "expected <header>:<json-path-expr>")),
    Case(("get", "pods", "-o", "json", "--show-labels"), ("--show-labels option cannot be used with json printer",)),
    Case(("delete", "pods", "--field-selector", "x==", "--store", "store"), ("field label not supported: x",)),
    # create
    Case(("create", "--store", "store"), ("-f FILE is required",)),
    Case(("create", "-f", "binary.yaml", "--store", "store"), ("binary.yaml", "not UTF-8")),
    Case(("create", "-f", "fleet.yaml", "--store", "store"), ("a Fleet is not an object the store keeps", "fleet apply")),
    Case(("create", "-f", "nameless.yaml", "--store", "store"), ("name or generateName is required",)),
    # api-resources, explain, version
    Case(("api-resources", "--sort-by", "age"), ("--sort-by", "invalid choice: 'age'")),
    Case(("api-resources", "--namespaced", "maybe"), ("--namespaced", "expected true or false")),
    Case(("explain", "pods.spec.nope"), ('field "nope" does not exist',)),
    Case(("explain", "rc"), ('resource type "rc"',)),
    Case(("explain",), ("required: KIND[.FIELD...]",)),
    Case(("version", "-o", "xml"), ("--output", "invalid choice: 'xml'")),
    # store
    Case(("store",), ("required: action",)),
    Case(("store", "export", "--store", "store"), ("store export: DIR is required",)),
    Case(("store", "import", "afile", "--store", "store"), ("store import: afile is not a directory",)),
    Case(("store", "import", "adir", "--store", "store"), ("store import: adir holds no",)),
    Case(("store", "export", "adir", "--store", "afile"), ("--store", "afile", "not a directory")),
    # completion
    Case(("completion",), ("required: shell",)),
    Case(("completion", "fish"), ("invalid choice: 'fish'", "bash", "zsh")),
    # describe
    Case(("describe",), ("required: KIND",)),
    Case(("describe", "rc", "x"), ('resource type "rc"',)),
    Case(("describe", "resourceclaims", "--store", "afile"), ("--store", "afile", "not a directory")),
    Case(("describe", "resourceclaims", "x", "-l", "a=b"), ("--selector", "not both")),
    Case(("describe", "resourceclaims", "x", "-A"), ("across all namespaces",)),
    Case(("describe", "resourceclaims", "-l", "team notin ml"), ("--selector", "parentheses")),
    Case(("describe", "resourceclaim", "nope", "--store", "store"), ('"nope" not found in namespace "default"',), code=1),
    Case(("describe", "node", "n9", "--store", "store"), ('nodes "n9" not found', "no ResourceSlice names it"), code=1),
    Case(("describe", "resourceclaims", "-n", "Bad_NS"), ("--namespace", "Bad_NS")),
    # demo (every check fires before the minute of scenarios)
    Case(("demo", "--junit", "adir"), ("--junit", "adir", "is a directory")),
    Case(("demo", "--junit", "nodir/report.xml"), ("--junit", "nodir", "does not exist")),
    Case(("demo", "--junit", "/proc/report.xml"), ("--junit", "/proc")),
    Case(("demo", "--profile", "nope", "--inventory-only"), ("nope",)),
    Case(("demo", "--profile", "dmeo"), ("--profile", "unknown sysfs profile 'dmeo'", "known profiles: demo")),
    Case(("demo", "--scenario", "tuor"), ("--scenario", "tuor", "known: ")),
    Case(("demo",), ("--scenario", "tuor", "FAKE_DRA_SCENARIO"), env={"FAKE_DRA_SCENARIO": "tuor"}),
    # discover
    Case(("discover", "--sysfs-root", "afile"), ("--sysfs-root", "afile")),
    Case(("discover", "--sysfs-root", "sys", "--driver-config", "binary.yaml"), ("binary.yaml", "not UTF-8")),
    Case(("discover", "--sysfs-root", "sys"), ("FAKE_DRA_STRICT", "maybe"), env={"FAKE_DRA_STRICT": "maybe"}),
    Case(("discover", "--sysfs-root", "sys"), ("FAKE_DRA_OUTPUT", "yaml"), env={"FAKE_DRA_OUTPUT": "yaml"}),
    # e2e
    Case(("e2e", "--scenarios-dir", "binary-scenarios", "--list"), ("binary-scenarios", "not UTF-8")),
    Case(("e2e", "--scenarios-dir", "adir"), ("--scenarios-dir", "adir", "no scenario files")),
    Case(("e2e", "--scenarios-dir", "missing"), ("--scenarios-dir", "missing", "does not exist")),
    Case(("e2e", "--scenarios-dir", "afile"), ("--scenarios-dir", "afile", "not a directory")),
    Case(("e2e", "--scenario", "tour", "--junit", "adir"), ("--junit", "adir", "is a directory")),
    Case(("e2e", "--scenario", "tour", "--junit", "/proc/report.xml"), ("--junit", "/proc")),
    Case(("e2e", "--scenario", "tour", "--junit", "/sys/report.xml"), ("--junit", "/sys")),
    Case(("e2e", "--scenario", "tour", "--junit", "nodir/report.xml"), ("--junit", "nodir", "not created")),
    Case(("e2e", "--scenario", "tour", "--jobs", "0"), ("--jobs",)),
    Case(("e2e", "--render-manifests", "afile"), ("--render-manifests", "afile")),
    Case(("e2e", "--list"), ("FAKE_DRA_JOBS", "--jobs"), env={"FAKE_DRA_JOBS": "many"}),
    Case(("e2e", "--list"), ("FAKE_DRA_BACKEND", "kind"), env={"FAKE_DRA_BACKEND": "cloud"}),
    # fault
    Case(("fault", "--sysfs-root", "sys", "--device", "0000:07:00.0", "--message", "x" * 1025), ("--message", "1024")),
    Case(("fault", "--store", "store", "--node", "nowhere"), ("--store", "no local store there")),
    Case(("fault", "--store", "store", "--fraction", "2"), ("--fraction", "(0, 1]")),
    Case(("fault", "--store", "store", "--gpu", "gpu-0", "--device", "0000:07:00.0"), ("--gpu", "only in fleet mode")),
    Case(("corpus", "export", "new-corpus", "--profile", "nope"), ("--profile 'nope'", "unknown")),
    Case(("corpus", "check", "missing"), ("missing", "not a directory")),
    Case(("fault", "--sysfs-root", "sys", "--device", "07:00", "--clear"), ("--device", "07:00")),
    Case(("fault", "--sysfs-root", "sys", "--device", "0000:07:20.0", "--clear"), ("--device", "above 1f")),
    Case(("fault", "--sysfs-root", "sys", "--device", "0000:99:00.0", "--clear"), ("0000:99:00.0",)),
    Case(("fault", "--sysfs-root", "missing", "--device", "0000:07:00.0", "--clear"), ("--sysfs-root", "missing")),
    Case(("fault", "--sysfs-root", "sys", "--clear"), ("FAKE_DRA_DEVICE",), env={"FAKE_DRA_DEVICE": "nope"}),
    Case(("fault", "--sysfs-root", "sys", "--device", "0000:07:00.0"), ("FAKE_DRA_CLEAR", "maybe"),
         env={"FAKE_DRA_CLEAR": "maybe"}),
    # gates
    Case(("gates", *NODE, "--store", "afile"), ("--store", "afile", "not a directory")),
    Case(("gates", *NODE, "--kubeconfig", "binary.yaml"), ("--kubeconfig", "binary.yaml")),
    Case(("gates", *NODE, "--store", "store"), ("FAKE_DRA_OUTPUT",), env={"FAKE_DRA_OUTPUT": "yaml"}),
    Case(("gates", *NODE, "--store", "binary-store"), ("binary-store/featuregates.yaml", "not UTF-8")),
    Case(("gates", *NODE, "--store", "store", "--metrics-ca-file", "missing.pem",
          "--scheduler-metrics-url", "https://127.0.0.1:1/metrics"), ("--metrics-ca-file", "missing.pem")),
    # make-sysfs
    Case(("make-sysfs", "--out", "afile"), ("--out", "afile", "not a directory")),
    Case(("make-sysfs", "--out", "afile/sub"), ("--out", "afile/sub", "is not a directory")),
    Case(("make-sysfs", "--out", "/proc/fake-sys"), ("--out", "/proc/fake-sys", "cannot write")),
    Case(("make-sysfs", "--out", "/sys/fake-sys"), ("--out", "/sys/fake-sys", "cannot write")),
    Case(("make-sysfs", "--out", "sys"), ("--out", "sys", "not empty")),
    Case(("make-sysfs", "--profile", "nope", "--out", "new"), ("nope", "known profiles")),
    Case(("make-sysfs", "--out", "new"), ("--profile", "'dmeo'", "FAKE_DRA_PROFILE"), env={"FAKE_DRA_PROFILE": "dmeo"}),
    # node-sysfs
    Case(("node-sysfs", "--out", "afile", "--profile", "demo"), ("--out", "afile")),
    Case(("node-sysfs", "--out", "/proc/fake-sys", "--profile", "demo"), ("--out", "/proc/fake-sys")),
    Case(("node-sysfs", "--out", "new", "--profile", "nope"), ("nope",)),
    # probe
    Case(("probe", "--timeout", "0"), ("--timeout", "must be positive")),
    Case(("probe", "--timeout", "soon"), ("--timeout", "soon")),
    Case(("probe",), ("--node-name",)),
    Case(("probe", *NODE), ("FAKE_DRA_TIMEOUT",), env={"FAKE_DRA_TIMEOUT": "-1"}),
    Case(("probe", *NODE, "--wait", "-1"), ("--wait",)),
    Case(("probe", *NODE, "--until", "HEALTHY"), ("--until", "--health")),
    Case(("probe", *NODE, "--prepare", "c", "--store", "afile"), ("--store", "afile", "not a directory")),
    # publish
    Case((*PUBLISH, "--store", "afile"), ("--store", "afile", "not a directory")),
    Case((*PUBLISH, "--store", "/proc/store"), ("--store", "/proc/store", "cannot write")),
    Case((*PUBLISH, "--store", "/sys"), ("--store", "/sys", "cannot write")),
    Case((*PUBLISH, "--store", "store", "--interval", "0"), ("--interval",)),
    Case((*PUBLISH, "--store", "store", "--metrics-addr", "9090"), ("--metrics-addr", "HOST:PORT")),
    Case((*PUBLISH, "--store", "store", "--scheduler-metrics-url", "http://127.0.0.1:1/metrics",
          "--metrics-token-file", "missing.token"), ("--metrics-token-file", "missing.token")),
    Case((*PUBLISH, "--store", "store"), ("FAKE_DRA_DELETE_SLICES_ON_EXIT", "maybe"),
         env={"FAKE_DRA_DELETE_SLICES_ON_EXIT": "maybe"}),
    Case((*PUBLISH, "--store", "store", "--driver-config", "binary.yaml"), ("binary.yaml",)),
    # run: every one must fail before a socket or thread exists
    Case((*RUN, "--kubelet-plugins-dir", "afile"), ("--kubelet-plugins-dir", "afile", "not a directory")),
    Case((*RUN, "--kubelet-plugins-dir", "/proc/plugins"), ("--kubelet-plugins-dir", "/proc/plugins", "cannot write")),
    Case((*RUN, "--kubelet-registry-dir", "/sys/registry"), ("--kubelet-registry-dir", "/sys/registry")),
    Case((*RUN, "--cdi-root", "afile"), ("--cdi-root", "afile")),
    Case((*RUN, "--cdi-root", "/proc/cdi"), ("--cdi-root", "/proc/cdi", "cannot write")),
    Case((*RUN, "--state-dir", "afile"), ("--state-dir", "afile")),
    Case((*RUN, "--kubelet-root", "/proc/kubelet"), ("--kubelet-plugins-dir", "/proc/kubelet/plugins")),
    Case(("run", "--sysfs-root", "sys", *NODE, "--store", "afile"), ("--store", "afile")),
    Case(RUN, ("FAKE_DRA_NO_PUBLISH", "maybe", "--no-publish"), env={"FAKE_DRA_NO_PUBLISH": "maybe"}),
    Case((*RUN, "--metrics-addr", "nonsense"), ("--metrics-addr", "HOST:PORT", "'nonsense'")),
    Case((*RUN, "--api-deadline", "0"), ("--api-deadline", "positive")),
    Case(RUN, ("--metrics-addr", "FAKE_DRA_METRICS_ADDR"), env={"FAKE_DRA_METRICS_ADDR": "localhost:99999"}),
    Case(RUN, ("FAKE_DRA_HEALTH_INTERVAL", "--health-interval"), env={"FAKE_DRA_HEALTH_INTERVAL": "0"}),
    Case(("run", "--sysfs-root", "sys", "--node-name", "a/b"), ("--node-name", "a/b")),
    # show
    Case(("show", "--sysfs-root", "missing"), ("--sysfs-root", "missing")),
    Case(("show", "--sysfs-root", "sys", "--driver-config", "adir"), ("adir",)),
    Case(("show", "--store", "afile"), ("--store", "afile", "not a directory")),
    Case(("show", "--store", "store", "--sysfs-root", "sys"), ("--store and --sysfs-root", "give one")),
    Case(("show", "--store", "store", "--node-name", "n9"), ("--node-name n9: no ResourceSlices of that node",), code=1),
    Case(("show",), ("--store and --sysfs-root are both set", "FAKE_DRA_STORE"),
         env={"FAKE_DRA_STORE": "store", "FAKE_DRA_SYSFS_ROOT": "sys"}),
    # slices
    Case(("slices", "--sysfs-root", "sys", *NODE, "--features", "Bogus=true"), ("Bogus",)),
    Case(("slices", "--sysfs-root", "sys", *NODE, "--driver-config", "binary.yaml"), ("binary.yaml", "not UTF-8")),
    Case(("slices", "--sysfs-root", "sys", *NODE), ("FAKE_DRA_GENERATION",), env={"FAKE_DRA_GENERATION": "one"}),
    Case(("slices", "--sysfs-root", "sys", *NODE, "--generation", "-1"), ("--generation", "negative")),
    Case(("slices", "--sysfs-root", "sys", *NODE), ("FAKE_DRA_GENERATION", "negative"), env={"FAKE_DRA_GENERATION": "-1"}),
    Case(("slices", "--sysfs-root", "sys", "--node-name", "Node_1"), ("--node-name", "Node_1")),
    Case(("slices", "--sysfs-root", "sys"), ("--node-name", "Node_1", "FAKE_DRA_NODE_NAME"),
         env={"FAKE_DRA_NODE_NAME": "Node_1"}),
    Case(("slices", "--sysfs-root", "sys", *NODE, "--driver-name", "Bad_Driver"), ("--driver-name", "Bad_Driver")),
    Case((*PUBLISH, "--store", "store"), ("--driver-name", "x_y", "FAKE_DRA_DRIVER_NAME"),
         env={"FAKE_DRA_DRIVER_NAME": "x_y"}),
    Case(("get", "resourceclaims", "-n", "Bad_NS"), ("--namespace", "Bad_NS")),
    Case(("get", "resourceclaims"), ("--namespace", "Bad_NS", "FAKE_DRA_NAMESPACE"), env={"FAKE_DRA_NAMESPACE": "Bad_NS"}),
    # personalities (docs/personalities.md)
    Case(("slices", "--sysfs-root", "sys", *NODE, "--personality", "nvida"), ("--personality", "'nvida'", "known: ")),
    Case(("slices", "--sysfs-root", "sys", *NODE), ("--personality", "FAKE_DRA_PERSONALITY"),
         env={"FAKE_DRA_PERSONALITY": "amd"}),
    Case(("slices", "--sysfs-root", "sys", *NODE, "--personality", "nvidia", "--driver-name", "gpu.example.com"),
         ("--driver-name", "gpu.nvidia.com")),
    Case(("slices", "--sysfs-root", "sys", *NODE, "--personality", "nvidia", "--driver-config", "nvidia-gates.yaml"),
         ("feature gate DynamicMIG is currently mutually exclusive with PassthroughSupport",)),
    Case(("slices", "--sysfs-root", "sys", *NODE, "--personality", "nvidia", "--driver-config", "nvidia-mig.yaml"),
         ("nvidia.migDevices[0][0]", "2g.10gb cannot start at memory slice 1")),
    Case(("slices", "--sysfs-root", "sys", *NODE, "--personality", "nvidia", "--driver-config", "nvidia-shares.yaml"),
         ("nvidia.consumableShares", "requires feature gate ConsumableShares")),
    Case(("slices", "--sysfs-root", "sys", *NODE, "--personality", "sriov", "--driver-config", "sriov-mode.yaml"),
         ("sriov.eswitchMode",)),
    Case((*RUN, "--personality", "nvidia", "--driver-config", "nvidia-gates.yaml"), ("DynamicMIG",)),
    Case((*PUBLISH, "--store", "store", "--personality", "nvidia", "--driver-config", "nvidia-mig.yaml"),
         ("nvidia.migDevices[0][0]",)),
    Case(("show", "--sysfs-root", "sys", "--personality", "nvidia", "--driver-config", "nvidia-gates.yaml"),
         ("mutually exclusive",)),
    Case(("probe", *NODE, "--personality", "nope"), ("--personality", "'nope'")),
    Case(("demo", "--personality", "nope", "--inventory-only"), ("--personality", "'nope'")),
    Case(("e2e", "--personality", "nope", "--list"), ("--personality", "'nope'")),
    Case(("make-sysfs", "--profile", "h100", "--gpus", "9", "--out", "new"), ("--gpus 9", "has 8 GPUs")),
    Case(("make-sysfs", "--gpus", "-1", "--out", "new"), ("--gpus", "negative")),
    Case(("make-sysfs", "--out", "new"), ("FAKE_DRA_GPUS", "--gpus"), env={"FAKE_DRA_GPUS": "two"}),
    Case(("e2e", "--scenarios-dir", "bad-personality", "--list"), ("personality", "unknown personality 'amd'")),
    # global flags, before or after the command, as flags or variables
    Case(("--log-level", "LOUD", "discover"), ("--log-level", "LOUD")),
    Case(("discover", "--log-level", "LOUD"), ("--log-level", "LOUD")),
    Case(("discover", "--sysfs-root", "sys"), ("FAKE_DRA_LOG_LEVEL", "LOUD"), env={"FAKE_DRA_LOG_LEVEL": "LOUD"}),
    Case(("discover", "--sysfs-root", "sys"), ("FAKE_DRA_LOG_FORMAT", "xml"), env={"FAKE_DRA_LOG_FORMAT": "xml"}),
]


def _commands() -> set[str]:
    return {name for name, _ in walk(build_parser()) if name}


def test_every_command_is_walked():
    assert _commands() - {c.command for c in CASES} == set()


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    from driver.discovery import make_sysfs

    root = tmp_path_factory.mktemp("newcomer")
    make_sysfs("demo", root / "sys")
    (root / "afile").write_text("not a directory\n")
    (root / "adir").mkdir()
    (root / "binary.yaml").write_bytes(b"kind: ResourceClaim\nmetadata: {name: \xff\xfe}\n")
    (root / "binary-scenarios").mkdir()
    (root / "binary-scenarios" / "x.yaml").write_bytes(b"name: \xff\n")
    (root / "binary-store").mkdir()
    (root / "binary-store" / "featuregates.yaml").write_bytes(b"apiserver: \xff\n")
    (root / "classes-only.yaml").write_text("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: c}\n")
    (root / "nameless.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {labels: {a: b}}\n"
                                        "spec: {containers: [{name: c, image: x}]}\n")
    (root / "deploy.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n")
    (root / "sts.yaml").write_text("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: d}\n")
    (root / "badpod.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
                                      "spec: {containers: [{name: c, image: busybox}], resourceClaims: [{name: gpu}]}\n")
    (root / "broken.yaml").write_text("a: [\n")
    (root / "control.yaml").write_text("kind: ResourceClaim\nmetadata: {name: a\x01}\n")  # UTF-8, not YAML
    (root / "deep.yaml").write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    (root / "dupkey.yaml").write_text("kind: DeviceClass\nmetadata: {name: a}\nmetadata: {name: b}\n")
    (root / "control-scenarios").mkdir()
    (root / "control-scenarios" / "x.yaml").write_text("name: a\x01\n")
    (root / "scalar.yaml").write_text("just a sentence\n")
    (root / "nvidia-gates.yaml").write_text("nvidia:\n  featureGates: {DynamicMIG: true, PassthroughSupport: true}\n")
    (root / "nvidia-mig.yaml").write_text("nvidia:\n  migDevices: {0: [2g.10gb@1]}\n")
    (root / "nvidia-shares.yaml").write_text("nvidia:\n  consumableShares: memory\n")
    (root / "sriov-mode.yaml").write_text("sriov:\n  eswitchMode: offload\n")
    (root / "bad-personality").mkdir()
    (root / "bad-personality" / "x.yaml").write_text(
        "name: x\nreason: one line\npersonality: amd\nsteps: [{action: observe}]\n")
    fleet = ("apiVersion: fake-dra.example.com/v1alpha1\nkind: Fleet\nmetadata: {name: lab}\n"
             "spec:\n  nodeGroups:\n  - {name: a, count: 1, profile: demo, labels: {rack: r1}}\n")
    (root / "fleet.yaml").write_text(fleet)
    (root / "fleet-typo.yaml").write_text(fleet.replace("labels:", "lables:"))
    (root / "fleet-profile.yaml").write_text(fleet.replace("profile: demo", "profile: dgx-a10"))
    return root


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input_is_a_message_not_a_traceback(case: Case, world: Path, monkeypatch, capsys):
    monkeypatch.chdir(world)
    monkeypatch.delenv("NODE_NAME", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    before = sorted(p.name for p in world.iterdir())
    started = time.monotonic()
    code = main(list(case.argv))
    elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out and "this is a bug" not in err, err
    assert code == case.code, err
    for needle in case.needles:
        assert needle in err, f"{needle!r} not in {err!r}"
    # One line naming what to fix (usage errors add a "see --help" line), not a wall of text.
    assert len(err.strip().splitlines()) <= 2, err
    # Refused before doing the work: nothing printed, nothing new appeared, and no scenario ran.
    assert out == "", out[:300]
    assert sorted(p.name for p in world.iterdir()) == before
    assert elapsed < 10, f"took {elapsed:.1f} s: the check came after the work"


@pytest.mark.parametrize("flags", [("--api-deadline", "0"), ("--metrics-addr", "nonsense"), ("--grace-period", "-1")])
def test_run_refuses_a_bad_flag_before_it_logs_anything(world: Path, tmp_path: Path, flags):
    # As a user sees it (a process, logging configured): the refusal is the only line, not the
    # "local mode: ..." start-up line followed by the refusal.
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_DRA_")}
    proc = subprocess.run([sys.executable, "-m", "driver", "run", "--sysfs-root", str(world / "sys"),
                           "--node-name", "n1", *flags], env={**env, "XDG_STATE_HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()] and flags[0] in proc.stderr, proc.stderr
    assert not (tmp_path / "fake-dra").exists()  # nothing created: no node directory, no store


@pytest.mark.parametrize("command", [("apply", "-f", "-"), ("delete", "-f", "-"), ("allocate", "--node-name", "n1", "-")])
def test_binary_stdin_is_named_not_parsed(tmp_path: Path, command):
    # `... | fake-dra apply -f -` with bytes that are not UTF-8, under the C locale Python gives a
    # script without a UTF-8 locale: the message names stdin and the byte, in one line.
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_DRA_", "LC_", "LANG"))}
    proc = subprocess.run([sys.executable, "-m", "driver", *command, *(() if command[0] == "allocate" else
                                                                         ("--store", str(tmp_path / "store")))],
                          input=b"kind: ResourceClaim\nmetadata: {name: \xff\xfe}\n",
                          env={**env, "LC_ALL": "C", "PYTHONUTF8": "0"}, capture_output=True, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "not UTF-8" in err and "0xff" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "store").exists()
