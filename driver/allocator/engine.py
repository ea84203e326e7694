"""The backtracking search: which devices each request of a set of claims gets (upstream semantics).

Search order matches k8s.io/dynamic-resource-allocation/structured (experimental allocator):
claims in order, requests in order, firstAvailable subrequests in order, and for each device of a
request the candidates in pool order (driver, pool), slice name order, then device order, where a
request's next device only looks *after* the previous one (combinations, not permutations). The
first complete solution wins. Per candidate the checks run in upstream order: in use, partitionable
gate, compatibility groups, counters, taints, constraints, capacity.

State is mutated in place and undone exactly on backtracking; `Allocator` keeps it across calls so
a caller can allocate claim after claim (each sees the previous ones as allocated). A step budget
ends pathological searches with SearchBudgetExceeded.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from driver.allocator.checks import (
    ConstraintState,
    FatalRequestError,
    capacity_consumption,
)
from driver.allocator.devices import CounterKey, DeviceInfo, DeviceKey, qualify
from driver.allocator.inputs import MAX_RESULTS, Claim, Request
from driver.allocator.pools import Pool
from driver.allocator.rules import GroupIntersection, request_driven_counters
from driver.celexpr import CelRuntimeError
from driver.errors import AllocationError, SearchBudgetExceeded

DEFAULT_BUDGET = 1_000_000
_SHARE_NS = uuid.UUID("6f1c4a52-3a0e-4b8e-9d4e-5e0f1d2c3b4a")


class _Stop(Exception):
    """Unwinds the recursion when the claim set must fail with an error (upstream returns err)."""


class _MaxResults(Exception):
    """A claim (index in args[0]) would exceed 32 results; lets firstAvailable try a smaller alternative."""


@dataclass
class Placement:
    """One chosen device (an allocation result before rendering)."""

    request: Request
    device: DeviceInfo
    pool: Pool
    share_id: str | None = None
    consumed_capacity: dict[str, Fraction] | None = None
    request_counters: tuple[tuple[str, dict[str, Fraction]], ...] = ()


class _Undo:
    """Undoes one placement and forgets it. A callable object rather than a closure, which would
    refer to itself: once the search lets go of it (`applied` emptied), it and what it holds are
    freed at once instead of waiting for the cycle collector."""

    __slots__ = ("steps", "applied")

    def __init__(self, steps: list[Callable[[], None]], applied: list[Callable[[], None]]):
        self.steps = steps
        self.applied = applied

    def __call__(self) -> None:
        for step in reversed(self.steps):
            step()
        self.applied.remove(self)


@dataclass
class SearchState:
    """Everything that changes while searching; shared with the Allocator's committed state."""

    in_use: set[DeviceKey] = field(default_factory=set)
    shared: set[DeviceKey] = field(default_factory=set)  # allow-multiple devices with an allocation
    capacity_used: dict[DeviceKey, dict[str, Fraction]] = field(default_factory=dict)
    allocating: dict[DeviceKey, set[int]] = field(default_factory=dict)
    allocating_capacity: dict[DeviceKey, dict[str, Fraction]] = field(default_factory=dict)
    groups: dict[CounterKey, GroupIntersection] = field(default_factory=dict)


