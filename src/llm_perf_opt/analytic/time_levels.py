"""Predicted time in three levels, side by side, per module path, part, stage and decode step.

* **ideal**: the roofline (`analytic.roofline`): max(FLOPs / peak, I/O bytes / bandwidth) per unit, the
  limit every optimisation aims at.
* **kernel**: per launched kernel (`LayerCost.kernels`, exact counts from the cost formulas), max(FLOPs at
  the efficiency the device reaches for that shape, bytes / bandwidth at that size, the device's minimum
  kernel time), summed. GEMM-like kernels (gemm, conv, attention) take the calibrated matmul rate at their M
  (the decode GEMVs have M = 1); elementwise, reduction and copy kernels move their bytes at the small-size
  (cache-resident) bandwidth up to `SMALL_BYTES`, else at the large-size one, and their FLOPs at the vector
  rate.
* **eager**: + the host. Each op costs the host `dispatch_s` (Python + dispatcher, calibrated on this host)
  plus, on an asynchronous device, `launch_s` (the driver's launch call, from the GPU's datasheet). Sync
  points (`LayerCost.syncs`: `.item()`, the MoE's `tokens_per_expert.cpu()`) split the forward into
  segments, walked in call order; on an asynchronous device a segment takes max(host, device) + the sync's
  round trip; on the CPU (synchronous) everything is serial: kernel time + host time.

Verdict (per stage, part, decode step): `host` when the eager level's host share exceeds its device share
(async) or the host time exceeds the kernel time (CPU); else the kind of kernel time holding most of it:
`compute`, `memory` or `launch` (kernels at the minimum kernel time). Overhead = eager - kernel: what CUDA
graphs / torch.compile (no per-op dispatch) and a fused MoE kernel (no per-layer host sync) would remove.

A level that lacks a figure (no calibration of the kernel-level figures, a datasheet without a minimum kernel
time) is absent with its reason (`LevelTimes.missing`), never zero.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional

from llm_perf_opt.analytic.costs import Kernels
from llm_perf_opt.analytic.hardware import Roof
from llm_perf_opt.analytic.stage import CostNode, StageCost
from llm_perf_opt.errors import ConfigError

LEVELS = ("ideal", "kernel", "eager")
SMALL_BYTES = 1 << 20  # kernels moving up to this many bytes run at the small-size (cache) bandwidth
FRESH_BYTES = 1 << 25  # CPU: results above this size are written to fresh (mmapped) pages on every call
# share of a kernel's bytes that is its result, where the cost formula does not state it (`Kernels.of(out=)`)
OUT_SHARE = {"gemm": 1 / 3, "conv": 1 / 3, "attention": 1 / 4, "elementwise": 1 / 2, "reduction": 1 / 2, "copy": 1 / 2}
GEMM_KINDS = ("gemm", "conv", "attention")
GEMV_ROWS = 16  # a product of at most this many rows is GEMV-like: its bytes are its weights
CONVENTION = {
    "ideal": "roofline: max(flops_matmul / matmul peak + flops_other / vector peak, io_bytes / bandwidth) per unit",
    "kernel": "per kernel max(flops / matmul rate at its FLOPs per element moved (calibrated; at its M for a "
    "datasheet) for gemm and conv, the fused attention's own calibrated curve for attention (else the matmul "
    "rate), or flops / vector rate; bytes / bandwidth at its size (up to "
    f"{SMALL_BYTES} bytes: cache, up to {FRESH_BYTES}: medium, else large (matmul kernels above it, and "
    f"GEMV-like ones of at most {GEMV_ROWS} rows above the cache tier: a weight-streaming GEMV's bandwidth); layout copies their own figures) + on the CPU the fresh-page cost of a result above "
    "the mmap threshold (serial: the kernel's threads fault the pages); min kernel time), summed",
    "eager": "+ host per kernel (Python + nn.Module + dispatcher, calibrated on a module forward; + launch on an "
    "async device); sync points split the forward into segments: async device: each segment max(host, "
    "device) + sync round trip; CPU: kernel + host, serial",
    "verdict": "host if the host dominates; else compute / memory / launch by the kernel time they hold",
    "overhead": "eager - kernel: removed by CUDA graphs / torch.compile and a fused MoE kernel (no host syncs)",
}


def check_level(name: str) -> str:
    if name not in LEVELS:
        raise ConfigError.field("time.level", name, f"one of {list(LEVELS)}")
    return name


@dataclass(frozen=True)
class DeviceFigures:
    """What the kernel level needs of a device (SI units), each with its source.

    `gemm` is the matmul efficiency curve (axis value, FLOP/s), ascending: by the product's rows M
    (`gemm_axis="m"`: a datasheet, or a calibration before version 2), or by FLOPs per element moved
    (`gemm_axis="x"`: x = FLOPs / (bytes / itemsize), 2MNK / (MK + KN + MN) for a GEMM: a GEMV ~ 2, a skinny
    product small, a large square one large), read log-log between the calibrated points."""

    label: str
    synchronous: bool  # the CPU: a kernel runs on the host thread
    gemm: tuple[tuple[float, float], ...]
    vector_flops: float
    bw_small: float
    bw_large: float
    min_kernel_s: float
    launch_s: float = 0.0  # host-side launch call per kernel (async devices)
    sync_s: float = 0.0  # round trip of one host sync (async devices)
    sources: Mapping[str, str] = field(default_factory=dict)
    gemm_axis: str = "m"
    itemsize: int = 4
    bw_medium: Optional[float] = None  # SMALL_BYTES < bytes <= fresh_bytes (None: bw_large)
    copy_bw: Optional[tuple[float, float, float]] = None  # layout copies, (small, medium, large); None: as above
    fresh_s_per_byte: float = 0.0  # CPU: first touch of a result in fresh (mmapped) memory, per byte
    fresh_bytes: int = FRESH_BYTES
    gemm_bw_large: Optional[float] = None  # gemm-like kernels moving more than fresh_bytes (a GEMV streaming its
    # weights from memory: calibrated `gemv`); None: bw_large
    attention: tuple[tuple[float, float], ...] = ()  # the fused attention's own curve (x, FLOP/s); (): the gemm curve
    # the GEMM curve of each calibrated row count M, ascending: ((M, ((x, FLOP/s), ...)), ...); a product of m rows
    # reads the two rows around m at its x, log-log between them (a 65-row product runs like a 64-row one, not like
    # a square one of the same x); (): the one curve over x
    gemm_rows: tuple[tuple[int, tuple[tuple[float, float], ...]], ...] = ()

    def gemm_rate(self, at: float, curve: Optional[tuple[tuple[float, float], ...]] = None) -> float:
        curve = curve or self.gemm
        xs = [p[0] for p in curve]
        at = max(float(at), 1e-9)
        i = bisect.bisect_left(xs, at)
        if i <= 0:
            return curve[0][1]
        if i >= len(xs):
            return curve[-1][1]
        (x0, r0), (x1, r1) = curve[i - 1], curve[i]
        f = (math.log(at) - math.log(x0)) / (math.log(x1) - math.log(x0))  # log-log between the points
        return math.exp(math.log(r0) + f * (math.log(r1) - math.log(r0)))

    def row_rate(self, m: int, x: float) -> float:
        """The matmul rate of an m-row product at x (`gemm_rows`): the rows around m, log-log in m between them."""
        rows = self.gemm_rows
        ms = [r[0] for r in rows]
        i = bisect.bisect_left(ms, m)
        if i < len(ms) and ms[i] == m or i == 0 or i >= len(ms):
            return self.gemm_rate(x, rows[min(max(i, 0), len(ms) - 1)][1])
        (m0, c0), (m1, c1) = rows[i - 1], rows[i]
        r0, r1 = self.gemm_rate(x, c0), self.gemm_rate(x, c1)
        f = (math.log(m) - math.log(m0)) / (math.log(m1) - math.log(m0))
        return math.exp(math.log(r0) + f * (math.log(r1) - math.log(r0)))

    def bandwidth(self, kind: str, nbytes: int, m: int = 0) -> float:
        tier = 0 if nbytes <= SMALL_BYTES else (1 if nbytes <= self.fresh_bytes else 2)
        if kind == "copy" and self.copy_bw is not None:
            return self.copy_bw[tier]
        if (
            kind in GEMM_KINDS
            and self.gemm_bw_large is not None
            and (tier == 2 or (tier == 1 and kind == "gemm" and 0 < m <= GEMV_ROWS))
        ):
            # a GEMV-like product (a decode step's, a few rows) above the cache tier reads its weight matrix from
            # memory: each weight is read once per step, and a step's weights exceed any last-level cache
            return self.gemm_bw_large
        return (self.bw_small, self.bw_medium or self.bw_large, self.bw_large)[tier]

    def kernel_time(self, kind: str, m: int, flops: int, nbytes: int, out: int = 0) -> tuple[float, str]:
        """(seconds, bound) of one kernel: bound is compute, memory or launch."""
        if kind in GEMM_KINDS:
            at = m if self.gemm_axis == "m" else flops / max(nbytes / self.itemsize, 1.0)
            if kind == "attention" and self.gemm_axis == "x" and self.attention:
                rate = self.gemm_rate(at, self.attention)
            elif kind == "gemm" and self.gemm_axis == "x" and self.gemm_rows and m > 0:
                rate = self.row_rate(m, at)
            else:
                rate = self.gemm_rate(at)
            compute = flops / rate if flops else 0.0
        else:
            compute = flops / self.vector_flops if flops else 0.0
        memory = nbytes / self.bandwidth(kind, nbytes, m)
        fresh = 0.0
        if self.fresh_s_per_byte:
            result = out or int(nbytes * OUT_SHARE.get(kind, 0.5))
            if result > self.fresh_bytes:
                fresh = result * self.fresh_s_per_byte
        # the fresh pages are faulted in by the threads that compute the kernel: serial with its work, not hidden
        t = max(compute, memory) + fresh
        if t < self.min_kernel_s:
            return self.min_kernel_s, "launch"
        return t, "compute" if compute >= memory + fresh else "memory"


@dataclass(frozen=True)
class HostFigures:
    label: str  # "this host": the CPU it was calibrated on
    dispatch_s: float  # the host's cost per kernel: Python + nn.Module + dispatcher (see `host_from_calibration`)
    source: str


@dataclass(frozen=True)
class TimeModel:
    """The figures of the three levels; `device`/`host` None with a reason when a figure is missing."""

    roof: Roof
    device: Optional[DeviceFigures]
    host: Optional[HostFigures]
    missing: Mapping[str, str] = field(default_factory=dict)  # level -> why it cannot be computed

    @property
    def label(self) -> str:
        host = self.host.label if self.host else "no host figures"
        dev = self.device.label if self.device else self.roof.label
        return f"this host ({host}) + {dev}"


@dataclass
class LevelTimes:
    """The levels of one stage, part or step (seconds), with the kernel census and the verdict."""

    ideal_s: float
    kernel_s: Optional[float]
    eager_s: Optional[float]
    kernels: int
    syncs: int
    host_s: Optional[float] = None
    kernel_bound_s: dict[str, float] = field(default_factory=dict)  # compute / memory / launch -> seconds
    by_kind: dict[str, int] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    @property
    def overhead_s(self) -> Optional[float]:
        if self.eager_s is None or self.kernel_s is None:
            return None
        over = self.eager_s - self.kernel_s
        return over if over > 1e-9 * self.eager_s else 0.0  # float rounding of the segment sums is no overhead

    @property
    def verdict(self) -> Optional[str]:
        if self.kernel_s is None:
            return None
        if self.eager_s is not None and self.overhead_s is not None and self.overhead_s > self.kernel_s:
            return "host"
        if not self.kernel_bound_s:
            return "none"
        return max(self.kernel_bound_s.items(), key=lambda kv: kv[1])[0]

    def to_dict(self) -> dict[str, Any]:
        over = self.overhead_s
        return {
            "ideal_s": self.ideal_s,
            "kernel_s": self.kernel_s,
            "eager_s": self.eager_s,
            "kernels": self.kernels,
            "kernels_by_kind": dict(self.by_kind),
            "syncs": self.syncs,
            "host_s": self.host_s,
            "kernel_bound_s": dict(self.kernel_bound_s),
            "verdict": self.verdict,
            "overhead_s": over,
            "overhead_share": (over / self.eager_s) if over is not None and self.eager_s else None,
            **({"missing": dict(self.missing)} if self.missing else {}),
        }


# ------------------------------------------------------------------------------------------- figures
OVERHEAD_BOUND = 3.0  # a calibrated product faster than this many times the smallest one measures its fixed cost


def gemm_curve(
    grid: Iterable[Mapping[str, Any]], floor: Optional[float] = None
) -> tuple[tuple[tuple[float, float], ...], int]:
    """The matmul rate over x (FLOPs per element moved) from calibrated points: points whose time is under
    `OVERHEAD_BOUND` x the fastest point's (the call's fixed cost, not its throughput) left out, the faster of points
    at one x, then the running maximum over x (more work per element moved never makes a product slower to run
    per FLOP: a lower sample is a shape dominated by something else). Returns (curve, points left out)."""
    grid = list(grid)
    timed = [float(g["seconds"]) for g in grid if g.get("seconds")]
    if floor is None:  # `floor`: the whole grid's, when this is one row of it
        floor = OVERHEAD_BOUND * min(timed) if timed else 0.0
    usable = [g for g in grid if not g.get("seconds") or float(g["seconds"]) >= floor] or grid
    by_x: dict[float, float] = {}
    for g in usable:
        x = round(float(g["x"]), 6)
        by_x[x] = max(by_x.get(x, 0.0), float(g["flops_per_s"]))
    curve, best = [], 0.0
    for x, rate in sorted(by_x.items()):
        best = max(best, rate)
        curve.append((x, best))
    return tuple(curve), len(grid) - len(usable)


def device_from_calibration(
    levels: Mapping[str, Any], label: str, synchronous: bool, vector_flops: float
) -> DeviceFigures:
    """`DeviceFigures` from one dtype's calibrated levels (`measure.calibrate_levels`; version 1 files: the
    M-curve at one N = K, version 2: the curve over FLOPs per element moved, three sizes, fresh pages)."""
    ew, cp = levels["elementwise"], levels["copy"]
    version = int(levels.get("version", 1))
    itemsize = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8}.get(str(levels.get("dtype")), 4)
    grid = levels["gemm"]
    if version >= 2 and all("x" in g for g in grid):
        gemm, dropped = gemm_curve(grid)
        floor = OVERHEAD_BOUND * min((float(g["seconds"]) for g in grid if g.get("seconds")), default=0.0)
        rows = []
        for m in sorted({int(g["m"]) for g in grid}):
            curve, _ = gemm_curve([g for g in grid if int(g["m"]) == m], floor=floor)
            rows.append((m, curve))
        layout = " in nn.Linear's layout" if version >= 5 else ""
        axis, gemm_src = (
            "x",
            (
                f"calibrated torch.matmul over {len(grid)} (M, K, N) shapes{layout}, M in "
                f"{sorted({g['m'] for g in grid})}, read at the kernel's FLOPs per element moved "
                f"(log-log), running maximum over x; {dropped} shape(s) timed under "
                f"{OVERHEAD_BOUND:g}x the smallest product's time left out (their rate is the call's "
                f"fixed cost, which the eager level charges per kernel); "
                f"{levels.get('statistic', '')}"
            ),
        )
        copy_bw = tuple(float(cp[t]["bytes_per_s"]) for t in ("small", "medium", "large"))
        fresh = levels.get("fresh") or {}
        gemv = levels.get("gemv") or {}
        att: dict[float, float] = {}
        for a in levels.get("attention") or ():  # points at the same x: the faster one
            x = round(float(a["x"]), 6)
            att[x] = max(att.get(x, 0.0), float(a["flops_per_s"]))
        extra = dict(
            bw_medium=float(ew["medium"]["bytes_per_s"]),
            copy_bw=copy_bw,  # type: ignore[arg-type]
            fresh_s_per_byte=float(fresh.get("s_per_byte", 0.0)),
            fresh_bytes=int(fresh.get("min_bytes", FRESH_BYTES)),
            gemm_bw_large=float(gemv["bytes_per_s"]) if gemv.get("bytes_per_s") else None,
            attention=tuple(sorted(att.items())),
            gemm_rows=tuple(rows),
        )
        bw_small, bw_large = float(ew["small"]["bytes_per_s"]), float(ew["large"]["bytes_per_s"])
        bw_src = (
            "calibrated torch.add(out=) at 256 KiB / 8 MiB / large and layout copies (transpose) at the same "
            f"sizes; fresh result pages {fresh.get('op', 'not measured')}; matmul kernels above "
            f"{FRESH_BYTES} bytes: {gemv.get('op', 'the large add (no streaming GEMV calibrated)')}"
        )
    else:
        pts = sorted((int(g["m"]), float(g["flops_per_s"])) for g in grid)
        mono, best = [], 0.0  # the curve must not fall with M (a noisy sample): the running maximum
        for m, r in pts:
            best = max(best, r)
            mono.append((float(m), best))
        gemm, axis, extra = tuple(mono), "m", {}
        gemm_src = (
            f"calibrated torch.matmul (M x {grid[0]['k']}) @ ({grid[0]['k']} x {grid[0]['n']}), M in "
            f"{[g['m'] for g in grid]}, fastest sample; running maximum over M (calibration version 1)"
        )
        bw_small = max(ew["small"]["bytes_per_s"], cp["small"]["bytes_per_s"])
        bw_large = max(ew["large"]["bytes_per_s"], cp["large"]["bytes_per_s"])
        bw_src = "calibrated torch.add / copy_ at small (cache) and large sizes, fastest sample (version 1)"
    return DeviceFigures(
        label=label,
        synchronous=synchronous,
        gemm=gemm,
        vector_flops=vector_flops,
        bw_small=bw_small,
        bw_large=bw_large,
        min_kernel_s=float(levels["min_kernel_s"]),
        sync_s=float(levels["host"].get("sync_s", 0.0)),
        sources={"gemm": gemm_src, "bandwidth": bw_src, "min_kernel": levels.get("min_kernel_op", "")},
        gemm_axis=axis,
        itemsize=itemsize,
        **extra,
    )


def host_from_calibration(levels: Mapping[str, Any]) -> HostFigures:
    """The host's cost per op: `op_s` (a module forward per kernel) when calibrated, else `dispatch_s`."""
    h = levels["host"]
    label = f"{h.get('name') or h.get('cpu')}, torch {h.get('torch')}, {h.get('threads')} threads"
    if h.get("op_s") is not None:
        return HostFigures(label, float(h["op_s"]), str(h.get("op_module", "")))
    return HostFigures(label, float(h["dispatch_s"]), str(h.get("op", "")) + " (bare dispatch: calibration version 1)")


