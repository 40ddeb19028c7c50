"""The typed artifacts the jobs themselves write: `summary.json` (`Summary`) and `error.json` (`ErrorRecord`).

`Summary` is the trace job's `summary.json`. Sections the job writes itself (model, workload, page,
tokens, runtime, analytic, forward, flops, parts, verification) are dataclasses; sections that are
another stage's own summary (the view layout, the capture statistics, the grouping summary, the
parameter counts) are typed views that keep that stage's mapping verbatim, so the file round-trips
exactly while the fields the report relies on are checked by name. A missing optional section is None;
a malformed one is an `ArtifactError` naming the file, the section and the field. The view layout's own
fields (crops, grid) are the model family's: `LayoutView` checks the generic ones and reads the rest from
the layout as the family wrote it.

The file registry is `run_files` and the section type checker `typecheck` (one idea each); their names are
re-exported here for the modules that import them from this one.

Layer: this module imports `artifacts`, `errors`, `run_files` and `typecheck` only.
"""

from __future__ import annotations

import os
import traceback as _traceback
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping, Optional

from llm_perf_opt.artifacts import read_artifact, read_json, to_jsonable, write_artifact
from llm_perf_opt.errors import ArtifactError, PipelineError
from llm_perf_opt.run_files import (  # noqa: F401 - re-exported
    ERROR_SCHEMA,
    ERROR_VERSION,
    RUN_FILES,
    SUMMARY_SCHEMA,
    SUMMARY_VERSION,
    RunFile,
    load,
    loader,
    run_file,
)
from llm_perf_opt.typecheck import _check, _data, _type_name, typed  # noqa: F401 - re-exported


# ---------------------------------------------------------------------------------- sections the job writes
@dataclass(frozen=True)
class ModelInfo:
    name: str  # the model config (twin, twin_tiny, vendor)
    source: str  # twin | vendor
    spec: str  # ModelSpec.name
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class WorkloadInfo:
    mode: str  # the workload preset's name
    extra: dict = field(default_factory=dict)  # the family's knobs as the run had them (`workload_knobs`)

    def knob(self, name: str) -> Any:
        """A knob of the run's family (v1: `base_size`, ...), None when the run has none of that name."""
        return self.extra.get(name)


@dataclass(frozen=True)
class PageInfo:
    width: int
    height: int
    image: Optional[str]  # the image file, None for a synthetic page
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class TokenCounts:
    image: int  # image-token positions
    prompt: int  # text tokens of the prompt
    sequence: int  # BOS + image + text tokens (at batch > 1: the padded length)
    prompt_source: str  # "fallback" or "tokenizer:<dir>"
    extra: dict = field(default_factory=dict)
    batch: int = 1  # sequences in the forward (workload.batch, or the pages of workload.pages)
    lengths: list = field(default_factory=list)  # each sequence's own length (without its left padding)


@dataclass(frozen=True)
class RuntimeInfo:
    device: str
    dtype: str
    attn_implementation: str  # as configured (the session section says what was used)
    autocast: bool
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class StageFigures:
    """Analytic totals of one stage (vision, prefill, decode)."""

    flops: int  # every op, elementwise / norm / softmax estimates included
    flops_matmul: int  # matmul-class ops, as torch's flop counter counts
    io_bytes: int
    weight_bytes: int
    activation_bytes: int
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class AnalyticFigures:
    """`{stage: StageFigures, ..., "parts": {part alias: prefill matmul FLOPs}}`."""

    stages: dict[str, StageFigures]
    parts: dict[str, int]

    @classmethod
    def from_data(cls, data: Any, where: str = "analytic") -> "AnalyticFigures":
        if not isinstance(data, Mapping):
            raise ArtifactError(f"{where} must be an object, found {type(data).__name__}")
        if "parts" not in data:
            raise ArtifactError(f"{where} lacks required field 'parts'")
        stages = {k: typed(StageFigures, v, f"{where}.{k}") for k, v in data.items() if k != "parts"}
        return cls(stages, _check(data["parts"], dict[str, int], f"{where}.parts"))

    def to_data(self) -> dict[str, Any]:
        return {**{k: _data(v) for k, v in self.stages.items()}, "parts": dict(self.parts)}


