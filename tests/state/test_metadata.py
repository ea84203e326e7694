"""DRA device metadata files (KEP-5304) written by DeviceState: paths, content, generation, the
read-only CDI bind mount, removal, and the error paths."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from driver.state.metadata import (
    API_VERSIONS,
    CONTAINER_DIR,
    HOST_SUBDIR,
    DeviceMetadataWriter,
    decode,
    encode,
)
from driver.state.netinfo import sysfs_network_data
from driver.state.types import ClaimRef, PreparedDevice
from state.conftest import DRIVER, NODE, result

TEMPLATE_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


@pytest.fixture
def writer(env, demo_sysfs):
    return DeviceMetadataWriter(env.state_dir, DRIVER, network_data=sysfs_network_data(demo_sysfs, DRIVER))


def host_file(env, ref: ClaimRef, request: str) -> Path:
    return env.state_dir / HOST_SUBDIR / ref.uid / request / f"{DRIVER}-metadata.json"


def stream(path: Path) -> list[dict]:
    return decode(path.read_bytes())


def spec_devices(env, ref: ClaimRef) -> dict[str, dict]:
    spec = json.loads((env.cdi_root / f"k8s.{DRIVER}_device_{ref.uid}.json").read_text())
    return {d["name"].removeprefix(f"{ref.uid}-"): d["containerEdits"] for d in spec["devices"]}


def test_one_file_per_request_with_the_published_attributes(env, writer):
    ref = env.claims.add("train", [result("gpu-0-mig-3g20gb-0", "small"), result("gpu-1", "big")])
    st = env.state(metadata=writer)
    assert st.prepare([ref])[ref.uid].error == ""

    path = host_file(env, ref, "small")
    objects = stream(path)
    assert [o["apiVersion"] for o in objects] == list(API_VERSIONS) == [
        "metadata.resource.k8s.io/v1beta1", "metadata.resource.k8s.io/v1alpha1"]  # newest first
    assert path.read_text().count("\n") == len(API_VERSIONS), "one object per line"
    first = objects[0]
    assert {k: v for k, v in objects[1].items() if k != "apiVersion"} == \
        {k: v for k, v in first.items() if k != "apiVersion"}, "the versions carry the same content"
    assert first["kind"] == "DeviceMetadata"
    assert first["metadata"] == {"name": "train", "namespace": "default", "uid": ref.uid, "generation": 1}
    assert "podClaimName" not in first
    (req,) = first["requests"]
    assert req["name"] == "small"
    (dev,) = req["devices"]
    assert (dev["driver"], dev["pool"], dev["name"]) == (DRIVER, NODE, "gpu-0-mig-3g20gb-0")
    published = env.pool.devices()["gpu-0-mig-3g20gb-0"]
    assert {k: v for k, v in dev["attributes"].items() if not k.startswith("granted")} == published["attributes"]
    assert dev["attributes"]["grantedMemory"] == {"string": published["capacity"]["memory"]["value"]}
    assert dev["attributes"]["profile"] == {"string": "3g.20gb"}
    assert "networkData" not in dev, "a GPU has no network interface"
    assert stream(host_file(env, ref, "big"))[0]["requests"][0]["devices"][0]["name"] == "gpu-1"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644, "readable by any container user"


@pytest.mark.parametrize("mask", [0o000, 0o077])
def test_directories_have_fixed_modes_whatever_the_umask(env, writer, mask):
    ref = env.claims.add("c", [result("gpu-1", "gpu")])
    st = env.state(metadata=writer)
    old = os.umask(mask)
    try:
        assert st.prepare([ref])[ref.uid].error == ""
    finally:
        os.umask(old)
    path = host_file(env, ref, "gpu")
    dirs = [path.parent, path.parent.parent, path.parent.parent.parent]  # request, claim, metadata root
    assert [oct(stat.S_IMODE(os.stat(d).st_mode)) for d in dirs] == [oct(0o755)] * 3


def test_cdi_spec_bind_mounts_each_request_file_read_only(env, writer):
    ref = env.claims.add("train", [result("gpu-0-mig-1g5gb-0", "a"), result("gpu-0-mig-1g5gb-1", "a"),
                                   result("gpu-1", "b")])
    env.state(metadata=writer).prepare([ref])
    edits = spec_devices(env, ref)
    for device, request in (("gpu-0-mig-1g5gb-0", "a"), ("gpu-0-mig-1g5gb-1", "a"), ("gpu-1", "b")):
        assert edits[device]["mounts"] == [{
            "hostPath": str(host_file(env, ref, request)),
            "containerPath": f"{CONTAINER_DIR}/resourceclaims/train/{request}/{DRIVER}-metadata.json",
            "options": ["ro", "bind"],
        }], device
        assert edits[device]["env"], "the env stays"
    assert len(stream(host_file(env, ref, "a"))[0]["requests"][0]["devices"]) == 2


def test_claim_from_a_template_uses_the_pod_claim_name(env, writer):
    ref = env.claims.add("pod-0-gpu-x7k2p", [result("gpu-1", "gpu")])
    env.claims.claims[("default", "pod-0-gpu-x7k2p")]["metadata"]["annotations"] = {TEMPLATE_ANNOTATION: "my-gpu"}
    env.state(metadata=writer).prepare([ref])
    first = stream(host_file(env, ref, "gpu"))[0]
    assert first["podClaimName"] == "my-gpu"
    assert first["metadata"]["name"] == "pod-0-gpu-x7k2p"
    (mount,) = spec_devices(env, ref)["gpu-1"]["mounts"]
    assert mount["containerPath"] == f"{CONTAINER_DIR}/resourceclaimtemplates/my-gpu/gpu/{DRIVER}-metadata.json"


@pytest.mark.parametrize("value", ["../../etc", "My-GPU", 7])
def test_a_pod_claim_name_that_is_no_dns_label_fails_the_claim(env, writer, value):
    ref = env.claims.add("c", [result("gpu-1", "gpu")])
    env.claims.claims[("default", "c")]["metadata"]["annotations"] = {TEMPLATE_ANNOTATION: value}
    out = env.state(metadata=writer).prepare([ref])[ref.uid]
    assert "claim default/c" in out.error and TEMPLATE_ANNOTATION in out.error and "DNS label" in out.error
    assert env.cdi_files() == [] and not (env.state_dir / HOST_SUBDIR / ref.uid).exists()
    assert env.states[-1].prepared() == {}, "nothing recorded: the devices are free again"


def test_first_available_uses_the_top_level_request_in_the_path(env, writer):
    ref = env.claims.add("c", [result("gpu-0-mig-1g5gb-0", "gpu/small")])
    env.state(metadata=writer).prepare([ref])
    path = host_file(env, ref, "gpu")
    assert stream(path)[0]["requests"][0]["name"] == "gpu/small"
    (mount,) = spec_devices(env, ref)["gpu-0-mig-1g5gb-0"]["mounts"]
    assert mount["containerPath"].endswith("/resourceclaims/c/gpu/fake-dra.example.com-metadata.json")


def test_vf_carries_network_data_from_sysfs_and_the_granted_bandwidth(env, writer, demo_sysfs):
    counters = [{"counterSet": "nic-0-counters", "counters": {"bandwidth": {"value": "40G"}}}]
    ref = env.claims.add("c", [result("nic-0-vf-1", "net", consumedCounters=counters)])
    env.state(metadata=writer).prepare([ref])
    (dev,) = stream(host_file(env, ref, "net"))[0]["requests"][0]["devices"]
    bdf = dev["attributes"]["pciBusID"]["string"]
    mac = (demo_sysfs / "bus" / "pci" / "devices" / bdf / "net" / "ens3f0v1" / "address").read_text().strip()
    assert dev["networkData"] == {"interfaceName": "ens3f0v1", "hardwareAddress": mac}
    assert dev["attributes"]["grantedBandwidth"] == {"string": "40G"}


def test_idempotent_prepare_recreates_a_lost_file_and_the_mounts(env, writer):
    ref = env.claims.add("c", [result("gpu-1", "gpu")])
    st = env.state(metadata=writer)
    first = st.prepare([ref])[ref.uid]
    path = host_file(env, ref, "gpu")
    content = path.read_bytes()
    path.unlink()
    (env.cdi_root / f"k8s.{DRIVER}_device_{ref.uid}.json").unlink()
    assert st.prepare([ref])[ref.uid] == first
    assert path.read_bytes() == content, "recreated with the same content (generation 1)"
    assert spec_devices(env, ref)["gpu-1"]["mounts"][0]["hostPath"] == str(path)


def test_repeated_prepare_leaves_an_existing_file_alone(env, writer):
    ref = env.claims.add("c", [result("gpu-1", "gpu")])
    st = env.state(metadata=writer)
    st.prepare([ref])
    inode = os.stat(host_file(env, ref, "gpu")).st_ino
    st.prepare([ref])
    env.state(metadata=writer).prepare([ref])  # after a plugin restart too
    assert os.stat(host_file(env, ref, "gpu")).st_ino == inode


def test_rewrite_with_new_content_bumps_the_generation_and_same_content_does_not(env, writer, demo_pool):
    ref = ClaimRef("default", "c", "uid-1")
    claim = {"metadata": {"name": "c", "namespace": "default", "uid": "uid-1"}}
    devs = [PreparedDevice(("net",), NODE, "nic-0-vf-0", ())]
    pool = demo_pool.devices()
    path = writer.write(ref, claim, devs, pool)[0].host_path
    assert stream(path)[0]["metadata"]["generation"] == 1
    inode = os.stat(path).st_ino
    writer.write(ref, claim, devs, pool)
    assert os.stat(path).st_ino == inode, "unchanged content is not rewritten"
    renamed = {**pool, "nic-0-vf-0": {**pool["nic-0-vf-0"], "attributes": {
        **pool["nic-0-vf-0"]["attributes"], "interface": {"string": "net7"}}}}
    writer.write(ref, claim, devs, renamed)
    objects = stream(path)
    assert [o["metadata"]["generation"] for o in objects] == [2, 2]
    assert objects[0]["requests"][0]["devices"][0]["attributes"]["interface"] == {"string": "net7"}
    writer.write(ref, claim, devs, pool)
    assert stream(path)[0]["metadata"]["generation"] == 3


def test_a_torn_or_foreign_file_is_rewritten(env, writer, demo_pool):
    ref = ClaimRef("default", "c", "uid-1")
    claim = {"metadata": {"name": "c", "namespace": "default", "uid": "uid-1"}}
    devs = [PreparedDevice(("gpu",), NODE, "gpu-1", ())]
    path = writer.write(ref, claim, devs, demo_pool.devices())[0].host_path
    path.write_text('{"kind": "DeviceMeta')
    writer.write(ref, claim, devs, demo_pool.devices())
    assert stream(path)[0]["requests"][0]["devices"][0]["name"] == "gpu-1"


def test_unprepare_removes_the_files(env, writer):
    ref = env.claims.add("c", [result("gpu-1", "gpu")])
    st = env.state(metadata=writer)
    st.prepare([ref])
    assert st.unprepare([ref]) == {ref.uid: ""}
    assert not (env.state_dir / HOST_SUBDIR / ref.uid).exists()
    assert st.unprepare([ref]) == {ref.uid: ""}, "idempotent"


def test_disabled_writes_nothing_and_still_cleans_up(env, writer):
    ref = env.claims.add("c", [result("gpu-1", "gpu")])
    env.state(metadata=writer).prepare([ref])
    off = DeviceMetadataWriter(env.state_dir, DRIVER, enabled=False)
    other = env.claims.add("d", [result("nic-0-vf-2", "net")])
    st = env.state(metadata=off)
    st.prepare([other])
    assert not (env.state_dir / HOST_SUBDIR / other.uid).exists()
    assert "mounts" not in spec_devices(env, other)["nic-0-vf-2"]
    st.unprepare([ref])
    assert not (env.state_dir / HOST_SUBDIR / ref.uid).exists(), "files of an earlier run are removed"


def test_start_up_prunes_files_of_claims_that_are_not_prepared(env, writer):
    kept = env.claims.add("kept", [result("gpu-1", "gpu")])
    env.state(metadata=writer).prepare([kept])
    stale = env.state_dir / HOST_SUBDIR / "0000-dead" / "gpu"
    stale.mkdir(parents=True)
    (stale / f"{DRIVER}-metadata.json").write_text("{}")
    env.state(metadata=writer)
    assert not stale.parent.exists()
    assert host_file(env, kept, "gpu").is_file()


def test_write_failure_fails_the_claim_and_leaves_nothing(env, writer):
    ref = env.claims.add("c", [result("gpu-1", "gpu")])
    st = env.state(metadata=writer)
    (env.state_dir / HOST_SUBDIR).write_text("not a directory")
    out = st.prepare([ref])[ref.uid]
    assert "claim default/c: writing device metadata: [Errno 20] Not a directory" in out.error
    assert env.cdi_files() == [] and st.prepared() == {}


def test_encode_decode_round_trip_and_torn_stream():
    body = {"metadata": {"name": "c", "namespace": "n", "uid": "u"}, "requests": []}
    objects = decode(encode(body, 4))
    assert [o["metadata"]["generation"] for o in objects] == [4, 4]
    assert decode(" \n".join(json.dumps(o, indent=2) for o in objects)) == objects, "pretty streams too"
    with pytest.raises(ValueError):
        decode(encode(body, 1)[:-20])
    with pytest.raises(ValueError, match="not an object"):
        decode("[1]")


def test_a_relative_state_dir_still_gives_the_runtime_an_absolute_host_path(env, monkeypatch, demo_pool):
    monkeypatch.chdir(env.root)
    w = DeviceMetadataWriter("state", DRIVER)
    (f,) = w.files(ClaimRef("default", "c", "uid-1"), {"metadata": {"name": "c"}},
                   [PreparedDevice(("gpu",), NODE, "gpu-1", ())],
                   demo_pool.devices())
    assert f.host_path.is_absolute() and f.host_path == env.state_dir / HOST_SUBDIR / "uid-1" / "gpu" / f"{DRIVER}-metadata.json"


def test_annotations_that_are_not_a_map_fail_only_that_claim(env, writer):
    ref = env.claims.add("c", [result("gpu-1", "gpu")])
    good = env.claims.add("d", [result("nic-0-vf-1", "net")])
    env.claims.claims[("default", "c")]["metadata"]["annotations"] = ["x"]
    out = env.state(metadata=writer).prepare([ref, good])
    assert out[ref.uid].error == "claim default/c: metadata.annotations is not a map"
    assert out[good.uid].error == ""


def test_unprepare_reports_a_metadata_removal_failure_and_the_retry_completes(env, writer, monkeypatch):
    ref = env.claims.add("c", [result("gpu-1", "gpu")])
    st = env.state(metadata=writer)
    st.prepare([ref])

    def busy(path):
        raise OSError(16, "Device or resource busy")

    monkeypatch.setattr("driver.state.metadata.shutil.rmtree", busy)
    assert st.unprepare([ref])[ref.uid] == "claim default/c: removing device metadata: [Errno 16] Device or resource busy"
    assert ref.uid in st.prepared(), "still recorded: the kubelet retries"
    monkeypatch.undo()
    assert st.unprepare([ref]) == {ref.uid: ""}
    assert not (env.state_dir / HOST_SUBDIR / ref.uid).exists() and st.prepared() == {}
