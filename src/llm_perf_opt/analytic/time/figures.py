"""What the kernel and eager levels need of a device and of this host, each figure with its source.

`DeviceFigures`: the matmul efficiency curve(s), the vector rate, the bandwidth by size tier, the minimum kernel
time, the launch and sync costs of an asynchronous device, the CPU's fresh-page cost. `HostFigures`: the host's
cost per kernel. `TimeModel`: both for one `Roof`, with the reason for each figure that is missing.

Built from a calibration (`device_from_calibration`, `host_from_calibration`: the files `measure.calibrate`
writes; no torch is needed to read them; one given by path, `measure.calibration_file`, adds `recorded` and
`filled` to each dtype's figures: the label then names the recorded host, and `notes` where each filled figure
came from), from a datasheet (`device_from_datasheet`: conf/hardware/*.yaml's
min_kernel_us / launch_us / sync_us) or, for this host, from the newest cached CPU calibration
(`host_from_cache`); `time_model_for` picks. The cache directory is `config.paths.calibration_dir()`.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from llm_perf_opt.analytic.costs import SDPA_QUERY_TILE
from llm_perf_opt.analytic.time.hardware import Roof
from llm_perf_opt.config.paths import calibration_dir

SMALL_BYTES = 1 << 20  # kernels moving up to this many bytes run at the small-size (cache) bandwidth
FRESH_BYTES = 1 << 25  # CPU: results above this size are written to fresh (mmapped) pages on every call
GEMM_KINDS = ("gemm", "conv", "attention")
COPY_KINDS = ("copy", "relayout")  # layout copies: an op's own (copy) and one inside another op (relayout)
GEMV_ROWS = 16  # a product of at most this many rows is GEMV-like: its bytes are its weights


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
    # an asynchronous device's fixed device time of one matrix-product kernel, serial with its work (operand
    # pipeline fill, epilogue): a GEMM of negligible work still takes it (calibrated `gemm_fixed_s`: the shortest
    # GEMM kernels' device durations); 0: none (the CPU, a datasheet, a calibration without the figure)
    gemm_fixed_s: float = 0.0
    # an asynchronous device's fixed device time of one convolution call, serial with its work: the convolution
    # kernel's own fixed time and cuDNN's layout transforms around it (NCHW to NHWC and back, ~1.5 µs each on an
    # H200; calibrated `conv_fixed_s`: the median small convolution call's device time, CUPTI, ~10 µs); 0: none (the
    # CPU, a datasheet, a calibration without the figure)
    conv_fixed_s: float = 0.0
    # the device's streaming multiprocessors (0: not known) and the fused attention's curve at full occupancy
    # (x, FLOP/s): each calibrated point's rate / its occupancy (`occupancy`: its query tiles / multiprocessors);
    # (): the attention curve as calibrated (no occupancy model)
    multiprocessors: int = 0
    attention_full: tuple[tuple[float, float], ...] = ()
    # the CPU's reads and writes by size tier (small, medium, large), bytes/s: `write` a fill's, `read` what the add
    # of the same tier leaves for its two inputs (`read_write_tiers`); None: every byte at the tier's bandwidth
    read_bw: Optional[tuple[float, float, float]] = None
    write_bw: Optional[tuple[float, float, float]] = None
    # an asynchronous device's device time of a one-wave small kernel, by kind (elementwise, copy, cast, reduction:
    # `measure.level_fillers.WAVE_KINDS`): a kernel of more than one block but at most one wave costs its kind's
    # fixed time, not the shortest kernel's (calibrated `wave_kernel_s`: CUPTI durations; `kernel.WAVE_ELEMENTS`);
    # {}: none (the CPU, a datasheet, a calibration without the figure: every small kernel floored by min_kernel_s)
    wave_kernel: Mapping[str, float] = field(default_factory=dict)
    # CPU: a GEMV's bytes/s with its weights in the last-level cache, left there by the calls before (calibrated
    # `gemv_cached`), and the most bytes the calling thread keeps there (calibrated `llc`: the largest GEMV weights
    # read at that rate); a decode step that moves no more than `llc_bytes` runs its weight reads at it
    # (`resident`). None / 0: not calibrated (every device but a CPU of a calibration that has them)
    gemv_cached_bw: Optional[float] = None
    llc_bytes: int = 0
    # CPU: a product of m <= GEMV_ROWS rows above the cache tier reads its weights at the one-row GEMV's rate times
    # the share of its row count and its weight's shorter side K (calibrated `gemv_rows`: beyond 2-3 rows the BLAS
    # packs the weights it streams, and 4 rows run at about half the one-row rate; at K = 64 the one-row product
    # itself is slower), ((K, ((m, share), ...)), ...) ascending, log-log in m and in K between them;
    # `gemv_rows_cached` the same with the weights in the last-level cache (`resident`). (): every row count at the
    # one-row rate (not calibrated: every device but a CPU of a calibration that has them)
    gemv_rows: tuple[tuple[int, tuple[tuple[int, float], ...]], ...] = ()
    gemv_rows_cached: tuple[tuple[int, tuple[tuple[int, float], ...]], ...] = ()

    def holds(self, nbytes: int) -> bool:
        """The device keeps `nbytes` in its last-level cache from one decode step to the next (`resident`)."""
        return bool(self.gemv_cached_bw and self.llc_bytes and 0 < nbytes <= self.llc_bytes)

    def resident(self) -> "DeviceFigures":
        """This device for a decode step whose bytes it holds (`holds`): the products that would stream their weights
        from memory (`gemm_bw_large`: GEMV-like ones above the cache tier, every product above the medium one) read
        them from the last-level cache, where the step before left them (`gemv_cached_bw`). Itself when not
        calibrated."""
        if not self.gemv_cached_bw:
            return self
        from dataclasses import replace

        return replace(
            self,
            gemm_bw_large=self.gemv_cached_bw,
            gemv_rows=self.gemv_rows_cached,
            label=f"{self.label}, weights in the last-level cache",
        )

    def row_share(self, m: int, k: float = 0.0) -> float:
        """The share of the one-row GEMV's rate a product of `m` rows streaming a weight of shorter side `k` reaches
        (`gemv_rows`: the calibrated row counts around m and sides around k, log-log in each, the nearest beyond
        them; k = 0, not known: the largest side calibrated, the GEMV's own): 1 when not calibrated."""
        if not self.gemv_rows or m <= 0:
            return 1.0
        ks = [c[0] for c in self.gemv_rows]
        if k <= 0:
            return _log_interp(self.gemv_rows[-1][1], m)
        i = bisect.bisect_left(ks, k)
        if i < len(ks) and ks[i] == k or i == 0 or i >= len(ks):
            return _log_interp(self.gemv_rows[min(i, len(ks) - 1)][1], m)
        (k0, c0), (k1, c1) = self.gemv_rows[i - 1], self.gemv_rows[i]
        return _log_interp(((k0, _log_interp(c0, m)), (k1, _log_interp(c1, m))), k)

    def gemm_rate(self, at: float, curve: Optional[tuple[tuple[float, float], ...]] = None) -> float:
        """The matmul rate at x = `at` on `curve` (default the gemm curve): log-log between its points, flat beyond."""
        return _log_interp(curve or self.gemm, max(float(at), 1e-9))

    def row_rate(self, m: int, x: float) -> float:
        """The matmul rate of an m-row product at x (`gemm_rows`): the rows around m, log-log in m between them."""
        rows = self.gemm_rows
        ms = [r[0] for r in rows]
        i = bisect.bisect_left(ms, m)
        if i < len(ms) and ms[i] == m or i == 0 or i >= len(ms):
            return self.gemm_rate(x, rows[min(max(i, 0), len(ms) - 1)][1])
        (m0, c0), (m1, c1) = rows[i - 1], rows[i]
        return _log_interp(((m0, self.gemm_rate(x, c0)), (m1, self.gemm_rate(x, c1))), m)

    def scaled(self, matmul: float = 1.0, vector: float = 1.0, bandwidth: float = 1.0) -> "DeviceFigures":
        """The same device with every matmul rate x `matmul`, the vector rate x `vector` and every bandwidth x
        `bandwidth` (efficiencies, kernel floors, launch and sync kept): what a faster device of this kind runs
        at (the serving engines' sizing asks how much faster a device must be)."""
        from dataclasses import replace

        def curve(c):
            return tuple((x, r * matmul) for x, r in c)

        bw = lambda x: None if x is None else x * bandwidth  # noqa: E731
        return replace(
            self,
            gemm=curve(self.gemm),
            attention=curve(self.attention),
            gemm_rows=tuple((m, curve(c)) for m, c in self.gemm_rows),
            vector_flops=self.vector_flops * vector,
            bw_small=self.bw_small * bandwidth,
            bw_large=self.bw_large * bandwidth,
            bw_medium=bw(self.bw_medium),
            copy_bw=None if self.copy_bw is None else tuple(x * bandwidth for x in self.copy_bw),  # type: ignore
            gemm_bw_large=bw(self.gemm_bw_large),
            gemv_cached_bw=bw(self.gemv_cached_bw),
            fresh_s_per_byte=self.fresh_s_per_byte / bandwidth,
            read_bw=None if self.read_bw is None else tuple(x * bandwidth for x in self.read_bw),  # type: ignore
            write_bw=None if self.write_bw is None else tuple(x * bandwidth for x in self.write_bw),  # type: ignore
        )

    def tier(self, nbytes: int) -> int:
        """The size tier of `nbytes` moved: 0 up to SMALL_BYTES (cache), 1 up to fresh_bytes (medium), 2 beyond."""
        return 0 if nbytes <= SMALL_BYTES else (1 if nbytes <= self.fresh_bytes else 2)

    def memory_s(self, kind: str, nbytes: int, m: int = 0, out: int = 0, k: float = 0.0) -> float:
        """Seconds a kernel's bytes take: `nbytes` at `bandwidth(kind, nbytes, m)`, or, on a device with read and
        write figures, for a kernel of no figure of its own (elementwise, reduction, cast, memset: not a layout copy,
        not a matrix product), its `out` result bytes at the write bandwidth of its size tier and the rest at the
        read bandwidth: an add (a third written) takes what the calibrated add took, a kernel that mostly writes
        more, one that mostly reads less."""
        if self.write_bw is None or self.read_bw is None or kind in COPY_KINDS or kind in GEMM_KINDS:
            return nbytes / self.bandwidth(kind, nbytes, m, k)
        t = self.tier(nbytes)
        out = min(max(out, 0), nbytes)
        return (nbytes - out) / self.read_bw[t] + out / self.write_bw[t]

    def writeback_s(self, kind: str, out: int) -> float:
        """A matrix product's (gemm, conv, attention) write-back of a result larger than the cache on a synchronous
        device with a write figure: `out` bytes at the write bandwidth of the result's tier, serial with the
        product's work (the core that computes the tiles stores them, and a store that misses the cache fetches its
        line first: the calibrated GEMM grid's results stay in cache, so its rates hold none of it). 0 elsewhere."""
        if not self.synchronous or self.write_bw is None or kind not in GEMM_KINDS or out <= SMALL_BYTES:
            return 0.0
        return out / self.write_bw[self.tier(out)]

    def bandwidth(self, kind: str, nbytes: int, m: int = 0, k: float = 0.0) -> float:
        tier = self.tier(nbytes)
        if kind in COPY_KINDS and self.copy_bw is not None:
            return self.copy_bw[tier]
        if (
            kind in GEMM_KINDS
            and self.gemm_bw_large is not None
            and (tier == 2 or (tier == 1 and kind == "gemm" and 0 < m <= GEMV_ROWS))
        ):
            # a GEMV-like product (a decode step's, a few rows) above the cache tier reads its weight matrix from
            # memory: each weight is read once per step, and a step's weights exceed any last-level cache; at the
            # share of that rate its row count reaches (`gemv_rows`, the CPU's)
            if kind == "gemm" and 0 < m <= GEMV_ROWS:
                return self.gemm_bw_large * self.row_share(m, k)
            return self.gemm_bw_large
        return (self.bw_small, self.bw_medium or self.bw_large, self.bw_large)[tier]


def _log_interp(points: Sequence[tuple[float, float]], at: float) -> float:
    """y at `at` on ascending (x, y) points: log-log between the two around it, the nearest point's y beyond them."""
    xs = [p[0] for p in points]
    i = bisect.bisect_left(xs, at)
    if i < len(xs) and xs[i] == at or i == 0 or i >= len(xs):
        return points[min(i, len(xs) - 1)][1]
    (x0, y0), (x1, y1) = points[i - 1], points[i]
    f = (math.log(at) - math.log(x0)) / (math.log(x1) - math.log(x0))
    return math.exp(math.log(y0) + f * (math.log(y1) - math.log(y0)))


@dataclass(frozen=True)
class HostFigures:
    label: str  # the CPU it was calibrated on, torch, threads
    dispatch_s: float  # the host's cost per kernel: Python + nn.Module + dispatcher (see `host_from_calibration`)
    source: str
    where: str = "this host"  # "the recorded host": a calibration file of another machine (`hardware.calibration`)
    # True: `dispatch_s` is the cost per op the code calls (`Kernels.op_count`: an op's inner kernels, an autocast
    # cast, cuDNN's layout transforms, SDPA's memset, are launched inside it and paid with it), a host figure whose
    # calibration says so (`host.op_unit == "op"`, `HOST_PER_OP`); False: per kernel launched (every other figure)
    per_op: bool = False

    @property
    def unit(self) -> str:
        return "op" if self.per_op else "kernel"

    def charged(self, kernels: Any) -> int:
        """How many times the host pays `dispatch_s` for `kernels` (a `Kernels`): its ops, or its kernels."""
        return kernels.op_count if self.per_op else kernels.count


@dataclass(frozen=True)
class TimeModel:
    """The figures of the three levels; `device`/`host` None with a reason when a figure is missing."""

    roof: Roof
    device: Optional[DeviceFigures]
    host: Optional[HostFigures]
    missing: Mapping[str, str] = field(default_factory=dict)  # level -> why it cannot be computed
    notes: tuple[str, ...] = ()  # where figures not measured as the file's version measures them came from

    @property
    def label(self) -> str:
        host = self.host.label if self.host else "no host figures"
        where = self.host.where if self.host else "this host"
        dev = self.device.label if self.device else self.roof.label
        return f"{where} ({host}) + {dev}"


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


def occupancy(tiles: float, multiprocessors: int) -> float:
    """The share of a device's multiprocessors a kernel of `tiles` independent tiles (one per CTA) keeps busy: tiles /
    multiprocessors, at most 1 (a kernel of many waves fills the device); 1 when the device's count is not known."""
    if multiprocessors <= 0:
        return 1.0
    return min(1.0, max(tiles, 1.0) / multiprocessors)


def attention_at_full_occupancy(
    points: Iterable[Mapping[str, Any]], multiprocessors: int
) -> tuple[tuple[float, float], ...]:
    """The fused attention's rate at full occupancy over x: each calibrated point's FLOP/s / its occupancy (its
    batch x heads x query tiles of `analytic.costs.SDPA_QUERY_TILE` rows over the multiprocessors), the faster at one
    x. The calibrated points (SAM's windows, 2 heads; 1-2 heads of 1-2k tokens) fill 16-128 of an H200's 132
    multiprocessors: their raw rates hold only for kernels as small. (): the device's count not known, or a point
    without its shape."""
    if multiprocessors <= 0:
        return ()
    full: dict[float, float] = {}
    for a in points:
        if not all(a.get(k) for k in ("batch", "heads", "tokens", "x", "flops_per_s")):
            return ()
        tiles = int(a["batch"]) * int(a["heads"]) * -(-int(a["tokens"]) // SDPA_QUERY_TILE)
        x = round(float(a["x"]), 6)
        full[x] = max(full.get(x, 0.0), float(a["flops_per_s"]) / occupancy(tiles, multiprocessors))
    return tuple(sorted(full.items()))


def device_from_calibration(
    levels: Mapping[str, Any], label: str, synchronous: bool, vector_flops: float
) -> DeviceFigures:
    """`DeviceFigures` from one dtype's calibrated levels (`measure.calibrate_levels`; version 1 files: the
    M-curve at one N = K, version 2: the curve over FLOPs per element moved, three sizes, fresh pages)."""
    ew, cp = levels["elementwise"], levels["copy"]
    version = int(levels.get("version", 1))
    itemsize = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8}.get(str(levels.get("dtype")), 4)
    grid = levels["gemm"]
    cached, llc = levels.get("gemv_cached") or {}, levels.get("llc") or {}
    if version >= 2 and all("x" in g for g in grid):
        # the fixed cost of a call: the fastest product, those set aside as launch-bound included
        # (`measure.level_fillers.launch_bound`: they are left out of the curve already)
        aside = levels.get("gemm_launch_bound") or ()
        floor = OVERHEAD_BOUND * min((float(g["seconds"]) for g in (*grid, *aside) if g.get("seconds")), default=0.0)
        gemm, dropped = gemm_curve(grid, floor=floor)
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
                f"fixed cost, which the eager level charges per kernel)"
                f"{f', {len(aside)} launch-bound shape(s) set aside before' if aside else ''}; "
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
        sms = 0 if synchronous else int(levels.get("multiprocessors") or 0)
        full = attention_at_full_occupancy(levels.get("attention") or (), sms)
        extra = dict(
            multiprocessors=sms if full else 0,
            attention_full=full,
            bw_medium=float(ew["medium"]["bytes_per_s"]),
            copy_bw=copy_bw,  # type: ignore[arg-type]
            fresh_s_per_byte=float(fresh.get("s_per_byte", 0.0)),
            fresh_bytes=int(fresh.get("min_bytes", FRESH_BYTES)),
            gemm_bw_large=float(gemv["bytes_per_s"]) if gemv.get("bytes_per_s") else None,
            attention=tuple(sorted(att.items())),
            gemm_rows=tuple(rows),
        )
        if synchronous and cached.get("bytes_per_s") and llc.get("bytes"):
            extra["gemv_cached_bw"] = float(cached["bytes_per_s"])
            extra["llc_bytes"] = int(llc["bytes"])
        rows_of = (levels.get("gemv_rows") or {}).get("rows") or ()
        if synchronous and rows_of:
            for key, share in (("gemv_rows", "share"), ("gemv_rows_cached", "cached_share")):
                of = [r for r in rows_of if r.get(share) is not None]  # streamed: the GEMV's K only
                extra[key] = tuple(
                    (k, tuple(sorted((int(r["m"]), float(r[share])) for r in of if int(r["k"]) == k)))
                    for k in sorted({int(r["k"]) for r in of})
                )
        bw_small, bw_large = float(ew["small"]["bytes_per_s"]), float(ew["large"]["bytes_per_s"])
        split = read_write_tiers(levels) if synchronous else None
        if split is not None:
            extra["read_bw"], extra["write_bw"] = split
        bw_src = (
            "calibrated torch.add(out=) at 256 KiB / 8 MiB / large and layout copies (transpose) at the same "
            f"sizes; fresh result pages {fresh.get('op', 'not measured')}; matmul kernels above "
            f"{FRESH_BYTES} bytes: {gemv.get('op', 'the large add (no streaming GEMV calibrated)')}"
            + (
                f"; writes: {levels.get('write_op', 'a fill')}, reads: what the add leaves for its two inputs "
                "(elementwise kernels: result at the write, inputs at the read bandwidth; a matrix product's result "
                f"above {SMALL_BYTES} bytes written back serially)"
                if split is not None
                else ""
            )
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
    wave = {str(k): float(v) for k, v in (levels.get("wave_kernel_s") or {}).items() if v}
    return DeviceFigures(
        label=label,
        synchronous=synchronous,
        gemm=gemm,
        vector_flops=vector_flops,
        bw_small=bw_small,
        bw_large=bw_large,
        min_kernel_s=float(levels["min_kernel_s"]),
        sync_s=float(levels["host"].get("sync_s", 0.0)),
        sources={
            "gemm": gemm_src,
            "bandwidth": bw_src,
            "min_kernel": levels.get("min_kernel_op", ""),
            **({"gemm_fixed": str(levels.get("gemm_fixed_op", ""))} if levels.get("gemm_fixed_s") else {}),
            **(
                {"conv_fixed": str(levels.get("conv_fixed_op", ""))}
                if levels.get("conv_fixed_s") and not synchronous
                else {}
            ),
            **{
                f"wave_kernel.{kind}": str((levels.get("wave_kernel_op") or {}).get(kind, ""))
                for kind in ({} if synchronous else wave)
            },
            **(
                {"gemv_cached": str(cached.get("op", "")), "llc": f"{int(llc['bytes'])} bytes: {llc.get('op', '')}"}
                if extra.get("llc_bytes")
                else {}
            ),
            **({"gemv_rows": str(levels["gemv_rows"].get("op", ""))} if extra.get("gemv_rows") else {}),
            **(
                {
                    "attention_occupancy": f"{extra['multiprocessors']} multiprocessors "
                    f"({levels.get('multiprocessors_op', '')}); the calibrated attention points' rates / their "
                    f"occupancy (batch x heads x {SDPA_QUERY_TILE}-row query tiles over the multiprocessors)"
                }
                if extra.get("multiprocessors")
                else {}
            ),
        },
        gemm_fixed_s=0.0 if synchronous else float(levels.get("gemm_fixed_s") or 0.0),
        conv_fixed_s=0.0 if synchronous else float(levels.get("conv_fixed_s") or 0.0),
        wave_kernel={} if synchronous else wave,
        gemm_axis=axis,
        itemsize=itemsize,
        **extra,
    )


def read_write_tiers(
    levels: Mapping[str, Any],
) -> Optional[tuple[tuple[float, float, float], tuple[float, float, float]]]:
    """((read, write) bytes/s per size tier (small, medium, large)) from one dtype's calibrated add and fill
    (version 8): write = the fill's bytes / its time; read = the add's two inputs' bytes / (the add's time - the
    time its result took at the write bandwidth). None without a fill (an older calibration) or where the add took
    no longer than the fill of its result (no time left for its reads: a noisy sample, not a rate)."""
    ew, wr = levels.get("elementwise") or {}, levels.get("write") or {}
    reads, writes = [], []
    for tier in ("small", "medium", "large"):
        a, f = ew.get(tier) or {}, wr.get(tier) or {}
        if not (a.get("seconds") and f.get("seconds") and a.get("numel") and f.get("numel")):
            return None
        written = float(a["bytes"]) / 3  # the add's result: a third of the bytes it moves
        t_write = written / float(f["bytes_per_s"])
        left = float(a["seconds"]) - t_write
        if left <= 0:
            return None
        reads.append(2 * written / left)
        writes.append(float(f["bytes_per_s"]))
    return tuple(reads), tuple(writes)  # type: ignore[return-value]


HOST_PER_OP = "op"  # `host.op_unit` of a figure per op the code calls (not per kernel launched)


def host_from_calibration(levels: Mapping[str, Any]) -> HostFigures:
    """The host's cost per op: `op_s` (a module forward per kernel) when calibrated, else `dispatch_s`. A calibration
    read from a file (`levels["recorded"]`) is the recorded machine's host, not this one."""
    h = levels["host"]
    label = f"{h.get('name') or h.get('cpu')}, torch {h.get('torch')}, {h.get('threads')} threads"
    where = "the recorded host" if levels.get("recorded") else "this host"
    if h.get("op_s") is not None:
        return HostFigures(
            label, float(h["op_s"]), str(h.get("op_module", "")), where, per_op=h.get("op_unit") == HOST_PER_OP
        )
    return HostFigures(
        label, float(h["dispatch_s"]), str(h.get("op", "")) + " (bare dispatch: calibration version 1)", where
    )


def calibration_notes(levels: Mapping[str, Any]) -> tuple[str, ...]:
    """Lines saying where one dtype's figures came from when read from a file (`measure.calibration_file`): the
    file and its version, and each figure filled for it (`levels["filled"]`: {figure: source})."""
    recorded = levels.get("recorded") or {}
    if not recorded:
        return ()
    lines = [f"recorded calibration {recorded.get('file')} (kernel-level figures version {recorded.get('version')})"]
    lines += [f"{figure}: {source}" for figure, source in (levels.get("filled") or {}).items()]
    return tuple(lines)


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


# The kernel-level version since which a CPU calibration's host figures mean what the eager level takes them for:
# measured on one thread (`measure.calibrate_levels`, version 7). An older cache read the wait for a second
# OpenMP thread into every op on a loaded host (float32 op_s 5.8 ms instead of ~10 µs): it is not used.
HOST_FIGURES_SINCE = 7


def host_from_cache(cache_dir: str | Path) -> tuple[Optional[HostFigures], str]:
    """This host's figures from the newest cached CPU calibration that has them, of kernel-level version
    `HOST_FIGURES_SINCE` or newer (no torch needed)."""
    from llm_perf_opt.artifacts import read_json

    found, stale = [], []
    for path in Path(cache_dir).glob("*.json"):
        try:
            data = read_json(path).get("data") or {}
        except Exception:  # noqa: BLE001 - an unreadable cache file is skipped, not fatal
            continue
        if not (str(data.get("device", "")).startswith("cpu") and data.get("levels")):
            continue
        levels = data["levels"].get("float32") or next(iter(data["levels"].values()))
        if int(levels.get("version", 1)) < HOST_FIGURES_SINCE:
            stale.append(f"{path.name} (version {levels.get('version', 1)})")
            continue
        found.append((path.stat().st_mtime, levels))
    if not found:
        if stale:
            return None, (
                f"the cached calibrations of this host under {cache_dir} are older than kernel-level version "
                f"{HOST_FIGURES_SINCE} (host figures on one thread): {', '.join(sorted(stale))} (run ./dev calibrate)"
            )
        return None, f"no calibration of this host with host figures under {cache_dir} (run ./dev calibrate)"
    return host_from_calibration(max(found, key=lambda t: t[0])[1]), ""


def time_model_for(
    roof: Roof,
    hardware_cfg: Any = None,
    calibration_levels: Optional[Mapping[str, Any]] = None,
    cache_dir: Optional[str | Path] = None,
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
        how = "recorded calibration" if lv.get("recorded") else "calibrated"
        dev = device_from_calibration(lv, f"{roof.label} ({how}, {key})", synchronous, roof.vector_flops)
        return TimeModel(roof, dev, host_from_calibration(lv), notes=calibration_notes(lv))
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
    host, why = host_from_cache(calibration_dir(cache_dir))
    if host is None:
        missing.setdefault("eager", why)
    return TimeModel(roof, dev, host, missing)
