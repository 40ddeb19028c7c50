"""Recorded runs: run directories of the trace job kept as data (a GPU's recordings under `tests/data/gpu/`, copied
from `../shared/gpu-runs/`), found without naming them, each run's configuration read from its own summary.json.

A *recording* is a folder directly under a root (`recordings(root)`): one machine's session (the H200 of 2026-11-26,
...), holding run folders and the calibration files of its device. A *run folder* is any folder below a recording
with a `summary.json` (`twin-tiny/`, `sweep-twin_tiny/0/`, ...). Folder names say nothing to this loader: the model,
the workload mode, the batch, the page, the runtime and the device are read from the run's summary (`RecordedRun`).
A run's other files are found by name, plain or gzipped (`verification.json` or `verification.json.gz`, ...). A
recording's calibrations are its JSON files of schema `llm_perf_opt.calibration` (at any depth).

The device of a CUDA run: the session section's `device_name` and `cuda_capability` (written by sessions since this
loader exists); an older run's device name from its measured roof's label, its capability from the name
(`analytic.execution.capability_of_name`).

Bad input: a root that is not a folder or holds no recording, a recording without a run, a summary that does not
load: one `ArtifactError` naming the path (and the field).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Optional

from llm_perf_opt.analytic.execution import capability_of_name
from llm_perf_opt.errors import ArtifactError
from llm_perf_opt.run_artifacts import Summary, load_summary

SUMMARY = "summary.json"
CALIBRATION_SCHEMA = "llm_perf_opt.calibration"


@dataclass(frozen=True)
class RecordedRun:
    """One recorded run folder: where it is and its summary; everything else read on demand."""

    recording: str  # the recording's folder name
    name: str  # the run folder, relative to the recording ("sweep-twin_tiny/0")
    path: Path
    summary: Summary

    @property
    def label(self) -> str:
        return f"{self.recording}/{self.name}"

    # ---------------------------------------------------------------- the configuration, from the summary
    @property
    def model(self) -> str:
        return self.summary.model.name

    @property
    def mode(self) -> str:
        return self.summary.workload.mode

    @property
    def batch(self) -> int:
        return int(self.summary.tokens.batch)

    @property
    def seq_len(self) -> int:
        return int(self.summary.tokens.sequence)

    @property
    def status(self) -> str:
        return self.summary.status

    @property
    def session(self) -> dict[str, Any]:
        return dict(self.summary.session or {})

    @property
    def attn_implementation(self) -> str:
        """The attention the session used (flash-attn missing falls back to sdpa), else the configured one."""
        return str(self.session.get("attn_implementation") or self.summary.runtime.attn_implementation)

    @property
    def device_type(self) -> str:
        return str(self.summary.runtime.device).split(":")[0]

    @property
    def device_name(self) -> Optional[str]:
        """The GPU's name (a CUDA run): the session's, else the measured roof's label up to its first " (";
        None for a CPU run or when the summary holds neither."""
        if self.device_type != "cuda":
            return None
        name = self.session.get("device_name")
        if name:
            return str(name)
        roofline = self.summary.roofline
        roofs = getattr(roofline, "roofs", None) or {}
        label = ((roofs.get("measured") or {}).get("roof") or {}).get("label")
        return str(label).split(" (")[0] if label else None

    @property
    def cuda_capability(self) -> Optional[tuple[int, int]]:
        """The GPU's compute capability: the session's, else from its name (`capability_of_name`), else None."""
        if self.device_type != "cuda":
            return None
        cap = self.session.get("cuda_capability")
        if isinstance(cap, (list, tuple)) and len(cap) == 2:
            return int(cap[0]), int(cap[1])
        return capability_of_name(self.device_name) if self.device_name else None

    @property
    def decode_steps(self) -> int:
        """Decode steps the capture held: the root's forward calls minus the prefill (summary.trace)."""
        trace = self.summary.trace
        calls = trace.raw.get("root_forward_calls") if trace is not None else None
        return max(int(calls or 1) - 1, 0)

    def overrides(self) -> tuple[str, ...]:
        """Hydra overrides that compose this run's configuration as far as the analytic model depends on it: the
        model, the workload mode and batch, the page, the runtime (with the attention the session used)."""
        rt, page = self.summary.runtime, self.summary.page
        out = [
            f"model={self.model}",
            f"workload={self.mode}",
            f"workload.batch={self.batch}",
            f"workload.page.width={page.width}",
            f"workload.page.height={page.height}",
            f"runtime.device={rt.device}",
            f"runtime.dtype={rt.dtype}",
            f"runtime.attn_implementation={self.attn_implementation}",
            f"runtime.autocast={str(bool(rt.autocast)).lower()}",
        ]
        if page.image:
            out.append(f"workload.page.image={page.image}")
        return tuple(out)

    # ---------------------------------------------------------------- its files
    def file(self, name: str) -> Optional[Path]:
        """The run's file `name`, plain or gzipped (`name.gz`); None when it has neither."""
        for candidate in (self.path / name, self.path / f"{name}.gz"):
            if candidate.is_file():
                return candidate
        return None

    def require(self, name: str) -> Path:
        """`file(name)`, or one ArtifactError naming the run and the file."""
        found = self.file(name)
        if found is None:
            raise ArtifactError(f"{self.path}: recorded run has no {name} (nor {name}.gz)")
        return found

    def verification(self) -> Any:
        """The run's `Verification` (`measure.verification_file.load_verification`); None when it wrote none."""
        from llm_perf_opt.measure.verification_file import load_verification

        path = self.file("verification.json")
        return load_verification(path) if path is not None else None


@dataclass(frozen=True)
class Recording:
    """One recording folder: its runs (sorted by folder) and its calibration files."""

    name: str
    path: Path
    runs: tuple[RecordedRun, ...]

    @cached_property
    def calibrations(self) -> tuple[Path, ...]:
        """The recording's JSON files of schema `llm_perf_opt.calibration`."""
        out = []
        for path in sorted(self.path.rglob("*.json")):
            try:
                head = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(head, dict) and head.get("schema") == CALIBRATION_SCHEMA:
                out.append(path)
        return tuple(out)

    def run(self, name: str) -> RecordedRun:
        for r in self.runs:
            if r.name == name:
                return r
        raise ArtifactError(f"{self.path}: no recorded run {name!r} (runs: {', '.join(r.name for r in self.runs)})")


def load_recording(path: str | Path) -> Recording:
    """One recording folder: every folder below it with a summary.json is a run."""
    path = Path(path)
    if not path.is_dir():
        raise ArtifactError(f"{path}: no such recording folder")
    runs = []
    for summary in sorted(path.rglob(SUMMARY)):
        folder = summary.parent
        runs.append(RecordedRun(path.name, folder.relative_to(path).as_posix(), folder, load_summary(summary)))
    if not runs:
        raise ArtifactError(f"{path}: recording holds no run folder (no {SUMMARY} below it)")
    return Recording(path.name, path, tuple(runs))


def recordings(root: str | Path) -> tuple[Recording, ...]:
    """Every recording under `root` (each folder directly under it), sorted by name."""
    root = Path(root)
    if not root.is_dir():
        raise ArtifactError(f"{root}: no such folder of recordings")
    found = tuple(load_recording(p) for p in sorted(root.iterdir()) if p.is_dir())
    if not found:
        raise ArtifactError(f"{root}: holds no recording (no folder under it)")
    return found


def recorded_runs(root: str | Path) -> tuple[RecordedRun, ...]:
    """Every run of every recording under `root`."""
    return tuple(run for rec in recordings(root) for run in rec.runs)
