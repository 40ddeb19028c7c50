"""The typed artifacts the jobs themselves write: `summary.json` (`Summary`) and `error.json` (`ErrorRecord`).

`Summary` is the trace job's `summary.json`. The sections of the job itself (model, workload, page, tokens,
runtime) are defined here; each stage's section is defined by its stage package, in a base-layer module
`<package>/<name>_summary.py`, and re-exported here:

| section | owner |
|---|---|
| `analytic` | `analytic/analytic_summary.py` (`AnalyticFigures`, `StageFigures`) |
| `flops`, `parts`, `verification` | `measure/verify_summary.py` (`FlopsCheck`, `PartFlops`, `VerificationFigures`) |
| `profile` | `measure/profile_summary.py` (`ProfileFigures`) |
| `trace`, `grouping` | `callgraph/capture_summary.py` (`TraceStats`, `GroupingSummary`) |
| `forward`, `decode`, `roofline`, `graph` | `trace/trace_summary.py` (the trace stages' own) |
| `memory`, `error` | `runs/run_summary.py` (`JobMemoryFigures`, `JobError`) |

Sections that are another stage's own summary (the view layout, the capture statistics, the grouping summary,
the parameter counts) are typed views that keep that stage's mapping verbatim, so the file round-trips
exactly while the fields the report relies on are checked by name. A missing optional section is None;
a malformed one is an `ArtifactError` naming the file, the section and the field. The view layout's own
fields (crops, grid) are the model family's: `LayoutView` checks the generic ones and reads the rest from
the layout as the family wrote it.

The file registry is `run_files` and the section type checker `typecheck` (one idea each); their names are
re-exported here for the modules that import them from this one.

Layer: this module imports `artifacts`, `errors`, `run_files`, `typecheck` and the stages' `*_summary` modules
(themselves base-layer) only.
"""

from __future__ import annotations

import os
import traceback as _traceback
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping, Optional

from llm_perf_opt.analytic.analytic_summary import AnalyticFigures, StageFigures  # noqa: F401 - re-exported
from llm_perf_opt.artifacts import read_artifact, read_json, to_jsonable, write_artifact
from llm_perf_opt.callgraph.capture_summary import GroupingSummary, TraceStats  # noqa: F401 - re-exported
from llm_perf_opt.errors import ArtifactError, PipelineError
from llm_perf_opt.measure.profile_summary import ProfileFigures  # noqa: F401 - re-exported
from llm_perf_opt.measure.verify_summary import FlopsCheck, PartFlops, VerificationFigures  # noqa: F401 - re-exported
from llm_perf_opt.run_files import (  # noqa: F401 - re-exported
    ERROR_SCHEMA,
    ERROR_VERSION,
    SUMMARY_SCHEMA,
    SUMMARY_VERSION,
    RunFile,
    load,
    loader,
    run_file,
)
from llm_perf_opt.runs.run_summary import JobError, JobMemoryFigures  # noqa: F401 - re-exported
from llm_perf_opt.trace.trace_summary import (  # noqa: F401 - re-exported
    DecodeSummary,
    ForwardFigures,
    GraphFigures,
    RooflineFigures,
)
from llm_perf_opt.typecheck import _check, _data, _type_name, typed  # noqa: F401 - re-exported


def __getattr__(name: str) -> Any:
    """`RUN_FILES`, re-exported from `run_files` when first read (the registry finds its declarations then)."""
    if name == "RUN_FILES":
        from llm_perf_opt.run_files import registered

        return registered()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
class RoutingSummary:
    """`model_runtime.routing.RoutingRecord.summary()`: experts hit per layer and step, prefill imbalance, expert
    bytes read, the uniform-routing expectation; `random_weights`/`note` say whose routing it is."""

    n_experts: int
    top_k: int
    random_weights: Optional[bool]
    note: str
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
    tensors: dict[str, Any]  # deepseek_ocr_shared.inputs.Inputs.shapes(): name -> [shape, dtype]
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
