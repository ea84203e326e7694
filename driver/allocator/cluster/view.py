"""`ClusterView`: a whole cluster's slices, classes, nodes and allocated claims, kept incrementally,
from which a node's allocator is built in time proportional to that node.

kube-scheduler builds one allocator per pod in PreFilter from its informers' slices and the
allocated-devices tracker, then calls Allocate once per node in Filter
(pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go: PreFilter calls
structured.NewAllocator with ListAllAllocatedDevices and ResourceSlices().ListWithDeviceTaintRules,
Filter calls s.allocator.Allocate(ctx, node, claims)). This view keeps what PreFilter assembles
(slices parsed once and indexed by node and pool, allocated devices, shares and counter consumption
per pool) and updates it object by object, so `allocator(node)` only gathers that node's pools
(cached until one of their slices changes) and copies what its pools' claims hold.

Thread safety: any number of threads may call the read methods (`allocator`, `filter`, `nodes`,
`usage`, `holders`, ...) at the same time, and each use the Allocator it got; those calls only add
to caches, each addition a single assignment of a finished value. The update methods (`upsert`,
`delete`, `set_*`, `replace_*`) must not run while any other call on the view does: serialize them
(e.g. one lock held by the writer for the update and by the scheduling cycle around its reads).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from driver.allocator.cluster.accounts import Hold, PoolAccount, PoolAllocations, PoolId, claim_holds
from driver.allocator.cluster.store import SliceStore
from driver.allocator.cluster.usage import PublishedPool, Usage, read_usage
from driver.allocator.engine import DEFAULT_BUDGET
from driver.allocator.inputs import DeviceClass, claim_label, parse_class
from driver.allocator.parsed import ParsedSlice
from driver.allocator.pools import Node, NodeView, Pool, gather_pools
from driver.allocator.taintrules import TaintRules
from driver.errors import InputError
from driver.features import Features

KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim", "Node", "DeviceTaintRule")
_USAGE = ("usage",)  # the key of a pool's whole-pool account among its accounts by content


def claim_key(obj: Mapping[str, Any]) -> str:
    """A claim's key in the view: namespace/name (the claim's identity in the API)."""
    return claim_label(obj)


@dataclass
class NodeEntry:
    """A node's gathered pools and the accounts of its valid pools (what `allocator` copies from)."""

    node: Node
    view: NodeView
    accounts: list[tuple[Pool, PoolAccount, PoolAllocations]]


