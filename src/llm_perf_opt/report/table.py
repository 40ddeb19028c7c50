"""One row per job: the report's columns, where each value comes from, and how it is shown.

A column is one `Column(key, header, kind, doc, get)` in `COLUMNS`; to report a new summary field once
the trace job writes it, add one line there (the CSV, Markdown, HTML and the column glossary follow).
A value the job did not record is None: empty in the CSV, "—" in Markdown and HTML.

Analytic costs come from the job's summary (`analytic`, `flops.<stage>.analytic`, `parts.<part>.flops_analytic`)
when it has them. A summary without them (jobs of an older trace) gets them recomputed here from the
job's model spec and view layout by `llm_perf_opt.analytic`, and says so in the `analytic_source` column
("job" or "report"); measured values only ever come from the job.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from llm_perf_opt.report.collect import JobRecord

STAGES = ("vision", "prefill", "decode")
PARTS = ("sam", "clip", "projector", "decoder", "lm_head")
MODE_ORDER = ("tiny", "small", "base", "large", "gundam", "gundam_m")
PAGE_ORDER = ("letter_portrait", "letter_landscape", "a4_portrait", "a4_landscape", "square", "slide",
              "receipt", "small")
MISSING = "—"


# ------------------------------------------------------------------------------------------- analytic
def _spec_for(job: JobRecord) -> Any:
    from llm_perf_opt.dsocr.spec import ModelSpec

    source = job.cfg("model.source") or job.get("model", "source")
    if source == "vendor":
        path = job.cfg("model.path")
        return ModelSpec.from_config_json(path) if path else None
    return ModelSpec.named(job.cfg("model.spec") or "deepseek_ocr")


def recompute_analytic(job: JobRecord) -> Optional[dict[str, Any]]:
    """{stage: {flops, io_bytes, weight_bytes, activation_bytes}, "parts": {part: flops}} from the job's
    spec, workload, page and sequence length; None when the job did not record enough to do it."""
    wl, page, seq = job.get("workload"), job.get("page"), job.get("tokens", "sequence")
    if not isinstance(wl, dict) or not isinstance(page, dict) or not isinstance(seq, int):
        return None
    try:
        from llm_perf_opt.analytic import DeepseekOCRAnalyticModel
        from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout

        spec = _spec_for(job)
        if spec is None:
            return None
        workload = VisionWorkload(base_size=wl["base_size"], image_size=wl["image_size"],
                                  crop_mode=wl["crop_mode"], tile_size=wl.get("tile_size", 640))
        layout = compute_view_layout(workload, int(page["width"]), int(page["height"]))
        model = DeepseekOCRAnalyticModel(spec, layout, seq_len=seq, dtype=job.cfg("runtime.dtype") or "bfloat16")
        out: dict[str, Any] = {}
        for name, stage in model.stages().items():
            out[name] = {"flops": stage.flops, "flops_matmul": stage.flops_matmul, "io_bytes": stage.io_bytes, "weight_bytes": stage.weight_bytes,
                         "activation_bytes": stage.activation_bytes}
        prefill = model.prefill()
        out["parts"] = {part: prefill.part(part).flops_matmul for part in PARTS}
        return out
    except Exception:  # noqa: BLE001 - a recomputation is a convenience; the job's own numbers rule
        return None


def _analytic(job: JobRecord) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    """The analytic section to report and where it came from ("job" / "report"); cached on the record."""
    cached = getattr(job, "_analytic_cache", None)
    if cached is not None:
        return cached
    section = job.get("analytic")
    if isinstance(section, dict) and section:
        result: tuple[Optional[dict[str, Any]], Optional[str]] = (section, "job")
    else:
        recomputed = recompute_analytic(job)
        result = (recomputed, "report" if recomputed else None)
    job._analytic_cache = result  # type: ignore[attr-defined]
    return result


def stage_flops(job: JobRecord, stage: str, which: str) -> Optional[float]:
    """FLOPs of a stage, counted as torch.utils.flop_counter counts (mm, bmm, conv, sdpa, einsum):
    which = "measured" (the job only), "analytic" (the job's verification pairing, else its analytic
    section's flops_matmul, else recomputed) or "analytic_total" (also the analytic estimate of the
    elementwise, norm and softmax work that no counter measures)."""
    if which in ("measured", "analytic"):
        value = job.get("flops", stage, which)
        if value is not None or which == "measured":
            return value
    section, _ = _analytic(job)
    entry = (section or {}).get(stage) if section else None
    if not isinstance(entry, dict):
        return None
    if which == "analytic":
        return entry.get("flops_matmul", entry.get("flops"))
    return entry.get("flops")


def stage_bytes(job: JobRecord, stage: str, kind: str) -> Optional[float]:
    section, _ = _analytic(job)
    return (section or {}).get(stage, {}).get(kind) if section else None


def part_flops(job: JobRecord, part: str, which: str) -> Optional[float]:
    value = job.get("parts", part, f"flops_{which}")
    if value is not None or which == "measured":
        return value
    section, source = _analytic(job)
    if source == "report":
        return section.get("parts", {}).get(part)
    return None


def rel_error(job: JobRecord, stage: str) -> Optional[float]:
    """|measured - analytic| / measured, as the job's verification computed it when it did."""
    value = job.get("flops", stage, "rel_error")
    if value is not None:
        return value
    measured, analytic = stage_flops(job, stage, "measured"), stage_flops(job, stage, "analytic")
    if measured is None or analytic is None or not measured:
        return None
    return abs(measured - analytic) / measured


