"""One row per job: the report's columns, where each value comes from, and how it is shown.

A column is one `Column(key, header, kind, doc, get)` in `COLUMNS`; to report a new summary field once
the trace job writes it, add one line there (the CSV, Markdown, HTML and the column glossary follow). A model
family may offer columns of its own (`report_columns()`), appended for the sweeps that ran it
(`family_columns`).
Values come from the job's typed `summary.json` (`run_artifacts.Summary`). A section the job did not
write (a failed job, a stage switched off) is None: empty in the CSV, "—" in Markdown and HTML. A
malformed summary never gets here (collecting the sweep marks the job failed, naming the field), and a
getter that raises is a bug in the report: it is not hidden.

Analytic costs come from the job's summary (`analytic`, `flops.<stage>.analytic`, `parts.<part>.flops_analytic`)
when it has them; the report never recomputes the analytic model (a job without them shows "—"), and the
`analytic_source` column says where they came from; measured values only ever come from the job.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from llm_perf_opt import quantities, units
from llm_perf_opt.analytic import STAGES  # vision, prefill, decode
from llm_perf_opt.config.schemas import COMMON_WORKLOAD_FIELDS
from llm_perf_opt.report.collect import JobRecord
from llm_perf_opt.run_artifacts import AnalyticFigures

# page presets in reading order (portrait before landscape, then the odd shapes); unknown ones follow by name
PAGE_ORDER = (
    "letter_portrait",
    "letter_landscape",
    "a4_portrait",
    "a4_landscape",
    "square",
    "slide",
    "receipt",
    "small",
)
MISSING = "—"


def mode_order(family: Any = None) -> tuple[str, ...]:
    """The workload presets in the family's canonical order (v1: no-crop modes by size, then crop modes);
    without a family, by name."""
    from llm_perf_opt.config.compose import group_options

    return tuple(family.modes()) if family is not None else tuple(sorted(group_options("workload")))


def reported_parts(jobs: Sequence[JobRecord]) -> tuple[str, ...]:
    """The parts the jobs' trace runs reported (their summaries' `analytic.parts` / `parts`, in the order the
    family wrote them): the report reads what the jobs wrote and never asks the model family."""
    found: dict[str, None] = {}
    for job in jobs:
        own = section(job, "analytic")
        found.update(dict.fromkeys(own.parts if own is not None else ()))
        found.update(dict.fromkeys(section(job, "parts") or ()))
    return tuple(found)


def section(job: JobRecord, name: str) -> Any:
    """A section of the job's summary, None when the job has no summary or did not write that section."""
    return None if job.summary is None else getattr(job.summary, name)


# ------------------------------------------------------------------------------------------- analytic
def analytic(job: JobRecord) -> tuple[Optional[AnalyticFigures], Optional[str]]:
    """The analytic figures to report and where they came from ("job": its summary; None: it wrote none). The
    report never recomputes the analytic model: a column that needs a figure reads what the trace job wrote."""
    if job.analytic_cache is None:
        own = section(job, "analytic")
        job.analytic_cache = (own, "job") if own is not None else (None, None)
    return job.analytic_cache


def stage_flops(job: JobRecord, stage: str, which: str) -> Optional[float]:
    """FLOPs of a stage, counted as torch.utils.flop_counter counts (mm, bmm, conv, sdpa, einsum):
    which = "measured" (the job only), "analytic" (the job's verification pairing, else its analytic
    section's flops_matmul) or "analytic_total" (also the analytic estimate of the
    elementwise, norm and softmax work that no counter measures)."""
    if which in ("measured", "analytic"):
        check = (section(job, "flops") or {}).get(stage)
        value = getattr(check, which) if check is not None else None
        if value is not None or which == "measured":
            return value
    figures, _ = analytic(job)
    entry = figures.stages.get(stage) if figures else None
    if entry is None:
        return None
    return entry.flops_matmul if which == "analytic" else entry.flops


def stage_bytes(job: JobRecord, stage: str, kind: str) -> Optional[float]:
    figures, _ = analytic(job)
    entry = figures.stages.get(stage) if figures else None
    return getattr(entry, kind) if entry is not None else None


