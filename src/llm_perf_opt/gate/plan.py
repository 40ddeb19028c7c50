"""What `./dev verify` will run: the matrix chosen with `verify=NAME` (conf/verify/NAME.yaml), expanded to
the jobs of one Hydra multirun of the trace job, every job's configuration checked before anything runs.

Design: the gate composes the matrix itself and launches the multirun as a child process
(`python -m llm_perf_opt.jobs.cli sweep ARGS hydra.sweep.dir=OUT/sweep`), passing the matrix's
axes as ordinary command-line sweep overrides (`workload=tiny,gundam`). Two reasons:

* A matrix file is packaged under `verify` (it holds `verify.overrides`, `verify.sweep`), so it cannot
  set `hydra.sweeper.params`, the key the ready sweeps of `experiment=` set. An ordinary `./dev sweep`
  therefore never inherits a verification matrix, whatever `verify` group is chosen, and the gate's
  sweep is exactly what the matrix says plus the command line.
* The child process isolates the gate from its jobs: a job that takes its process down (out of memory,
  a CUDA fault) leaves the gate alive to record it in the JUnit XML and the report.

The job list is computed with the same expansion the basic sweeper uses (`config.sweeps.planned_jobs`),
so the gate can compose and validate each job's config first: an unknown matrix, `runtime=cuda` without
a GPU, a missing `DSOCR_MODEL_PATH` for `verify=vendor`, any bad value, is one line and no work.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from llm_perf_opt.config import RootConfig, to_typed_config
from llm_perf_opt.config.compose import compose_each
from llm_perf_opt.config.paths import user_path
from llm_perf_opt.config.sweeps import planned_jobs
from llm_perf_opt.errors import ConfigError, PipelineError
from llm_perf_opt.gate.pins import default_path

DEFAULT_MATRIX = "default"
SWEEP_SUBDIR = "sweep"
GATE_ONLY = (
    "verify.out_dir",
    "verify.expected",
    "verify.update_expected",
    "verify.pins_only",
)  # the jobs never see these


@dataclass
class UserOverrides:
    """The command line split the way the gate uses it."""

    task: list[str] = field(default_factory=list)  # config overrides (single values) for the gate and every job
    jobs: list[str] = field(default_factory=list)  # those of them the jobs get (not the matrix choice, not GATE_ONLY)
    sweeps: list[str] = field(default_factory=list)  # `key=a,b` on the command line: more axes of the matrix
    hydra: list[str] = field(default_factory=list)  # `hydra.*`, `hydra/launcher=...`: the multirun only
    matrix_chosen: bool = False  # `verify=NAME` given


def split_overrides(argv: Sequence[str]) -> UserOverrides:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    out = UserOverrides()
    try:
        parsed = OverridesParser.create().parse_overrides([str(a) for a in argv])
    except HydraException as exc:
        raise ConfigError(f"bad override: {str(exc).splitlines()[0]}") from None
    for text, override in zip(argv, parsed):
        key = override.get_key_element()
        if key == "hydra" or key.startswith(("hydra.", "hydra/")):
            out.hydra.append(str(text))
        elif override.is_sweep_override():
            out.sweeps.append(str(text))
        else:
            if key == "verify" and override.value() is None:
                raise ConfigError(
                    "verify=null chooses no verification matrix: name one of conf/verify/ "
                    f"(e.g. verify={DEFAULT_MATRIX})"
                )
            out.task.append(str(text))
            out.matrix_chosen |= key == "verify"
            if key != "verify" and key not in GATE_ONLY:
                out.jobs.append(str(text))
    return out


@dataclass
class GatePlan:
    cfg: RootConfig  # the gate's own configuration (its `verify` node: the matrix and the gate's knobs)
    matrix: str
    arguments: list[str]  # the multirun's task overrides: verify=NAME, the matrix, its axes, the command line
    hydra_arguments: list[str]  # the command line's hydra overrides (a launcher, ...)
    jobs: list[list[str]]  # per job, its overrides, in the order the basic sweeper launches them
    out_dir: Path
    expected: Path
    sweep_path: Optional[Path] = None  # the user's hydra.sweep.dir, when given: the jobs go there

    @property
    def sweep_dir(self) -> Path:
        return self.sweep_path or self.out_dir / SWEEP_SUBDIR

    @property
    def rtol(self) -> float:
        return self.cfg.verify.rtol

    @property
    def axes(self) -> list[str]:
        """The keys whose values differ between jobs (what tells one job from another)."""
        values: dict[str, set[str]] = {}
        for job in self.jobs:
            for override in job:
                key, _, value = override.partition("=")
                values.setdefault(key, set()).add(value)
        return [k for k, v in values.items() if len(v) > 1]

    def label(self, overrides: Sequence[str]) -> str:
        """`workload=gundam page=slide`: the job's values of the keys that vary between jobs; for a matrix
        of one job, its values of the matrix's sweep keys."""
        keys = set(self.axes) or set(self.cfg.verify.sweep)
        return " ".join(o for o in overrides if o.partition("=")[0] in keys) or "(the only job)"

    def command(self) -> list[str]:
        """The child process: the trace job's multirun (what `./dev sweep` runs)."""
        return [
            sys.executable,
            "-m",
            "llm_perf_opt.jobs.cli",
            "sweep",
            *self.arguments,
            f"hydra.sweep.dir={self.sweep_dir}",
            *self.hydra_arguments,
        ]


