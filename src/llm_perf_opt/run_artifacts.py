"""Every file a run directory holds: one registry of (role, file, schema, version, loader), and the
typed artifacts the jobs themselves write (`summary.json`, `error.json`).

The registry is what the report and the jobs agree on: `RUN_FILES` names each file once; `load(role,
path)` reads it with its typed loader. Artifacts of the stages (call graph, grouped graph, runtime log,
costs, verification) keep their dataclasses and loaders in their own packages; the registry names the
loader as `"module:function"` and imports it only when a file is loaded, so reading a thousand
summaries never imports torch. `schema`/`version` are what is written today; a stage's loader may read
older names and versions too (`versions` lists the current name's). A stage without a typed loader
(`loader=None`) gets an envelope check (schema, known version) returning the raw `data`: the hook for
its owner to fill. A test checks the entries against the owning modules' constants.

`Summary` is the trace job's `summary.json`. Sections the job writes itself (model, workload, page,
tokens, runtime, analytic, forward, flops, parts, verification) are dataclasses; sections that are
another stage's own summary (the view layout, the capture statistics, the grouping summary, the
parameter counts) are typed views that keep that stage's mapping verbatim, so the file round-trips
exactly while the fields the report relies on are checked by name. A missing optional section is None;
a malformed one is an `ArtifactError` naming the file, the section and the field.

Layer: this module imports `artifacts` and `errors` only; the stage loaders it names sit above it and
are imported lazily, at load time.
"""
from __future__ import annotations

import importlib
import os
import traceback as _traceback
import typing
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Union

from llm_perf_opt.artifacts import read_artifact, read_json, to_jsonable, write_artifact
from llm_perf_opt.errors import ArtifactError, PipelineError


# ============================================================================================ registry
@dataclass(frozen=True)
class RunFile:
    """One file of a run directory."""

    role: str  # short name the report and the jobs use ("summary", "callgraph", "grouped_svg", ...)
    file: str  # file name inside the run directory
    written_by: str  # the stage that writes it
    doc: str
    schema: Optional[str] = None  # None: not a JSON artifact (a rendering, a log)
    version: Optional[int] = None  # the schema_version written today
    versions: tuple[int, ...] = ()  # the versions its loader reads
    loader: Optional[str] = None  # "module:function" (path -> typed object); None: no typed loader yet

    @property
    def is_artifact(self) -> bool:
        return self.schema is not None


SUMMARY_SCHEMA, SUMMARY_VERSION = "llm_perf_opt.summary", 1
ERROR_SCHEMA, ERROR_VERSION = "llm_perf_opt.error", 1