@dataclass(frozen=True)
class ForwardFigures:
    """One plain forward: wall time (perf_counter around it, CUDA synchronised), peak memory, logits."""

    seconds: float
    logits_shape: list
    logits_finite: bool
    peak_rss_bytes: int
    peak_cuda_bytes: Optional[int]
    extra: dict = field(default_factory=dict)
    rss_before_bytes: Optional[int] = None  # resident memory when the forward started (its inputs built)


@dataclass(frozen=True)
class FlopsCheck:
    """Analytic against measured FLOPs of one stage."""

    analytic: Optional[int]
    measured: Optional[int]
    rel_error: Optional[float]
    ok: Optional[bool]
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PartFlops:
    """Analytic against measured prefill FLOPs of one part."""

    flops_analytic: Optional[int]
    flops_measured: Optional[int]
    rel_error: Optional[float] = None
    ok: Optional[bool] = None
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class VerificationFigures:
    passed: bool
    rtol: float
    rows: int
    failures: int
    max_rel_error: Optional[float]
    ops_without_formula: dict
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class JobMemoryFigures:
    """The job's own peak memory (not the process's running maximum: see `runs.memory`)."""

    peak_rss_bytes: int
    method: str  # how the peak was measured (VmHWM reset at job start, or ru_maxrss where it cannot be)
    rss_start_bytes: Optional[int] = None  # resident memory when the job started
    peak_cuda_bytes: Optional[int] = None
    cuda_method: Optional[str] = None
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class JobError:
    """Why a job stopped (status failed / interrupted): the exception's type and message."""

    type: str
    message: str
    extra: dict = field(default_factory=dict)


# ------------------------------------------------------------------ other stages' summaries, kept verbatim
@dataclass(frozen=True)
class LayoutView:
    """The family's view layout (`layout.as_dict()`): the generic fields checked; `raw` is the whole layout."""

    page_width: int
    page_height: int
    num_views: int
    image_tokens: int
    raw: dict = field(default_factory=dict)

    # the family's own layout fields (v1 and OCR-2: a crop grid), read from the layout as the family wrote it
    @property
    def w_crop(self) -> int:
        return int(self.raw.get("w_crop", 1))

    @property
    def h_crop(self) -> int:
        return int(self.raw.get("h_crop", 1))

    @property
    def num_crops(self) -> int:
        return int(self.raw.get("num_crops", 0))

    @property
    def grid(self) -> str:
        return f"{self.w_crop}x{self.h_crop}"


@dataclass(frozen=True)
class ParamCounts:
    """`DeepSeekOCRSession.parameter_counts()`: parameters by top-level module and their `total`."""

    total: int
    raw: dict = field(default_factory=dict)


@dataclass(frozen=True)
class TraceStats:
    """The capture's statistics (`CallGraph.stats`) plus the op and module-call counts."""

    num_ops: int
    module_calls: int
    capture_seconds: Optional[float] = None
    raw: dict = field(default_factory=dict)


@dataclass(frozen=True)
class GroupingSummary:
    """`GroupedGraph.summary()` plus the files written and the notes."""

    nodes: int
    checks: Any  # {status: count} (today) or [{name, status, ...}] (the report reads both)
    raw: dict = field(default_factory=dict)

    def check_counts(self) -> dict[str, int]:
        """{status: count} whichever form `checks` has."""
        if isinstance(self.checks, Mapping):
            return {str(k): int(v) for k, v in self.checks.items()}
        if isinstance(self.checks, list):
            counts: dict[str, int] = {}
            for i, c in enumerate(self.checks):
                if not isinstance(c, Mapping) or "status" not in c:
                    raise ArtifactError(f"grouping.checks[{i}] must be an object with a 'status'")
                counts[str(c["status"])] = counts.get(str(c["status"]), 0) + 1
            return counts
        raise ArtifactError(f"grouping.checks must be an object or a list, found {type(self.checks).__name__}")