def part_flops(job: JobRecord, part: str, which: str) -> Optional[float]:
    """Prefill FLOPs of one part: measured (the job's verification only), or analytic (the verification's
    pairing, else the job's analytic figures)."""
    check = (section(job, "parts") or {}).get(part)
    value = getattr(check, f"flops_{which}") if check is not None else None
    if value is not None or which == "measured":
        return value
    figures, _ = analytic(job)
    return figures.parts.get(part) if figures else None


def rel_error(job: JobRecord, stage: str) -> Optional[float]:
    """|measured - analytic| / measured, as the job's verification computed it when it did."""
    check = (section(job, "flops") or {}).get(stage)
    if check is not None and check.rel_error is not None:
        return check.rel_error
    measured, analytic_ = stage_flops(job, stage, "measured"), stage_flops(job, stage, "analytic")
    if measured is None or analytic_ is None or not measured:
        return None
    return abs(measured - analytic_) / measured


# ------------------------------------------------------------------------------------------- times
def job_roof_figure(job: JobRecord, key: str, roof: Optional[str] = None) -> Optional[float]:
    """A stage figure (ttft_s, vision_s, decode_s_per_token, ...) the job's roofline stage predicted on
    `roof` (default: the job's own, `hardware=`); None when the job has no roofline."""
    rf = section(job, "roofline")
    if rf is None or (roof is not None and roof not in rf.roofs):
        return None
    return rf.figures(roof).get(key)


def job_roof_label(job: JobRecord) -> Optional[str]:
    rf = section(job, "roofline")
    if rf is None:
        return None
    roof = (rf.roofs.get(rf.primary) or {}).get("roof") or {}
    return f"{rf.primary} ({roof.get('dtype', '?')})"


def job_efficiency(job: JobRecord, name: str) -> Optional[float]:
    """predicted / measured of a row of the job's roofline comparison ("forward", "vision", a part alias)
    on the first roof of the device it was measured on (the calibration, or on CUDA its datasheet when the
    job named it); None without a profile or a roofline."""
    rf = section(job, "roofline")
    row = rf.row(name) if rf is not None else None
    if row is None:
        return None
    for roof, entry in rf.roofs.items():
        if entry.get("same_device"):
            value = (row.get("predicted") or {}).get(roof, {}).get("efficiency")
            if value is not None:
                return value
    return None


def predicted_ttft(job: JobRecord, hardware: str) -> Optional[float]:
    """Predicted time to first token of the job's page and sequence on the datasheet `hardware`, in the
    datasheet's default dtype: the job's own figure when its roofline stage predicted on that roof (the report
    never recomputes the analytic model; run the job with hardware=NAME for another roof)."""
    return job_roof_figure(job, "ttft_s", hardware)


def job_level(job: JobRecord, stage: str, level: str) -> Optional[float]:
    """A time level (`analytic.time.levels`: ideal, kernel, eager) of a stage ("prefill" = TTFT, "decode" = one
    step at the prompt's context) the job's roofline stage stored (summary.json roofline.levels); None without."""
    rf = section(job, "roofline")
    levels = (rf.raw.get("levels") if rf is not None else None) or {}
    entry = ((levels.get("stages") or {}).get(stage) or {}).get("") or {}
    value = entry.get(f"{level}_s")
    return float(value) if value is not None else None


def predicted_level_on(job: JobRecord, hardware: str, stage: str, level: str) -> Optional[float]:
    """A time level of a stage on the datasheet `hardware`: the job's own when its roofline stage predicted on that
    roof (hardware=NAME); the report never recomputes the analytic model."""
    rf = section(job, "roofline")
    if rf is None or rf.primary != hardware:
        return None
    return job_level(job, stage, level)


def _profile(attr: str) -> Callable[[JobRecord], Any]:
    def get(job: JobRecord) -> Any:
        prof = section(job, "profile")
        return None if prof is None else prof.raw.get(attr)

    return get