# ------------------------------------------------------------------------------------------- labels
KNOBS = ("base_size", "image_size", "crop_mode", "tile_size")


def _split_override(text: str) -> tuple[str, str]:
    key, _, value = text.partition("=")
    return key.lstrip("+~"), value


def mode_label(job: JobRecord) -> str:
    """The workload preset, plus any knob the command line changed: 'gundam', 'gundam base_size=640'."""
    name = job.choices.get("workload") or job.get("workload", "mode") or job.cfg("workload.name")
    knobs = [f"{k.split('.', 1)[1]}={v}" for k, v in map(_split_override, job.overrides)
             if k.startswith("workload.") and k.split(".", 1)[1] in KNOBS]
    if name is None and not knobs:
        return MISSING
    return " ".join([str(name or "?")] + knobs)


def page_size(job: JobRecord) -> tuple[Optional[int], Optional[int]]:
    w, h = job.get("page", "width"), job.get("page", "height")
    if w is None or h is None:
        w, h = job.cfg("workload.page.width"), job.cfg("workload.page.height")
    return w, h


def page_label(job: JobRecord) -> str:
    """The page preset (conf/page/) when one was chosen and not changed, else 'W×H' or the image's name."""
    image = job.get("page", "image") or job.cfg("workload.page.image")
    if image:
        return Path(str(image)).name
    page_overrides = [k for k, _ in map(_split_override, job.overrides) if k.startswith("workload.page.")]
    w, h = page_size(job)
    preset = job.choices.get("page")
    if preset and not page_overrides:
        return str(preset)
    return f"{w}x{h}" if w is not None else MISSING


def sweep_axes(jobs: list[JobRecord]) -> list[str]:
    """Override keys whose value differs between jobs (the swept dimensions), in first-seen order."""
    values: dict[str, set[str]] = {}
    for job in jobs:
        for key, value in map(_split_override, job.overrides):
            values.setdefault(key, set()).add(value)
    for job in jobs:
        keys = {k for k, _ in map(_split_override, job.overrides)}
        for key in values:
            if key not in keys:
                values[key].add("<default>")
    return [k for k, v in values.items() if len(v) > 1]


def other_label(job: JobRecord, axes: list[str]) -> str:
    """The swept overrides that are neither the mode nor the page (e.g. 'model=twin runtime=cpu_bf16')."""
    own = dict(map(_split_override, job.overrides))
    rest = [a for a in axes if not (a == "workload" or a == "page" or a.startswith("workload."))]
    return " ".join(f"{a}={own.get(a, '<default>')}" for a in rest)


def order_key(label: str, order: tuple[str, ...]) -> tuple[int, str]:
    head = label.split(" ", 1)[0]
    return (order.index(head) if head in order else len(order), label)


# ------------------------------------------------------------------------------------------- columns
@dataclass(frozen=True)
class Column:
    key: str  # CSV header
    header: str  # Markdown / HTML header
    kind: str  # int | float | str | bool | flops | bytes | seconds | ratio | count
    doc: str  # one line for the glossary (docs/sweeps.md mirrors it)
    get: Callable[[JobRecord], Any]
    brief: bool = True  # shown in the Markdown / HTML table (the CSV has every column)


def _grid(job: JobRecord) -> Optional[str]:
    w, h = job.get("layout", "w_crop"), job.get("layout", "h_crop")
    return f"{w}x{h}" if w is not None and h is not None else None