def device_from_datasheet(
    roof: Roof, min_kernel_s: Optional[float], launch_s: Optional[float], sync_s: Optional[float] = None
) -> tuple[Optional[DeviceFigures], dict[str, str]]:
    """A GPU from its datasheet: the peak for every M (no efficiency curve: the kernel level then differs from
    the ideal only by per-kernel bytes and the minimum kernel time), one bandwidth. None + reason when the
    datasheet lacks the minimum kernel time."""
    if min_kernel_s is None:
        return None, {
            "kernel": f"hardware {roof.hardware} has no min_kernel_us figure",
            "eager": "needs the kernel level",
        }
    dev = DeviceFigures(
        label=f"{roof.label} (datasheet)",
        synchronous=False,
        gemm=((1, roof.matmul_flops),),
        vector_flops=roof.vector_flops,
        bw_small=roof.bandwidth,
        bw_large=roof.bandwidth,
        min_kernel_s=min_kernel_s,
        launch_s=launch_s or 0.0,
        sync_s=sync_s if sync_s is not None else 0.0,
        sources={
            "gemm": "datasheet matmul peak at every M",
            "bandwidth": "datasheet bandwidth at every size",
            "min_kernel": "datasheet min_kernel_us",
        },
    )
    return dev, {}


# ------------------------------------------------------------------------------------------- levels
class LevelPredictor:
    """The three levels of cost nodes on one `TimeModel` (kernel times cached per kernel key)."""

    def __init__(self, model: TimeModel) -> None:
        self.model = model
        self._kernel: dict[tuple, tuple[float, str]] = {}

    def _kernels(self, kernels: Kernels) -> tuple[float, dict[str, float]]:
        dev = self.model.device
        assert dev is not None
        total, bound = 0.0, {}
        for key, n in kernels.counts.items():
            hit = self._kernel.get(key)
            if hit is None:
                hit = self._kernel[key] = dev.kernel_time(*key)
            total += hit[0] * n
            bound[hit[1]] = bound.get(hit[1], 0.0) + hit[0] * n
        return total, bound

    def levels(self, nodes: Iterable[CostNode], ideal_s: float) -> LevelTimes:
        """The levels of a sequence of nodes run one after another (a part, or a stage's roots)."""
        m = self.model
        nodes = list(nodes)
        total = None
        for n in nodes:
            total = n.total if total is None else total + n.total
        kernels = total.kernels if total is not None else Kernels()
        syncs = total.syncs if total is not None else 0
        out = LevelTimes(ideal_s, None, None, kernels.count, syncs, by_kind=kernels.by_kind(), missing=dict(m.missing))
        if m.device is None:
            return out
        kernel_s, bound = self._kernels(kernels)
        out.kernel_s, out.kernel_bound_s = kernel_s, bound
        if m.host is None:
            out.missing.setdefault("eager", "no host figures (calibrate this host: ./dev calibrate)")
            return out
        per_op = m.host.dispatch_s + m.device.launch_s
        out.host_s = per_op * kernels.count
        if m.device.synchronous:
            out.eager_s = kernel_s + out.host_s
            return out
        # async: walk in call order, a segment closes at each sync: max(host, device) + the round trip
        state = [0.0, 0.0, 0.0]  # host, device of the open segment; closed time

        def walk(node: CostNode) -> None:
            for _, child in node.children:
                walk(child)
            own = node.own
            if own.kernels:
                state[0] += per_op * own.kernels.count
                state[1] += self._kernels(own.kernels)[0]
            for _ in range(own.syncs):
                state[2] += max(state[0], state[1]) + m.device.sync_s
                state[0] = state[1] = 0.0

        for n in nodes:
            walk(n)
        out.eager_s = state[2] + max(state[0], state[1])
        return out