def _timing_columns(parts: Sequence[str] = ()) -> list[Column]:
    cols = [
        Column(
            "roof",
            "roof",
            "str",
            "the roof of the job's predicted times (hardware=; default measured: this device calibrated) and its dtype",
            job_roof_label,
            False,
        ),
        Column(
            "ttft_predicted_s",
            "TTFT predicted",
            "seconds",
            f"{quantities.label('ideal')}: time to first token (the prefill) on the job's roof, roofline convention",
            lambda j: job_roof_figure(j, "ttft_s"),
        ),
        Column(
            "decode_predicted_s",
            "decode/token predicted",
            "seconds",
            f"{quantities.label('ideal')}: decode time per token at the prompt's context on the job's roof",
            lambda j: job_roof_figure(j, "decode_s_per_token"),
            False,
        ),
        Column(
            "ttft_eager_s",
            "TTFT eager",
            "seconds",
            f"{quantities.label('eager')}: time to first token (kernels + host per op, analytic.time.levels) on the "
            "job's roof",
            lambda j: job_level(j, "prefill", "eager"),
        ),
        Column(
            "decode_eager_s",
            "decode/token eager",
            "seconds",
            f"{quantities.label('eager')}: one decode step on the job's roof",
            lambda j: job_level(j, "decode", "eager"),
            False,
        ),
        Column(
            "prefill_measured_s",
            "prefill measured",
            "seconds",
            f"{quantities.label('median_plain')}: the plain forward's wall time, median of the profile's repeats "
            "(CUDA synchronised)",
            _profile("plain_s"),
        ),
        Column(
            "efficiency_prefill",
            "prefill efficiency",
            "ratio",
            "predicted / measured forward time on the roof of the device it ran on (1 = at the roof)",
            lambda j: job_efficiency(j, "forward"),
        ),
        Column(
            "efficiency_vision",
            "vision efficiency",
            "ratio",
            "predicted / measured vision time (SAM + CLIP + projector) on the device's roof",
            lambda j: job_efficiency(j, "vision"),
            False,
        ),
    ]
    cols += [
        Column(
            f"efficiency_{part}",
            f"{part} efficiency",
            "ratio",
            f"predicted / measured time of the {part} part on the device's roof",
            lambda j, p=part: job_efficiency(j, p),
            False,
        )
        for part in parts
    ]
    cols += [
        Column(
            "profile_overhead",
            "profile overhead",
            "float",
            "profiled forward / plain forward wall time (medians): what the module ranges cost",
            _profile("overhead_ratio"),
            False,
        ),
        Column(
            "profile_coverage",
            "profile coverage",
            "ratio",
            "the parts' inclusive times / the profiled forward's wall time (the rest is reported as uncovered)",
            _profile("coverage"),
            False,
        ),
    ]
    return cols


def prediction_columns(hardware: Sequence[str]) -> list[Column]:
    """Per datasheet: predicted time to first token of each job on that GPU (ideal: the roofline), and the eager
    level's TTFT and decode step beside it (kernels + this host's per-op cost + launches and syncs)."""
    cols = []
    for name in hardware:
        cols.append(
            Column(
                f"ttft_{name}_s",
                f"TTFT {name}",
                "seconds",
                f"predicted time to first token on the {name} datasheet (its default dtype), roofline "
                "convention; the job's own figure when it ran with hardware=" + name + ", else computed "
                "from its spec and layout",
                lambda j, n=name: predicted_ttft(j, n),
            )
        )
        cols.append(
            Column(
                f"ttft_eager_{name}_s",
                f"TTFT eager {name}",
                "seconds",
                f"predicted time to first token on the {name} datasheet at the eager level "
                "(analytic.time.levels), when the job ran with hardware=" + name,
                lambda j, n=name: predicted_level_on(j, n, "prefill", "eager"),
            )
        )
        cols.append(
            Column(
                f"decode_eager_{name}_s",
                f"decode eager {name}",
                "seconds",
                f"predicted decode step on the {name} datasheet at the eager level",
                lambda j, n=name: predicted_level_on(j, n, "decode", "eager"),
                False,
            )
        )
    return cols


# ------------------------------------------------------------------------------------------- labels


def _split_override(text: str) -> tuple[str, str]:
    key, _, value = text.partition("=")
    return key.lstrip("+~"), value


