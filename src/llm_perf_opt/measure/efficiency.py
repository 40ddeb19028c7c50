"""Measured against predicted time: efficiency = predicted / measured, per stage, part and address.

The predicted time is the roofline's (`analytic.time.ideal`, convention in `analytic.time.convention`) on a named roof;
the measured time is the profile's (`measure.profile`): a part's inclusive time over the profiled
forwards (median over the repeats, each repeat summed over the part's calls: SAM runs twice in crop
mode), and for the whole forward the plain (unprofiled) forward's wall time, median over the repeats.
An efficiency of 1 means the part ran at the roof; 0.25 that it took four times the roof's time; above
1 that it ran faster than the roof allows, which says the roof or the cost model is wrong for it.

Efficiency is only computed against a roof of the device the times were measured on (`same_device`):
predicted H100 time over measured CPU time is not an efficiency, and is left out (None), not hidden in
a ratio. Achieved FLOP/s = the part's analytic FLOPs (every op, as the roofline counts them) / its
measured time: the point a roofline plot puts at the part's arithmetic intensity.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from llm_perf_opt import quantities, units
from llm_perf_opt.analytic.stage import StageCost
from llm_perf_opt.analytic.time import convention
from llm_perf_opt.analytic.time.ideal import Estimate, StagePrediction
from llm_perf_opt.measure.module_times import ModuleTimes, path_inclusive_repeats

EFFICIENCY = (
    "predicted / measured: 1 = at the roof, 0.25 = four times slower than the roof allows, > 1 = "
    "faster than the roof (the roof or the cost model is wrong there); only against a roof of the "
    "device the times were measured on"
)


@dataclass(frozen=True)
class RoofEntry:
    """One roof a run predicts on: its stage predictions (bytes in the roof's dtype) and whether it
    describes the device where the times were measured."""

    name: str  # the roof's hardware name (measured, h100_sxm, ...)
    prefill: StagePrediction
    same_device: bool
    note: str = ""


@dataclass
class ComparisonRow:
    """One stage or part: what the analytic model says it does, how long it took, what each roof predicts."""

    name: str  # "forward", "vision", a part alias (sam, decoder.layer.0, ...)
    kind: str  # "stage" or "part"
    path: Optional[str]  # module path ("" = the root); None for a stage made of several parts
    flops: int
    io_bytes: int
    measured_s: Optional[float]
    measured_by: str
    predicted: dict[str, dict[str, Any]] = field(default_factory=dict)  # roof -> {time_s, bound, ..., efficiency}

    @property
    def intensity(self) -> Optional[float]:
        return self.flops / self.io_bytes if self.io_bytes else None

    @property
    def achieved_flops(self) -> Optional[float]:
        return self.flops / self.measured_s if self.measured_s else None

    def efficiency(self, roof: str) -> Optional[float]:
        return self.predicted.get(roof, {}).get("efficiency")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "path": self.path,
            "flops": self.flops,
            "io_bytes": self.io_bytes,
            "intensity": self.intensity,
            "measured_s": self.measured_s,
            "measured_by": self.measured_by,
            "achieved_flops": self.achieved_flops,
            "predicted": {k: dict(v) for k, v in self.predicted.items()},
        }


def efficiency(predicted_s: Optional[float], measured_s: Optional[float]) -> Optional[float]:
    """predicted / measured; None when either is missing or the measured time is not positive."""
    if predicted_s is None or not measured_s or measured_s <= 0:
        return None
    return predicted_s / measured_s


def _median(values: Optional[Sequence[float]]) -> Optional[float]:
    return statistics.median(values) if values else None


def _part_rows(vocabulary: Any) -> list[tuple[str, str]]:
    return [(p.alias, p.path) for p in vocabulary.parts] if vocabulary is not None else []


def compare(cost: StageCost, roofs: Sequence[RoofEntry], times: Optional[ModuleTimes]) -> list[ComparisonRow]:
    """Rows for the whole forward, the vision stage, every part and every decoder layer of the prefill.

    `cost` is the prefill the run executed (its dtype's bytes: the intensity of what actually ran);
    `roofs` the predictions to set against it; `times` the profile (None: predictions only)."""
    time_base = (times.coverage.get("time_base") if times else None) or "cpu"
    part_by = (
        "device (GPU kernel) time inside the part's module ranges"
        if time_base == "device"
        else "wall-clock span of the part's module ranges"
    )
    repeats = f"median of {times.repeats}" if times else ""
    rows: list[ComparisonRow] = []

    # the whole forward: the plain forward's wall time (no hooks, no profiler)
    forward_s = times.wall["plain_s"]["median"] if times else None
    rows.append(
        ComparisonRow(
            "forward",
            "stage",
            "",
            cost.total.flops,
            cost.total.io_bytes,
            forward_s,
            f"plain forward wall time ({repeats}, no profiler)" if times else "",
        )
    )
    # vision: SAM + CLIP + projector, summed per repeat
    vocabulary = cost.vocabulary
    vision_paths = [p for p in (vocabulary.vision_paths if vocabulary else ()) if p in cost.parts]
    vision_cost = sum((cost.parts[p] for p in vision_paths[1:]), cost.parts[vision_paths[0]]) if vision_paths else None
    if vision_cost is not None:
        per_repeat = None
        if times:
            series = [path_inclusive_repeats(times, p) for p in vision_paths]
            if all(s is not None for s in series):
                per_repeat = [sum(vals) for vals in zip(*series)]
        rows.append(
            ComparisonRow(
                "vision",
                "stage",
                None,
                vision_cost.flops,
                vision_cost.io_bytes,
                _median(per_repeat),
                f"sum of SAM, CLIP and projector: {part_by} ({repeats})" if times else "",
            )
        )
    layers = []
    i = 0
    while vocabulary is not None and vocabulary.decoder_layer_path(i) in cost.parts:
        layers.append((vocabulary.alias(vocabulary.decoder_layer_path(i)), vocabulary.decoder_layer_path(i)))
        i += 1
    for alias, path in _part_rows(vocabulary) + layers:
        if path not in cost.parts:
            continue
        layer = cost.parts[path]
        measured = _median(path_inclusive_repeats(times, path)) if times else None
        rows.append(
            ComparisonRow(
                alias, "part", path, layer.flops, layer.io_bytes, measured, f"{part_by} ({repeats})" if times else ""
            )
        )

    for roof in roofs:
        pred = roof.prefill
        for row in rows:
            if row.name == "forward":
                est = pred.total
            elif row.name == "vision":
                found = [pred.parts[p] for p in vision_paths if p in pred.parts]
                est = sum(found[1:], found[0]) if found else None
            else:
                est = pred.parts.get(row.path) if row.path is not None else None
            if est is None:
                continue
            row.predicted[roof.name] = _predicted(est, row.measured_s, roof.same_device)
    return rows


def _predicted(est: Estimate, measured_s: Optional[float], same_device: bool) -> dict[str, Any]:
    return {
        "time_s": est.time_s,
        "compute_s": est.compute_s,
        "memory_s": est.memory_s,
        "bound": est.bound,
        "attainable_flops": est.attainable_flops,
        "efficiency": efficiency(est.time_s, measured_s) if same_device else None,
    }


def efficiency_table(
    measured: Mapping[str, Mapping[str, Any]], predicted: Mapping[str, float], containers: Sequence[str] = ()
) -> dict[str, dict[str, Any]]:
    """{address: {measured_s, predicted_s, efficiency, note}} for every address in either table.

    `measured`: `module_time_table(times)` (inclusive time per module path); `predicted`:
    `analytic.time.ideal.predicted_time_table(stage, roof)` of the same roof's device. `containers`: the
    stage's container paths (`StageCost.containers`), whose prediction leaves their own ops to the
    caller while the measurement of a module run through `.forward()` includes them."""
    out: dict[str, dict[str, Any]] = {}
    for address in list(measured) + [a for a in predicted if a not in measured]:
        row = measured.get(address)
        m = row.get("inclusive_s") if row is not None else None
        p = predicted.get(address)
        entry: dict[str, Any] = {"measured_s": m, "predicted_s": p, "efficiency": efficiency(p, m)}
        if address in containers:
            entry["note"] = (
                "predicted: its children only (its own ops are costed in its caller); measured: its whole range"
            )
        out[address] = entry
    return out


def render_comparison(rows: Sequence[ComparisonRow], roofs: Sequence[RoofEntry]) -> str:
    """A console table: per stage and part, measured time, then per roof predicted time, bound and
    efficiency; then the roofs and the definition."""
    names = [r.name for r in roofs]
    head = f"{'stage / part':18s} {'measured':>10s} {'FLOP/B':>8s} {'achieved':>12s}"
    for name in names:
        head += f" | {('on ' + name)[:14]:>14s} {'bound':>7s} {'eff.':>6s}"  # predicted on that roof
    lines = [
        "measured vs predicted on each roof (efficiency = predicted / measured)",
        f"on <roof> = {quantities.label('ideal')} on that roof; bound = {quantities.bound_label('ideal')}; measured: "
        f"forward = {quantities.label('median_plain')}, parts = {quantities.label('ranges')}",
        head,
        "-" * len(head),
    ]
    for row in rows:
        label = row.name if row.kind == "stage" else f"  {row.name}"
        text = (
            f"{label:18s} {units.seconds(row.measured_s):>10s} "
            f"{(f'{row.intensity:.3g}' if row.intensity is not None else '—'):>8s} "
            f"{units.si(row.achieved_flops, 'FLOP/s'):>12s}"
        )
        for name in names:
            pred = row.predicted.get(name)
            if pred is None:
                text += f" | {'—':>14s} {'':>7s} {'':>6s}"
                continue
            eff = pred["efficiency"]
            text += (
                f" | {units.seconds(pred['time_s']):>14s} {pred['bound']:>7s} "
                f"{(units.percent(eff) if eff is not None else '—'):>6s}"
            )
        lines.append(text)
    for roof in roofs:
        r = roof.prefill.roof
        lines.append(
            f"roof {roof.name}: {r.label} ({r.kind}, {r.dtype}): matmul {units.si(r.matmul_flops, 'FLOP/s')}, "
            f"vector {units.si(r.vector_flops, 'FLOP/s')}, bandwidth {units.si(r.bandwidth, 'B/s')}"
            + ("" if roof.same_device else " — not the device measured here: no efficiency")
            + (f"; {roof.note}" if roof.note else "")
        )
    measured_by = next((r.measured_by for r in rows if r.kind == "part" and r.measured_by), "")
    forward_by = next((r.measured_by for r in rows if r.name == "forward" and r.measured_by), "")
    if measured_by:
        lines.append(f"measured: forward = {forward_by}; parts = {measured_by}")
    lines.append(f"predicted: {convention.roofline_line()}")
    return "\n".join(lines)