RUN_FILES: tuple[RunFile, ...] = (
    RunFile("summary", "summary.json", "trace.job",
            "what the job ran and what it found (this module's Summary)",
            SUMMARY_SCHEMA, SUMMARY_VERSION, (1,), "llm_perf_opt.run_artifacts:load_summary"),
    RunFile("error", "error.json", "runs.entry",
            "a job that failed in a multirun: type, message, traceback, config (this module's ErrorRecord)",
            ERROR_SCHEMA, ERROR_VERSION, (0, 1), "llm_perf_opt.run_artifacts:load_error"),
    RunFile("costs", "costs.json", "analytic",
            "the analytic cost model per stage, part and layer",
            "llm_perf_opt.costs", 2, (2,), "llm_perf_opt.analytic.costs_file:load_costs"),
    RunFile("verification", "verification.json", "measure",
            "analytic vs measured FLOPs per stage and part (fvcore's count when asked)",
            "llm_perf_opt.verification", 3, (2, 3), "llm_perf_opt.measure.verification_file:load_verification"),
    RunFile("roofline", "roofline.json", "analytic.roofline (./dev analyze hardware=NAME; the trace job's roofline stage)",
            "predicted times per stage and part on a roof (datasheet or measured)",
            "llm_perf_opt.roofline", 1, (1,), "llm_perf_opt.analytic.roofline_artifact:load_roofline"),
    RunFile("serving", "serving.json", "analytic.serving_run (./dev analyze hardware=NAME, ./dev size, the trace job)",
            "serving figures: TTFT, TPOT, tokens/s, pages/day at a batch, memory, the latency curve, sizing",
            "llm_perf_opt.serving", 1, (1,), "llm_perf_opt.analytic.serving_file:load_serving"),
    RunFile("curve_csv", "curve.csv", "analytic.serving_run", "the latency-vs-throughput curve over the batch"),
    RunFile("curve_svg", "curve.svg", "report.serving_plots", "the latency-vs-throughput curve, its knee marked"),
    RunFile("curve_png", "curve.png", "report.serving_plots", "curve.svg as a PNG"),
    RunFile("calibration", "calibration.json", "measure.calibrate (./dev calibrate)",
            "the measured roof of the device the job ran on",
            "llm_perf_opt.calibration", 1, (1,), "llm_perf_opt.measure.calibrate:load_calibration"),
    RunFile("profile", "profile.json", "measure.profile",
            "measured time per module (torch.profiler ranges): repeats, warm-up, synchronisation recorded",
            "llm_perf_opt.profile", 1, (1,), "llm_perf_opt.measure.module_times:load_module_times"),
    RunFile("profile_trace", "profile.trace.json", "measure.profile", "the last profiled repeat as a Chrome trace"),
    RunFile("roofline_svg", "roofline.svg", "report.roofline_plot",
            "the run's roofline: the device's roof, each part at its intensity and achieved FLOP/s"),
    RunFile("roofline_png", "roofline.png", "report.roofline_plot", "roofline.svg as a PNG"),
    RunFile("export", "export/summary.json", "export (./dev export, trace.export=true)",
            "torch.export of submodules: FLOPs and op counts cross-checked, MoE remedies",
            "llm_perf_opt.export", 1, (1,), "llm_perf_opt.export.summary:load_export_summary"),
    RunFile("callgraph", "callgraph.json", "callgraph.capture",
            "the TorchLens call graph with per-module metadata",
            "llm_perf_opt.callgraph", 3, (1, 2, 3), "llm_perf_opt.callgraph.schema:load_callgraph_json"),
    RunFile("runtime_log", "runtime_log.json", "dsocr.patches",
            "events the runtime patches logged during the capture",
            "llm_perf_opt.runtime_log", 1, (1,), "llm_perf_opt.dsocr.patches.runtime_log:load_runtime_log"),
    RunFile("routing", "routing.json", "dsocr.routing",
            "the MoE routing the capture took: experts hit and tokens per expert, per layer and step",
            "llm_perf_opt.routing", 1, (1,), "llm_perf_opt.dsocr.routing:load_routing"),
    RunFile("grouped", "callgraph.grouped.json", "callgraph.grouping (data model: callgraph.grouped)",
            "the Option C grouped graph (for N / parfor N)",
            "llm_perf_opt.callgraph.grouped", 2, (1, 2), "llm_perf_opt.callgraph.grouped:load_grouped_json"),
    RunFile("grouped_dot", "callgraph.grouped.dot", "callgraph.render", "the grouped graph in DOT"),
    RunFile("grouped_svg", "callgraph.grouped.svg", "callgraph.render", "the grouped graph drawn by Graphviz"),
    RunFile("grouped_mmd", "callgraph.grouped.mmd", "callgraph.render", "the grouped graph in Mermaid"),
    RunFile("log", "trace.log", "hydra", "the job's log (Hydra's job logging: the progress lines of stderr)"),
    RunFile("lock", ".lock", "run_lock",
            "flock-ed by the process running the job, for the job's life: a live run from a dead one"),
    RunFile("module_costs", "module_costs.json", "trace.graph",
            "per-module metric tables (analytic, measured, observed, predicted) that the graph's nodes sum",
            "llm_perf_opt.module_costs", 1, (1,), "llm_perf_opt.callgraph.node_costs:load_module_costs"),
    RunFile("run_page", "run.html", "report.run_page",
            "the run on one self-contained page: layout, costs, the clickable grouped graph, links"),
    RunFile("model_explorer", "model_explorer/graph.json", "callgraph.model_explorer",
            "the grouped graph for Model Explorer (./dev explore RUN_DIR), node data beside it"),
    RunFile("model_explorer_raw", "model_explorer/raw.json", "callgraph.model_explorer",
            "every module call for Model Explorer (the ungrouped graph), node data beside it"),
)
_BY_ROLE: dict[str, RunFile] = {f.role: f for f in RUN_FILES}


def run_file(role: str) -> RunFile:
    try:
        return _BY_ROLE[role]
    except KeyError:
        raise KeyError(f"no run file with role {role!r} (known: {', '.join(_BY_ROLE)})") from None