def mode_label(job: JobRecord) -> str:
    """The workload preset, plus any knob of the model family the command line changed: 'gundam',
    'gundam base_size=640' (a knob: a workload key beyond those every family has, `COMMON_WORKLOAD_FIELDS`)."""
    summary = job.summary
    name = job.choices.get("workload") or (summary.workload.mode if summary else None) or job.cfg("workload.name")
    knobs = [
        f"{k.split('.', 1)[1]}={v}"
        for k, v in map(_split_override, job.overrides)
        if k.startswith("workload.") and k.split(".")[1] not in COMMON_WORKLOAD_FIELDS
    ]
    if name is None and not knobs:
        return MISSING
    return " ".join([str(name or "?")] + knobs)


def page_size(job: JobRecord) -> tuple[Optional[int], Optional[int]]:
    if job.summary is not None:
        return job.summary.page.width, job.summary.page.height
    return job.cfg("workload.page.width"), job.cfg("workload.page.height")


def page_label(job: JobRecord) -> str:
    """The page preset (conf/page/) when one was chosen and not changed, else 'W×H' or the image's name."""
    image = (job.summary.page.image if job.summary else None) or job.cfg("workload.page.image")
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
    doc: str  # one line for the glossary (README.md's column table mirrors it)
    get: Callable[[JobRecord], Any]
    brief: bool = True  # shown in the Markdown / HTML table (the CSV has every column)
    when_present: bool = False  # brief only when some job has a value (decode steps: sweeps that ran them)


def _get(name: str, attr: str) -> Callable[[JobRecord], Any]:
    """Getter of `summary.<name>.<attr>`: None when the section is absent."""

    def get(job: JobRecord) -> Any:
        value = section(job, name)
        return None if value is None else getattr(value, attr)

    return get


def _peak_rss(job: JobRecord) -> Any:
    """summary.memory (the job's own peak), else the forward's figure of older summaries."""
    memory = section(job, "memory")
    if memory is not None:
        return memory.peak_rss_bytes
    forward = section(job, "forward")
    return forward.peak_rss_bytes if forward is not None else None


def _workload(attr: str) -> Callable[[JobRecord], Any]:
    """A workload knob from the summary, else from Hydra's record of the config (a failed job)."""

    def get(job: JobRecord) -> Any:
        return job.summary.workload.knob(attr) if job.summary else job.cfg(f"workload.{attr}")

    return get


def _model_name(job: JobRecord) -> Optional[str]:
    return job.summary.model.name if job.summary else job.choices.get("model")


def _grid(job: JobRecord) -> Optional[str]:
    layout = section(job, "layout")
    return layout.grid if layout is not None else None


def _checks(job: JobRecord) -> Optional[str]:
    """'ok/run' of the grouped-graph checks, '(n not checked)' added when some were not."""
    grouping = section(job, "grouping")
    if grouping is None:
        return None
    counts = grouping.check_counts()
    passed = sum(v for k, v in counts.items() if k in ("ok", "pass", "passed"))
    unchecked = counts.get("not checked", 0)
    text = f"{passed}/{sum(counts.values()) - unchecked}"
    return text + (f" ({unchecked} not checked)" if unchecked else "")


def _verified(job: JobRecord) -> Optional[str]:
    flops = section(job, "flops")
    oks = [check.ok for check in (flops or {}).values() if check.ok is not None]
    if not oks:
        return None
    return f"{sum(bool(o) for o in oks)}/{len(oks)}"


def _stage_columns() -> list[Column]:
    cols = []
    for stage in STAGES:
        brief = stage != "decode"
        cols += [
            Column(
                f"flops_{stage}_measured",
                f"{stage} FLOPs measured",
                "flops",
                f"FLOPs of the {stage} stage counted by torch.utils.flop_counter in the job's forward",
                lambda j, s=stage: stage_flops(j, s, "measured"),
                brief,
            ),
            Column(
                f"flops_{stage}_analytic",
                f"{stage} FLOPs analytic",
                "flops",
                f"FLOPs of the {stage} stage from the analytic model (2 × multiply-adds), counted like "
                "the measurement: matmul-class ops (mm, bmm, conv, sdpa, einsum)",
                lambda j, s=stage: stage_flops(j, s, "analytic"),
                brief,
            ),
            Column(
                f"rel_error_{stage}",
                f"{stage} rel. error",
                "ratio",
                f"|measured − analytic| / measured for the {stage} stage (the job's verification)",
                lambda j, s=stage: rel_error(j, s),
                brief,
            ),
            Column(
                f"flops_{stage}_analytic_total",
                f"{stage} FLOPs analytic total",
                "flops",
                f"analytic FLOPs of the {stage} stage including elementwise, norm and softmax work "
                "(an estimate no counter measures)",
                lambda j, s=stage: stage_flops(j, s, "analytic_total"),
                False,
            ),
        ]
    return cols


