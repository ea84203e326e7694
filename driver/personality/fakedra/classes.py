"""fake-dra's own DeviceClasses: one per device type it publishes, selecting on driver and `type`.

The source of deploy/base/03-deviceclasses.yaml (`fake-dra e2e --render-manifests deploy`; a test
keeps the two equal) and of what `fake-dra run` seeds into the local object store.
"""

from __future__ import annotations

from typing import Any

from driver import DEFAULT_DRIVER_NAME

# DeviceClass short name -> value of the driver's `type` attribute it selects.
CLASSES: dict[str, str] = {
    "gpu": "gpu",
    "mig": "mig",
    "vgpu": "vgpu",
    "timeshare": "timeshare",
    "vf": "vf",
    "nic": "nic",
}
_CLASS_DOC: dict[str, str] = {
    "gpu": "a whole physical GPU (exclusive: nothing else on that GPU)",
    "mig": "a MIG partition (only with other MIG partitions of the same GPU)",
    "vgpu": "an NVIDIA vGPU instance (never with MIG or the whole GPU)",
    "timeshare": "a time-slicing or MPS share of a GPU (with shares of the same kind only; never MIG/vGPU/whole)",
    "vf": "an SR-IOV virtual function drawing bandwidth from its NIC's link",
    "nic": "a whole NIC port the driver config opted in (slices.publishPFs); host ports are not published otherwise",
}


def class_name(short: str, driver_name: str = DEFAULT_DRIVER_NAME) -> str:
    return f"{short}.{driver_name}"


def device_classes(driver_name: str = DEFAULT_DRIVER_NAME) -> list[dict[str, Any]]:
    """One DeviceClass per device type this driver publishes, selecting on driver and `type`."""
    out = []
    for short, type_value in CLASSES.items():
        out.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {
                    "name": class_name(short, driver_name),
                    "labels": {"app.kubernetes.io/name": "fake-dra"},
                    "annotations": {"fake-dra.example.com/description": _CLASS_DOC[short]},
                },
                "spec": {
                    "selectors": [
                        {
                            "cel": {
                                "expression": (
                                    f'device.driver == "{driver_name}" && '
                                    f'device.attributes["{driver_name}"].type == "{type_value}"'
                                )
                            }
                        }
                    ]
                },
            }
        )
    return out
