"""Every file a run directory holds: one registry of (role, file, schema, version, loader), filled by the stages.

The registry is what the report and the jobs agree on: `RUN_FILES` names each file once; `load(role, path)` reads
it with its typed loader. No list here names the stages' files: each package that writes files into a run
directory declares them in its own `run_files.py` (a `RUN_FILES` tuple of `RunFile`, next to the writer and its
loader: `analytic/run_files.py`, `measure/run_files.py`, `callgraph/run_files.py`, a model family's, ...), and
the registry finds those modules by that name the first time it is read (a package outside `llm_perf_opt`, such as a
family plugged in from elsewhere, names its module with `register`). Only the job's own files (summary.json,
error.json, the log, the lock) are declared here (`BASE_FILES`).

A declaration names its loader as `"module:function"` and the registry imports it only when a file is loaded,
so reading a thousand summaries never imports torch; the declaring modules import nothing but `RunFile`.
`schema`/`version` are what is written today; a stage's loader may read older names and versions too
(`versions` lists the current name's). A stage without a typed loader (`loader=None`) gets an envelope check
(schema, known version) returning the raw `data`. A test checks the entries against the owning modules'
constants; the import-layer test follows the loader strings like imports.

Order: the base files, then each declaring package's in the order of its package name.

Layer: this module imports `artifacts` and `errors` only (the declaring modules are found by file name).
"""

from __future__ import annotations

import functools
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

BASE_FILES: tuple[RunFile, ...] = (
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
    RunFile("log", "trace.log", "hydra", "the job's log (Hydra's job logging: the progress lines of stderr)"),
    RunFile(
        "lock",
        ".lock",
        "run_lock",
        "flock-ed by the process running the job, for the job's life: a live run from a dead one",
    ),
)
DECLARATIONS = "run_files"  # the module of a package that declares its run files (`<package>/run_files.py`)


def declaring_modules(root: Path = Path(__file__).resolve().parent) -> list[str]:
    """The modules that declare run files: `llm_perf_opt.<package>.run_files` for every package of `root` that has
    one, by package name."""
    return [
        f"{__package__}.{d.name}.{DECLARATIONS}"
        for d in sorted(root.iterdir())
        if (d / "__init__.py").is_file() and (d / f"{DECLARATIONS}.py").is_file()
    ]


_PLUGGED_IN: list[str] = []  # declaring modules outside this package's tree (`register`)


def register(module: str) -> None:
    """Add a declaring module that lives outside `llm_perf_opt` (a model family plugged in from elsewhere): its
    `RUN_FILES` join the registry after the ones found by name."""
    if module not in _PLUGGED_IN:
        _PLUGGED_IN.append(module)
        registered.cache_clear()


@functools.lru_cache(maxsize=None)
def registered() -> tuple[RunFile, ...]:
    """Every file of a run directory: `BASE_FILES`, then each declaring module's `RUN_FILES` (those found by name,
    then those `register`ed). A role or a file declared twice is refused, naming both declarations."""
    found: dict[str, tuple[RunFile, str]] = {}
    for module, files in [(__name__, BASE_FILES)] + [
        (m, importlib.import_module(m).RUN_FILES) for m in declaring_modules() + _PLUGGED_IN
    ]:
        for entry in files:
            for key in ("role", "file"):
                clash = next((where for f, where in found.values() if getattr(f, key) == getattr(entry, key)), None)
                if clash is not None:
                    raise ArtifactError(
                        f"run file {key} {getattr(entry, key)!r} is declared twice: in {clash} and in {module}"
                    )
            found[entry.role] = (entry, module)
    return tuple(entry for entry, _ in found.values())


def __getattr__(name: str) -> Any:
    """`RUN_FILES`: the registry, read on first use (the declaring modules import this one)."""
    if name == "RUN_FILES":
        return registered()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_file(role: str) -> RunFile:
    by_role = {f.role: f for f in registered()}
    try:
        return by_role[role]
    except KeyError:
        raise KeyError(f"no run file with role {role!r} (known: {', '.join(by_role)})") from None


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