def _part_columns(parts: Sequence[str] = ()) -> list[Column]:
    cols = []
    for part in parts:
        for which in ("measured", "analytic"):
            cols.append(
                Column(
                    f"flops_{part}_{which}",
                    f"{part} FLOPs {which}",
                    "flops",
                    f"{which} FLOPs of the {part} part in the prefill forward",
                    lambda j, p=part, w=which: part_flops(j, p, w),
                    False,
                )
            )
    return cols


# ------------------------------------------------------------------------------------------- decode
def decode_rows(job: JobRecord) -> Optional[list[dict[str, Any]]]:
    """The job's decode steps (summary.decode.rows), None without decode steps."""
    decode = section(job, "decode")
    return None if decode is None or not decode.rows else list(decode.rows)


def _per_step(key: str) -> Callable[[JobRecord], Any]:
    """Getter of one figure per decode step, in step order (a list; None without decode steps)."""

    def get(job: JobRecord) -> Any:
        rows = decode_rows(job)
        return None if rows is None else [r.get(key) for r in rows]

    return get


def _steps_verified(job: JobRecord) -> Optional[str]:
    """'k/N' decode steps whose FLOPs (every part and layer) and KV-cache bytes both matched."""
    rows = decode_rows(job)
    if rows is None:
        return None
    return f"{sum(bool(r.get('flops_ok')) and bool(r.get('kv_ok')) for r in rows)}/{len(rows)}"


def _decode_columns() -> list[Column]:
    return [
        Column(
            "decode_steps",
            "decode steps",
            "int",
            "greedy decode steps after the prefill (trace.decode_steps)",
            _get("decode", "steps"),
            when_present=True,
        ),
        Column(
            "decode_steps_verified",
            "decode steps verified",
            "str",
            "decode steps whose FLOPs (every part and layer) and KV-cache bytes match the analytic model / all",
            _steps_verified,
            when_present=True,
        ),
        Column(
            "decode_flops_per_step",
            "FLOPs per decode step",
            "flops_list",
            "FLOPs of each decode step, measured (FlopCounterMode around that step's forward)",
            _per_step("flops_measured"),
            when_present=True,
        ),
        Column(
            "decode_flops_per_step_analytic",
            "FLOPs per decode step analytic",
            "flops_list",
            "FLOPs of each decode step from the analytic model at its context",
            _per_step("flops_analytic"),
            False,
        ),
        Column(
            "kv_bytes_per_step",
            "KV cache per step",
            "bytes_list",
            "bytes of the KV-cache tensors the model holds after each decode step (measured)",
            _per_step("kv_bytes_measured"),
            when_present=True,
        ),
        Column(
            "kv_bytes_per_step_analytic",
            "KV cache per step analytic",
            "bytes_list",
            "KV-cache bytes after each decode step from the analytic model (2 x layers x kv heads x tokens x "
            "head dim x dtype bytes)",
            _per_step("kv_bytes_analytic"),
            False,
        ),
        Column(
            "decode_s_per_step",
            "time per decode step",
            "seconds_list",
            "measured time of each decode step (median plain forward of the profile stage's repeats)",
            _per_step("measured_s"),
            False,
        ),
        Column(
            "decode_predicted_s_per_step",
            "predicted per decode step",
            "seconds_list",
            "roofline prediction of each decode step on the job's hardware= roof",
            _per_step("predicted_s"),
            False,
        ),
    ]