@dataclass(frozen=True)
class ProfileFigures:
    """`measure.module_times.ModuleTimes.summary()`: the profile's headline figures (medians, seconds);
    profile.json has every module call."""

    repeats: int
    plain_s: float  # the plain forward's wall time
    profiled_s: float  # the profiled forward's wall time
    overhead_ratio: Optional[float]  # profiled / plain
    coverage: Optional[float]  # the parts' inclusive times / the profiled forward's wall time
    module_calls: int
    raw: dict = field(default_factory=dict)


@dataclass(frozen=True)
class DecodeSummary:
    """The decode steps of a trace job (`trace.decode`): `steps` (N), per step in `rows`: step,
    past and context length, new tokens, FLOPs analytic / measured / ok, KV-cache bytes analytic /
    measured / ok, and with the profile stage the measured and predicted time; `raw` is all of it."""

    steps: int
    rows: list
    raw: dict = field(default_factory=dict)


@dataclass(frozen=True)
class RooflineFigures:
    """The trace job's roofline stage (`trace.roofline`): the roofs it predicted on (each with
    its stage figures and whether it is the device the times were measured on) and one row per stage and
    part with the measured time and, per roof, the predicted time and efficiency = predicted / measured."""

    primary: str  # the roof hardware= chose (its figures are roofline.json's)
    roofs: dict  # roof name -> {roof, same_device, figures, note, ...}
    rows: list  # measure.efficiency.ComparisonRow.to_dict()
    raw: dict = field(default_factory=dict)

    def figures(self, roof: Optional[str] = None) -> dict:
        """The stage figures (vision_s, ttft_s, decode_s_per_token, ...) on `roof` (default: the primary)."""
        entry = self.roofs.get(roof or self.primary)
        return dict(entry.get("figures") or {}) if isinstance(entry, Mapping) else {}

    def row(self, name: str) -> Optional[dict]:
        return next((r for r in self.rows if isinstance(r, Mapping) and r.get("name") == name), None)


@dataclass(frozen=True)
class RoutingSummary:
    """`dsocr.routing.RoutingRecord.summary()`: experts hit per layer and step, prefill imbalance, expert
    bytes read, the uniform-routing expectation; `random_weights`/`note` say whose routing it is."""

    n_experts: int
    top_k: int
    random_weights: Optional[bool]
    note: str
    raw: dict = field(default_factory=dict)


@dataclass(frozen=True)
class GraphFigures:
    """`trace.graph.costs_on_graph()`: the metrics on the grouped graph's nodes, the ones absent
    (with the reason), how many nodes carry each, the files written."""

    metrics: list
    absent: dict
    nodes: int
    raw: dict = field(default_factory=dict)


