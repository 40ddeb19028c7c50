"""The three time levels side by side, per module path, part, stage and decode step (`LevelTimes`).

* **ideal**: the roofline (`ideal`): max(FLOPs / peak, I/O bytes / bandwidth) per unit, the limit every
  optimisation aims at.
* **kernel**: per launched kernel (`kernel`), at the efficiency the device reaches for its shape, summed.
* **eager**: + the host (`eager`): dispatch per kernel, segments between host syncs.

Verdict (per stage, part, decode step): `host` when the eager level's host share exceeds its device share
(async) or the host time exceeds the kernel time (CPU); else the kind of kernel time holding most of it:
`compute`, `memory` or `launch` (kernels at the minimum kernel time). Overhead = eager - kernel: what CUDA
graphs / torch.compile (no per-op dispatch) and a fused MoE kernel (no per-layer host sync) would remove.

A level that lacks a figure (no calibration of the kernel-level figures, a datasheet without a minimum kernel
time) is absent with its reason (`LevelTimes.missing`), never zero. The convention: `convention.LEVELS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Optional

from llm_perf_opt import quantities
from llm_perf_opt.analytic.costs import Kernels
from llm_perf_opt.analytic.stage import CostNode, StageCost
from llm_perf_opt.analytic.time import convention
from llm_perf_opt.analytic.time.eager import eager_time
from llm_perf_opt.analytic.time.figures import TimeModel
from llm_perf_opt.analytic.time.kernel import KernelLevel


@dataclass
class LevelTimes:
    """The three levels of one stage, part or step (seconds), with the kernel census and the verdict (one level at
    many batches is `batch.BatchTimes`)."""

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


class LevelPredictor:
    """The three levels of cost nodes on one `TimeModel` (kernel times cached per kernel key)."""

    def __init__(self, model: TimeModel) -> None:
        self.model = model
        self._kernel = KernelLevel(model.device) if model.device is not None else None
        self._resident: Optional["LevelPredictor"] = None

    def for_stage(self, stage: StageCost) -> "LevelPredictor":
        """The predictor of `stage`'s levels: this one, or for a decode step whose bytes (all it moves: its I/O bytes)
        the device keeps in its last-level cache from one step to the next (`DeviceFigures.holds`) one on the
        device's figures with the weights read from there (`DeviceFigures.resident`): the step runs again and again
        over the same weights."""
        dev = self.model.device
        if dev is None or stage.stage != "decode" or not dev.holds(stage.io_bytes):
            return self
        if self._resident is None:
            self._resident = LevelPredictor(replace(self.model, device=dev.resident()))
        return self._resident

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
        if m.device is None or self._kernel is None:
            return out
        kernel_s, bound = self._kernel(kernels)
        out.kernel_s, out.kernel_bound_s = kernel_s, bound
        if m.host is None:
            out.missing.setdefault("eager", "no host figures (calibrate this host: ./dev calibrate)")
            return out
        out.eager_s, out.host_s = eager_time(nodes, m.device, m.host, self._kernel, kernel_s, kernels)
        return out


def path_levels(stage: StageCost, predictor: LevelPredictor) -> dict[str, dict[str, Optional[float]]]:
    """{module path: {"kernel_s", "eager_s"}} for every module path of the stage (its calls summed, each path's
    subtree run alone): what the grouped graph's per-level `time_predicted_*` tables show per node."""
    predictor = predictor.for_stage(stage)
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
    predictor = predictor.for_stage(stage)
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
        lv
        for lv in convention.LEVEL_NAMES
        if any(lv in level_entries(lt) for parts in levels.values() for lt in parts.values())
    ]
    absent = {lv: str(model.missing.get(lv) or "not computed") for lv in convention.LEVEL_NAMES if lv not in present}
    dev, host = model.device, model.host
    return {
        "levels": present,
        "absent_levels": absent,
        "time_model": {
            "label": model.label,
            "convention": dict(convention.LEVELS),
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
                "read_bw": list(dev.read_bw) if dev.read_bw else None,
                "write_bw": list(dev.write_bw) if dev.write_bw else None,
                "sources": dict(dev.sources),
            },
            "host": None
            if host is None
            else {
                "label": host.label,
                "per_kernel_s": host.dispatch_s,
                "per": host.unit,
                "source": host.source,
                "where": host.where,
            },
            "notes": list(model.notes),
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
    lines = [
        f"time levels on {model.label}",
        f"ideal / kernel / eager = predicted at that level; measured = {quantities.label('fastest')}; "
        f"verdict = {quantities.bound_label(quantities.BOUND_LEVEL)}",
        head,
        "-" * len(head),
    ]
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
                f", read / write medium {units.si(dev.read_bw[1], 'B/s')} / {units.si(dev.write_bw[1], 'B/s')}"
                if dev.read_bw and dev.write_bw
                else ""
            )
            + (
                f", fresh result pages {dev.fresh_s_per_byte * 2**20 * 1e3:.3g} ms/MiB above "
                f"{dev.fresh_bytes / 2**20:g} MiB"
                if dev.fresh_s_per_byte
                else ""
            )
        )
    if model.host is not None:
        lines.append(
            f"host figures: {units.seconds(model.host.dispatch_s)} per {model.host.unit} ({model.host.source})"
        )
    shown = model.host.source if model.host is not None else None  # a filled host figure's source is on the line above
    lines.extend(f"figures: {note}" for note in model.notes if not (shown and note.endswith(shown)))
    lines.append("convention: " + convention.levels_line())
    return "\n".join(lines)