def path_levels(stage: StageCost, predictor: LevelPredictor) -> dict[str, dict[str, Optional[float]]]:
    """{module path: {"kernel_s", "eager_s"}} for every module path of the stage (its calls summed, each path's
    subtree run alone): what the grouped graph's per-level `time_predicted_*` tables show per node."""
    flat: dict[str, list[CostNode]] = {}
    for path, node in stage.root.walk():
        flat.setdefault(path, []).append(node)
    out = {}
    for path, nodes in flat.items():
        lt = predictor.levels(nodes, 0.0)
        out[path] = {"kernel_s": lt.kernel_s, "eager_s": lt.eager_s}
    return out


def stage_levels(stage: StageCost, predictor: LevelPredictor, ideal: Any) -> dict[str, LevelTimes]:
    """{"": the stage, part alias: ...} for the stage and its summary parts; `ideal` its StagePrediction."""
    parts = {}
    flat = {}
    for path, node in stage.root.walk():
        flat.setdefault(path, []).append(node)
    if stage.roots == ("",):
        parts[""] = predictor.levels([stage.root], ideal.total.time_s)
    else:
        roots = [n for r in stage.roots for n in flat.get(r, [])]
        parts[""] = predictor.levels(roots, ideal.total.time_s)
    for alias, est in ideal.summary().items():
        path = stage.vocabulary.path(alias) if stage.vocabulary is not None else alias
        if path in flat:
            parts[alias] = predictor.levels(flat[path], est.time_s)
    return parts


