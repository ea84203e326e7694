"""Render deploy/helm/fake-dra the way `helm template` / `helm install` does, with no helm binary.

PyPI's helm-python-sdk (test extra) carries Helm's own Go library (Helm v4) as a shared object and
calls it through ctypes: `Chart.render` runs the chart's templates with the same engine, values
coalescing and values.schema.json check as `helm install`, and `lint` is `helm lint`. It has wheels
for Linux x86_64 and aarch64 (glibc), macOS and Windows x86_64 (docs/deploy.md, "The chart, tested
offline"); elsewhere pyproject.toml's marker leaves it out and the chart tests skip and say why
(`needs_helm`).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import pytest
import yaml

from .kustomize import DEPLOY

CHART = DEPLOY / "helm" / "fake-dra"
# Helm's bookkeeping labels: on every chart object, never in the kustomize base. Everything else of
# an object must be what kustomize renders.
HELM_LABELS = ("helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by")

try:
    import helm_python
    WHY_NOT = ""
except (ImportError, OSError) as exc:  # OSError: the wheel's libhelm_c does not load on this platform
    helm_python = None
    WHY_NOT = (f"helm-python-sdk is not usable here ({exc}): its wheels carry Helm's Go library for Linux x86_64 "
               "and aarch64 (glibc), macOS and Windows x86_64 only; there hack/test.sh installs it with the test extras")

needs_helm = pytest.mark.skipif(helm_python is None, reason=WHY_NOT or "helm-python-sdk present")


class RenderError(Exception):
    """What Helm refused, as its message (schema refusals, `fail` guards, template errors)."""


@functools.lru_cache(maxsize=1)
def chart() -> Any:
    return helm_python.Chart.load(str(CHART))


def render_files(values: dict | None = None, *, release: str = "fake-dra", namespace: str = "fake-dra") -> dict[str, str]:
    """Template path -> rendered text (empty templates included), or RenderError with Helm's message."""
    try:
        return chart().render(copy.deepcopy(values or {}), name=release, namespace=namespace)
    except helm_python.HelmError as exc:
        raise RenderError(str(exc)) from None


def render(values: dict | None = None, *, release: str = "fake-dra", namespace: str = "fake-dra") -> list[dict[str, Any]]:
    """The objects `helm install RELEASE deploy/helm/fake-dra -n NAMESPACE -f values` would create."""
    docs = []
    for path, text in sorted(render_files(values, release=release, namespace=namespace).items()):
        if path.endswith("NOTES.txt"):
            continue
        docs += [d for d in yaml.safe_load_all(text) if d]
    return docs


def key(doc: dict[str, Any]) -> tuple[str, str, str]:
    meta = doc["metadata"]
    return doc["kind"], meta.get("namespace") or "", meta["name"]


def without_helm_labels(doc: dict[str, Any]) -> dict[str, Any]:
    """A copy without Helm's bookkeeping labels (object and pod template), and with each ConfigMap's
    `*.yaml` data parsed (the chart writes the Fleet file with toYaml: same document, other layout)."""
    out = copy.deepcopy(doc)
    metas = [out["metadata"]]
    template = (out.get("spec") or {}).get("template")
    if isinstance(template, dict) and "metadata" in template:
        metas.append(template["metadata"])
    for meta in metas:
        labels = meta.get("labels") or {}
        for label in HELM_LABELS:
            labels.pop(label, None)
    if out["kind"] == "ConfigMap":
        out["data"] = {k: yaml.safe_load(v) if k.endswith(".yaml") else v for k, v in (out.get("data") or {}).items()}
    return out