class ClusterView:
    """Slices, classes, nodes and allocated claims of a cluster, for allocating on any node."""

    def __init__(self, objects: Iterable[Any] = (), *, features: Features = Features()):
        self.features = features.for_scheduler()
        self.slices = SliceStore()
        self._classes: dict[str, DeviceClass] = {}
        self.class_keys: dict[str, tuple] = {}  # a class is known to selector memos by its expressions
        self._labels: dict[str, dict[str, str]] = {}  # Node objects
        # DeviceTaintRules: looked up per device at taint-check time, so a rule change invalidates nothing.
        self.taint_rules = TaintRules()
        self._claims: dict[str, tuple[Mapping[str, Any], Any, list[Hold]]] = {}
        self._allocations: dict[PoolId, PoolAllocations] = {}
        self._accounts: dict[PoolId, dict[tuple, PoolAccount]] = {}
        self._entries: dict[str, NodeEntry] = {}
        self._pool_users: dict[PoolId, set[str]] = {}
        self._published: dict[PoolId, tuple[PublishedPool, PoolAccount]] = {}  # for usage; the account is in _accounts too
        if objects:
            self.load(objects)

    # ---- building ------------------------------------------------------------------------------
    def load(self, objects: Iterable[Any]) -> list[str]:
        """Add many objects of any of KINDS (others are skipped; their names are returned as warnings).
        Slices given without pool generation/count (bare specs) count as whole pools together."""
        slices, warnings = [], []
        for i, obj in enumerate(objects):
            if obj is None:
                continue
            if not isinstance(obj, Mapping):
                raise InputError(f"object #{i + 1}: expected a mapping with apiVersion and kind, got {type(obj).__name__}")
            kind = obj.get("kind")
            if kind == "ResourceSlice" or (kind is None and "driver" in obj and "pool" in obj):
                slices.append(obj)
            elif kind in KINDS:
                self.upsert(obj)
            elif kind is None:
                raise InputError(f"object #{i + 1}: kind: required")
            else:
                warnings.append(f"ignoring {kind} {(obj.get('metadata') or {}).get('name') or '#' + str(i + 1)}: "
                                "not used for allocation")
        self.add_slices(slices)
        return warnings

    def upsert(self, obj: Mapping[str, Any]) -> None:
        """Add or replace one object (DeviceClass, ResourceSlice, ResourceClaim, Node or DeviceTaintRule)."""
        kind = obj.get("kind")
        name = (obj.get("metadata") or {}).get("name")
        if kind in KINDS and not name:
            raise InputError(f"{kind}: metadata.name: required")
        if kind == "DeviceClass":
            cls = parse_class(obj)
            self.classes = {**self.classes, cls.name: cls}
        elif kind == "ResourceSlice":
            self.add_slices([obj])
        elif kind == "ResourceClaim":
            self.set_claim(obj)
        elif kind == "Node":
            self.set_node(str(name), (obj.get("metadata") or {}).get("labels") or {})
        elif kind == "DeviceTaintRule":
            self.taint_rules.set(obj)
        else:
            raise InputError(f"{kind or 'object without kind'} {name or ''}: not a kind the allocator uses ({', '.join(KINDS)})")

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        """Remove one object; removing what is not there does nothing."""
        if kind == "DeviceClass":
            self.classes = {k: v for k, v in self.classes.items() if k != name}
        elif kind == "ResourceSlice":
            self.remove_slice(name)
        elif kind == "ResourceClaim":
            self.remove_claim(f"{namespace or 'default'}/{name}")
        elif kind == "Node":
            self.set_node(name, None)
        elif kind == "DeviceTaintRule":
            self.taint_rules.remove(name)
        else:
            raise InputError(f"{kind}: not a kind the allocator uses ({', '.join(KINDS)})")

    # ---- slices --------------------------------------------------------------------------------
    def add_slices(self, objs: Sequence[Mapping[str, Any]]) -> None:
        """Add or replace slices (by name); unchanged ones are not parsed again."""
        for key, name, obj, spec in self.slices.prepare(objs, first_index=len(self.slices)):
            if self.slices.unchanged(key, obj):
                continue
            old, new = self.slices.put(key, name, obj, spec)
            self._slice_changed(old)
            self._slice_changed(new)

    def remove_slice(self, name: str) -> None:
        """Remove the slice stored under `name` (its key: the name, `name#2` for a repeated one)."""
        self._slice_changed(self.slices.remove(name))

    def replace_slices(self, objs: Sequence[Mapping[str, Any]]) -> None:
        """Make the view's slices exactly `objs` (what an informer list says), changing only the difference."""
        prepared = self.slices.prepare(objs)
        wanted = {key for key, _, _, _ in prepared}
        for key in [k for k in self.slices.by_key if k not in wanted]:
            self.remove_slice(key)
        for key, name, obj, spec in prepared:
            if not self.slices.unchanged(key, obj):
                old, new = self.slices.put(key, name, obj, spec)
                self._slice_changed(old)
                self._slice_changed(new)

    def _slice_changed(self, ps: ParsedSlice | None) -> None:
        if ps is None or not (self._entries or self._accounts or self._published or self._pool_users):
            return  # nothing derived from slices yet (a view being filled)
        pid = ps.pool_id
        self._accounts.pop(pid, None)
        self._published.pop(pid, None)
        stale = set(self._pool_users.pop(pid, ()))
        if ps.node_name is None:
            stale.update(self._entries)
        else:
            stale.add(ps.node_name)
        for node in stale:
            self._drop_entry(node)

    def _drop_entry(self, node: str) -> None:
        entry = self._entries.pop(node, None)
        if entry is not None:
            for pool in entry.view.pools:
                users = self._pool_users.get((pool.driver, pool.name))
                if users is not None:
                    users.discard(node)

    # ---- nodes and classes ---------------------------------------------------------------------
    def set_node(self, name: str, labels: Mapping[str, str] | None) -> None:
        """A Node object's labels (None: the Node is gone); nodeSelector slices match on them."""
        if labels is None:
            if self._labels.pop(name, None) is not None:
                self._drop_entry(name)
            return
        labels = {str(k): str(v) for k, v in labels.items()}
        if self._labels.get(name) != labels:
            self._labels[name] = labels
            self._drop_entry(name)

    def nodes(self) -> list[str]:
        """Every node the view knows of: named by a slice's nodeName or by a Node object, sorted."""
        return sorted(set(self.slices.on_node) | set(self._labels))

    def node(self, name: str) -> Node:
        return Node(name, dict(self._labels.get(name, {})))

    def replace_taint_rules(self, objs: Iterable[Mapping[str, Any]]) -> None:
        """Make the view's DeviceTaintRules exactly `objs` (InputError naming the field of an invalid one)."""
        rules = TaintRules()
        for obj in objs:
            rules.set(obj)
        self.taint_rules = rules

    def replace_classes(self, objs: Iterable[Mapping[str, Any]]) -> None:
        self.classes = {cls.name: cls for cls in map(parse_class, objs)}

    @property
    def classes(self) -> dict[str, DeviceClass]:
        """DeviceClasses by name (replaced as a whole on change: readers may hold the old dict)."""
        return self._classes

    @classes.setter
    def classes(self, classes: Mapping[str, DeviceClass]) -> None:
        self._classes = dict(classes)
        # ("class", expressions): a memo key of its own, never equal to a request's key
        self.class_keys = {name: ("class", *(s.expression for s in cls.selectors)) for name, cls in self._classes.items()}

    # ---- claims --------------------------------------------------------------------------------
    def set_claim(self, obj: Mapping[str, Any], key: str | None = None, *, problems: list[str] | None = None) -> str:
        """Add, replace or (without status.allocation) forget a claim's allocation; returns its key.

        This is how a scheduler commits the allocation it chose: the claim with `status.allocation`
        set. Only results that hold their device count (adminAccess results are kept for reports
        but hold nothing, as upstream). A malformed result raises InputError; with `problems`, it
        is described there and the claim's other results count (what a report wants).
        Claim objects are taken as immutable (like informer objects): pass a new object to change one.
        """
        return self._set_claim(obj, key or claim_key(obj), _allocation(obj), None, problems)

    def _set_claim(self, obj: Mapping[str, Any], key: str, allocation: Any, label: str | None,
                   problems: list[str] | None) -> str:
        known = self._claims.get(key)
        if known is not None and (known[0] is obj or known[1] == allocation):
            if known[0] is not obj:
                self._claims[key] = (obj, allocation, known[2])
            return key
        results = claim_holds(obj, self.features, problems, label) if allocation else []
        self.remove_claim(key)
        if allocation:
            self._claims[key] = (obj, allocation, results)
            self._hold(results, +1)
        return key

    def remove_claim(self, key: str) -> None:
        known = self._claims.pop(key, None)
        if known is not None:
            self._hold(known[2], -1)

    def replace_claims(self, objs: Iterable[Mapping[str, Any]], *, problems: list[str] | None = None) -> None:
        """Make the view's allocated claims exactly the allocated ones among `objs` (others ignored);
        claims with equal keys (namespace/name) are kept apart. `problems`: as for `set_claim`."""
        keyed: dict[str, tuple[Mapping[str, Any], Any, str]] = {}
        for obj in objs:
            allocation = _allocation(obj)
            if not allocation:
                continue
            label = key = claim_key(obj)
            n = 1
            while key in keyed:
                n += 1
                key = f"{label}#{n}"
            keyed[key] = (obj, allocation, label)
        for key in [k for k in self._claims if k not in keyed]:
            self.remove_claim(key)
        for key, (obj, allocation, label) in keyed.items():
            self._set_claim(obj, key, allocation, label, problems)

    def claims(self) -> list[Mapping[str, Any]]:
        """The allocated claims the view holds (the objects given)."""
        return [obj for obj, _, _ in self._claims.values()]

    def _hold(self, holds: list[Hold], sign: int) -> None:
        touched: set[PoolId] = set()
        all_allocations, all_accounts = self._allocations, self._accounts
        for hold in holds:
            pid = (hold.device[0], hold.device[1])
            allocations = all_allocations.get(pid)
            if allocations is None:
                allocations = all_allocations[pid] = PoolAllocations()
            edge = allocations.add(hold) if sign > 0 else allocations.remove(hold)
            touched.add(pid)
            accounts = all_accounts.get(pid)
            if not accounts or hold.admin:
                continue  # no account kept for the pool yet, or adminAccess (holds nothing)
            for account in accounts.values():
                if sign > 0:
                    account.add(hold, first=edge, refold=False)
                else:
                    account.remove(hold, last=edge, refold=False)
        for pid in touched:
            accounts = all_accounts.get(pid)
            if accounts:
                for account in accounts.values():
                    account.refold()
            elif all_allocations[pid].empty:
                del all_allocations[pid]

    # ---- reading -------------------------------------------------------------------------------
    def entry(self, node: str) -> NodeEntry:
        """The node's gathered pools and their accounts (built on first use, then cached)."""
        entry = self._entries.get(node)
        if entry is not None:
            return entry
        target = self.node(node)
        pools = gather_pools(self.slices.for_node(node), target, self.features, self.slices.of_pool)
        accounts = []
        for pool in pools:
            if pool.incomplete or pool.invalid:
                continue
            pid = (pool.driver, pool.name)
            allocations = self._allocations.get(pid)
            if allocations is None:
                allocations = self._allocations.setdefault(pid, PoolAllocations())
            content = tuple(id(ps) for ps in pool.sources)
            by_content = self._accounts.setdefault(pid, {})
            account = by_content.get(content)
            if account is None:
                account = by_content.setdefault(content, PoolAccount(pool, allocations, self.features))
            accounts.append((pool, account, allocations))
        entry = NodeEntry(target, NodeView.build(pools), accounts)
        entry = self._entries.setdefault(node, entry)
        for pool in pools:
            self._pool_users.setdefault((pool.driver, pool.name), set()).add(node)
        return entry

    def allocator(self, node: str, *, budget: int = DEFAULT_BUDGET) -> Any:
        """A new Allocator for `node` that sees every claim allocated in the view.

        Its `allocate(claims)` answers like upstream's Allocate on that node; what it allocates stays
        in that Allocator (commit to the view with `set_claim`). Each Allocator belongs to one thread.
        """
        from driver.allocator.session import Allocator

        return Allocator.for_node(self, node, budget=budget)

    def filter(self, claims: Sequence[Mapping[str, Any]], nodes: Sequence[str] | None = None, *,
               budget: int = DEFAULT_BUDGET, explain: bool = True) -> Any:
        """One pod's claims tried on every node (or `nodes`), as kube-scheduler's Filter: see fleet.py."""
        from driver.allocator.cluster.fleet import filter_nodes

        return filter_nodes(self, claims, nodes, budget=budget, explain=explain)

    def prepare(self, nodes: Iterable[str] | None = None) -> None:
        """Parse every slice's devices and gather the pools of `nodes` (default: all) now rather than
        when first needed, e.g. so that timing a filter does not include reading and indexing."""
        for ps in self.slices:
            _ = ps.devices, ps.consumed_refs, ps.binding_conditions
        for node in self.nodes() if nodes is None else nodes:
            self.entry(node)

    def usage(self, driver: str | None = None, pool: str | None = None) -> Usage:
        """A `Usage` (cluster/usage.py) of every pool, or one driver's, or one pool's: per pool its
        counters total/used/left and who holds each device; read from the per-pool accounts the
        view keeps current, so its cost is the selected pools' counters and holds."""
        def selected(pid: PoolId) -> bool:
            return (driver is None or pid[0] == driver) and (pool is None or pid[1] == pool)

        published = [self._usage_account(pid) for pid in sorted(self.slices.by_pool) if selected(pid)]
        orphans = [a for pid, a in self._allocations.items() if pid not in self.slices.by_pool and selected(pid)]
        if driver is None and pool is None:
            claims = {key: holds for key, (_, _, holds) in self._claims.items()}
        else:
            claims = {key: kept for key, (_, _, holds) in self._claims.items()
                      if (kept := [h for h in holds if selected(h.pool_id)])}
        return read_usage(published, orphans, claims)

    def _usage_account(self, pid: PoolId) -> tuple[PublishedPool, PoolAccount, PoolAllocations]:
        """The pool as its newest generation publishes it, its whole-pool account and allocations
        (built on first use after a change of its slices, then kept current by claim updates)."""
        allocations = self._allocations.get(pid)
        if allocations is None:
            allocations = self._allocations.setdefault(pid, PoolAllocations())
        pair = self._published.get(pid)
        if pair is None:
            published = PublishedPool(*pid, self.slices.of_pool(*pid))
            pair = self._published.setdefault(pid, (published, published.account(allocations, self.features)))
            self._accounts.setdefault(pid, {})[_USAGE] = pair[1]
        published, account = pair
        return published, account, allocations

    def holders(self, driver: str, pool: str, device: str) -> list[Hold]:
        """Every allocation result naming one device, in commit order (adminAccess ones included,
        marked `admin`: they hold nothing)."""
        allocations = self._allocations.get((driver, pool))
        return list(allocations.holds.get(device, ())) if allocations else []

    def uses_kep5941(self) -> bool:
        """Whether any slice carries KEP-5941 fields (valueFrom consumption, counter requestPolicy)."""
        return any(_kep5941(ps.spec) for ps in self.slices)


def _allocation(obj: Mapping[str, Any]) -> Any:
    return (obj.get("status") or {}).get("allocation")


def _kep5941(spec: Mapping[str, Any]) -> bool:
    for cs in spec.get("sharedCounters") or ():
        if any(isinstance(c, Mapping) and c.get("requestPolicy") for c in (cs.get("counters") or {}).values()):
            return True
    for dev in spec.get("devices") or ():
        for cons in (dev.get("consumesCounters") or ()) if isinstance(dev, Mapping) else ():
            if any(isinstance(c, Mapping) and c.get("valueFrom") is not None for c in (cons.get("counters") or {}).values()):
                return True
    return False