# ------------------------------------------------------------------------------------------- building
def host_from_cache(cache_dir: str) -> tuple[Optional[HostFigures], str]:
    """This host's figures from the newest cached CPU calibration that has them (no torch needed)."""
    from pathlib import Path

    from llm_perf_opt.artifacts import read_json

    found = []
    for path in Path(cache_dir).glob("*.json"):
        try:
            data = read_json(path).get("data") or {}
        except Exception:  # noqa: BLE001 - an unreadable cache file is skipped, not fatal
            continue
        if str(data.get("device", "")).startswith("cpu") and data.get("levels"):
            found.append((path.stat().st_mtime, data))
    if not found:
        return None, f"no calibration of this host with host figures under {cache_dir} (run ./dev calibrate)"
    data = max(found, key=lambda t: t[0])[1]
    levels = data["levels"].get("float32") or next(iter(data["levels"].values()))
    return host_from_calibration(levels), ""


def time_model_for(
    roof: Roof,
    hardware_cfg: Any = None,
    calibration_levels: Optional[Mapping[str, Any]] = None,
    cache_dir: str = "tmp/calibration",
    synchronous: bool = False,
) -> TimeModel:
    """The levels' figures for a roof: `calibration_levels` (a measured roof: {dtype: levels}; device and host
    from it) or a datasheet `hardware_cfg` (device: its peaks + min_kernel_us / launch_us / sync_us; host: this
    host's cached CPU calibration). What is missing makes its levels absent, with the reason."""
    missing: dict[str, str] = {}
    if calibration_levels is not None:
        key = roof.dtype if roof.dtype in calibration_levels else None
        if key is None:
            why = f"the calibration has no kernel-level figures for {roof.dtype} (has {sorted(calibration_levels)})"
            return TimeModel(roof, None, None, {"kernel": why, "eager": why})
        lv = calibration_levels[key]
        dev = device_from_calibration(lv, f"{roof.label} (calibrated, {key})", synchronous, roof.vector_flops)
        return TimeModel(roof, dev, host_from_calibration(lv))
    fig = lambda name: getattr(hardware_cfg, name, None)  # noqa: E731
    mk, ln, sy = fig("min_kernel_us"), fig("launch_us"), fig("sync_us")
    dev, missing = device_from_datasheet(
        roof,
        mk.value * 1e-6 if mk is not None else None,
        ln.value * 1e-6 if ln is not None else None,
        sy.value * 1e-6 if sy is not None else None,
    )
    if dev is not None and ln is None:
        missing["eager"] = f"hardware {roof.hardware} has no launch_us figure"
    host, why = host_from_cache(cache_dir)
    if host is None:
        missing.setdefault("eager", why)
    return TimeModel(roof, dev, host, missing)


