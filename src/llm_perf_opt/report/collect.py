"""Find every job of a Hydra multirun and read what it left: summary.json, error.json, Hydra's records.

A sweep directory (`hydra.sweep.dir`) holds `multirun.yaml` and one directory per job (`hydra.sweep.subdir`,
the job number here) with `.hydra/{config,hydra,overrides}.yaml` written before the job's code runs. A
directory without `multirun.yaml` is not a sweep and is refused. A job's status (`STATUS_FORMS`, the
README's table) comes from what it left:

* `error.json`                                      -> `failed: <type>: <message>` (`run_artifacts.ErrorRecord`);
* `summary.json` with status "ok"                   -> `ok`;
* no `summary.json`, an analytic job's `serving.json` -> `ok` (analyze hardware=, size: written last);
* `summary.json` "failed" / "interrupted"            -> `failed: <type>: <message>` / `interrupted at stage X`;
* `summary.json` "running", or `.hydra/` only:
  a live process holds the job's lock (`run_lock`)  -> `running`;
  nobody does                                       -> `failed: no result: ...` (killed, out of memory);
* no directory for a job `multirun.yaml` expands to -> `pending` while the sweep's process holds the sweep
  directory's lock (the sweep is live), else `failed: not started: ...`.

A summary or error file that cannot be read (corrupt, unknown version, a section malformed) makes the
job's status "failed: ArtifactError: <file>: <what>", so it shows in the report's failures with the
field named, never as silently missing values.

Nothing here imports torch: a report of a thousand jobs reads JSON and YAML only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from omegaconf import OmegaConf

from llm_perf_opt.config.sweeps import planned_jobs
from llm_perf_opt.errors import ArtifactError, PipelineError
from llm_perf_opt.run_artifacts import RUN_FILES, ErrorRecord, Summary, load_error, load_summary, run_file
from llm_perf_opt.run_artifacts import load as load_run_file
from llm_perf_opt.run_lock import holder

SUMMARY_FILE, ERROR_FILE, SERVING_FILE = run_file("summary").file, run_file("error").file, run_file("serving").file

# Every form a job's status takes in the report (the README's status table lists exactly these).
STATUS_FORMS = (
    "ok",
    "running",
    "failed: <type>: <message>",
    "interrupted at stage <stage>",
    "failed: no result: ...",
    "pending",
    "failed: not started: ...",
)


@dataclass
class JobRecord:
    """One job of a sweep as found on disk."""

    num: int
    dir: Optional[Path]  # None: never started
    status: str  # "ok" or "failed: <type>: <message>"
    summary: Optional[Summary] = None  # summary.json (None when absent or unreadable)
    error: Optional[ErrorRecord] = None  # error.json (None when absent)
    serving: Any = None  # serving.json (analytic.serving_file.Serving) of ./dev analyze hardware= / ./dev size
    config: dict[str, Any] = field(default_factory=dict)  # .hydra/config.yaml (unresolved interpolations kept)
    choices: dict[str, Any] = field(default_factory=dict)  # hydra.runtime.choices: config group -> option
    overrides: list[str] = field(default_factory=list)  # the job's task overrides
    files: dict[str, str] = field(
        default_factory=dict
    )  # role (run_artifacts.RUN_FILES) -> path relative to the sweep dir
    analytic_cache: Any = field(default=None, repr=False, compare=False)  # report.table.analytic()'s answer

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def running(self) -> bool:
        """Not finished yet: running now, or `pending` (planned by a live sweep, not started yet)."""
        return self.status in ("running", "pending") or self.status.startswith("running ")

    @property
    def failed(self) -> bool:
        """Neither ok nor still running: failed, interrupted, killed, or never started."""
        return not self.ok and not self.running

    def cfg(self, dotted: str, default: Any = None) -> Any:
        """A value of Hydra's record of the job's config (`.hydra/config.yaml`), e.g. for a job that
        failed before writing its summary; default when the key is absent."""
        node: Any = self.config
        for key in dotted.split("."):
            if not isinstance(node, dict) or key not in node:
                return default
            node = node[key]
        return node


@dataclass
class Sweep:
    dir: Path
    jobs: list[JobRecord]
    multirun: dict[str, Any] = field(default_factory=dict)  # multirun.yaml as a plain dict (unresolved)
    expected: Optional[int] = None  # jobs multirun.yaml expands to (None: unknown sweeper)

    @property
    def experiment(self) -> Optional[str]:
        return self.multirun.get("experiment")

    @property
    def task_overrides(self) -> list[str]:
        return list(((self.multirun.get("hydra") or {}).get("overrides") or {}).get("task") or [])

    @property
    def sweeper_params(self) -> dict[str, Any]:
        return dict(((self.multirun.get("hydra") or {}).get("sweeper") or {}).get("params") or {})


def _load_yaml(path: Path) -> Any:
    """Hydra's record as plain data; a damaged record (a job killed while Hydra wrote it) reads as missing."""
    import yaml
    from omegaconf.errors import OmegaConfBaseException

    try:
        return OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, OmegaConfBaseException):
        return None


def _is_job_dir(path: Path) -> bool:
    return path.is_dir() and (
        (path / ".hydra").is_dir() or (path / SUMMARY_FILE).is_file() or (path / ERROR_FILE).is_file()
    )


def _job_num(path: Path, hydra_yaml: Any, fallback: int) -> int:
    """hydra.job.num from .hydra/hydra.yaml, else the directory name, else the position."""
    hydra = hydra_yaml.get("hydra") if isinstance(hydra_yaml, dict) else None
    job = hydra.get("job") if isinstance(hydra, dict) else None
    num = job.get("num") if isinstance(job, dict) else None
    if isinstance(num, int):
        return num
    try:
        return int(path.name)
    except ValueError:
        return fallback