def loader(role: str) -> Callable[[Path], Any]:
    """The typed loader of an artifact, or an envelope check returning the raw `data` where its stage has
    no typed loader yet."""
    entry = run_file(role)
    if not entry.is_artifact:
        raise ArtifactError(f"{entry.file} is not a JSON artifact (it has no loader)")
    if entry.loader is None:
        return lambda path: read_artifact(path, entry.schema, entry.versions)[1]
    module, _, name = entry.loader.partition(":")
    return getattr(importlib.import_module(module), name)


def load(role: str, path: str | os.PathLike) -> Any:
    """Read `path` (the file, or the run directory holding it) as the artifact `role`."""
    path = Path(path)
    if path.is_dir():
        path = path / run_file(role).file
    return loader(role)(path)


# ============================================================================================ typed sections
def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp).replace("typing.", ""))


def _check(value: Any, tp: Any, where: str) -> Any:
    """`value` checked against the annotation `tp` (int, float, str, bool, Any, Optional, list, dict and
    section dataclasses, which are built from their mapping)."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin is Union:
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _check(value, inner[0], where) if len(inner) == 1 else value
    if is_dataclass(tp):
        return typed(tp, value, where)
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ArtifactError(f"{where} must be an object, found {type(value).__name__}")
        _, vt = typing.get_args(tp) or (str, Any)
        return {str(k): _check(v, vt, f"{where}.{k}") for k, v in value.items()}
    if origin is list:
        if not isinstance(value, list):
            raise ArtifactError(f"{where} must be a list, found {type(value).__name__}")
        (vt,) = typing.get_args(tp) or (Any,)
        return [_check(v, vt, f"{where}[{i}]") for i, v in enumerate(value)]
    ok = {
        int: lambda v: isinstance(v, int) and not isinstance(v, bool),
        float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        bool: lambda v: isinstance(v, bool),
        str: lambda v: isinstance(v, str),
        dict: lambda v: isinstance(v, Mapping),
        list: lambda v: isinstance(v, list),
    }.get(tp)
    if ok is not None and not ok(value):
        raise ArtifactError(f"{where} must be {_type_name(tp)}, found {value!r}")
    return value


def typed(cls: type, data: Any, where: str) -> Any:
    """The section dataclass `cls` built from a mapping, every declared field checked by name and type;
    unknown keys are kept (`raw`: the whole mapping verbatim; `extra`: the keys `cls` does not declare)."""
    if isinstance(data, cls):
        return data
    if not isinstance(data, Mapping):
        raise ArtifactError(f"{where} must be an object, found {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in fields(cls)}
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        if f.name in ("raw", "extra"):
            continue
        if f.name not in data:
            if f.default is MISSING and f.default_factory is MISSING:
                raise ArtifactError(f"{where} lacks required field '{f.name}'")
            continue
        kwargs[f.name] = _check(data[f.name], hints[f.name], f"{where}.{f.name}")
    if "raw" in names:
        kwargs["raw"] = dict(data)
    elif "extra" in names:
        kwargs["extra"] = {k: v for k, v in data.items() if k not in names}
    return cls(**kwargs)


def _data(obj: Any) -> Any:
    """A section back to the mapping it was written as (declared fields in order, then `extra`)."""
    if is_dataclass(obj) and not isinstance(obj, type):
        if hasattr(obj, "to_data"):
            return obj.to_data()
        names = [f.name for f in fields(obj)]
        if "raw" in names:
            return dict(obj.raw)
        out = {n: _data(getattr(obj, n)) for n in names if n != "extra"}
        out.update(getattr(obj, "extra", {}) or {})
        return out
    if isinstance(obj, Mapping):
        return {k: _data(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_data(v) for v in obj]
    return obj


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
    base_size: int
    image_size: int
    crop_mode: bool
    tile_size: int
    extra: dict = field(default_factory=dict)


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
    sequence: int  # BOS + image + text tokens
    prompt_source: str  # "fallback" or "tokenizer:<dir>"
    extra: dict = field(default_factory=dict)


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
    """`dsocr.layout.ViewLayout.as_dict()`: the fields the report reads, checked; `raw` is the whole layout."""

    page_width: int
    page_height: int
    w_crop: int
    h_crop: int
    num_crops: int
    num_views: int
    image_tokens: int
    raw: dict = field(default_factory=dict)

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
        return cls(type=type(exc).__name__, message=str(exc), expected=isinstance(exc, PipelineError),
                   traceback=_traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:],
                   config=to_jsonable(config))

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
