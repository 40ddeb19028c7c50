"""Fixtures of the graph tests: real runs of the default trace job (tiny twin, Gundam, letter page): as it
is, and without its timing stages (run in this process) with a profile and a roofline added afterwards.

The runs are made once per session: the first is the session's default run (`default_run` in
tests/conftest.py, `pipelines/trace.py` as `./dev trace` runs it); for the second, `profile.json`
(`measure.profile.profile_forward` on the same session inputs: 1 warm-up, 2 repeats, in this process) and
`roofline.json` (`./dev analyze model=twin_tiny hardware=h100_sxm` of the same page) are written into it
and `./dev group RUN_DIR` (its `main`, in this process: the group CLI's own process is tested in
test_graph_run.py) puts them on the graph, as a user who adds them later would.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from shared_runs import made_once

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # --import-mode=importlib: make graph_helpers importable
    sys.path.insert(0, str(HERE))


def _run(args: list[str], timeout: int = 900) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{args}: {proc.stderr[-3000:]}"
    return proc


def write_profile(run: Path) -> None:
    """profile.json of the default job's session and inputs, as a user who profiles a run later would."""
    from hydra import compose, initialize_config_dir

    from llm_perf_opt.config import register_configs
    from llm_perf_opt.config.paths import conf_dir
    from llm_perf_opt.config.schemas import ProfileConfig
    from llm_perf_opt.dsocr.session import DeepSeekOCRSession
    from llm_perf_opt.measure.profile import ForwardCall, profile_forward
    from llm_perf_opt.trace.builders import build_job_inputs
    from llm_perf_opt.trace.validate import validate

    register_configs()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        job = validate(compose(config_name="config"))
    inputs = build_job_inputs(job)
    with DeepSeekOCRSession.open(job.cfg.model, job.cfg.runtime) as session:
        times = profile_forward(
            ForwardCall.from_session(session, inputs), ProfileConfig(warmup=1, repeats=2, chrome_trace=False)
        )
    times.write(run / "profile.json")


@pytest.fixture(scope="session")
def traced_run(default_run) -> Path:
    """The default `./dev trace` run, as the trace job leaves it (the session's `default_run`)."""
    return default_run[0]


@pytest.fixture(scope="session")
def untimed_run(tmp_path_factory) -> Path:
    """The default run without its timing stages (`profile=off ~hardware`): no time on the graph, said why.
    The trace job's `run_trace` in this process (the job's own process: the session's `default_run`)."""
    from hydra import compose, initialize_config_dir

    from llm_perf_opt.runs.entry import CONF_DIR
    from llm_perf_opt.trace.job import run_trace

    def make(d: Path) -> Path:
        out = d / "run"
        out.mkdir()
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            raw = compose(config_name="config", overrides=["profile=off", "~hardware"])
        assert run_trace(raw, out).status == "ok"
        return out

    return made_once(tmp_path_factory, "untimed_run", make)


@pytest.fixture(scope="session")
def timed_run(untimed_run, tmp_path_factory) -> Path:
    """A copy of the untimed run with profile.json and roofline.json added and `./dev group` run on it, as a
    user who times a run later would."""

    def make(d: Path) -> Path:
        out = d / "run"
        shutil.copytree(untimed_run, out)
        write_profile(out)
        roof = d / "roof"
        _run(
            [
                str(REPO / "pipelines" / "analyze.py"),
                "model=twin_tiny",
                "runtime.dtype=float32",
                "hardware=h100_sxm",
                f"hydra.run.dir={roof}",
            ]
        )
        shutil.copy(roof / "roofline.json", out / "roofline.json")
        from llm_perf_opt.jobs.group import main as group

        assert group([str(out)]) == 0
        return out

    return made_once(tmp_path_factory, "timed_run", make)