def latency_paths(
    stages: Mapping[str, StageCost], model: TimeModel, which: Iterable[str] = ("prefill",)
) -> dict[str, dict[str, dict[str, Optional[float]]]]:
    """{stage: `path_levels`} for the stages named (default the prefill: what the grouped graph shows)."""
    pred = LevelPredictor(model)
    return {name: path_levels(stages[name], pred) for name in which if name in stages}


def latency_levels(stages: Mapping[str, StageCost], latency: Any, model: TimeModel) -> dict[str, dict[str, LevelTimes]]:
    """{stage: {"": stage, part alias: ...}} of the three levels (`latency`: the roofline's LatencyPrediction)."""
    pred = LevelPredictor(model)
    return {name: stage_levels(stages[name], pred, ideal) for name, ideal in latency.stages().items()}


def level_entries(lt: LevelTimes, ideal_bound: Optional[str] = None) -> dict[str, dict[str, Any]]:
    """{level: {"time_s", "bound", ...}} of one unit, the levels present only (what roofline.json stores per
    entry, `report.time_levels` reads): ideal's bound is the roofline's, kernel's the kind of kernel time holding
    most of it, eager's the verdict."""
    out: dict[str, dict[str, Any]] = {"ideal": {"time_s": lt.ideal_s, "bound": ideal_bound}}
    if lt.kernel_s is not None:
        kb = max(lt.kernel_bound_s.items(), key=lambda kv: kv[1])[0] if lt.kernel_bound_s else None
        out["kernel"] = {
            "time_s": lt.kernel_s,
            "bound": kb,
            "kernels": lt.kernels,
            "kernels_by_kind": dict(lt.by_kind),
            "kernel_bound_s": dict(lt.kernel_bound_s),
        }
    if lt.eager_s is not None:
        over = lt.overhead_s
        out["eager"] = {
            "time_s": lt.eager_s,
            "bound": lt.verdict,
            "host_s": lt.host_s,
            "syncs": lt.syncs,
            "overhead_s": over,
            "overhead_share": over / lt.eager_s if over is not None and lt.eager_s else None,
        }
    return out