def error_status(error: Any) -> str:
    """`failed: <type>: <first line of the message>` of an ErrorRecord or a summary's JobError."""
    lines = str(error.message).strip().splitlines()
    return f"failed: {error.type}: {lines[0] if lines else ''}".rstrip(": ")


def read_job(path: Path, sweep_dir: Path, fallback_num: int = 0) -> JobRecord:
    hydra_dir = path / ".hydra"
    config = _load_yaml(hydra_dir / "config.yaml") if (hydra_dir / "config.yaml").is_file() else None
    hydra_yaml = _load_yaml(hydra_dir / "hydra.yaml") if (hydra_dir / "hydra.yaml").is_file() else None
    overrides = _load_yaml(hydra_dir / "overrides.yaml") if (hydra_dir / "overrides.yaml").is_file() else None
    choices = (((hydra_yaml or {}).get("hydra") or {}).get("runtime") or {}).get("choices") or {}
    job = JobRecord(
        num=_job_num(path, hydra_yaml, fallback_num),
        dir=path,
        status="ok",
        config=config if isinstance(config, dict) else {},
        choices={k: v for k, v in choices.items() if not str(k).startswith("hydra/")},
        overrides=[str(o) for o in overrides] if isinstance(overrides, list) else [],
    )
    for entry in RUN_FILES:
        file = path / entry.file
        if file.is_file():
            job.files[entry.role] = str(file.relative_to(sweep_dir)) if path.is_relative_to(sweep_dir) else str(file)
    if (path / ERROR_FILE).is_file():
        try:
            job.error = load_error(path / ERROR_FILE)
        except PipelineError as exc:
            job.status = f"failed: {type(exc).__name__}: {exc}"
        else:
            job.status = error_status(job.error)
    if (path / SERVING_FILE).is_file():
        try:
            job.serving = load_run_file("serving", path / SERVING_FILE)
        except PipelineError as exc:
            if job.ok:
                job.status = f"failed: {type(exc).__name__}: {exc}"
    if (path / SUMMARY_FILE).is_file():
        try:
            job.summary = load_summary(path / SUMMARY_FILE)
        except PipelineError as exc:
            if job.ok:
                job.status = f"failed: {type(exc).__name__}: {exc}"
        else:
            if job.ok:
                job.status = summary_status(job.summary, path, job.files.get("log"))
    elif job.ok and (job.serving is None or job.serving.job == "trace"):
        # an analytic job (analyze, size) writes serving.json last, atomically: with no summary it is done; a trace
        # job writes summary.json first, so its serving.json without one is a job that did not finish
        job.status = unfinished_status(path, None, job.files.get("log"))
    return job


def summary_status(summary: Summary, path: Path, log: Optional[str]) -> str:
    """The report's status of a job whose summary.json says `summary.status`."""
    status = summary.status
    if status == "ok":
        return "ok"
    if status == "interrupted":
        return f"interrupted at stage {summary.stage or '?'}"
    if status == "running":
        return unfinished_status(path, summary.stage, log)
    if summary.error is not None:
        return error_status(summary.error)
    return status if status.startswith("failed") else f"failed: {status}"


def unfinished_status(path: Path, stage: Optional[str], log: Optional[str]) -> str:
    """A job that has not written its end: running when a live process holds its lock, else it died."""
    where = f" at stage {stage}" if stage else ""
    if holder(path) is not None:
        return f"running{where}"
    found = "summary.json says running" if stage else "no summary.json or error.json"
    return (
        f"failed: no result: {found}, and no process holds the job any more: it was killed{where} "
        f"(out of memory, time limit){f'; see {log}' if log else ''}"
    )


def collect_sweep(sweep_dir: str | Path) -> Sweep:
    """Every job of the multirun in `sweep_dir`, in job-number order, including those that left nothing."""
    sweep_dir = Path(sweep_dir)
    if not sweep_dir.is_dir():
        raise ArtifactError(f"{sweep_dir}: no such sweep directory")
    multirun_path = sweep_dir / "multirun.yaml"
    if not multirun_path.is_file():
        hint = (
            "it is the directory of one job (it has .hydra/): pass the sweep directory above it"
            if (sweep_dir / ".hydra").is_dir()
            else "pass the directory of one ./dev sweep (hydra.sweep.dir)"
        )
        raise ArtifactError(f"{sweep_dir}: not a sweep (no multirun.yaml): {hint}")
    multirun = _load_yaml(multirun_path)
    if not isinstance(multirun, dict):
        raise ArtifactError(f"{multirun_path}: not a readable Hydra multirun record")
    candidates = sorted(
        (p for p in sweep_dir.iterdir() if _is_job_dir(p)),
        key=lambda p: (not p.name.isdigit(), int(p.name) if p.name.isdigit() else 0, p.name),
    )
    jobs = [read_job(p, sweep_dir, i) for i, p in enumerate(candidates)]
    expected: Optional[int] = None
    if isinstance(multirun, dict):
        planned = planned_jobs(multirun)
        if planned is not None:
            expected = len(planned)
            seen = {j.num for j in jobs}
            live = holder(sweep_dir) is not None  # the sweep's process is still alive: the rest will come
            for num, overrides in enumerate(planned):
                if num not in seen:
                    jobs.append(
                        JobRecord(
                            num=num,
                            dir=None,
                            overrides=overrides,
                            status="pending"
                            if live
                            else "failed: not started: no job directory (the sweep stopped before this job)",
                        )
                    )
    jobs.sort(key=lambda j: j.num)
    return Sweep(dir=sweep_dir, jobs=jobs, multirun=multirun if isinstance(multirun, dict) else {}, expected=expected)
