"""What kube-apiserver's discovery says about the kinds the local store keeps: verbs and categories.

kubectl reads them from the server (`kubectl api-resources`, and `kubectl get all`, which expands
the `all` category). The facts are Kubernetes' own discovery documents
(kubernetes/kubernetes api/discovery/api__v1.json, apis__resource.k8s.io__v1.json, apis__apps__v1.json,
apis__batch__v1.json): every resource.k8s.io/v1 kind, pods, nodes and events take the eight verbs
below; namespaces no deletecollection; pods, and the workload kinds (Deployment, ReplicaSet,
StatefulSet, DaemonSet, Job, CronJob), are in the `all` category. Names, short names, scope and
apiVersion come from driver.store.kinds, so a kind added there is listed here too.
"""

from __future__ import annotations

from dataclasses import dataclass

from driver.errors import InputError
from driver.store.kinds import KINDS, Kind

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
_VERBS_BY_KIND = {"Namespace": ("create", "delete", "get", "list", "patch", "update", "watch")}
_CATEGORIES_BY_KIND = {k: ("all",) for k in ("Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job",
                                             "CronJob", "ReplicationController", "Service")}


@dataclass(frozen=True)
class Resource:
    kind: Kind
    verbs: tuple[str, ...]
    categories: tuple[str, ...]


def resources() -> list[Resource]:
    return [Resource(k, _VERBS_BY_KIND.get(k.kind, VERBS), _CATEGORIES_BY_KIND.get(k.kind, ())) for k in KINDS]


def in_category(category: str) -> list[Kind]:
    """The kinds of a category (`all`), in kubectl's order for `get all` (the order discovery lists
    them: core first, then groups by name)."""
    found = [r.kind for r in resources() if category in r.categories]
    return sorted(found, key=lambda k: (k.group != "", k.group, k.plural))


def expand(names: str) -> list[Kind]:
    """`get`'s KIND argument: comma-separated kinds, a category (`all`) standing for its kinds."""
    from driver.store.kinds import resolve

    out: list[Kind] = []
    for name in (n.strip() for n in names.split(",")):
        if not name:
            continue
        kinds = in_category(name.lower()) if name.lower() == "all" else [resolve(name)]
        out.extend(k for k in kinds if k not in out)
    if not out and names.strip().lower() != "all":
        raise InputError("KIND: required (e.g. resourceclaims)")
    return out
