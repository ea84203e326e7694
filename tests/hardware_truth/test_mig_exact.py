"""Exhaustive: on every MIG board NVIDIA documents, the published counters and compatibility groups accept exactly
the sets of MIG devices (and MIG-backed vGPUs) that NVIDIA's rules allow - every such set fits, every other set is
refused. NVIDIA's side is truth_mig.py (written from the guide and the vGPU tables); ours is the rendered pool,
read with this suite's own quantity parser. Both families are closed under subsets, so a depth-first walk that
only extends what is still allowed lists each of them completely. The walk counts devices of one (profile or type,
instance) together - the vGPUs sharing one GPU instance are interchangeable, which is asserted - so the RTX PRO
6000's 108 MIG-backed vGPUs make 35,741 multisets rather than millions of sets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

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


Multiset = frozenset  # of (Key, how many devices of that key)
State = TypeVar("State")


def multisets(caps: dict[Key, int], admit: Callable[[State, Key], State | None], empty: State) -> set[Multiset]:
    """Every multiset of keys (at most caps[key] of each) that `admit`, adding one key at a time to a
    running state, accepts. The family must be closed under taking away, which both NVIDIA's rules and
    the scheduler's (counters, rolling group intersections) are, so a walk that only extends accepted
    multisets lists all of them."""
    keys, out = sorted(caps), set()

    def walk(first: int, chosen: dict[Key, int], state) -> None:
        out.add(frozenset(chosen.items()))
        for j in range(first, len(keys)):
            now, picked = state, dict(chosen)
            for n in range(1, caps[keys[j]] + 1):
                now = admit(now, keys[j])
                if now is None:
                    break
                picked[keys[j]] = n
                walk(j + 1, dict(picked), now)

    walk(0, {}, empty)
    return out


def pool_admit(counters: Counters, by_key: dict[Key, str]):
    """The scheduler's rules as an `admit`: the state is the running counter totals and, per counter
    set, the rolling intersection of groups (None: only devices without groups so far)."""

    def admit(state, key: Key):
        used, groups = dict(state[0]), dict(state[1])
        for cs, amounts, declared in counters.takes[by_key[key]]:
            for counter, amount in amounts:
                used[counter] = used.get(counter, 0) + amount
                if used[counter] > counters.capacity[counter]:
                    return None
            if cs in groups:
                seen = groups[cs]
                if (seen is None) != (declared is None):
                    return None
                if seen is not None:
                    groups[cs] = seen & declared
                    if not groups[cs]:
                        return None
            else:
                groups[cs] = declared
        return used, groups

    return admit


def _devices(pool, kind: str) -> dict[str, Key]:
    return {name: (attr(d, "profile"), attr(d, "memorySliceStart")) for name, d in pool.devices().items()
            if attr(d, "type") == kind and (kind == "mig" or attr(d, "migProfile"))}


def _check(pool, kind: str, judge: Callable[[list[Key]], bool]) -> set[Multiset]:
    """Compare the multisets of (profile or type, start) the pool accepts with those NVIDIA allows.
    Devices of one key (the vGPUs sharing one GPU instance) must take exactly the same counters and
    groups, so which of them a multiset picks cannot matter; that is asserted, not assumed."""
    keys = _devices(pool, kind)
    counters = Counters(pool)
    by_key: dict[Key, str] = {}
    caps: dict[Key, int] = {}
    for name in sorted(keys):
        first = by_key.setdefault(keys[name], name)
        assert counters.takes[name] == counters.takes[first], f"{name} and {first} share an instance but differ"
        caps[keys[name]] = caps.get(keys[name], 0) + 1
    ours = multisets(caps, pool_admit(counters, by_key), ({}, {}))
    theirs = multisets(caps, lambda chosen, key: chosen + [key] if judge(chosen + [key]) else None, [])
    extra, missing = ours - theirs, theirs - ours
    assert not extra, f"published counters allow what NVIDIA does not, e.g. {sorted(min(extra, key=len))}"
    assert not missing, f"published counters refuse what NVIDIA allows, e.g. {sorted(min(missing, key=len))}"
    return ours


def _admitted(counters: Counters, names: list[str]) -> bool:
    admit, state = pool_admit(counters, {(n, 0): n for n in names}), ({}, {})
    for name in names:
        state = admit(state, (name, 0))
        if state is None:
            return False
    return True


MIG_BOARDS = {0x20B0: "A100 40GB", 0x2330: "H100 80GB", 0x2321: "H100 NVL", 0x2342: "GH200", 0x2335: "H200",
              0x2901: "B200", 0x2BB5: "RTX PRO 6000 Server", 0x2BB1: "RTX PRO 6000 Workstation",
              0x2BB4: "RTX PRO 6000 Max-Q", 0x2C31: "RTX PRO 4500"}


@pytest.mark.parametrize("device", sorted(MIG_BOARDS), ids=lambda d: MIG_BOARDS[d])
def test_mig_counters_accept_exactly_nvidias_gpu_instance_sets(tmp_path, device):
    _, pool = render(tmp_path, hosts.single_gpu(device))
    board = nv.BOARDS[device]
    assert {p for p, _ in _devices(pool, "mig").values()} == set(board.profiles)
    sets = _check(pool, "mig", lambda chosen: nv.valid_instances(board, chosen))
    assert len(sets) > 10


def _vgpu_host(device: int, types: dict[str, nv.VgpuType], prefix: str, also: tuple[str, ...] = ()) -> list:
    names = sorted(types) + list(also)
    mdev = [Mdev(f"nvidia-{2000 + k}", f"{prefix}{name}", 1) for k, name in enumerate(names)]
    return hosts.single_gpu(device, mdev)


# The boards, how their hosts name types, and a time-sliced (not MIG-backed) type the host offers too.
VGPU_HOSTS = {"B200X": (0x2901, "NVIDIA ", ()), "GH200": (0x2342, "NVIDIA ", ()),
              "RTX PRO 6000 DC": (0x2BB5, "NVIDIA RTX Pro 6000 Blackwell ", ("DC-24C",)),
              "RTX PRO 4500 SE DC": (0x2C3A, "NVIDIA RTX Pro 4500 Blackwell ", ("DC-16C",))}


@pytest.mark.parametrize("host", sorted(VGPU_HOSTS))
def test_mig_backed_vgpu_counters_accept_exactly_the_sets_nvidia_allows(tmp_path, host):
    device, prefix, also = VGPU_HOSTS[host]
    types = nv.VGPU_TYPES[device]
    _, pool = render(tmp_path, _vgpu_host(device, types, prefix, also))
    keys = _devices(pool, "vgpu")
    # Every vGPU the tables allow is a device: one per instance, or per_instance on each (DC-1-12C: 8).
    published = {t: sum(1 for k in keys.values() if k[0] == t) for t in types}
    assert published == {t: v.max_per_gpu if v.per_instance > 1 else len(nv.BOARDS[device].profiles[v.gi].starts)
                         for t, v in types.items()}
    sets = _check(pool, "vgpu", lambda chosen: nv.valid_vgpus(nv.BOARDS[device], types, chosen))
    assert len(sets) > 10
    # Nothing else on the GPU (full GPU, plain MIG, time-sliced vGPU) runs beside a MIG-backed vGPU.
    counters = Counters(pool)
    others = [n for n, d in pool.devices().items() if n not in keys]
    assert {attr(pool.devices()[n], "type") for n in others} >= {"gpu", "mig"} | ({"vgpu"} if also else set())
    assert not [(m, o) for m in keys for o in others if _admitted(counters, [m, o])]


def test_time_sliced_mig_backed_types_mix_across_instances_never_within_one(tmp_path):
    """RTX PRO 6000: what the exhaustive walk found, spelled out - DC-1-12C on one 1g instance beside DC-1-8C
    on another, DC-2-12C on the 2g instance and a classic DC-1-24C beside them, all allowed; two types on one
    instance, or a 1g instance inside a used 2g one, refused."""
    device, prefix, _ = VGPU_HOSTS["RTX PRO 6000 DC"]
    _, pool = render(tmp_path, _vgpu_host(device, nv.VGPU_TYPES[device], prefix))
    counters = Counters(pool)
    assert _admitted(counters, ["gpu-0-vgpu-dc-1-12c-0-0", "gpu-0-vgpu-dc-1-12c-0-1", "gpu-0-vgpu-dc-1-8c-1-0",
                                "gpu-0-vgpu-dc-1-8c-1-2", "gpu-0-vgpu-dc-2-12c-2-3"])
    assert _admitted(counters, ["gpu-0-vgpu-dc-1-24c-0", "gpu-0-vgpu-dc-1-8cgfx-1-0", "gpu-0-vgpu-dc-2-16c-2-0"])
    assert not _admitted(counters, ["gpu-0-vgpu-dc-1-12c-0-0", "gpu-0-vgpu-dc-1-8c-0-0"])
    assert not _admitted(counters, ["gpu-0-vgpu-dc-1-24c-0", "gpu-0-vgpu-dc-1-12c-0-0"])
    assert not _admitted(counters, ["gpu-0-vgpu-dc-2-12c-0-0", "gpu-0-vgpu-dc-1-12c-1-0"])
    assert not _admitted(counters, ["gpu-0-vgpu-dc-4-24c-0-0", "gpu-0-vgpu-dc-1-8c-3-0"])