def _checks(job: JobRecord) -> Optional[str]:
    """'ok/run': a list of checks [{name, status, ...}] or counts by status {ok, mismatch, not checked}."""
    checks = job.get("grouping", "checks")
    if isinstance(checks, dict):
        counts = {str(k): int(v) for k, v in checks.items() if isinstance(v, int)}
    elif isinstance(checks, list):
        counts = {}
        for c in checks:
            status = str(c.get("status")) if isinstance(c, dict) else "?"
            counts[status] = counts.get(status, 0) + 1
    else:
        return None
    passed = sum(v for k, v in counts.items() if k in ("ok", "pass", "passed"))
    unchecked = counts.get("not checked", 0)
    text = f"{passed}/{sum(counts.values()) - unchecked}"
    return text + (f" ({unchecked} not checked)" if unchecked else "")


def _verified(job: JobRecord) -> Optional[str]:
    flops = job.get("flops")
    if not isinstance(flops, dict) or not flops:
        return None
    oks = [v.get("ok") for v in flops.values() if isinstance(v, dict) and "ok" in v]
    if not oks:
        return None
    return f"{sum(bool(o) for o in oks)}/{len(oks)}"


def _stage_columns() -> list[Column]:
    cols = []
    for stage in STAGES:
        brief = stage != "decode"
        cols += [
            Column(f"flops_{stage}_measured", f"{stage} FLOPs measured", "flops",
                   f"FLOPs of the {stage} stage counted by torch.utils.flop_counter in the job's forward",
                   lambda j, s=stage: stage_flops(j, s, "measured"), brief),
            Column(f"flops_{stage}_analytic", f"{stage} FLOPs analytic", "flops",
                   f"FLOPs of the {stage} stage from the analytic model (2 × multiply-adds), counted like "
                   "the measurement: matmul-class ops (mm, bmm, conv, sdpa, einsum)",
                   lambda j, s=stage: stage_flops(j, s, "analytic"), brief),
            Column(f"rel_error_{stage}", f"{stage} rel. error", "ratio",
                   f"|measured − analytic| / measured for the {stage} stage (the job's verification)",
                   lambda j, s=stage: rel_error(j, s), brief),
            Column(f"flops_{stage}_analytic_total", f"{stage} FLOPs analytic total", "flops",
                   f"analytic FLOPs of the {stage} stage including elementwise, norm and softmax work "
                   "(an estimate no counter measures)",
                   lambda j, s=stage: stage_flops(j, s, "analytic_total"), False),
        ]
    return cols


def _part_columns() -> list[Column]:
    cols = []
    for part in PARTS:
        for which in ("measured", "analytic"):
            cols.append(Column(f"flops_{part}_{which}", f"{part} FLOPs {which}", "flops",
                               f"{which} FLOPs of the {part} part in the prefill forward",
                               lambda j, p=part, w=which: part_flops(j, p, w), False))
    return cols