class Search:
    """One allocation attempt for a list of claims against the allocator's pools and state."""

    def __init__(self, alloc: Any, claims: Sequence[Claim]):
        self.alloc = alloc
        self.features = alloc.features
        self.claims = claims
        self.budget = alloc.budget
        self.steps = 0
        self.results: list[list[Placement]] = [[] for _ in claims]
        lists = alloc.features.list_type_attributes
        derived = alloc.features.derived_attributes
        self.constraints = [[ConstraintState(c, lists, derived, claim.label) for c in claim.constraints] for claim in claims]
        self.selected: dict[tuple[int, int], int] = {}
        self.all_devices: dict[tuple[int, int, int], list[tuple[DeviceInfo, Pool]]] = {}
        self.applied: list[Callable[[], None]] = []  # undo of every placement currently held
        self.max_results_claim: int | None = None  # set when the search ended on the 32-result limit

    def rollback(self) -> None:
        """Undo a successful run (used when the solution is only needed for diagnosis)."""
        while self.applied:
            self.applied[-1]()

    # ---- entry -----------------------------------------------------------------------------
    def run(self) -> bool:
        for ci, claim in enumerate(self.claims):
            for ri, alternatives in enumerate(claim.requests):
                for si, req in enumerate(alternatives):
                    if req.mode == "All":
                        self.all_devices[(ci, ri, si)] = self._collect_all(claim, req)
        try:
            return self._one(0, 0, 0, 0, False, (0, 0))
        except _MaxResults as exc:
            # Upstream returns this as an error ("allocation max size exceeded") unless a later
            # claim hit it (then it only means that choice failed).
            self.max_results_claim = exc.args[0]
            return False

    def run_and_rollback(self) -> bool:
        ok = self.run()
        self.rollback()
        return ok

    def _collect_all(self, claim: Claim, req: Request) -> list[tuple[DeviceInfo, Pool]]:
        out = []
        for pool in self.alloc.pools:
            if pool.incomplete:
                why = f"incomplete: {pool.note}" if pool.note else "incomplete"
                raise AllocationError(f"claim {claim.label}, request {req.name}: asks for all devices, but resource pool {pool.label} is currently being updated ({why})")
            if pool.invalid:
                raise AllocationError(f"claim {claim.label}, request {req.name}: asks for all devices, but resource pool {pool.label} is currently invalid: {pool.invalid}")
            for dev in pool.devices:
                if self.alloc.selectable(claim, req, dev) and self._static_capacity_ok(claim, req, dev):
                    out.append((dev, pool))
        return out

    def _static_capacity_ok(self, claim: Claim, req: Request, dev: DeviceInfo) -> bool:
        """Whether the device could serve the request given what other claims already hold of it
        (upstream fixes the All set this way, before anything of this attempt is placed)."""
        if not self.features.consumable_capacity:
            return True
        used = self.alloc.state.capacity_used.get(dev.key, {})
        try:
            return capacity_consumption(dev, req, used, {}, self.alloc.caps(dev), self.features.shared_consumable_capacity,
                                        not self.features.fractional_capacity_range) is not None
        except FatalRequestError as exc:
            raise AllocationError(f"claim {claim.label}, request {req.name}: device {dev.name}: {exc}") from None

    # ---- recursion (mirrors upstream allocateOne) -------------------------------------------
    def _tick(self, ci: int) -> None:
        # One step = one recursion or one candidate check: proportional to the work done.
        self.steps += 1
        if self.steps > self.budget:
            label = self.claims[min(ci, len(self.claims) - 1)].label
            raise SearchBudgetExceeded(
                f"claim {label}: gave up after {self.budget} search steps without deciding; the request is "
                "too combinatorial (many similar devices with constraints?) — raise the budget or simplify it"
            )

    def _one(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: tuple[int, int]) -> bool:
        self._tick(ci)
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.requests):
            try:
                return self._one(ci + 1, 0, 0, 0, False, (0, 0))
            except _MaxResults:
                return False
        alternatives = claim.requests[ri]
        if alternatives[0].name != alternatives[0].top:  # a firstAvailable request
            if not in_sub:
                all_exceeded = True
                for sj in range(len(alternatives)):
                    try:
                        ok = self._one(ci, ri, sj, 0, True, (0, 0))
                    except _MaxResults:
                        continue
                    all_exceeded = False
                    if ok:
                        self.selected[(ci, ri)] = sj
                        return True
                if all_exceeded:
                    raise _MaxResults(ci)
                return False
        req = alternatives[si]
        need = len(self.all_devices[(ci, ri, si)]) if req.mode == "All" else req.count
        if req.mode == "All" and need == 0:
            return False
        if di >= need:
            return self._one(ci, ri + 1, 0, 0, False, (0, 0))
        if len(self.results[ci]) + need - di > MAX_RESULTS:
            raise _MaxResults(ci)
        if req.mode == "All":
            dev, pool = self.all_devices[(ci, ri, si)][di]
            undo = self._allocate_device(ci, req, dev, pool, must=True)
            if undo is None:
                return False
            try:
                done = self._one(ci, ri, si, di + 1, in_sub, (0, 0))
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done
        alloc = self.alloc
        cands = alloc.candidates(claim, req)
        pi0, dj0 = start
        position = alloc.offsets[pi0] + dj0 if pi0 < len(alloc.offsets) else len(alloc.flat)
        k = cands.index_from(alloc, claim, req, position)
        if cands.complete and len(cands.positions) - k < need - di:
            # Fewer matching devices remain after `start` than still needed: this subtree has no
            # solution, so cutting it leaves the first solution (the result) unchanged.
            return False
        while True:
            entry = cands.at(alloc, claim, req, k)
            if entry is None:
                break
            k += 1
            pi, dj, pool, dev = entry
            if self._in_use_skip(ci, req, dev):
                continue
            if not alloc.selectable(claim, req, dev):
                continue
            self._tick(ci)
            undo = self._allocate_device(ci, req, dev, pool, must=False)
            if undo is None:
                continue
            try:
                done = self._one(ci, ri, si, di + 1, in_sub, (pi, dj + 1))
            except BaseException:
                undo()
                raise
            if done:
                return True
            undo()
        return False

    def _in_use_skip(self, ci: int, req: Request, dev: DeviceInfo) -> bool:
        st = self.alloc.state
        if req.admin_access:
            return ci in st.allocating.get(dev.key, ())
        return dev.key in st.in_use or bool(st.allocating.get(dev.key))

    # ---- one candidate (mirrors upstream allocateDevice) -------------------------------------
    def _allocate_device(
        self, ci: int, req: Request, dev: DeviceInfo, pool: Pool, must: bool, reasons: dict[str, int] | None = None
    ) -> Callable[[], None] | None:
        undo_steps: list[Callable[[], None]] = []

        def fail(reason: str) -> None:
            for step in reversed(undo_steps):
                step()
            if reasons is not None:
                reasons[reason] = reasons.get(reason, 0) + 1

        st, feats, claim = self.alloc.state, self.features, self.claims[ci]
        multi = feats.consumable_capacity and dev.allow_multiple
        if not multi and req.admin_access and ci in st.allocating.get(dev.key, ()):
            return fail("in use")
        if not req.admin_access and (dev.key in st.in_use or st.allocating.get(dev.key)):
            return fail("in use")
        if dev.consumes and not feats.partitionable_devices:
            return fail("needs DRAPartitionableDevices")
        skip_counters = multi and (dev.key in st.shared or dev.key in st.allocating_capacity)
        # Groups are checked exactly when counters are charged: not for a further share of a device
        # already shared (upstream gates both on skipCounterCheck). With the gate off there is
        # nothing to check: pool gathering already ignored every slice that declares groups.
        if dev.consumes and not skip_counters and feats.compatibility_groups:
            blocked = self.alloc.fold_groups(dev, undo_steps)
            if blocked is not None:
                return fail(f"groups:{blocked}")
        request_counters: tuple = ()
        if dev.consumes and feats.shared_consumable_capacity:
            resolved = request_driven_counters(dev, qualified(req.capacity, dev.driver), pool.counter_sets)
            if resolved is None:
                return fail("counter request policy")
            request_counters = resolved
        if dev.consumes:
            blocked = self.alloc.charge_counters(dev, pool, request_counters, not skip_counters, undo_steps)
            if blocked is not None:
                return fail(f"counters:{blocked}")
        if feats.device_taints and self.alloc.blocking_taint(dev, req) is not None:
            return fail("taint")
        for state in self.constraints[ci]:
            if not state.add(req, dev):
                fail(f"constraint:{state.describe(req)}")
                if must:
                    raise AllocationError(
                        f"claim {claim.label}, request {req.name}: cannot add device {'/'.join(dev.key)} because a claim "
                        f"constraint would not be satisfied ({state.describe(req)})")
                return None
            undo_steps.append(lambda s=state: s.remove(req, dev))
        if not multi:
            st.allocating.setdefault(dev.key, set()).add(ci)
            undo_steps.append(lambda: st.allocating[dev.key].discard(ci))
        placement = Placement(req, dev, pool, request_counters=tuple(request_counters))
        if feats.consumable_capacity:
            try:
                consumed = capacity_consumption(
                    dev, req, st.capacity_used.get(dev.key, {}), st.allocating_capacity.get(dev.key, {}),
                    self.alloc.caps(dev), feats.shared_consumable_capacity, not feats.fractional_capacity_range,
                )
            except FatalRequestError as exc:
                fail("capacity")
                raise AllocationError(f"claim {claim.label}, request {req.name}: device {dev.name}: {exc}") from None
            if consumed is None:
                return fail("capacity")
            if multi:
                existed = dev.key in st.allocating_capacity
                bucket = st.allocating_capacity.setdefault(dev.key, {})
                for name, amount in consumed.items():
                    bucket[name] = bucket.get(name, 0) + amount

                def drop_capacity(consumed=consumed, existed=existed) -> None:
                    for name, amount in consumed.items():
                        bucket[name] -= amount
                    if not existed:
                        del st.allocating_capacity[dev.key]

                undo_steps.append(drop_capacity)
                placement.consumed_capacity = consumed
                placement.share_id = self._share_id(ci, req, dev)
        self.results[ci].append(placement)
        undo_steps.append(self.results[ci].pop)

        undo = _Undo(undo_steps, self.applied)
        self.applied.append(undo)
        return undo

    def _share_id(self, ci: int, req: Request, dev: DeviceInfo) -> str:
        # Deterministic (upstream uses a random UID): same input, same output.
        meta = self.claims[ci].obj.get("metadata") or {}
        seed = f"{meta.get('uid') or self.claims[ci].label}/{req.name}/{'/'.join(dev.key)}/{len(self.results[ci])}"
        return str(uuid.uuid5(_SHARE_NS, seed))


def selectors_match(owner: str, name: str, selectors: Sequence[Any], dev: DeviceInfo, plain: bool,
                    variable: Callable[[DeviceInfo], dict]) -> bool:
    """All of one owner's selectors (`owner` "class" or "claim", and its name); CEL runtime errors
    abort the claim (upstream). With `plain` attributes (celexpr.plain_attributes) simple selectors
    are decided on the published device; `variable(dev)` builds the CEL `device` variable for the
    others (once per device)."""
    for i, selector in enumerate(selectors):
        try:
            result = selector.matches_published(dev.driver, dev.raw) if plain else None
            if result is None:
                result = selector.matches(variable(dev))
        except CelRuntimeError as exc:
            raise AllocationError(
                f"{owner} {name}: selector #{i} on device {'/'.join(dev.key)}: CEL runtime error: {exc} "
                f"(expression: {selector.expression})"
            ) from None
        if not result:
            return False
    return True


def qualified(requests: Mapping[str, Fraction] | None, driver: str) -> dict[str, Fraction]:
    return {qualify(k, driver): v for k, v in (requests or {}).items()}
