"""Generated modules of each served API version, shared by the server and the kubelet-side client.

Why one table: the server registers and the client dials exactly the same version set; two copies
of it could drift (a version served but never exercised by the tests, or the reverse).
"""

from __future__ import annotations

from types import ModuleType

from driver.plugin.gen import (
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
    drahealth_v1_pb2,
    drahealth_v1_pb2_grpc,
    drahealth_v1alpha1_pb2,
    drahealth_v1alpha1_pb2_grpc,
    drahealth_v1beta1_pb2,
    drahealth_v1beta1_pb2_grpc,
)

# version -> (messages module, services module); newest first, the order GetInfo advertises.
DRA: dict[str, tuple[ModuleType, ModuleType]] = {
    "v1": (dra_v1_pb2, dra_v1_pb2_grpc),
    "v1beta1": (dra_v1beta1_pb2, dra_v1beta1_pb2_grpc),
}
HEALTH: dict[str, tuple[ModuleType, ModuleType]] = {
    "v1": (drahealth_v1_pb2, drahealth_v1_pb2_grpc),
    "v1beta1": (drahealth_v1beta1_pb2, drahealth_v1beta1_pb2_grpc),
    "v1alpha1": (drahealth_v1alpha1_pb2, drahealth_v1alpha1_pb2_grpc),
}
