"""The kinds the local object store serves, and how a user may name them (kubectl's rules).

`fake-dra get/apply/delete` accept a kind the way kubectl does: the plural resource name, the
singular name, the Kind (case-insensitive), each optionally qualified with the group
(`resourceclaims.resource.k8s.io`) or version and group (`resourceclaims.v1.resource.k8s.io`), and
the short names the API server's discovery lists. The resource.k8s.io/v1 types have none (source:
kubernetes/kubernetes api/discovery/apis__resource.k8s.io__v1.json; `rc` is kubectl's short name for
replicationcontrollers); core/v1 Nodes, Pods, Events and Namespaces have `no`, `po`, `ev` and `ns`
(api/discovery/api__v1.json).

Deployments and ReplicaSets (apps/v1, short names `deploy` and `rs`) and Jobs (batch/v1, none) are
stored so that workload manifests apply as they do on a cluster (api/discovery/apis__apps__v1.json,
apis__batch__v1.json); they are checked and defaulted as kube-apiserver does (driver.store.admission).

Nodes and Pods are the core/v1 kinds scheduling needs: fleets create Nodes, and `fake-dra schedule`
binds Pods to them. Events (core/v1, short name `ev`) are where the local scheduler stand-ins say
why a claim or pod is pending (driver.store.events). Namespaces (core/v1, `ns`) are kept so that manifests
written for a cluster (NVIDIA's quickstart files open with one) apply unchanged; deleting one
deletes what it holds, as the namespace controller does. Kubernetes prints core objects without a
group (`pod/x created`).

The rest of the 1.37 DRA API is stored too (docs/allocator.md, "Device taint rules" and "Pool
status"): DeviceTaintRules (resource.k8s.io/v1, cluster-scoped), which the scheduler stand-ins apply
as device taints; ResourcePoolStatusRequests (KEP-5677, alpha, so only resource.k8s.io/v1alpha3
serves them; cluster-scoped; the spec is immutable, and the whole object once its status is set),
answered from the allocator's usage; and PodGroups (scheduling.k8s.io/v1beta1, KEP-5729's shared
claims belong to them), so kube-scheduler's and dra-example-driver's workload objects apply.
"""

from __future__ import annotations

from dataclasses import dataclass

from driver.errors import InputError
from driver.schema.versions import refusal

GROUP = "resource.k8s.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"


@dataclass(frozen=True)
class Kind:
    kind: str  # ResourceClaim
    plural: str  # resourceclaims: the store's directory name (docs/architecture.md §4)
    namespaced: bool
    group: str = GROUP  # "" for the core API
    version: str = VERSION
    short_names: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        """The apiVersion field of this kind's objects: `resource.k8s.io/v1`, `v1` for core."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def qualified(self) -> str:
        """`resourceclaim.resource.k8s.io` (`pod` for core), the prefix kubectl prints in `apply`/`delete` messages."""
        return f"{self.singular}.{self.group}" if self.group else self.singular

    @property
    def resource(self) -> str:
        """`resourceclaims.resource.k8s.io` (`pods` for core), as kubectl names the resource in NotFound errors."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def names(self) -> set[str]:
        out = set(self.short_names)
        for base in (self.plural, self.singular):
            out.add(base)
            if self.group:
                out |= {f"{base}.{self.group}", f"{base}.{self.version}.{self.group}"}
            else:
                out.add(f"{base}.{self.version}")
        return out


KINDS: tuple[Kind, ...] = (
    Kind("DeviceClass", "deviceclasses", namespaced=False),
    Kind("ResourceClaim", "resourceclaims", namespaced=True),
    Kind("ResourceClaimTemplate", "resourceclaimtemplates", namespaced=True),
    Kind("ResourceSlice", "resourceslices", namespaced=False),
    Kind("Node", "nodes", namespaced=False, group="", short_names=("no",)),
    Kind("Pod", "pods", namespaced=True, group="", short_names=("po",)),
    Kind("Event", "events", namespaced=True, group="", short_names=("ev",)),
    Kind("Namespace", "namespaces", namespaced=False, group="", short_names=("ns",)),
    Kind("DeviceTaintRule", "devicetaintrules", namespaced=False),
    Kind("ResourcePoolStatusRequest", "resourcepoolstatusrequests", namespaced=False,
         version="v1alpha3"),
    Kind("PodGroup", "podgroups", namespaced=True, group="scheduling.k8s.io", version="v1beta1"),
    Kind("Deployment", "deployments", namespaced=True, group="apps", short_names=("deploy",)),
    Kind("ReplicaSet", "replicasets", namespaced=True, group="apps", short_names=("rs",)),
    Kind("Job", "jobs", namespaced=True, group="batch"),
)
_BY_KIND = {k.kind: k for k in KINDS}
_BY_PLURAL = {k.plural: k for k in KINDS}


def by_plural(plural: str) -> Kind | None:
    """The Kind stored under a resource name (`resourceclaims`), None for one the store does not keep."""
    return _BY_PLURAL.get(plural)


def known_kinds() -> str:
    return ", ".join(k.plural for k in KINDS)


def resolve(name: str) -> Kind:
    """A kind as typed on the command line (`resourceclaims`, `ResourceClaim`, ...) -> Kind."""
    wanted = name.strip().lower()
    for kind in KINDS:
        if wanted in kind.names():
            return kind
    raise InputError(f'the server doesn\'t have a resource type "{name}" (local store kinds: {known_kinds()})')


def for_object(api_version: object, kind: object, where: str) -> Kind:
    """The Kind of an object's apiVersion/kind fields; InputError naming `where` and the field."""
    if not kind:
        raise InputError(f"{where}: kind: required")
    if not api_version:
        raise InputError(f"{where}: apiVersion: required")
    found = _BY_KIND.get(str(kind))
    if found is None:
        raise InputError(f"{where}: kind: {kind!r} is not stored by the local store (it keeps "
                         f"{', '.join(k.kind for k in KINDS)})")
    if api_version != found.api_version:
        # The one apiVersion rule of every command (driver.schema.versions).
        raise InputError(f"{where}: {refusal(str(api_version), found.kind, found.api_version)}")
    return found
