"""NVIDIA's MIG rules per board, written down from NVIDIA's documents (not from gpus.yaml), and a judge that
says whether a set of GPU instances (or MIG-backed vGPUs) can exist on one GPU at once.

Sources:
- [guide]   MIG User Guide, "Supported MIG Profiles" (fractions of memory, NVDEC/NVENC/JPEG/OFA and the number of
            instances per profile) and "Getting Started" (`nvidia-smi mig -lgipp` on an A100: 1g {0..6}:1,
            1g.10gb {0,2,4,6}:2, 2g {0,2,4}:2, 3g {0,4}:4, 4g {0}:4, 7g {0}:8); its glossary: a memory slice is
            1/8 of the memory on the 7-compute-slice GPUs.
- [lgipp]   `nvidia-smi mig -lgipp` on an RTX PRO 6000 Blackwell Server Edition (kubesimplify blog, driver
            610.43.02): 1g {0,3,6,9}:3, 2g {0,6}:6, 4g {0}:12 - a 12-unit grid, i.e. four quarter slices.
- [vgpu]    NVIDIA vGPU tables (AI Enterprise guides, vgpu-device-manager vGPU 20.0): maximum vGPUs per GPU of
            each MIG-backed type; the time-sliced MIG-backed types put that many on the instances equally.
- [mixed]   AI Enterprise release 8, "MIG-Backed vGPU" (https://docs.nvidia.com/ai-enterprise/release-8/latest/
            infra-software/vgpu/features/mig-backed-vgpu.html): "NVIDIA vGPU supports both homogeneous and mixed
            MIG-backed virtual GPU configurations, and on GPUs with MIG time-slicing support, each MIG instance
            supports multiple time-sliced vGPU VMs" (RTX PRO 6000: up to four instances, one to three 8 GB
            vGPUs in each). One type per instance is our reading: the page names no mix inside an instance, and
            time-sliced vGPUs of one GPU are one type in NVIDIA's equal-size mode.

The rules: instances occupy disjoint memory slices at the listed placements; no profile has more instances than
the guide allows; the instances' media engines never add up to more than the whole-GPU profile has (which is how
`+me`, `+me.all` and OFA end up "1 instance"). MIG-backed vGPUs [mixed]: each instance runs one type, as many of
its vGPUs as the type puts on an instance (1 for the classic types); different instances, different types.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ENGINES = ("dec", "enc", "jpeg", "ofa")


@dataclass(frozen=True)
class Gi:
    """One GPU-instance profile: memory slices it occupies, where it may start, how many may exist, engines."""

    slices: int
    starts: tuple[int, ...]
    instances: int
    engines: dict[str, int] = field(default_factory=dict)


def _gi(slices: int, starts, instances: int, dec: int = 0, enc: int = 0, jpeg: int = 0, ofa: int = 0) -> Gi:
    return Gi(slices, tuple(starts), instances, {"dec": dec, "enc": enc, "jpeg": jpeg, "ofa": ofa})


@dataclass(frozen=True)
class Board:
    profiles: dict[str, Gi]
    totals: dict[str, int]  # the whole-GPU profile's engines


_ONE, _TWO_M = range(7), (0, 2, 4, 6)


def _gh100(names: tuple[str, ...]) -> Board:
    """The guide's H100/H200/GH200 tables: NVDEC/JPEG 1/1/1/2/3/4/7, OFA on +me and 7g."""
    one, one_me, one_2m, two, three, four, seven = names
    return Board({
        one: _gi(1, _ONE, 7, dec=1, jpeg=1), one_me: _gi(1, _ONE, 1, dec=1, jpeg=1, ofa=1),
        one_2m: _gi(2, _TWO_M, 4, dec=1, jpeg=1), two: _gi(2, (0, 2, 4), 3, dec=2, jpeg=2),
        three: _gi(4, (0, 4), 2, dec=3, jpeg=3), four: _gi(4, (0,), 1, dec=4, jpeg=4),
        seven: _gi(8, (0,), 1, dec=7, jpeg=7, ofa=1),
    }, {"dec": 7, "enc": 0, "jpeg": 7, "ofa": 1})