def _matrix_arguments(cfg: RootConfig) -> list[str]:
    v = cfg.verify
    return [f"verify={v.name}", *v.overrides, *(f"{k}={','.join(map(str, vs))}" for k, vs in v.sweep.items())]


def check_devices(configs: Sequence[RootConfig]) -> None:
    """`runtime=cuda` without a CUDA GPU: the session's own rule and message, checked before any job starts.
    Only `is_available()` runs here when there is a GPU: the gate process never creates a CUDA context of
    its own (it would hold GPU memory for the whole sweep)."""
    cuda = [c for c in configs if c.runtime.device == "cuda"]
    if cuda:
        import torch

        if not torch.cuda.is_available():
            from llm_perf_opt import families

            families.for_config(cuda[0]).resolve_device(cuda[0].runtime)  # raises the session's one-line ConfigError


def _composed(overrides_lists: Sequence[Sequence[str]]) -> list:
    """Hydra's compose; its composition errors (a misspelt key, a wrong type) as one ConfigError line."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        return compose_each(overrides_lists)
    except (HydraException, OmegaConfBaseException, ValueError) as exc:  # Hydra raises bare ValueErrors too
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(".")
        cause = str(exc.__cause__ or "").strip().splitlines()
        raise ConfigError(f"{first}: {cause[0]}" if cause else first) from None


def plan(argv: Sequence[str], *, validate_jobs: bool = True, now: Optional[float] = None) -> GatePlan:
    """The gate's plan for `./dev verify ARGV`; a ConfigError (one line) for anything wrong with it."""
    from llm_perf_opt.prepare.validate import validate

    user = split_overrides(argv)
    chosen = [] if user.matrix_chosen else [f"verify={DEFAULT_MATRIX}"]
    cfg = to_typed_config(_composed([[*chosen, *user.task]])[0])
    v = cfg.verify
    if v.name is None:
        raise ConfigError(
            f"the verification matrix has no name: conf/verify/ files set `name` (e.g. verify={DEFAULT_MATRIX})"
        )
    # Relative paths mean the user's directory. `hydra.sweep.dir=DIR` puts the jobs in DIR, and, unless
    # verify.out_dir says otherwise, the gate's files (junit.xml, the report, sweep.log) beside them. The
    # default directory is unique per process (time to the microsecond and the pid), like the runs'.
    sweep_path = None
    for arg in list(user.hydra):
        key, _, value = arg.partition("=")
        if key.lstrip("+") == "hydra.sweep.dir":
            if not value.strip():
                raise ConfigError.field("hydra.sweep.dir", value, "must name a directory")
            sweep_path = user_path(value)
            user.hydra.remove(arg)
    when = now if now is not None else time.time()
    stamp = time.strftime("%Y-%m-%d/%H-%M-%S", time.localtime(when)) + f".{int(when % 1 * 1e6):06d}-{os.getpid()}"
    out_dir = user_path(v.out_dir) if v.out_dir else sweep_path or user_path(Path("tmp") / "verify" / stamp)
    expected = user_path(v.expected) if v.expected else default_path()
    arguments = [*_matrix_arguments(cfg), *user.jobs, *user.sweeps]
    jobs = planned_jobs({"hydra": {"overrides": {"task": arguments}}})
    if not jobs:
        raise ConfigError(
            f"verify={v.name}: the matrix does not expand to a list of jobs (only comma-separated "
            f"sweeps are supported): {' '.join(arguments)}"
        )
    gate = GatePlan(cfg, v.name, arguments, list(user.hydra), jobs, out_dir.absolute(), expected, sweep_path)
    if v.update_expected or v.pins_only:  # no job runs: nothing of theirs to check
        return gate
    sweep_dir = gate.sweep_dir
    if sweep_dir.exists() and any(p.name != "sweep.log" for p in sweep_dir.iterdir()):
        raise ConfigError.field(
            "verify.out_dir",
            str(out_dir),
            f"already holds a sweep ({sweep_dir}): choose another directory or remove it (a gate never mixes two runs)",
        )
    if validate_jobs:
        configs = []
        for num, raw in enumerate(_composed(jobs)):
            try:
                configs.append(validate(raw).cfg)
            except PipelineError as exc:
                raise ConfigError(f"verify={v.name} job {num} ({gate.label(jobs[num])}): {exc}") from None
        check_devices(configs)
    return gate