def job_columns(parts: Sequence[str] = ()) -> list[Column]:
    """The columns of a sweep's jobs, with per-part columns for `parts` (`reported_parts(jobs)`)."""
    return [
        Column("job", "job", "int", "job number (its directory under the sweep dir)", lambda j: j.num),
        Column(
            "status",
            "status",
            "str",
            "ok, or 'failed: <type>: <message>' from the job's error.json",
            lambda j: j.status,
        ),
        Column(
            "overrides", "overrides", "str", "the job's command-line overrides", lambda j: " ".join(j.overrides), False
        ),
        Column("model", "model", "str", "model config (twin, twin_tiny, vendor)", _model_name),
        Column("mode", "mode", "str", "workload preset, plus any knob changed on the command line", mode_label),
        # The DeepSeek-OCR knobs keep their place (the sweep CSV's columns stay as they were): each reads the run's
        # recorded knob by key (`WorkloadInfo.knob`, the family's `workload_knobs`), empty for a family without it.
        Column(
            "base_size",
            "base",
            "int",
            "global view side in crop mode (infer(base_size=))",
            _workload("base_size"),
            False,
        ),
        Column(
            "image_size",
            "image",
            "int",
            "crop side in crop mode, the single view's side otherwise (infer(image_size=))",
            _workload("image_size"),
            False,
        ),
        Column("crop_mode", "crop", "bool", "crop mode (infer(crop_mode=))", _workload("crop_mode"), False),
        Column(
            "page",
            "page",
            "str",
            "page preset (conf/page/), else WIDTHxHEIGHT in pixels (or the image file name)",
            page_label,
        ),
        Column("page_width", "width", "int", "page width in pixels", lambda j: page_size(j)[0], False),
        Column("page_height", "height", "int", "page height in pixels", lambda j: page_size(j)[1], False),
        Column("grid", "grid", "str", "crop grid, tiles across x down (1x1: no crops)", _grid),
        Column(
            "views",
            "views",
            "int",
            "images the vision stack sees: 1 global view + the crops",
            _get("layout", "num_views"),
        ),
        Column(
            "image_tokens",
            "image tokens",
            "count",
            "image-token positions in the sequence (global + local)",
            _get("tokens", "image"),
        ),
        Column(
            "seq_len",
            "sequence",
            "count",
            "prompt length fed to the prefill: BOS + image tokens + text tokens",
            _get("tokens", "sequence"),
        ),
        Column(
            "params",
            "params",
            "count",
            "model parameters (all of them, including every expert)",
            _get("params", "total"),
        ),
        Column("ops", "ops", "count", "tensor operations in the TorchLens call graph", _get("trace", "num_ops")),
        Column(
            "module_calls", "module calls", "count", "module calls in the call graph", _get("trace", "module_calls")
        ),
        *_stage_columns(),
        Column(
            "flops_verified", "FLOPs verified", "str", "stages and parts within verify.rtol / all checked", _verified
        ),
        *_decode_columns(),
        Column(
            "activation_bytes_prefill",
            "prefill activations",
            "bytes",
            "bytes of every tensor the prefill's eager op sequence produces (analytic)",
            lambda j: stage_bytes(j, "prefill", "activation_bytes"),
        ),
        Column(
            "weight_bytes_prefill",
            "prefill weights read",
            "bytes",
            "parameter bytes read by the prefill (analytic)",
            lambda j: stage_bytes(j, "prefill", "weight_bytes"),
            False,
        ),
        Column(
            "io_bytes_prefill",
            "prefill I/O",
            "bytes",
            "weights + inputs read + outputs written by the prefill (analytic)",
            lambda j: stage_bytes(j, "prefill", "io_bytes"),
            False,
        ),
        Column(
            "analytic_source",
            "analytic from",
            "str",
            "where the analytic numbers come from: 'job' (its summary; the report never recomputes them)",
            lambda j: analytic(j)[1],
            False,
        ),
        *_part_columns(parts),
        Column(
            "forward_s",
            "forward",
            "seconds",
            f"{quantities.label('first_forward')}: the job's first plain forward (no capture)",
            _get("forward", "seconds"),
        ),
        Column(
            "peak_rss_bytes",
            "peak RSS",
            "bytes",
            "the job's own peak resident memory (VmHWM, reset when the job started; jobs written before the memory "
            "section: the process's peak after the forward)",
            _peak_rss,
        ),
        Column(
            "peak_cuda_bytes",
            "peak CUDA",
            "bytes",
            "the job's peak CUDA memory (torch.cuda.max_memory_allocated, peak statistics reset when the job started)",
            _get("memory", "peak_cuda_bytes"),
            False,
        ),
        *_timing_columns(parts),
        Column(
            "capture_s", "capture", "seconds", "wall time of the TorchLens capture", _get("trace", "capture_seconds")
        ),
        Column(
            "grouping_checks",
            "graph checks",
            "str",
            "grouped-graph checks passed / run (for N / parfor N vs the runtime log)",
            _checks,
            False,
        ),
        Column(
            "grouped_svg",
            "graph",
            "str",
            "the job's grouped call graph (callgraph.grouped.svg), relative to the sweep dir",
            lambda j: j.files.get("grouped_svg"),
        ),
        Column("job_dir", "dir", "str", "the job's directory", lambda j: str(j.dir) if j.dir else None, False),
    ]