def _rtx_pro_6000() -> Board:
    """Guide table "RTX PRO 6000" (all editions) with the [lgipp] placements."""
    out = {}
    for gfx in ("", "+gfx"):
        out[f"1g.24gb{gfx}"] = _gi(1, range(4), 4, dec=1, enc=1, jpeg=1)
        out[f"2g.48gb{gfx}"] = _gi(2, (0, 2), 2, dec=2, enc=2, jpeg=2)
        out[f"4g.96gb{gfx}"] = _gi(4, (0,), 1, dec=4, enc=4, jpeg=4, ofa=1)
    out["1g.24gb+me"] = _gi(1, range(4), 1, dec=1, enc=1, jpeg=1, ofa=1)
    out["1g.24gb+me.all"] = _gi(1, range(4), 1, dec=4, enc=4, jpeg=4, ofa=1)
    out["1g.24gb-me"] = _gi(1, range(4), 4)
    out["2g.48gb+me.all"] = _gi(2, (0, 2), 1, dec=4, enc=4, jpeg=4, ofa=1)
    out["2g.48gb-me"] = _gi(2, (0, 2), 2)
    return Board(out, {"dec": 4, "enc": 4, "jpeg": 4, "ofa": 1})


_RTX_PRO_4500 = Board({
    "1g.16gb": _gi(1, (0, 1), 2, dec=1, enc=1, jpeg=1), "1g.16gb+gfx": _gi(1, (0, 1), 2, dec=1, enc=1, jpeg=1),
    "1g.16gb+me.all": _gi(1, (0, 1), 1, dec=3, enc=3, jpeg=2, ofa=1), "1g.16gb-me": _gi(1, (0, 1), 2),
    "2g.32gb": _gi(2, (0,), 1, dec=3, enc=3, jpeg=2, ofa=1),
    "2g.32gb+gfx": _gi(2, (0,), 1, dec=3, enc=3, jpeg=2, ofa=1),
}, {"dec": 3, "enc": 3, "jpeg": 2, "ofa": 1})

BOARDS: dict[int, Board] = {
    # A100 40GB (guide Table 6): 1g.5gb 0 NVDEC, 1g.5gb+me 1/1/1, 1g.10gb 1, 2g 1, 3g 2, 4g 2, 7g 5/1/1.
    0x20B0: Board({
        "1g.5gb": _gi(1, _ONE, 7), "1g.5gb+me": _gi(1, _ONE, 1, dec=1, jpeg=1, ofa=1),
        "1g.10gb": _gi(2, _TWO_M, 4, dec=1), "2g.10gb": _gi(2, (0, 2, 4), 3, dec=1),
        "3g.20gb": _gi(4, (0, 4), 2, dec=2), "4g.20gb": _gi(4, (0,), 1, dec=2),
        "7g.40gb": _gi(8, (0,), 1, dec=5, jpeg=1, ofa=1),
    }, {"dec": 5, "enc": 0, "jpeg": 1, "ofa": 1}),
    # H100 80GB (guide Table 7), H100 94GB (its own table) and H100 96GB "H100 on GH200"; H200 (Table 8).
    0x2330: _gh100(("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")),
    0x2321: _gh100(("1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb")),
    0x2342: _gh100(("1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb")),
    0x2335: _gh100(("1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb")),
    # B200 180GB (guide Table 9): one NVDEC and JPEG per profile, OFA on +me and 7g; 7 of each per GPU.
    0x2901: Board({
        "1g.23gb": _gi(1, _ONE, 7, dec=1, jpeg=1), "1g.23gb+me": _gi(1, _ONE, 1, dec=1, jpeg=1, ofa=1),
        "1g.45gb": _gi(2, _TWO_M, 4, dec=1, jpeg=1), "2g.45gb": _gi(2, (0, 2, 4), 3, dec=1, jpeg=1),
        "3g.90gb": _gi(4, (0, 4), 2, dec=1, jpeg=1), "4g.90gb": _gi(4, (0,), 1, dec=1, jpeg=1),
        "7g.180gb": _gi(8, (0,), 1, dec=1, jpeg=1, ofa=1),
    }, {"dec": 7, "enc": 0, "jpeg": 7, "ofa": 1}),
    # RTX PRO 6000 Blackwell, Server (2bb5), Workstation (2bb1) and Max-Q (2bb4): one table.
    0x2BB5: _rtx_pro_6000(), 0x2BB1: _rtx_pro_6000(), 0x2BB4: _rtx_pro_6000(),
    # RTX PRO 4500 Blackwell 32GB: two halves; the Server Edition has the same GB203 and MIG table.
    0x2C31: _RTX_PRO_4500, 0x2C3A: _RTX_PRO_4500,
}