def levels_payload(
    levels: Mapping[str, Mapping[str, LevelTimes]],
    model: TimeModel,
    paths: Optional[Mapping[str, Mapping[str, Mapping[str, Optional[float]]]]] = None,
) -> dict[str, Any]:
    """What roofline.json (schema version 2) adds beside the roofline: `levels` (present, in order),
    `absent_levels` ({level: reason}), `time_model` (device, host, convention), per stage / part alias the
    entries (`level_entries`) under `stages[stage].levels` ("" = the stage's total), and per stage the module
    paths' kernel and eager seconds (`paths`, from `path_levels`) under `paths[stage]`."""
    present = [
        lv for lv in LEVELS if any(lv in level_entries(lt) for parts in levels.values() for lt in parts.values())
    ]
    absent = {lv: str(model.missing.get(lv) or "not computed") for lv in LEVELS if lv not in present}
    dev, host = model.device, model.host
    return {
        "levels": present,
        "absent_levels": absent,
        "time_model": {
            "label": model.label,
            "convention": dict(CONVENTION),
            "device": None
            if dev is None
            else {
                "label": dev.label,
                "synchronous": dev.synchronous,
                "min_kernel_s": dev.min_kernel_s,
                "launch_s": dev.launch_s,
                "sync_s": dev.sync_s,
                "gemm_axis": dev.gemm_axis,
                "fresh_s_per_byte": dev.fresh_s_per_byte,
                "sources": dict(dev.sources),
            },
            "host": None
            if host is None
            else {"label": host.label, "per_kernel_s": host.dispatch_s, "source": host.source},
        },
        "stages": {stage: {alias: level_entries(lt) for alias, lt in parts.items()} for stage, parts in levels.items()},
        "paths": {k: dict(v) for k, v in (paths or {}).items()},
    }


