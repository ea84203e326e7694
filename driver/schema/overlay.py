"""What the validator knows beyond the generated 1.37 schema: enums, and the project's gated alpha fields.

Both are small hand-kept tables because no schema file carries them:

- `ENUMS`: the `+enum` string types of k8s.io/api resource/v1/types.go (Kubernetes 1.37 line;
  kube-apiserver answers `Unsupported value: "X": supported values: ...` for anything else).
  kubernetes-validate's JSON schemas come from the OpenAPI v2 document, which has no enums, so
  hack/gen_schema.py cannot derive them. An empty string counts as unset (these fields default).

- `GATED`: fields of KEP-5941 (`DRASharedConsumableCapacity`), which upstream has not merged, so no
  1.37 schema has them (docs/architecture.md §5). This project publishes and reads them
  when the gate is on, in the newest shape of the KEP: a consumed counter has exactly one of `value`
  or `valueFrom: {capacityName}` (`capacityKey`, the KEP text's former name, is read too), a shared
  counter may carry a `requestPolicy` (the shape of a device capacity's), and an allocation result
  records `consumedCounters: [{counterSet, counters: {name: {value}}}]`. With the gate on they are
  part of the schema; with it off they are unknown fields, exactly as a 1.37 kube-apiserver's strict
  decoding treats them.

The alpha fields that ARE in the 1.37 schema (compatibilityGroups, list-typed attributes, ...) are
always known: kube-apiserver decodes them whatever its gates and drops them afterwards when their
gate is off (dropDisabledFields); the local store's simulated apiserver does the same
(driver/publish/fields.py), so they need no entry here.
"""

from __future__ import annotations

from typing import Any

SHARED_CONSUMABLE = "DRASharedConsumableCapacity"

# (type, field) -> allowed values; source: k8s.io/api resource/v1/types.go, the `+enum` types
# DeviceAllocationMode, DeviceTolerationOperator, DeviceTaintEffect, SkipNodeOperation,
# AllocationConfigSource and the fields declared with them.
ENUMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("io.k8s.api.resource.v1.ExactDeviceRequest", "allocationMode"): ("All", "ExactCount"),
    ("io.k8s.api.resource.v1.DeviceSubRequest", "allocationMode"): ("All", "ExactCount"),
    ("io.k8s.api.resource.v1.DeviceToleration", "operator"): ("Equal", "Exists"),
    ("io.k8s.api.resource.v1.DeviceToleration", "effect"): ("NoExecute", "NoSchedule", "None"),
    ("io.k8s.api.resource.v1.DeviceTaint", "effect"): ("NoExecute", "NoSchedule", "None"),
    ("io.k8s.api.resource.v1.DeviceAllocationConfiguration", "source"): ("FromClaim", "FromClass"),
}
# List fields whose items are enum values.
ITEM_ENUMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("io.k8s.api.resource.v1.ResourceSliceSpec", "skipNodeOperations"):
        ("*", "NodePrepareResources", "NodeUnprepareResources"),
    ("io.k8s.api.resource.v1.AllocationResult", "skipNodeOperations"):
        ("*", "NodePrepareResources", "NodeUnprepareResources"),
}

_QUANTITY = {"type": "quantity", "null": True}
_KEP = "fake-dra.kep5941."

# gate -> {type: {field: descriptor}}: fields replaced or added while the gate is on.
GATED: dict[str, dict[str, dict[str, Any]]] = {
    SHARED_CONSUMABLE: {
        "io.k8s.api.resource.v1.DeviceCounterConsumption": {
            "counters": {"values": {"ref": _KEP + "ConsumedCounter", "null": True}}},
        "io.k8s.api.resource.v1.CounterSet": {
            "counters": {"values": {"ref": _KEP + "SharedCounter", "null": True}}},
        "io.k8s.api.resource.v1.DeviceRequestAllocationResult": {
            "consumedCounters": {"items": {"ref": _KEP + "ConsumedCounters", "null": True}, "null": True}},
    },
}

# Types only the gated fields use, in the generated file's grammar plus `oneOf` (exactly one set).
GATED_TYPES: dict[str, dict[str, Any]] = {
    _KEP + "ConsumedCounter": {
        "fields": {"value": _QUANTITY, "valueFrom": {"ref": _KEP + "CounterValueFrom", "null": True}},
        "oneOf": [["value", "valueFrom"]]},
    _KEP + "CounterValueFrom": {
        "fields": {"capacityName": {"type": "string", "null": True}, "capacityKey": {"type": "string", "null": True}},
        "oneOf": [["capacityName", "capacityKey"]]},
    _KEP + "SharedCounter": {
        "fields": {"value": _QUANTITY,
                   "requestPolicy": {"ref": "io.k8s.api.resource.v1.CapacityRequestPolicy", "null": True}},
        "required": ["value"]},
    _KEP + "ConsumedCounters": {
        "fields": {"counterSet": {"type": "string"},
                   "counters": {"values": {"ref": "io.k8s.api.resource.v1.Counter", "null": True}}},
        "required": ["counterSet", "counters"]},
}

# Field names the gated fields add: an unknown field of that name says which gate would accept it.
GATE_OF_FIELD: dict[str, str] = {"valueFrom": SHARED_CONSUMABLE, "consumedCounters": SHARED_CONSUMABLE,
                                 "requestPolicy": SHARED_CONSUMABLE}
GATE_NAMES: dict[str, str] = {SHARED_CONSUMABLE: "KEP-5941"}
