"""driver.e2e.container: the local backend's stand-in for the runtime resolving CDI devices."""

from __future__ import annotations

import json

from driver.e2e.container import container_view
from driver.state.metadata import CONTAINER_DIR

KIND = "k8s.fake-dra.example.com/device"


def _spec(root, name, devices):
    (root / name).write_text(json.dumps({"cdiVersion": "0.6.0", "kind": KIND, "devices": devices}))


def test_env_and_mounted_metadata_of_the_named_devices_only(tmp_path):
    meta = tmp_path / "m.json"
    meta.write_text('{"kind": "DeviceMetadata"}\n')
    inside = f"{CONTAINER_DIR}/resourceclaims/c/gpu/fake-dra.example.com-metadata.json"
    _spec(tmp_path, "a.json", [
        {"name": "u1-gpu-0", "containerEdits": {"env": ["A=1", "B=x=y"],
                                                 "mounts": [{"hostPath": str(meta), "containerPath": inside},
                                                            {"hostPath": "/etc/hosts", "containerPath": "/etc/hosts"}]}},
        {"name": "u1-gpu-1", "containerEdits": {"env": ["C=3"]}},
    ])
    _spec(tmp_path, "b.json", [{"name": "u2-gpu-0", "containerEdits": {"env": ["D=4"]}}])
    view = container_view(tmp_path, [f"{KIND}=u1-gpu-0", f"{KIND}=u2-gpu-0"])
    assert view.env == {"A": "1", "B": "x=y", "D": "4"}
    assert view.metadata == {inside: '{"kind": "DeviceMetadata"}\n'}, "only device metadata mounts, read from the host"


def test_an_unreadable_metadata_file_is_reported_not_raised(tmp_path):
    inside = f"{CONTAINER_DIR}/resourceclaims/c/gpu/fake-dra.example.com-metadata.json"
    _spec(tmp_path, "a.json", [{"name": "u1-gpu-0", "containerEdits": {
        "mounts": [{"hostPath": str(tmp_path / "gone.json"), "containerPath": inside}]}}])
    view = container_view(tmp_path, [f"{KIND}=u1-gpu-0"])
    assert view.metadata[inside].startswith("<host file unreadable: ") and "gone.json" in view.metadata[inside]
