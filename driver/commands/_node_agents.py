"""The kubelet's DRA calls for the Node a `fake-dra run` registered, as `fake-dra cluster` makes them.

A node agent's Node carries the annotation `fake-dra.example.com/node-agent` naming its kubelet
plugin registry directory. Before a pod bound there becomes Running, the kubelet (pkg/kubelet/cm/dra
manager.go PrepareResources) calls NodePrepareResources of each driver that allocated one of the
pod's claims, through the plugin's registration socket; when the pod goes, NodeUnprepareResources
for the claims no other pod of the node uses (UnprepareResources). driver.controllers.podstages
decides when; this module makes the calls (driver.plugin.client, the kubelet side of the wire).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from driver.controllers.podstages import NODE_AGENT_ANNOTATION

PREPARE_TIMEOUT_S = 45.0  # the kubelet's default per-call timeout


def _by_driver(claims: Sequence[Mapping[str, Any]]) -> dict[str, list[tuple[str, str, str]]]:
    out: dict[str, list[tuple[str, str, str]]] = {}
    for claim in claims:
        meta = claim.get("metadata") or {}
        ref = (str(meta.get("namespace") or "default"), str(meta.get("name")), str(meta.get("uid")))
        results = ((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or [])
        for driver in sorted({str(r.get("driver")) for r in results if isinstance(r, Mapping) and r.get("driver")}):
            out.setdefault(driver, []).append(ref)
    return out


class PluginAgents:
    """NodeAgents over the plugins' unix sockets."""

    def _call(self, node: Mapping[str, Any], claims: Sequence[Mapping[str, Any]], verb: str) -> str | None:
        from driver.plugin.client import KubeletClient, rpc_error_text

        registry = ((node.get("metadata") or {}).get("annotations") or {}).get(NODE_AGENT_ANNOTATION)
        problems = []
        for driver, refs in _by_driver(claims).items():
            try:
                with KubeletClient(str(registry), driver, timeout_s=PREPARE_TIMEOUT_S) as client:
                    if verb == "prepare":
                        errors = {uid: r.error for uid, r in client.prepare(refs).items()}
                    else:
                        errors = client.unprepare(refs)
            except Exception as exc:  # noqa: BLE001 - any failure of the call is the kubelet's retry
                problems.append(f"{driver}: {rpc_error_text(exc) or exc}")
                continue
            problems += [f"{driver}: claim {uid}: {e}" for uid, e in errors.items() if e]
        return "; ".join(problems) or None

    def prepare(self, node: Mapping[str, Any], claims: Sequence[Mapping[str, Any]]) -> str | None:
        return self._call(node, claims, "prepare")

    def unprepare(self, node: Mapping[str, Any], claims: Sequence[Mapping[str, Any]]) -> str | None:
        return self._call(node, claims, "unprepare")
