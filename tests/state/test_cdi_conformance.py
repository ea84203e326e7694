"""The CDI specs DeviceState writes are valid by the CDI specification, for every device type.

Rules and where they come from (cncf-tags/container-device-interface): SPEC.md "Kind", "CDI
Devices", "OCI Edits" and the version table; schema/schema.json + schema/defs.json (fields, required
fields); pkg/parser/parser.go (ValidateVendorName/ValidateClassName: letter first, alphanumeric
last, [A-Za-z0-9_.-] between; ValidateDeviceName: alphanumeric first and last, [A-Za-z0-9_.:-]
between); pkg/cdi/spec.go (at least one device, no duplicate names) and device.go (a device's
edits must not be empty); pkg/cdi/container-edits.go (ValidateEnv: '=' after a non-empty name;
Mount.Validate: hostPath and containerPath set); specs-go/version.go (known versions; a spec with
annotations needs 0.6.0, a device name starting with a digit 0.5.0; loading fails when the spec
says less than it needs, and ParseSpec is strict about unknown fields). A real runtime reading
them is tests/deploy/test_cdi_runtime.py (opt-in, podman).
"""

from __future__ import annotations

import json
import os
import re

import pytest

from driver.state.metadata import DeviceMetadataWriter
from driver.state.netinfo import sysfs_network_data
from state.conftest import DRIVER, result

KNOWN_VERSIONS = ("0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0")
SPEC_FIELDS = {"cdiVersion", "kind", "annotations", "devices", "containerEdits"}
DEVICE_FIELDS = {"name", "annotations", "containerEdits"}
EDIT_FIELDS = {"env", "deviceNodes", "hooks", "mounts", "netDevices", "intelRdt", "additionalGids"}
MOUNT_FIELDS = {"hostPath", "containerPath", "options", "type"}
VENDOR_OR_CLASS = re.compile(r"^[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?$")
DEVICE_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$")


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.removeprefix("v").split("."))


def _minimum_version(spec: dict) -> str:
    if spec.get("annotations") or any(d.get("annotations") for d in spec["devices"]):
        return "0.6.0"
    if "." in spec["kind"].split("/", 1)[1]:
        return "0.6.0"
    if any(d["name"][:1].isdigit() for d in spec["devices"]):
        return "0.5.0"
    return "0.3.0"


def check_cdi_spec(spec: dict) -> None:
    """AssertionError naming the first CDI rule the spec breaks."""
    assert set(spec) <= SPEC_FIELDS, f"unknown spec fields {set(spec) - SPEC_FIELDS}"
    assert {"cdiVersion", "kind", "devices"} <= set(spec)
    assert spec["cdiVersion"] in KNOWN_VERSIONS, spec["cdiVersion"]
    assert _version(spec["cdiVersion"]) >= _version(_minimum_version(spec)), \
        f"cdiVersion {spec['cdiVersion']} is below the {_minimum_version(spec)} the spec's fields need"

    vendor, _, cls = spec["kind"].partition("/")
    assert cls and "/" not in cls, f"kind {spec['kind']!r} is not <vendor>/<class>"
    assert len(vendor) <= 253 and all(DNS_LABEL.match(p) for p in vendor.split(".")), vendor
    assert VENDOR_OR_CLASS.match(vendor) and VENDOR_OR_CLASS.match(cls) and len(cls) <= 63, spec["kind"]

    for key, value in (spec.get("annotations") or {}).items():
        prefix, _, name = key.rpartition("/")
        assert QUALIFIED_NAME.match(name) and (not prefix or all(DNS_LABEL.match(p) for p in prefix.split("."))), key
        assert isinstance(value, str)
    assert sum(len(k) + len(v) for k, v in (spec.get("annotations") or {}).items()) <= 256 * 1024

    assert spec["devices"], "a CDI spec needs at least one device"
    names = [d["name"] for d in spec["devices"]]
    assert len(set(names)) == len(names), "duplicate device names"
    for dev in spec["devices"]:
        assert set(dev) <= DEVICE_FIELDS and {"name", "containerEdits"} <= set(dev), dev.keys()
        assert DEVICE_NAME.match(dev["name"]), f"device name {dev['name']!r}"
        edits = dev["containerEdits"]
        assert set(edits) <= EDIT_FIELDS, set(edits) - EDIT_FIELDS
        assert any(edits.get(k) for k in EDIT_FIELDS), f"device {dev['name']}: empty containerEdits"
        for entry in edits.get("env", []):
            assert isinstance(entry, str) and entry.find("=") > 0, f"env entry {entry!r}"
        for mount in edits.get("mounts", []):
            assert set(mount) <= MOUNT_FIELDS and mount.get("hostPath") and mount.get("containerPath"), mount
            assert all(isinstance(o, str) for o in mount.get("options", []))


@pytest.mark.parametrize("devices", [
    [("gpu-0", "gpu")],
    [("gpu-0-mig-7g40gb-0", "mig"), ("nic-0-vf-0", "net")],
    [("gpu-1-vgpu-a100x-40c-0", "vgpu")],
    [("gpu-0-timeslicing", "shared")],
], ids=["gpu", "mig+vf", "vgpu", "timeshare"])
@pytest.mark.parametrize("metadata", [True, False], ids=["metadata", "no-metadata"])
def test_every_written_spec_is_valid_cdi(env, demo_sysfs, devices, metadata) -> None:
    writer = DeviceMetadataWriter(env.state_dir, DRIVER, enabled=metadata,
                                  network_data=sysfs_network_data(demo_sysfs, DRIVER))
    ref = env.claims.add("c", [result(d, r) for d, r in devices])
    assert env.state(metadata=writer).prepare([ref])[ref.uid].error == ""
    (path,) = env.cdi_root.glob("*.json")
    spec = json.loads(path.read_text())
    check_cdi_spec(spec)
    mounts = [m for d in spec["devices"] for m in d["containerEdits"].get("mounts", [])]
    assert bool(mounts) == metadata
    for m in mounts:
        # What the runtime needs to make the mount: an absolute host file that exists, and
        # read-only bind options (KEP-5304: the file is read-only in the container).
        assert os.path.isabs(m["hostPath"]) and os.path.isfile(m["hostPath"]), m
        assert os.path.isabs(m["containerPath"]) and set(m["options"]) == {"ro", "bind"}, m


@pytest.mark.parametrize(("edit", "rule"), [
    (lambda s: s.update(cdiVersion="0.5.0"), "below the 0.6.0"),
    (lambda s: s.update(cdiVersion="0.6"), "0.6"),
    (lambda s: s.update(kind="k8s.fake-dra.example.com/device/x"), "is not <vendor>/<class>"),
    (lambda s: s["devices"][0].update(name="-x"), "device name"),
    (lambda s: s["devices"][0]["containerEdits"].update(env=["=x"]), "env entry"),
    (lambda s: s["devices"][0].update(containerEdits={"env": []}), "empty containerEdits"),
    (lambda s: s.update(devices=[]), "at least one device"),
    (lambda s: s.update(extra=1), "unknown spec fields"),
    (lambda s: s["devices"].append(dict(s["devices"][0])), "duplicate device names"),
])
def test_the_checker_catches_what_the_cdi_library_rejects(env, edit, rule) -> None:
    ref = env.claims.add("c", [result("gpu-0", "gpu")])
    assert env.state().prepare([ref])[ref.uid].error == ""
    (path,) = env.cdi_root.glob("*.json")
    spec = json.loads(path.read_text())
    check_cdi_spec(spec)
    edit(spec)
    with pytest.raises(AssertionError, match=re.escape(rule)):
        check_cdi_spec(spec)