COLUMNS: list[Column] = [
    Column("job", "job", "int", "job number (its directory under the sweep dir)", lambda j: j.num),
    Column("status", "status", "str", "ok, or 'failed: <type>: <message>' from the job's error.json", lambda j: j.status),
    Column("overrides", "overrides", "str", "the job's command-line overrides", lambda j: " ".join(j.overrides), False),
    Column("model", "model", "str", "model config (twin, twin_tiny, vendor)",
           lambda j: j.get("model", "name") or j.choices.get("model")),
    Column("mode", "mode", "str", "workload preset, plus any knob changed on the command line", mode_label),
    Column("base_size", "base", "int", "global view side in crop mode (infer(base_size=))",
           lambda j: j.get("workload", "base_size", default=j.cfg("workload.base_size")), False),
    Column("image_size", "image", "int", "crop side in crop mode, the single view's side otherwise (infer(image_size=))",
           lambda j: j.get("workload", "image_size", default=j.cfg("workload.image_size")), False),
    Column("crop_mode", "crop", "bool", "crop mode (infer(crop_mode=))",
           lambda j: j.get("workload", "crop_mode", default=j.cfg("workload.crop_mode")), False),
    Column("page", "page", "str", "page preset (conf/page/), else WIDTHxHEIGHT in pixels (or the image file name)", page_label),
    Column("page_width", "width", "int", "page width in pixels", lambda j: page_size(j)[0], False),
    Column("page_height", "height", "int", "page height in pixels", lambda j: page_size(j)[1], False),
    Column("grid", "grid", "str", "crop grid, tiles across x down (1x1: no crops)", _grid),
    Column("views", "views", "int", "images the vision stack sees: 1 global view + the crops",
           lambda j: j.get("layout", "num_views")),
    Column("image_tokens", "image tokens", "count", "image-token positions in the sequence (global + local)",
           lambda j: j.get("tokens", "image")),
    Column("seq_len", "sequence", "count", "prompt length fed to the prefill: BOS + image tokens + text tokens",
           lambda j: j.get("tokens", "sequence")),
    Column("params", "params", "count", "model parameters (all of them, including every expert)",
           lambda j: j.get("params", "total")),
    Column("ops", "ops", "count", "tensor operations in the TorchLens call graph", lambda j: j.get("trace", "num_ops")),
    Column("module_calls", "module calls", "count", "module calls in the call graph",
           lambda j: j.get("trace", "module_calls")),
    *_stage_columns(),
    Column("flops_verified", "FLOPs verified", "str", "stages and parts within verify.rtol / all checked", _verified),
    Column("activation_bytes_prefill", "prefill activations", "bytes",
           "bytes of every tensor the prefill's eager op sequence produces (analytic)",
           lambda j: stage_bytes(j, "prefill", "activation_bytes")),
    Column("weight_bytes_prefill", "prefill weights read", "bytes", "parameter bytes read by the prefill (analytic)",
           lambda j: stage_bytes(j, "prefill", "weight_bytes"), False),
    Column("io_bytes_prefill", "prefill I/O", "bytes", "weights + inputs read + outputs written by the prefill (analytic)",
           lambda j: stage_bytes(j, "prefill", "io_bytes"), False),
    Column("analytic_source", "analytic from", "str",
           "where the analytic numbers come from: 'job' (its summary) or 'report' (recomputed from its spec and layout)",
           lambda j: _analytic(j)[1], False),
    *_part_columns(),
    Column("forward_s", "forward", "seconds", "wall time of one plain forward (no capture)",
           lambda j: j.get("forward", "seconds")),
    Column("peak_rss_bytes", "peak RSS", "bytes", "peak resident memory of the job's process",
           lambda j: j.get("forward", "peak_rss_bytes"), False),
    Column("capture_s", "capture", "seconds", "wall time of the TorchLens capture",
           lambda j: j.get("trace", "capture_seconds")),
    Column("grouping_checks", "graph checks", "str", "grouped-graph checks passed / run (for N / parfor N vs the runtime log)",
           _checks, False),
    Column("grouped_svg", "graph", "str", "the job's grouped call graph (callgraph.grouped.svg), relative to the sweep dir",
           lambda j: j.files.get("grouped_svg")),
    Column("job_dir", "dir", "str", "the job's directory", lambda j: str(j.dir) if j.dir else None, False),
]


def column(key: str) -> Column:
    for col in COLUMNS:
        if col.key == key:
            return col
    raise KeyError(key)


def build_rows(jobs: list[JobRecord]) -> list[dict[str, Any]]:
    return [{col.key: _safe(col, job) for col in COLUMNS} for job in jobs]


def _safe(col: Column, job: JobRecord) -> Any:
    try:
        return col.get(job)
    except Exception:  # noqa: BLE001 - a malformed section shows as missing, never breaks the report
        return None


# ------------------------------------------------------------------------------------------- formats
def _si(value: float, unit: str, base: float = 1000.0) -> str:
    prefixes = ["", "K", "M", "G", "T", "P", "E"]
    v, i = float(value), 0
    while abs(v) >= base and i < len(prefixes) - 1:
        v /= base
        i += 1
    digits = 0 if i == 0 and float(value).is_integer() else (3 if abs(v) < 10 else 4 if abs(v) < 100 else 5)
    text = f"{v:.{digits}g}" if digits else f"{int(v)}"
    return f"{text} {prefixes[i]}{unit}".strip()


def fmt(value: Any, kind: str) -> str:
    """Human text of a value for Markdown / HTML."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return MISSING
    try:
        if kind == "flops":
            return _si(value, "FLOP")
        if kind == "bytes":
            return _si(value, "B")
        if kind == "count":
            return f"{int(value):,}" if abs(value) < 1e7 else _si(value, "")
        if kind == "seconds":
            return f"{value:.3g} s" if value < 100 else f"{value:.0f} s"
        if kind == "ratio":
            return f"{100 * value:.3g}%"
        if kind == "bool":
            return "yes" if value else "no"
        if kind == "float":
            return f"{value:.4g}"
    except (TypeError, ValueError):
        pass
    return str(value)


def csv_value(value: Any) -> Any:
    return "" if value is None else value
