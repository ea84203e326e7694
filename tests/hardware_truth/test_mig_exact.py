"""Exhaustive: on every MIG board NVIDIA documents, the published counters and compatibility groups accept exactly
the sets of MIG devices (and MIG-backed vGPUs) that NVIDIA's rules allow - every such set fits, every other set is
refused. NVIDIA's side is truth_mig.py (written from the guide and the vGPU tables); ours is the rendered pool,
read with this suite's own quantity parser. Both families are closed under subsets, so a depth-first walk that
only extends what is still allowed lists each of them completely.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import truth_2026 as hosts
import truth_mig as nv
from truth import attr, qty, render
from truth_sysfs import Mdev

Key = tuple[str, int]  # (profile or vGPU type, memory-slice start)


class Counters:
    """The pool's counter sets and what each device takes (parsed once), for the scheduler's two rules:
    counters never over-committed, and per counter set a non-empty rolling intersection of the groups
    (or no device with groups at all)."""

    def __init__(self, pool) -> None:
        self.capacity = {(cs["name"], c): qty(v["value"]) for spec in pool.slices
                         for cs in spec.get("sharedCounters", ()) for c, v in cs["counters"].items()}
        self.takes = {
            name: [(e["counterSet"], [((e["counterSet"], c), qty(v["value"])) for c, v in e["counters"].items()],
                    frozenset(e["compatibilityGroups"]) if e.get("compatibilityGroups") else None)
                   for e in dev.get("consumesCounters", ())]
            for name, dev in pool.devices().items()
        }


def families(items: list[str], allowed: Callable[[list[str]], bool]) -> set[frozenset[str]]:
    """Every subset of `items` that `allowed` accepts (`allowed` must be closed under subsets)."""
    out: set[frozenset[str]] = set()

    def walk(start: int, chosen: list[str]) -> None:
        out.add(frozenset(chosen))
        for i in range(start, len(items)):
            if allowed(chosen + [items[i]]):
                walk(i + 1, chosen + [items[i]])

    walk(0, [])
    return out


def pool_families(counters: Counters, items: list[str]) -> set[frozenset[str]]:
    """Every subset of `items` the pool accepts, walked with running totals (the same walk as families)."""
    out: set[frozenset[str]] = set()

    def walk(start: int, chosen: list[str], used: dict, groups: dict) -> None:
        out.add(frozenset(chosen))
        for i in range(start, len(items)):
            name = items[i]
            new_used, new_groups, ok = dict(used), dict(groups), True
            for cs, amounts, declared in counters.takes[name]:
                for key, amount in amounts:
                    new_used[key] = new_used.get(key, 0) + amount
                    ok = ok and new_used[key] <= counters.capacity[key]
                if cs in new_groups:
                    seen = new_groups[cs]
                    if (seen is None) != (declared is None):
                        ok = False
                    elif seen is not None:
                        new_groups[cs] = seen & declared
                        ok = ok and bool(new_groups[cs])
                else:
                    new_groups[cs] = declared
            if ok:
                walk(i + 1, chosen + [name], new_used, new_groups)

    walk(0, [], {}, {})
    return out


def _devices(pool, kind: str) -> dict[str, Key]:
    return {name: (attr(d, "profile"), attr(d, "memorySliceStart")) for name, d in pool.devices().items()
            if attr(d, "type") == kind and (kind == "mig" or attr(d, "migProfile"))}


def _check(pool, kind: str, judge: Callable[[list[Key]], bool]) -> int:
    keys = _devices(pool, kind)
    names = sorted(keys)
    ours = pool_families(Counters(pool), names)
    theirs = families(names, lambda chosen: judge([keys[n] for n in chosen]))
    extra, missing = ours - theirs, theirs - ours
    assert not extra, f"published counters allow what NVIDIA does not, e.g. {sorted(min(extra, key=len))}"
    assert not missing, f"published counters refuse what NVIDIA allows, e.g. {sorted(min(missing, key=len))}"
    return len(ours)


MIG_BOARDS = {0x20B0: "A100 40GB", 0x2330: "H100 80GB", 0x2321: "H100 NVL", 0x2342: "GH200", 0x2335: "H200",
              0x2901: "B200", 0x2BB5: "RTX PRO 6000 Server", 0x2BB1: "RTX PRO 6000 Workstation",
              0x2BB4: "RTX PRO 6000 Max-Q", 0x2C31: "RTX PRO 4500"}


@pytest.mark.parametrize("device", sorted(MIG_BOARDS), ids=lambda d: MIG_BOARDS[d])
def test_mig_counters_accept_exactly_nvidias_gpu_instance_sets(tmp_path, device):
    _, pool = render(tmp_path, hosts.single_gpu(device))
    board = nv.BOARDS[device]
    assert {p for p, _ in _devices(pool, "mig").values()} == set(board.profiles)
    sets = _check(pool, "mig", lambda chosen: nv.valid_instances(board, chosen))
    assert sets > 10


def _vgpu_host(device: int, types: dict[str, nv.VgpuType], prefix: str) -> list:
    mdev = [Mdev(f"nvidia-{2000 + k}", f"{prefix}{name}", 1) for k, name in enumerate(sorted(types))]
    return hosts.single_gpu(device, mdev)


@pytest.mark.parametrize(("device", "prefix"), [(0x2901, "NVIDIA "), (0x2342, "NVIDIA "),
                                                (0x2BB5, "NVIDIA RTX Pro 6000 Blackwell ")],
                         ids=["B200X", "GH200", "RTX PRO 6000 DC"])
def test_mig_backed_vgpu_counters_accept_exactly_the_sets_nvidia_allows(tmp_path, device, prefix):
    types = nv.VGPU_TYPES[device]
    _, pool = render(tmp_path, _vgpu_host(device, types, prefix))
    keys = _devices(pool, "vgpu")
    # Every vGPU the tables allow is a device: one per instance, or per_instance on each (DC-1-12C: 8).
    published = {t: sum(1 for k in keys.values() if k[0] == t) for t in types}
    assert published == {t: v.max_per_gpu if v.per_instance > 1 else len(nv.BOARDS[device].profiles[v.gi].starts)
                         for t, v in types.items()}
    sets = _check(pool, "vgpu", lambda chosen: nv.valid_vgpus(nv.BOARDS[device], types, chosen))
    assert sets > 10
