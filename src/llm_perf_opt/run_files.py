"""Every file a run directory holds: one registry of (role, file, schema, version, loader).

The registry is what the report and the jobs agree on: `RUN_FILES` names each file once; `load(role,
path)` reads it with its typed loader. Artifacts of the stages (call graph, grouped graph, runtime log,
costs, verification) keep their dataclasses and loaders in their own packages; the registry names the
loader as `"module:function"` and imports it only when a file is loaded, so reading a thousand
summaries never imports torch (nor, at import time, a model family's package). `schema`/`version` are what
is written today; a stage's loader may read older names and versions too (`versions` lists the current
name's). A stage without a typed loader (`loader=None`) gets an envelope check (schema, known version)
returning the raw `data`: the hook for its owner to fill. A test checks the entries against the owning
modules' constants.

Layer: this module imports `artifacts` and `errors` only.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from llm_perf_opt.artifacts import file_in, read_artifact
from llm_perf_opt.errors import ArtifactError


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
    RunFile(
        "summary",
        "summary.json",
        "trace.job",
        "what the job ran and what it found (this module's Summary)",
        SUMMARY_SCHEMA,
        SUMMARY_VERSION,
        (1,),
        "llm_perf_opt.run_artifacts:load_summary",
    ),
    RunFile(
        "error",
        "error.json",
        "runs.entry",
        "a job that failed in a multirun: type, message, traceback, config (this module's ErrorRecord)",
        ERROR_SCHEMA,
        ERROR_VERSION,
        (0, 1),
        "llm_perf_opt.run_artifacts:load_error",
    ),
    RunFile(
        "costs",
        "costs.json",
        "analytic",
        "the analytic cost model per stage, part and layer",
        "llm_perf_opt.costs",
        2,
        (2,),
        "llm_perf_opt.analytic.costs_file:load_costs",
    ),
    RunFile(
        "verification",
        "verification.json",
        "measure",
        "analytic vs measured FLOPs per stage and part (fvcore's count when asked)",
        "llm_perf_opt.verification",
        3,
        (2, 3),
        "llm_perf_opt.measure.verification_file:load_verification",
    ),
    RunFile(
        "roofline",
        "roofline.json",
        "analytic.roofline (./dev analyze hardware=NAME; the trace job's roofline stage)",
        "predicted times per stage and part on a roof (datasheet or measured)",
        "llm_perf_opt.roofline",
        2,
        (1, 2),
        "llm_perf_opt.analytic.roofline_artifact:load_roofline",
    ),
    RunFile(
        "serving",
        "serving.json",
        "analytic.serving_run (./dev analyze hardware=NAME, ./dev size, the trace job)",
        "serving figures: TTFT, TPOT, tokens/s, pages/day at a batch, memory, the latency curve, sizing",
        "llm_perf_opt.serving",
        1,
        (1,),
        "llm_perf_opt.analytic.serving_file:load_serving",
    ),
    RunFile("curve_csv", "curve.csv", "analytic.serving_run", "the latency-vs-throughput curve over the batch"),
    RunFile("curve_svg", "curve.svg", "report.serving_plots", "the latency-vs-throughput curve, its knee marked"),
    RunFile("curve_png", "curve.png", "report.serving_plots", "curve.svg as a PNG"),
    RunFile(
        "calibration",
        "calibration.json",
        "measure.calibrate (./dev calibrate)",
        "the measured roof of the device the job ran on",
        "llm_perf_opt.calibration",
        1,
        (1,),
        "llm_perf_opt.measure.calibrate:load_calibration",
    ),
    RunFile(
        "profile",
        "profile.json",
        "measure.profile",
        "measured time per module (torch.profiler ranges): repeats, warm-up, synchronisation recorded",
        "llm_perf_opt.profile",
        1,
        (1,),
        "llm_perf_opt.measure.module_times:load_module_times",
    ),
    RunFile("profile_trace", "profile.trace.json", "measure.profile", "the last profiled repeat as a Chrome trace"),
    RunFile(
        "roofline_svg",
        "roofline.svg",
        "report.roofline_plot",
        "the run's roofline: the device's roof, each part at its intensity and achieved FLOP/s",
    ),
    RunFile("roofline_png", "roofline.png", "report.roofline_plot", "roofline.svg as a PNG"),
    RunFile(
        "export",
        "export/summary.json",
        "export (./dev export, trace.export=true)",
        "torch.export of submodules: FLOPs and op counts cross-checked, MoE remedies",
        "llm_perf_opt.export",
        1,
        (1,),
        "llm_perf_opt.export.summary:load_export_summary",
    ),
    RunFile(
        "callgraph",
        "callgraph.json",
        "callgraph.capture",
        "the TorchLens call graph with per-module metadata",
        "llm_perf_opt.callgraph",
        3,
        (1, 2, 3),
        "llm_perf_opt.callgraph.schema:load_callgraph_json",
    ),
    RunFile(
        "runtime_log",
        "runtime_log.json",
        "model_runtime.patches",
        "events the runtime patches logged during the capture",
        "llm_perf_opt.runtime_log",
        1,
        (1,),
        "llm_perf_opt.model_runtime.runtime_log:load_runtime_log",
    ),
    RunFile(
        "routing",
        "routing.json",
        "model_runtime.routing",
        "the MoE routing the capture took: experts hit and tokens per expert, per layer and step",
        "llm_perf_opt.routing",
        1,
        (1,),
        "llm_perf_opt.model_runtime.routing:load_routing",
    ),
    RunFile(
        "grouped",
        "callgraph.grouped.json",
        "callgraph.grouping (data model: callgraph.grouped)",
        "the Option C grouped graph (for N / parfor N)",
        "llm_perf_opt.callgraph.grouped",
        2,
        (1, 2),
        "llm_perf_opt.callgraph.grouped:load_grouped_json",
    ),
    RunFile("grouped_dot", "callgraph.grouped.dot", "callgraph.render", "the grouped graph in DOT"),
    RunFile("grouped_svg", "callgraph.grouped.svg", "callgraph.render", "the grouped graph drawn by Graphviz"),
    RunFile("grouped_mmd", "callgraph.grouped.mmd", "callgraph.render", "the grouped graph in Mermaid"),
    RunFile("log", "trace.log", "hydra", "the job's log (Hydra's job logging: the progress lines of stderr)"),
    RunFile(
        "lock",
        ".lock",
        "run_lock",
        "flock-ed by the process running the job, for the job's life: a live run from a dead one",
    ),
    RunFile(
        "module_costs",
        "module_costs.json",
        "trace.graph",
        "per-module metric tables (analytic, measured, observed, predicted) that the graph's nodes sum",
        "llm_perf_opt.module_costs",
        1,
        (1,),
        "llm_perf_opt.callgraph.node_costs:load_module_costs",
    ),
    RunFile(
        "run_page",
        "run.html",
        "report.run_page",
        "the run on one self-contained page: layout, costs, the clickable grouped graph, links",
    ),
    RunFile(
        "model_explorer",
        "model_explorer/graph.json",
        "callgraph.model_explorer",
        "the grouped graph for Model Explorer (./dev explore RUN_DIR), node data beside it",
    ),
    RunFile(
        "model_explorer_raw",
        "model_explorer/raw.json",
        "callgraph.model_explorer",
        "every module call for Model Explorer (the ungrouped graph), node data beside it",
    ),
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
    return loader(role)(file_in(path, run_file(role).file))
