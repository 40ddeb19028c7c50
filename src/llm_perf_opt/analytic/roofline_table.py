"""A console table of roofline predictions: the roof and its sources, the stage figures, one row per
stage and top-level part."""

from __future__ import annotations

from llm_perf_opt import units
from llm_perf_opt.analytic.time import convention
from llm_perf_opt.analytic.time.hardware import Roof
from llm_perf_opt.analytic.time.ideal import Estimate, LatencyPrediction


def describe_roof(roof: Roof) -> str:
    """One line of figures, then one line per source."""
    head = (
        f"roof: {roof.label} ({roof.kind}), {roof.dtype}: matmul {units.si(roof.matmul_flops, 'FLOP/s')} "
        f"({roof.matmul_key}), vector {units.si(roof.vector_flops, 'FLOP/s')}, bandwidth "
        f"{units.si(roof.bandwidth, 'B/s')}, ridge {roof.ridge_intensity:.3g} FLOP/B"
    )
    return "\n".join([head] + [f"  {name}: {source}" for name, source in roof.sources if source])


def describe_figures(latency: LatencyPrediction) -> str:
    return (
        f"predicted: vision {units.seconds(latency.vision_s)} | prefill (time to first token) "
        f"{units.seconds(latency.ttft_s)} | decode {units.seconds(latency.decode_s)}/token at context "
        f"{latency.context_len} ({latency.tokens_per_s:,.0f} tokens/s)"
    )


def _row(label: str, e: Estimate) -> str:
    return (
        f"{label:22s} {units.seconds(e.time_s):>10s} {units.seconds(e.compute_s):>10s} "
        f"{units.seconds(e.memory_s):>10s} {e.bound:>8s} {e.compute_bound_fraction:>6.0%} "
        f"{e.intensity:>10.3g} {units.si(e.attainable_flops, 'FLOP/s'):>14s}"
    )


def render_roofline_table(latency: LatencyPrediction) -> str:
    header = (
        f"{'stage / part':22s} {'time':>10s} {'compute':>10s} {'memory':>10s} {'bound':>8s} "
        f"{'cmp%':>6s} {'FLOP/B':>10s} {'attainable':>14s}"
    )
    lines = [describe_roof(latency.roof), describe_figures(latency), "", header, "-" * len(header)]
    for name, stage in latency.stages().items():
        label = f"{name} (ctx {latency.context_len})" if name == "decode" else name
        lines.append(_row(label, stage.total))
        summary = stage.summary()
        vocabulary = stage.cost.vocabulary
        listed = vocabulary.console_parts if vocabulary is not None else tuple(summary)
        lines.extend(_row(f"  {part}", summary[part]) for part in listed if part in summary)
    lines.append("")
    lines.append(f"convention: {convention.roofline_line()}; cmp% = share of the time in compute-bound units")
    return "\n".join(lines)
