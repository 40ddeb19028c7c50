"""The printed serving and sizing figures (`./dev analyze hardware=...`, `./dev size`): plain text lines."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from llm_perf_opt.analytic.serving import Knee, ServingPoint
from llm_perf_opt.analytic.sizing import Sizing
from llm_perf_opt.analytic.time import convention

GB = 1e9


def _gb(x: float) -> str:
    return f"{x / GB:,.2f} GB"


def _num(x: float) -> str:
    if not math.isfinite(x):
        return "unreachable alone"
    return f"{x:,.1f}" if x >= 1 or x == 0 else f"{x:.2g}"


def _count(x: float) -> str:
    return f"{x:,.0f}" if x >= 1 else f"{x:.2g}"


def render_engine(run: Any, hardware: str, capacity: Optional[float]) -> str:
    """One engine's block (`serving_run.EngineServing`): what it is and assumes, the point, the curve."""
    e = run.engine
    head = [f"engine {e.name}: {e.summary} [{e.level} level; {e.batching} batching; {e.memory} memory]"]
    head += [f"  assumes: {a}" for a in e.assumes]
    if run.generate is not None:
        g = run.generate
        head.append(
            f"  generate loop per step: {g.per_step_s * 1e3:.3g} ms + {g.per_sequence_s * 1e3:.3g} ms per sequence + "
            f"{g.per_token_s * 1e6:.3g} us per history token ({'history walk only' if g.host_only else 'all'} "
            f"charged; {g.where}: {g.source})"
        )
    if run.paged is not None:
        p = run.paged
        head.append(
            f"  paged KV: block {p.block_size} tokens, gpu_memory_utilization {p.utilization:g}, prefill chunk "
            f"{p.chunk_tokens} tokens, max_num_seqs {p.concurrency}; the pool holds {run.fits.get('continuous')} "
            f"pages: batch {run.batch}"
        )
    if run.point is None:
        head.append("  no page fits: no figures")
        return "\n".join(head)
    continuous = e.batching == "continuous"
    fit = run.fits.get("continuous" if continuous else "static")
    return "\n".join(
        [
            *head,
            render_point(run.point, hardware, capacity, fit, continuous),
            render_curve(run.points, run.knee, continuous),
        ]
    )


def render_point(
    p: ServingPoint, hardware: str, capacity: Optional[float], fit: Optional[int], continuous: bool = False
) -> str:
    m = p.memory_continuous if continuous else p.memory
    cap = f" of {_gb(capacity)} ({'fits' if m.fits else 'does NOT fit'})" if capacity else " (no capacity given)"
    mark = ("", " <- the engine's") if continuous else (" <- the engine's", "")
    lines = [
        f"serving on {hardware} at batch {p.batch}, {p.output_tokens} output tokens per page "
        f"[{p.level} level: {convention.batch_level(p.level)}]",
        f"  static batching:     TTFT {p.static.ttft_s * 1e3:,.2f} ms | TPOT {p.static.tpot_s * 1e3:,.3f} ms | "
        f"{p.static.tokens_per_s:,.0f} tokens/s | {p.static.pages_per_s:,.2f} pages/s | "
        f"{p.static.pages_per_day:,.0f} pages/day{mark[0]}",
        f"  continuous batching: TTFT {p.continuous.ttft_s * 1e3:,.2f} ms | TPOT {p.continuous.tpot_s * 1e3:,.3f} ms | "
        f"{p.continuous.tokens_per_s:,.0f} tokens/s | {p.continuous.pages_per_s:,.2f} pages/s | "
        f"{p.continuous.pages_per_day:,.0f} pages/day{mark[1]}",
        f"  decode step {p.step_s * 1e3:,.3f} ms ({p.step_bound}-bound); prefill {p.prefill_s * 1e3:,.2f} ms "
        f"({p.prefill_bound}-bound)"
        + (
            f"; routed experts touched per MoE layer and step: {p.experts_per_layer:.1f}"
            if p.experts_per_layer is not None
            else ""
        ),
        f"  memory ({'continuous' if continuous else 'static'}, {m.phase} phase): weights {_gb(m.weights)} + "
        f"KV cache {_gb(m.kv_cache)} + "
        f"inputs {_gb(m.inputs)} + activations "
        f"{_gb(m.activations)} + allowance {_gb(m.allowance)} = {_gb(m.total)}{cap}; dominant: {m.dominant}"
        + (f"; largest batch that fits: {fit}" if fit is not None else ""),
        f"  binding constraint: {binding(p, capacity)}",
    ]
    return "\n".join(lines)


def binding(p: ServingPoint, capacity: Optional[float]) -> str:
    if capacity and p.memory.total > capacity:
        return f"memory ({_gb(p.memory.total)} > {_gb(capacity)})"
    side = {"compute": "compute", "host": "host", "launch": "kernel launches (the minimum kernel time)"}.get(
        p.step_bound, "memory bandwidth"
    )
    decode_s = (p.output_tokens - 1) * p.step_s
    share = 100 * decode_s / (p.prefill_s + decode_s)
    return f"{side} (the decode step, {p.step_s * 1e3:,.3f} ms, holds {share:.0f}% of a static batch's time)"