def valid_instances(board: Board, chosen: list[tuple[str, int]]) -> bool:
    """Can these (profile, start) GPU instances exist together on one GPU of `board`?"""
    used: set[int] = set()
    counts: dict[str, int] = {}
    engines = dict.fromkeys(ENGINES, 0)
    for name, start in chosen:
        gi = board.profiles[name]
        if start not in gi.starts:
            return False
        span = set(range(start, start + gi.slices))
        if span & used:
            return False
        used |= span
        counts[name] = counts.get(name, 0) + 1
        if counts[name] > gi.instances:
            return False
        for e in ENGINES:
            engines[e] += gi.engines[e]
    return all(engines[e] <= board.totals[e] for e in ENGINES)


@dataclass(frozen=True)
class VgpuType:
    """A MIG-backed vGPU type: its GPU-instance profile, the maximum per GPU and vGPUs per instance."""

    gi: str
    max_per_gpu: int
    per_instance: int = 1


# MIG-backed vGPU types, [vgpu] (vgpu-device-manager vGPU 20.0 and the AI Enterprise tables).
VGPU_TYPES: dict[int, dict[str, VgpuType]] = {
    0x2901: {"B200X-1-23C": VgpuType("1g.23gb", 7), "B200X-1-23CME": VgpuType("1g.23gb+me", 1),
             "B200X-1-45C": VgpuType("1g.45gb", 4), "B200X-2-45C": VgpuType("2g.45gb", 3),
             "B200X-3-90C": VgpuType("3g.90gb", 2), "B200X-4-90C": VgpuType("4g.90gb", 1),
             "B200X-7-180C": VgpuType("7g.180gb", 1)},
    0x2342: {"GH200-1-12C": VgpuType("1g.12gb", 7), "GH200-1-12CME": VgpuType("1g.12gb+me", 1),
             "GH200-1-24C": VgpuType("1g.24gb", 4), "GH200-2-24C": VgpuType("2g.24gb", 3),
             "GH200-3-48C": VgpuType("3g.48gb", 2), "GH200-4-48C": VgpuType("4g.48gb", 1),
             "GH200-7-96C": VgpuType("7g.96gb", 1)},
    # RTX PRO 4500 Blackwell Server Edition, release 8 Table 52 (DC-1-16C left out: the table says 1 per GPU,
    # vgpu-device-manager 2 - the sources disagree, so no truth to check against).
    0x2C3A: {"DC-2-32C": VgpuType("2g.32gb", 1), "DC-2-16C": VgpuType("2g.32gb", 2, 2),
             "DC-2-8C": VgpuType("2g.32gb", 4, 4), "DC-1-8C": VgpuType("1g.16gb", 2)},
    0x2BB5: {
        f"DC-{g}-{fb}C{gfx}": VgpuType(f"{g}g.{24 * g}gb{'+gfx' if gfx else ''}", n, n // (4 // g))
        for gfx in ("", "GFX")
        for g, fb, n in ((1, 8, 12), (1, 12, 8), (1, 24, 4), (2, 12, 8), (2, 16, 6), (2, 24, 4), (2, 48, 2),
                         (4, 24, 4), (4, 32, 3), (4, 48, 2), (4, 96, 1))
    },
}


def valid_vgpus(board: Board, types: dict[str, VgpuType], chosen: list[tuple[str, int]]) -> bool:
    """Can these MIG-backed vGPUs (type, instance start) run together? [mixed]: the instances may each run
    another type (classic and time-sliced alike), all vGPUs of one instance are of one type and at most
    its vGPUs per instance, and the instances fit together as GPU instances."""
    on: dict[tuple[str, int], str] = {}  # (GPU-instance profile, start) -> the type running there
    count: dict[tuple[str, int], int] = {}
    per_type: dict[str, int] = {}
    for t, start in chosen:
        per_type[t] = per_type.get(t, 0) + 1
        if per_type[t] > types[t].max_per_gpu:
            return False
        instance = (types[t].gi, start)
        if on.setdefault(instance, t) != t:
            return False
        count[instance] = count.get(instance, 0) + 1
        if count[instance] > types[t].per_instance:
            return False
    return valid_instances(board, list(on))