COLUMNS: list[Column] = job_columns()  # without per-part columns (those depend on the jobs)


# ------------------------------------------------------------------------------------------- family columns
def job_family(job: JobRecord) -> Optional[str]:
    """The model family the job ran (`model.family` of its saved Hydra config), None when it names none."""
    name = job.cfg("model.family")
    return str(name) if name else None


def family_columns(
    jobs: Sequence[JobRecord], family_named: Optional[Callable[[str], Any]], default: Any = None
) -> list[Column]:
    """The columns the jobs' model families offer (`ModelFamily.report_columns()`: `Column`s reading a job's
    summary), each family once, in the order of its first job; a family's column is None ("—") for a job of
    another family. `family_named`: the family registry's lookup, handed in by the caller (the report never
    imports a family package); a job whose config names no family is `default`'s (a run older than the seam)."""
    default_name = getattr(default, "name", None)
    found: dict[str, Any] = {}
    for job in jobs:
        name = job_family(job) or default_name
        if name is None or name in found:
            continue
        found[name] = family_named(name) if family_named is not None else (default if name == default_name else None)
    out: dict[str, Column] = {}
    for name, fam in found.items():
        for col in fam.report_columns() if fam is not None else ():
            if col.key in out:
                continue

            def get(job: JobRecord, c: Column = col, owner: str = name) -> Any:
                return c.get(job) if (job_family(job) or default_name) == owner else None

            out[col.key] = replace(col, get=get)
    return list(out.values())


def column(key: str) -> Column:
    for col in COLUMNS:
        if col.key == key:
            return col
    raise KeyError(key)


def build_rows(jobs: list[JobRecord], columns: Optional[Sequence[Column]] = None) -> list[dict[str, Any]]:
    """One row per job; default columns: `COLUMNS` and the per-part ones of the parts the jobs reported."""
    if columns is None:
        known = {c.key for c in COLUMNS}
        columns = [*COLUMNS, *(c for c in job_columns(reported_parts(jobs)) if c.key not in known)]
    return [{col.key: col.get(job) for col in columns} for job in jobs]


# ------------------------------------------------------------------------------------------- formats
def fmt(value: Any, kind: str) -> str:
    """Human text of a value for Markdown / HTML (`llm_perf_opt.units`, the project's one formatter)."""
    if value is None or (isinstance(value, float) and value != value) or value == "":
        return MISSING
    if kind.endswith("_list") and isinstance(value, list):  # one value per decode step
        return " / ".join(fmt(v, kind[: -len("_list")]) for v in value) if value else MISSING
    if kind == "flops":
        return units.flops(value)
    if kind == "bytes":
        return units.nbytes(value)
    if kind == "count":
        return units.count(value)
    if kind == "seconds":
        return units.seconds(value)
    if kind == "ratio":
        return units.percent(value)
    if kind == "bool":
        return "yes" if value else "no"
    if kind == "float":
        return f"{value:.4g}"
    return str(value)


def csv_value(value: Any) -> Any:
    if isinstance(value, list):  # one value per decode step, ';'-separated
        return ";".join("" if v is None else str(v) for v in value)
    return "" if value is None else value