def render_curve(points: Sequence[ServingPoint], knee: Knee, continuous: bool = False) -> str:
    scheme = "continuous batching" if continuous else "static batching"
    rows = [
        f"  {'batch':>6} {'TTFT ms':>10} {'TPOT ms':>9} {'tokens/s':>11} {'pages/day':>12} {'step bound':>10} "
        f"{'memory GB':>10}  ({scheme})"
    ]
    for p in points:
        f, m = (p.continuous, p.memory_continuous) if continuous else (p.static, p.memory)
        rows.append(
            f"  {p.batch:>6} {f.ttft_s * 1e3:>10,.1f} {f.tpot_s * 1e3:>9,.3f} "
            f"{f.tokens_per_s:>11,.0f} {f.pages_per_day:>12,.0f} {p.step_bound:>10} "
            f"{m.total / GB:>10,.2f}"
        )
    rows.append(f"  knee: {knee.batch if knee.batch is not None else 'none'} ({knee.reason}): {knee.note}")
    return "\n".join(rows)


def _ratio(r) -> str:
    return "missed at every batch" if not math.isfinite(r.ratio) else f"{r.ratio:,.2f}x"


def render_sizing(s: Sizing) -> str:
    t = s.targets
    lines = [
        f"sizing against {s.hardware}, engine {s.engine} [{s.level} level: {convention.batch_level(s.level)}], "
        f"{t.output_tokens} output tokens per page",
    ]
    if s.holds_no_page:  # the cause first: every row below is what a device would need
        lines.append(
            f"  {s.hardware} cannot serve one page: batch 1 holds {s.batch1_memory_gb:,.2f} GB, the device has "
            f"{s.capacity_gb:,.2f} GB (memory binds; the figures below are what a device needs)"
        )
    lines.append(
        f"  {'target':<22} {'this device':>14} {'matmul TFLOP/s':>16} {'bandwidth GB/s':>16} {'memory GB':>10}  binds"
    )
    for r in s.requirements:
        value = f"{r.target}={r.value:g}"
        achieved = f"{r.achieved:,.0f}/day" if r.target == "pages_per_day" else f"{r.achieved * 1e3:,.2f} ms"
        lines.append(
            f"  {value:<22} {achieved:>14} {_num(r.matmul_tflops):>16} {_num(r.bandwidth_gbs):>16} "
            f"{r.memory_gb:>10,.2f}  {r.binds} ({_ratio(r)}"
            + (f" of {s.hardware}'s)" if math.isfinite(r.ratio) else ")")
        )
    if s.holds_no_page:
        lines.append(f"  replicas: none: {s.hardware} holds no page (memory)")
    elif s.replicas is None:
        lines.append(f"  replicas: none: {s.hardware} misses the latency targets at every batch")
    else:
        lines.append(
            f"  replicas: {s.replicas:,} x {s.hardware} at batch {s.batch} (continuous batching, each carrying "
            f"{_count(t.pages_per_day / s.replicas)} pages/day; the most one carries within the targets is "
            f"{s.pages_per_day_per_device:,.0f} at batch {s.best_batch}; largest batch that fits: {s.max_fit_batch})"
        )
    b = s.binding
    lines.append(
        f"  binding: {b.target} on {b.binds} ("
        + (f"{b.ratio:,.2f}x of {s.hardware}'s figure)" if math.isfinite(b.ratio) else "missed at every batch)")
    )
    return "\n".join(lines)


def render_engines(runs: Sequence[Any], refused: Optional[dict] = None) -> str:
    """One row per engine of a sizing: replicas, batch, pages/day per device, what binds (or why it cannot)."""
    rows = [f"  {'engine':<12} {'level':<7} {'replicas':>9} {'batch':>6} {'pages/day/device':>17}  binds"]
    for r in runs:
        s = r.sizing
        b = s.binding
        reps = f"{s.replicas:,}" if s.replicas is not None else "none"
        rows.append(
            f"  {r.engine.name:<12} {r.engine.level:<7} {reps:>9} {s.batch:>6} {s.pages_per_day_per_device:>17,.0f}  "
            f"{b.target} on {b.binds}"
        )
    for name, why in (refused or {}).items():
        rows.append(f"  {name:<12} refused: {why}")
    return "per engine:\n" + "\n".join(rows)


def render_measured(block: Optional[dict]) -> str:
    """serving.json's `measured`: per batch measured vs hf_eager's forwards, with the ratios."""
    if not block:
        return ""
    on = block["measured_on"]
    lines = [
        f"measured ({block['file']}: {on.get('model')} {on.get('mode')} on "
        f"{on.get('device_name') or on.get('runtime')}, plain forwards) vs {block['engine']} "
        f"on {block['predicted_by']}",
        f"  {'batch':>6} {'prefill ms':>11} {'predicted':>10} {'ratio':>6} {'step ms':>9} {'predicted':>10} "
        f"{'ratio':>6}",
    ]
    touched = "touched" in block
    if touched:
        lines[-1] += f" {'at the experts touched: prefill':>32} {'step':>6}"
    for r in block["rows"]:
        lines.append(
            f"  {r['batch']:>6} {r['prefill_measured_s'] * 1e3:>11,.2f} {r['prefill_predicted_s'] * 1e3:>10,.2f} "
            f"{r['prefill_ratio']:>6.2f} {r['step_measured_s'] * 1e3:>9,.2f} {r['step_predicted_s'] * 1e3:>10,.2f} "
            f"{r['step_ratio']:>6.2f}"
            + (f" {r['prefill_ratio_touched']:>32.2f} {r['step_ratio_touched']:>6.2f}" if touched else "")
        )
    if touched:
        lines.append(f"  at the experts touched: {block['touched']}")
    return "\n".join(lines)