# ============================================================================================ summary.json
@dataclass
class Summary:
    """The trace job's `summary.json`. Written when the layout is known (status "running"), again when
    each stage starts and lands, and last with a true status (`STATUSES`): "ok", "failed" (with
    `error`) or "interrupted" (Ctrl-C); `stage` is the stage running, or where the job stopped. A job
    killed outright stays "running" with no live holder of its lock: the report calls it failed. Every
    optional section is None until its stage ran."""

    model: ModelInfo
    workload: WorkloadInfo
    page: PageInfo
    layout: LayoutView
    tokens: TokenCounts
    tensors: dict[str, Any]  # dsocr.inputs.Inputs.shapes(): name -> [shape, dtype]
    runtime: RuntimeInfo
    status: str  # one of STATUSES
    analytic: Optional[AnalyticFigures] = None
    session: Optional[dict[str, Any]] = None  # DeepSeekOCRSession.describe()
    params: Optional[ParamCounts] = None
    forward: Optional[ForwardFigures] = None
    trace: Optional[TraceStats] = None
    grouping: Optional[GroupingSummary] = None
    flops: Optional[dict[str, FlopsCheck]] = None  # stage -> check
    parts: Optional[dict[str, PartFlops]] = None  # part alias -> check (prefill)
    verification: Optional[VerificationFigures] = None
    export: Optional[dict[str, Any]] = None  # export.run_export_stage()'s short summary (trace.export=true)
    profile: Optional[ProfileFigures] = None  # measured time per module (profile.enabled)
    roofline: Optional[RooflineFigures] = None  # predicted vs measured times (hardware= set)
    routing: Optional[RoutingSummary] = None  # MoE routing the capture took (routing.json's summary)
    decode: Optional[DecodeSummary] = None  # trace.decode_steps > 0: per-step FLOPs, KV bytes, times
    graph: Optional[GraphFigures] = None  # costs on the grouped graph (trace.graph)
    job_seconds: Optional[float] = None
    stage: Optional[str] = None  # the stage running now (status running) or where the job stopped
    error: Optional[JobError] = None  # status failed / interrupted: what stopped it
    memory: Optional[JobMemoryFigures] = None  # the job's own peak memory
    serving: Optional[dict[str, Any]] = None  # serving.json's flat figures (Serving.summary()), hardware= set
    extra: dict[str, Any] = field(default_factory=dict)  # sections a newer writer added

    STATUSES = ("running", "ok", "failed", "interrupted")
    REQUIRED = ("model", "workload", "page", "layout", "tokens", "tensors", "runtime", "status")

    def to_data(self) -> dict[str, Any]:
        """The `data` of summary.json: the sections in writing order, absent ones left out."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if value is None and f.name not in self.REQUIRED:
                continue
            out[f.name] = _data(value)
        out.update(self.extra)
        return out

    @classmethod
    def from_data(cls, data: Mapping[str, Any], source: str = "summary.json") -> "Summary":
        if not isinstance(data, Mapping):
            raise ArtifactError(f"{source}: data must be an object")
        for key in cls.REQUIRED:
            if key not in data:
                raise ArtifactError(f"{source}: {SUMMARY_SCHEMA} data lacks required field '{key}'")
        hints = typing.get_type_hints(cls)
        kwargs: dict[str, Any] = {}
        for f in fields(cls):
            if f.name == "extra" or (data.get(f.name) is None and f.name not in cls.REQUIRED):
                continue
            where = f"{source}: {f.name}"
            if f.name == "analytic":
                kwargs[f.name] = AnalyticFigures.from_data(data[f.name], where)
            else:
                kwargs[f.name] = _check(data[f.name], hints[f.name], where)
        names = {f.name for f in fields(cls)}
        kwargs["extra"] = {k: v for k, v in data.items() if k not in names}
        return cls(**kwargs)

    def save(self, path: str | os.PathLike, config: Any = None) -> Path:
        return write_artifact(path, SUMMARY_SCHEMA, SUMMARY_VERSION, self.to_data(), config=config)


def load_summary(path: str | os.PathLike) -> Summary:
    _, data = read_artifact(path, SUMMARY_SCHEMA, run_file("summary").versions, required=Summary.REQUIRED)
    return Summary.from_data(data, str(path))


# ============================================================================================ error.json
@dataclass(frozen=True)
class ErrorRecord:
    """A job that raised in a multirun (`runs.entry.reports_errors`)."""

    type: str  # the exception's class name
    message: str
    expected: bool  # a PipelineError (bad input), not a bug
    traceback: list[str] = field(default_factory=list)  # the last frames
    config: Any = None  # the job's composed config
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_exception(cls, exc: BaseException, config: Any = None) -> "ErrorRecord":
        return cls(
            type=type(exc).__name__,
            message=str(exc),
            expected=isinstance(exc, PipelineError),
            traceback=_traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:],
            config=to_jsonable(config),
        )

    @property
    def first_line(self) -> str:
        lines = self.message.strip().splitlines()
        return lines[0] if lines else ""

    def save(self, path: str | os.PathLike) -> Path:
        return write_artifact(path, ERROR_SCHEMA, ERROR_VERSION, _data(self))


def load_error(path: str | os.PathLike) -> ErrorRecord:
    """error.json: the artifact (version 1), or the bare object written before the envelope (version 0)."""
    doc = read_json(path)
    if isinstance(doc, Mapping) and "schema" not in doc and "type" in doc:  # version 0: no envelope
        data: Any = doc
    else:
        _, data = read_artifact(path, ERROR_SCHEMA, run_file("error").versions, required=("type", "message"))
    if isinstance(data, Mapping):
        data = {"expected": False, **data}
    return typed(ErrorRecord, data, f"{path}")