def render_levels(
    levels: Mapping[str, Mapping[str, LevelTimes]],
    model: TimeModel,
    measured: Optional[Mapping[str, Mapping[str, float]]] = None,
) -> str:
    """A console table: per stage and summary part, ideal / kernel / eager (and measured) with kernels, syncs and
    the verdict."""
    from llm_perf_opt import units

    def t(x: Optional[float]) -> str:
        return "absent" if x is None else units.seconds(x)

    has_m = bool(measured)
    head = (
        f"{'stage / part':<20} {'ideal':>10} {'kernel':>10} {'eager':>10}"
        + (f" {'measured':>10} {'eager/m':>8}" if has_m else "")
        + f" {'kernels':>8} {'syncs':>5} {'verdict':>8} {'overhead':>16}"
    )
    lines = [f"time levels on {model.label}", head, "-" * len(head)]
    for stage, parts in levels.items():
        for alias, lt in parts.items():
            label = stage if alias == "" else f"  {alias}"
            over = lt.overhead_s
            share = f"{t(over)} {100 * over / lt.eager_s:3.0f}%" if over is not None and lt.eager_s else "absent"
            m = (measured or {}).get(stage, {}).get(alias) if has_m else None
            extra = ""
            if has_m:
                ratio = f"{lt.eager_s / m:.2f}" if m and lt.eager_s else "—"
                extra = f" {t(m) if m else '—':>10} {ratio:>8}"
            lines.append(
                f"{label[:20]:<20} {t(lt.ideal_s):>10} {t(lt.kernel_s):>10} {t(lt.eager_s):>10}{extra} "
                f"{lt.kernels:>8,} {lt.syncs:>5} {str(lt.verdict or 'absent'):>8} {share:>16}"
            )
    for level, why in model.missing.items():
        lines.append(f"{level} level absent: {why}")
    dev = model.device
    if dev is not None:
        lines.append(
            f"device figures: min kernel {units.seconds(dev.min_kernel_s)}, launch {units.seconds(dev.launch_s)}, "
            f"sync {units.seconds(dev.sync_s)}, bandwidth small {units.si(dev.bw_small, 'B/s')} / large "
            f"{units.si(dev.bw_large, 'B/s')}, matmul at {dev.gemm_axis}=1 {units.si(dev.gemm_rate(1), 'FLOP/s')}, at "
            f"{dev.gemm_axis}=64 {units.si(dev.gemm_rate(64), 'FLOP/s')}, at {dev.gemm_axis}=1024 "
            f"{units.si(dev.gemm_rate(1024), 'FLOP/s')}"
            + (f", streaming GEMV {units.si(dev.gemm_bw_large, 'B/s')}" if dev.gemm_bw_large else "")
            + (
                f", fresh result pages {dev.fresh_s_per_byte * 2**20 * 1e3:.3g} ms/MiB above "
                f"{dev.fresh_bytes / 2**20:g} MiB"
                if dev.fresh_s_per_byte
                else ""
            )
        )
    if model.host is not None:
        lines.append(f"host figures: {units.seconds(model.host.dispatch_s)} per kernel ({model.host.source})")
    lines.append("convention: " + "; ".join(f"{k}: {v}" for k, v in CONVENTION.items()))
    return "\n".join(lines)
