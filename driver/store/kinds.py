"""The kinds the local object store serves, and how a user may name them (kubectl's rules).

`fake-dra get/apply/delete` accept a kind the way kubectl does for resource.k8s.io: the plural
resource name, the singular name, the Kind (case-insensitive), each optionally qualified with the
group (`resourceclaims.resource.k8s.io`) or version and group (`resourceclaims.v1.resource.k8s.io`).
The resource.k8s.io/v1 types have no short names (source: kubernetes/kubernetes
api/discovery/apis__resource.k8s.io__v1.json lists none; `rc` is kubectl's short name for
replicationcontrollers), so none are accepted here either.
"""

from __future__ import annotations

from dataclasses import dataclass

from driver.errors import InputError

GROUP = "resource.k8s.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"


@dataclass(frozen=True)
class Kind:
    kind: str  # ResourceClaim
    plural: str  # resourceclaims: the store's directory name (docs/architecture.md §4)
    namespaced: bool
    # kube-apiserver refuses updates that change the spec (pkg/apis/resource/validation:
    # ValidateResourceClaimUpdate / ValidateResourceClaimTemplateUpdate use ValidateImmutableField).
    immutable_spec: bool = False

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def qualified(self) -> str:
        """`resourceclaim.resource.k8s.io`, the prefix kubectl prints in `apply`/`delete` messages."""
        return f"{self.singular}.{GROUP}"

    def names(self) -> set[str]:
        out = set()
        for base in (self.plural, self.singular):
            out |= {base, f"{base}.{GROUP}", f"{base}.{VERSION}.{GROUP}"}
        return out


KINDS: tuple[Kind, ...] = (
    Kind("DeviceClass", "deviceclasses", namespaced=False),
    Kind("ResourceClaim", "resourceclaims", namespaced=True, immutable_spec=True),
    Kind("ResourceClaimTemplate", "resourceclaimtemplates", namespaced=True, immutable_spec=True),
    Kind("ResourceSlice", "resourceslices", namespaced=False),
)
_BY_KIND = {k.kind: k for k in KINDS}


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
    if api_version != API_VERSION:
        raise InputError(f"{where}: apiVersion: {api_version!r} is not served by the local store; "
                         f"use {API_VERSION}")
    return found
