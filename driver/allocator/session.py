"""`Allocator`: pools + in-use state for one node, allocating claim after claim.

Built once from the cluster objects (slices, classes, already-allocated claims), it answers
`allocate([claim, ...])` with `status.allocation` dicts exactly as the API shapes them, or raises
AllocationError with a reason in words. Successful allocations are committed, so the next call
sees them in use — the way `fake-dra allocate` processes claims in file order and the way the e2e
harness plays the scheduler.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from driver.allocator.devices import Capacity, CounterKey, DeviceInfo, DeviceKey
from driver.allocator.engine import DEFAULT_BUDGET, Search, SearchState, selectors_match
from driver.allocator.explain import explain_failure
from driver.allocator.inputs import (
    MAX_RESULTS, Claim, DeviceClass, Request, parse_claim,
)
from driver.allocator.cache import AllocatorCache
from driver.allocator.candidates import Candidates
from driver.allocator.pools import Node, Pool
from driver.allocator.render import render_allocation
from driver.allocator.taintrules import first_untolerated
from driver.allocator.rules import CounterLedger, GroupIntersection
from driver.celexpr import CelRuntimeError, device_variable, plain_attributes
from driver.errors import AllocationError, InputError
from driver.features import Features


def cel_variable(dev: DeviceInfo) -> dict:
    """The device's CEL `device` variable, built once; InputError for an attribute the API server
    would have rejected."""
    variable = dev.memo.get("cel")
    if variable is None:
        try:
            variable = dev.memo["cel"] = device_variable(dev.driver, dev.raw)
        except CelRuntimeError as exc:
            raise InputError(f"ResourceSlice {dev.slice_name}: device {dev.name}: {exc}") from None
    return variable


def plain_device(dev: DeviceInfo) -> bool:
    """Whether every attribute is a plain int, bool or string (celexpr.plain_attributes), decided
    once per device; otherwise its CEL variable is built right away, so an attribute the API server
    would have rejected is an InputError whether or not a selector reads it."""
    plain = dev.plain
    if plain is None:
        plain = plain_attributes(dev.raw)
        if not plain:
            cel_variable(dev)
        dev.plain = plain
    return plain


class Allocator:
    """Allocation state of one node. Not thread-safe: one instance per thread (build one per node
    and cycle from a shared ClusterView with `ClusterView.allocator`)."""

    def __init__(
        self,
        *,
        slices: Sequence[Mapping[str, Any]],
        classes: Sequence[Mapping[str, Any]] | Mapping[str, DeviceClass],
        node: Node | str,
        features: Features = Features(),
        allocated: Sequence[Mapping[str, Any]] = (),
        budget: int = DEFAULT_BUDGET,
        cache: AllocatorCache | None = None,
        taint_rules: Sequence[Mapping[str, Any]] = (),
    ):
        """One node's allocator from objects: the slices, classes, already allocated claims and DeviceTaintRules.

        With `cache` the objects are synced into the cache's ClusterView (only what changed is parsed
        again); without it a private view is built. Either way this is `ClusterView.allocator(node)`.
        """
        from driver.allocator.cluster import ClusterView

        node = node if isinstance(node, Node) else Node(str(node))
        view = cache.view(features) if cache is not None else ClusterView(features=features)
        view.replace_slices(slices)
        if isinstance(classes, Mapping):
            view.classes = dict(classes)
        else:
            view.replace_classes(classes)
        view.replace_claims(allocated)
        view.replace_taint_rules(taint_rules)
        view.set_node(node.name, node.labels if node.labels else None)
        self._setup(view, node.name, budget)

    @classmethod
    def for_node(cls, view: Any, node: str, *, budget: int = DEFAULT_BUDGET) -> Allocator:
        """The allocator of `node` in a ClusterView (see ClusterView.allocator)."""
        self = cls.__new__(cls)
        self._setup(view, node, budget)
        return self

    def _setup(self, view: Any, node: str, budget: int) -> None:
        """Gathered pools from the view (cached per node), state copied from what the node's pools'
        allocated claims hold: proportional to this node's pools, not to the cluster."""
        entry = view.entry(node)
        self.node = entry.node
        self.features = features = view.features
        # Upstream's DeviceBindingAndStatus: binding conditions need both gates.
        self.binding_conditions = features.binding_conditions and features.device_status
        self.budget = budget
        # DeviceTaintRules act as taints the slices list (resourceslice/tracker) while both taint
        # gates are on; None when no rule can apply.
        self.taint_rules = view.taint_rules if (features.device_taints and features.device_taint_rules
                                                and view.taint_rules) else None
        self.classes = view.classes
        # A class is known to selector memos by its expressions, so an edited class is re-evaluated.
        self._class_keys = view.class_keys
        nv = entry.view
        self.view = nv
        self.pools: list[Pool] = nv.pools
        # Usable devices in search order, and where each pool starts in that order (for pruning).
        self.flat: list[tuple[Pool, DeviceInfo]] = nv.flat
        self.offsets: list[int] = nv.offsets
        self.ledger = CounterLedger(nv.totals)
        self.state = state = SearchState()
        self._charged: set[DeviceKey] = set()
        self._over: dict[tuple[str, str], str | None] = {}
        # Allocated devices whose compatibility groups bind their counter sets, per pool; the
        # pool's group state is refolded from them (in upstream order) when they change.
        self._holders: dict[tuple[str, str], tuple[Pool, dict[DeviceKey, DeviceInfo]]] = {}
        self._stale_groups: set[tuple[str, str]] = set()
        used = self.ledger.used
        for pool, account, allocations in entry.accounts:
            driver, name = pool.driver, pool.name
            for counter_set, amounts in account.used.items():
                used[(driver, name, counter_set)] = dict(amounts)
            for counter_set, groups in account.groups.items():
                state.groups[(driver, name, counter_set)] = groups
            if allocations.in_use:
                state.in_use |= allocations.in_use
            if allocations.shared:
                state.shared |= allocations.shared
                for key, consumed in allocations.capacity.items():
                    state.capacity_used[key] = dict(consumed)
            if account.charged:
                self._charged |= account.charged
            if account.holders:
                self._holders[(driver, name)] = (pool, dict(account.holders))
            self._over[(driver, name)] = account.overcommitted

    # ---- helpers used by the search -----------------------------------------------------------
    def caps(self, dev: DeviceInfo) -> dict[str, Capacity]:
        caps = dev.memo.get("caps")
        if caps is None:
            caps = dev.memo["caps"] = dev.capacity_by_qualified_name()
        return caps

    def selectable(self, claim: Claim, req: Request, dev: DeviceInfo) -> bool:
        """Whether the device passes the class and request selectors (and the binding-condition gate).

        Results are kept on the parsed device, keyed by the selector expressions: they depend on
        nothing else, so they survive as long as the parsed slice does (AllocatorCache).
        """
        if dev.binding_conditions and not self.binding_conditions:
            return False  # upstream: such devices are not supported while the gates are off
        memo = dev.memo
        class_key = self._class_keys[req.class_name]
        hit = memo.get(class_key)
        if hit is None:  # class selectors first (their result serves every request of the class)
            cls = self.classes[req.class_name]
            plain = dev.plain
            hit = memo[class_key] = selectors_match("class", cls.name, cls.selectors, dev,
                                                    plain_device(dev) if plain is None else plain, cel_variable)
        if not hit or not req.selectors:
            return hit
        key = (class_key, req.selector_exprs)
        hit = memo.get(key)
        if hit is None:
            plain = dev.plain
            hit = memo[key] = selectors_match("claim", claim.label, req.selectors, dev,
                                              plain_device(dev) if plain is None else plain, cel_variable)
        return hit

    def device_taints(self, dev: DeviceInfo) -> list[tuple[Mapping[str, Any], str | None]]:
        """Every taint the device carries with where it comes from: the slice's own first, then those
        of the DeviceTaintRules selecting it (the tracker appends rule taints after the slice's)."""
        out: list[tuple[Mapping[str, Any], str | None]] = [(t, None) for t in dev.taints]
        if self.taint_rules is not None:
            out.extend((r.taint, r.rule) for r in self.taint_rules.for_device(*dev.key))
        return out

    def blocking_taint(self, dev: DeviceInfo, req: Request) -> tuple[Mapping[str, Any], str | None] | None:
        """The first NoSchedule/NoExecute taint of the device (its slice's or a rule's) the request
        does not tolerate, with the rule's name (None for a slice taint); None when nothing blocks."""
        if dev.taints:
            hit = first_untolerated(dev.taints, req.tolerations)
            if hit is not None:
                return hit, None
        if self.taint_rules is not None:
            for rule in self.taint_rules.for_device(*dev.key):
                if first_untolerated((rule.taint,), req.tolerations) is not None:
                    return rule.taint, rule.rule
        return None

    def candidates(self, claim: Claim, req: Request) -> Candidates:
        """The devices of this node that match the request's selectors, found lazily in search
        order and kept with the node's view (candidates.py)."""
        key = (self._class_keys[req.class_name], req.selector_exprs)
        memo = self.view.memo
        found = memo.get(key)
        if found is None:
            found = memo.setdefault(key, Candidates(len(self.flat)))
        return found

    def fold_groups(self, dev: DeviceInfo, undo: list[Callable[[], None]]) -> str | None:
        """Admit `dev` into the rolling group intersection of each counter set it uses, or name the blocker."""
        groups = self.state.groups
        for cons in dev.consumes:
            key = dev.counter_key(cons.counter_set)
            cur = groups.get(key)
            if cur is None:
                cur = GroupIntersection()
            if not cur.admits(cons.groups):
                return cons.counter_set
            existed = key in groups
            groups[key] = cur.add(cons.groups)
            undo.append(lambda k=key, c=cur, e=existed: groups.__setitem__(k, c) if e else groups.pop(k, None))
        return None

    def pool_overcommitted(self, pool: Pool) -> str | None:
        """A counter set already over its total from existing allocations blocks the whole pool (upstream)."""
        pid = (pool.driver, pool.name)
        if pid not in self._over:
            self._over[pid] = next(
                (cs for cs in sorted(pool.counter_sets) if self.ledger.over((pool.driver, pool.name, cs))), None
            )
        return self._over[pid]

    def charge_counters(
        self, dev: DeviceInfo, pool: Pool, request_counters, charge_static: bool, undo: list[Callable[[], None]]
    ) -> str | None:
        if not charge_static and not request_counters:
            return None  # another share of an already charged device: upstream skips the check
        over = self.pool_overcommitted(pool)
        if over is not None:
            return over
        per_set: dict[CounterKey, dict[str, Fraction]] = {}
        if charge_static:
            for cons in dev.consumes:
                bucket = per_set.setdefault(dev.counter_key(cons.counter_set), {})
                for name, amount in cons.static.items():
                    bucket[name] = bucket.get(name, 0) + amount
        for counter_set, amounts in request_counters:
            bucket = per_set.setdefault(dev.counter_key(counter_set), {})
            for name, amount in amounts.items():
                bucket[name] = bucket.get(name, 0) + amount
        for key, amounts in per_set.items():
            if not self.ledger.fits(key, amounts):
                return key[2]
        for key, amounts in per_set.items():
            self.ledger.add(key, amounts)
        undo.append(lambda: [self.ledger.add(k, a, -1) for k, a in per_set.items()])
        return None

    # ---- committed state ----------------------------------------------------------------------
    def _charge_allocated(self, dev: DeviceInfo, pool: Pool, request_counters) -> None:
        """What an allocated (non-admin) device holds for later cycles: its static counters once
        per device, its request-driven counters per result, and its groups on its counter sets."""
        key = dev.key
        if key not in self._charged and self.features.partitionable_devices:
            self._charged.add(key)
            for cons in dev.consumes:
                self.ledger.add(dev.counter_key(cons.counter_set), cons.static)
            self._hold_groups(dev, pool, refold=True)
        for counter_set, amounts in request_counters:
            self.ledger.add((key[0], key[1], counter_set), amounts)

    def _hold_groups(self, dev: DeviceInfo, pool: Pool, refold: bool) -> None:
        if dev.consumes and self.features.compatibility_groups:
            pid = (pool.driver, pool.name)
            self._holders.setdefault(pid, (pool, {}))[1][dev.key] = dev
            if refold:
                self._stale_groups.add(pid)

    def _fold_holders(self) -> None:
        """Recompute the group state allocated devices impose, for the pools whose holders changed.

        Upstream (compatibilityGroupsBaselineForPool) walks the pool's devices in order and folds
        each allocated device's groups in with `add`, without an admission check, reading the
        groups live from the slice. Order only matters when a driver re-published allocated
        devices with clashing groups, and then the first one in pool order decides.
        """
        groups = self.state.groups
        for pid in self._stale_groups:
            for ckey in [k for k in groups if k[0] == pid[0] and k[1] == pid[1]]:
                del groups[ckey]
            pool, held = self._holders[pid]
            position = pool.position
            for dev in sorted(held.values(), key=lambda d: position.get(d.key, -1)):
                for cons in dev.consumes:
                    ckey = dev.counter_key(cons.counter_set)
                    groups[ckey] = groups.get(ckey, GroupIntersection()).add(cons.groups)
        self._stale_groups.clear()

    def _commit(self, search: Search) -> None:
        """Keep a successful attempt as the next cycle would see it.

        The placements are charged the way existing allocations are: an adminAccess placement
        holds nothing, exactly as kube-scheduler does not count adminAccess results as allocated
        (dynamicresources foreachAllocatedDevice), and groups are refolded in pool order.
        """
        placements = [p for results in search.results for p in results]
        # Without adminAccess placements the search's counters and group state are exactly what
        # the next cycle charges, because every placement was admitted against that state
        # (refolding them in pool order gives the same groups): keep them. Otherwise undo the
        # search's bookkeeping and charge the placements that count from scratch.
        keep_search_state = not any(p.request.admin_access for p in placements)
        if not keep_search_state:
            search.rollback()
        for p in placements:
            if p.request.admin_access:
                continue
            key = p.device.key
            self._mark_allocated(key, p.share_id is not None, p.consumed_capacity)
            if not p.device.consumes:
                continue
            if not keep_search_state:
                self._charge_allocated(p.device, p.pool, p.request_counters)
            elif key not in self._charged and self.features.partitionable_devices:
                self._charged.add(key)
                self._hold_groups(p.device, p.pool, refold=False)
        self._over.clear()
        if not keep_search_state:
            self._fold_holders()

    def _mark_allocated(self, key: DeviceKey, shared: bool, consumed: Mapping[str, Fraction] | None) -> None:
        """An allocated placement makes its device in use; a share instead adds what it consumed
        of the device's capacity."""
        if not shared:
            self.state.in_use.add(key)
            return
        self.state.shared.add(key)
        bucket = self.state.capacity_used.setdefault(key, {})
        for name, amount in (consumed or {}).items():
            bucket[name] = bucket.get(name, 0) + amount

    # ---- public --------------------------------------------------------------------------------
    def check_claim(self, claim: Claim) -> None:
        """Gate and class checks upstream does before searching (errors for the claim)."""
        minimum = sum(min(r.count for r in alternatives) for alternatives in claim.requests)
        if minimum > MAX_RESULTS:
            raise AllocationError(f"claim {claim.label}: number of requested devices {minimum} exceeds the claim limit of {MAX_RESULTS}")
        for alternatives in claim.requests:
            for req in alternatives:
                if claim.has_first_available and not self.features.prioritized_list:
                    raise AllocationError(f"claim {claim.label}, request {req.top}: has subrequests, but the DRAPrioritizedList feature is disabled")
                if req.capacity is not None and not self.features.consumable_capacity:
                    what = f"subrequest {req.name.split('/', 1)[1]}" if req.name != req.top else f"request {req.name}"
                    raise AllocationError(f"claim {claim.label}, {what}: has capacity requests, but the DRAConsumableCapacity feature is disabled")
                if req.has_admin_access and not self.features.admin_access:
                    raise AllocationError(f"claim {claim.label}, request {req.name}: admin access is requested, but the feature is disabled (DRAAdminAccess)")
                if req.class_name not in self.classes:
                    raise AllocationError(f"claim {claim.label}, request {req.name}: could not retrieve device class {req.class_name}: not found")

    def allocate(self, claims: Sequence[Mapping[str, Any] | Claim], explain: bool = True,
                 commit: bool = True) -> list[dict[str, Any]]:
        """Allocate claims together (all or nothing); returns one `status.allocation` per claim.

        `explain=False` skips working out the reason on failure (a scheduler trying many nodes).
        `commit=False` leaves this allocator as it was (a Filter: the caller decides where the pod
        goes and commits the allocation to the ClusterView).
        """
        parsed = [c if isinstance(c, Claim) else parse_claim(c) for c in claims]
        for claim in parsed:
            self.check_claim(claim)
        search = Search(self, parsed)
        if not search.run():
            if search.max_results_claim is not None:
                claim = parsed[search.max_results_claim]
                raise AllocationError(f"claim {claim.label}: the devices to allocate exceed the claim limit of "
                                      f"{MAX_RESULTS} results (allocation max size exceeded)")
            invalid = [p for p in self.pools if p.invalid]
            if not explain:
                labels = ", ".join(c.label for c in parsed)
                note = "; invalid resource pools were encountered" if invalid else ""
                raise AllocationError(f"claim {labels}: cannot be allocated on node {self.node.name}{note}")
            raise AllocationError(explain_failure(self, parsed, invalid))
        out = [render_allocation(self, claim, search.results[ci], search.selected, ci) for ci, claim in enumerate(parsed)]
        if commit:
            self._commit(search)
            # Each undo step refers to the list that keeps it: emptied, the search and what it
            # holds are freed when it goes out of scope rather than by the cycle collector.
            search.applied.clear()
        else:
            search.rollback()
        self.state.allocating.clear()
        self.state.allocating_capacity.clear()
        return out
