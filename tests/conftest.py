"""Shared fixtures: where the vendor code is (opt-in), CUDA availability, a real browser; the default trace
job (as it is, and with sdpa attention without its timing stages, then timed afterwards), one small sweep and
the quick gate, each run once per test session and read by tests in several folders (none of them writes into
these directories: a test that changes a run works on a copy); the tiny v1 twin and its inputs; a check that
nothing was written.

Where a test goes (the folders mirror src/llm_perf_opt/):

| folder | what it tests |
|---|---|
| `tests/<package>/` | the package `src/llm_perf_opt/<package>/` (analytic, callgraph, config, dsocr, dsocr2, ...) |
| `tests/<package>/<sub>/` | a subpackage whose tests carry support files of their own (`tests/dsocr/twin/`) |
| `tests/core/` | the top-level modules of src/llm_perf_opt/ (`artifacts.py`, `families.py`, `run_artifacts.py`) |
| `tests/system/` | no one package: import layers, packaging, docs, style, benchmarks, pixi and CI, bad input |
|  | across jobs, the shared runs machinery (tests/system/conftest.py says more) |

A test goes where the code it mainly tests lives (a job's end-to-end test: the package of that job or stage).
A fixture used by one folder lives in that folder's conftest; one used by several folders lives here. Helpers
imported by name by several folders sit beside this file (this directory is on sys.path: `shared_runs`,
`browser`, `job_scripts`, `roofline_helpers`, `timing_helpers`); a folder's own helper module is put on
sys.path by its conftest and has a name no other folder uses."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# OpenMP threads that wait passively: torch's CPU kernels (GNU OpenMP) otherwise spin between parallel
# regions, and on a machine whose cores are shared (the suite's own job subprocesses, other users) the
# spinning is most of the CPU the suite spends: the default trace job takes about 3x the CPU time and wall
# time with spinning threads on a loaded 2-core machine (20 vs 55 CPU-s). Set before torch is first imported
# (libgomp reads it when it loads), here and in every job subprocess, which inherits it; results are unchanged.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# glibc's malloc keeping freed memory for the next request instead of unmapping it: a block above the mmap threshold
# (32 MiB at most, such as a forward's logits, 470 MB on the default page) is otherwise mapped fresh and every page
# of it faulted in again on each call, and a freed heap top is handed back past 128 KiB. The suite's jobs run
# hundreds of forwards: the default trace job took 16.3-18.0 s of wall and 5.7-6.1 s of system time (2.8 M page
# faults), 14.1-14.4 s and 1.3-1.5 s (0.4-0.5 M) with these, its peak RSS 1.73 -> 1.78 GB. Read by glibc when a
# process starts: the pytest-xdist workers and every job subprocess inherit them. What a job measures and what its
# calibration measures (the fresh-page cost, `measure.calibrate_levels`) are then measured in the same memory regime;
# a user's job runs with glibc's defaults, which the time model's fresh-page term is for. `runs.memory.release`
# still hands memory back after each job (malloc_trim).
for _name, _value in (
    ("MALLOC_MMAP_THRESHOLD_", "4294967296"),
    ("MALLOC_TRIM_THRESHOLD_", "4294967296"),
    ("MALLOC_TOP_PAD_", "536870912"),
):
    os.environ.setdefault(_name, _value)

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:  # --import-mode=importlib: the shared helpers (browser.py) import as top level
    sys.path.insert(0, str(TESTS))

from job_scripts import run_job_in_process  # noqa: E402
from shared_runs import (  # noqa: E402
    OCR2_PAGE,
    SMALL_SWEEP_PAGE,
    GateRun,
    load_benchmark,
    made_once,
    run_gate,
    run_job_script,
)

from llm_perf_opt import families  # noqa: E402
from llm_perf_opt.runs.memory import JOB_GC_YOUNG  # noqa: E402

# Python's collector in the test processes as in a job (`runs.memory.fewer_collections`, which every job's entry
# sets): the tests that capture, group or price a model outside a job build the same large object graphs
gc.set_threshold(max(JOB_GC_YOUNG, gc.get_threshold()[0]), *gc.get_threshold()[1:])

# The families' workload schemas in Hydra's ConfigStore (conf/workload/*.yaml name them), as every job registers
# them before composing (`families.register_configs`): tests compose the config in this process too.
families.register_configs()


@pytest.fixture
def browser():
    """A headless chromium through Playwright on the system's browser (`browser.py`: which one, and why a
    missing one skips here and fails under CI): the one the module's page tests share, the pages this test
    opened closed after it."""
    from browser import chromium_browser

    with chromium_browser() as b:
        yield b


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last test of a module in this process (the next one is of another module, or none), its chromium
    is closed (`browser.shared_browser`: one per module, not one per page test)."""
    yield
    if nextitem is None or nextitem.module is not item.module:
        from browser import close_shared_browser

        close_shared_browser()


def _vendor_path(env: str, modeling: str, what: str) -> Path:
    path = os.environ.get(env)
    if not path:
        pytest.skip(f"{env} is not set ({what} vendor code not available; see docs/vendor.md)")
    p = Path(path)
    if not (p / modeling).is_file():
        pytest.skip(f"{env}={path} has no {modeling}")
    return p


@pytest.fixture(scope="session")
def vendor_dir() -> Path:
    """The vendor model directory from DSOCR_MODEL_PATH; tests that need it skip without it."""
    return _vendor_path("DSOCR_MODEL_PATH", "modeling_deepseekocr.py", "DeepSeek-OCR")


@pytest.fixture(scope="session")
def vendor2_dir() -> Path:
    """The DeepSeek-OCR 2 vendor directory from DSOCR2_MODEL_PATH; tests that need it skip without it."""
    return _vendor_path("DSOCR2_MODEL_PATH", "modeling_deepseekocr2.py", "DeepSeek-OCR 2")


@pytest.fixture(scope="session")
def calibration_dir(tmp_path_factory) -> Path:
    """The calibration cache of this session's `hardware=measured` jobs (one calibration, then reused)."""
    return made_once(tmp_path_factory, "calibration", lambda d: d)


@pytest.fixture(scope="session")
def tiny_curve(tmp_path_factory, calibration_dir) -> Path:
    """The folder `./dev bench serving_curve` writes for the tiny twin, Tiny, batches 1, 2, 4 and 8, two decode steps,
    one thread, each region the fastest of 5 after a warm-up, priced on the quick calibration plan
    (`--quick-calibration`, as the CPU part benchmarks' smoke runs: no test needs the full one-thread plan, 13 s;
    the 25% is held on recorded curves with full calibrations): serving_curve.json, serving_curve.md and the
    calibration.json it priced on (the session's cache), made once per session."""

    def make(d: Path) -> Path:
        curve = ["--model", "twin_tiny", "--mode", "tiny", "--runtime", "cpu", "--batches", "1,2,4,8", "--steps", "2"]
        timing = ["--threads", "1", "--warmup", "1", "--repeats", "5", "--quick-calibration"]
        assert load_benchmark("serving_curve").main([*curve, *timing, "--out", str(d)]) == 0
        return d

    return made_once(tmp_path_factory, "tiny_curve", make)


@pytest.fixture(scope="session", autouse=True)
def session_calibration_cache(calibration_dir):
    """Every job of the session, in a subprocess or in a worker, whose configuration names no cache of its own
    calibrates into the session's cache (LLM_PERF_OPT_CALIBRATION_DIR: conf/hardware/measured.yaml), never
    into the checkout's tmp/calibration/: a fresh clone calibrates once, like a warm one, and a cache left
    there by older code is never read. Jobs started together wait for one calibration (its lock file)."""
    os.environ["LLM_PERF_OPT_CALIBRATION_DIR"] = str(calibration_dir)


@pytest.fixture(scope="session")
def default_run(tmp_path_factory, calibration_dir) -> tuple[Path, subprocess.CompletedProcess]:
    """(run dir, completed process) of `./dev trace` with its defaults (twin_tiny, gundam, the letter page,
    CPU, profile on, hardware=measured), as ./dev runs it; only the run directory and the calibration
    cache are moved into temporary directories."""

    def make(d: Path) -> tuple[Path, subprocess.CompletedProcess]:
        proc = run_job_script("trace", f"hydra.run.dir={d / 'run'}", f"hardware.cache_dir={calibration_dir}")
        assert proc.returncode == 0, proc.stderr[-4000:]
        return d / "run", proc

    return made_once(tmp_path_factory, "default_trace", make)


@pytest.fixture(scope="session")
def small_sweep(tmp_path_factory, calibration_dir) -> tuple[Path, subprocess.CompletedProcess]:
    """(sweep dir, completed process) of `./dev sweep model=twin_tiny workload=tiny,gundam` on a 1300 x 700 page
    (SMALL_SWEEP_PAGE: Gundam's smallest crop grid, 2 x 1): two jobs of the whole trace job (profile on,
    hardware=measured). The profile times one plain and one profiled forward, without a warm-up
    (`profile.warmup=0 profile.repeats=1`): the tests read that the times are there and how the report shows
    them, never how steady they are."""

    def make(d: Path) -> tuple[Path, subprocess.CompletedProcess]:
        width, height = SMALL_SWEEP_PAGE
        proc = run_job_script(
            "sweep",
            "model=twin_tiny",
            "workload=tiny,gundam",
            f"workload.page.width={width}",
            f"workload.page.height={height}",
            "profile.warmup=0",
            "profile.repeats=1",
            f"hardware.cache_dir={calibration_dir}",
            f"hydra.sweep.dir={d / 'ok'}",
            env={"HYDRA_FULL_ERROR": "1"},
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        return d / "ok", proc

    return made_once(tmp_path_factory, "small_sweep", make)


@pytest.fixture(scope="session")
def quick_gate(tmp_path_factory) -> GateRun:
    """./dev verify verify=quick: the tiny twin on CPU, a plain and a crop mode (tiny, gundam), each with 2
    decode steps and no profile (conf/verify/quick.yaml); its sweep is `OUT/sweep`."""
    return made_once(tmp_path_factory, "quick_gate", lambda d: run_gate(d / "quick", "verify=quick"))


def write_profile(run: Path, *overrides: str) -> None:
    """profile.json of the default job's session and inputs (with `overrides`), as a user who profiles a run later
    would (one plain and one profiled forward, no warm-up: the tests read that the graph carries the times, not
    their spread)."""
    from hydra import compose, initialize_config_dir

    from llm_perf_opt.config.paths import conf_dir
    from llm_perf_opt.config.schemas import ProfileConfig
    from llm_perf_opt.dsocr.session import DeepSeekOCRSession
    from llm_perf_opt.measure.profile import ForwardCall, profile_forward
    from llm_perf_opt.prepare.builders import build_job_inputs
    from llm_perf_opt.prepare.validate import validate

    families.register_configs()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        job = validate(compose(config_name="config", overrides=list(overrides)))
    inputs = build_job_inputs(job)
    with DeepSeekOCRSession.open(job.cfg.model, job.cfg.runtime) as session:
        times = profile_forward(
            ForwardCall.from_session(session, inputs), ProfileConfig(warmup=0, repeats=1, chrome_trace=False)
        )
    times.write(run / "profile.json")


UNTIMED = ("runtime.attn_implementation=sdpa", "profile=off", "~hardware")


@pytest.fixture(scope="session")
def untimed_run(tmp_path_factory) -> Path:
    """The default run with sdpa attention and without its timing stages (`UNTIMED`): no time on the graph, said
    why. The trace job's `run_trace` in this process (the job's own process: the session's `default_run`). Read
    as run B of the compare tests (tests/report/test_compare_and_run_page.py: the default job against the same
    job whose decoder attention materialises no score matrices) and copied by `timed_run`, whose tests read
    times on the graph, never the attention's implementation: one capture of the default page for both."""
    from hydra import compose, initialize_config_dir

    from llm_perf_opt.runs.entry import CONF_DIR
    from llm_perf_opt.trace.job import run_trace

    def make(d: Path) -> Path:
        out = d / "run"
        out.mkdir()
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            raw = compose(config_name="config", overrides=list(UNTIMED))
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
        write_profile(out, *UNTIMED[:1])  # the untimed run's own session (its attention)
        roof = d / "roof"
        proc = run_job_in_process(
            "analyze", "model=twin_tiny", "runtime.dtype=float32", "hardware=h100_sxm", f"hydra.run.dir={roof}"
        )  # ./dev analyze in this process: its roofline.json is what is read, not its process
        assert proc.returncode == 0, proc.stderr[-3000:]
        shutil.copy(roof / "roofline.json", out / "roofline.json")
        from llm_perf_opt.jobs.group import main as group

        assert group([str(out)]) == 0
        return out

    return made_once(tmp_path_factory, "timed_run", make)


@pytest.fixture(scope="session")
def batch_run(tmp_path_factory) -> Path:
    """The trace job at batch 2 (`workload=tiny workload.batch=2 trace.decode_steps=2 profile=off ~hardware`),
    `run_trace` in this process (the job's own process: the session's `default_run`): the batch tests' kernel
    counts and the comparison of runs at two batches."""
    from hydra import compose, initialize_config_dir

    from llm_perf_opt.runs.entry import CONF_DIR
    from llm_perf_opt.trace.job import run_trace

    def make(d: Path) -> Path:
        out = d / "run"
        out.mkdir()
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            raw = compose(
                config_name="config",
                overrides=["workload=tiny", "workload.batch=2", "trace.decode_steps=2", "profile=off", "~hardware"],
            )
        assert run_trace(raw, out).status == "ok"
        return out

    return made_once(tmp_path_factory, "batch_run", make)


@pytest.fixture(scope="session")
def ocr2_run(tmp_path_factory) -> tuple[Path, dict]:
    """(run dir, summary.json's data) of `./dev trace` on the tiny OCR-2 twin, default workload, on a 1536 x 768
    page (OCR2_PAGE: the smallest crop grid, 2 x 1 crops of 768 beside the 1024 global view), with the export stage
    on and no timing stages (`trace.export=true profile=off ~hardware`), the job in this process (its files are
    read, not its process; `.hydra/` names the family for the comparison): DeepSeek-OCR 2 end to end (tests/dsocr2:
    the trace's checks and every export target from one TorchLens capture), and a run of another family (the
    comparison's tests)."""
    import json

    def make(d: Path) -> tuple[Path, dict]:
        run_dir = d / "run"
        proc = run_job_in_process(
            "trace", f"hydra.run.dir={run_dir}", *OCR2_PAGE, "trace.export=true", "profile=off", "~hardware"
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return run_dir, json.loads((run_dir / "summary.json").read_text())["data"]

    return made_once(tmp_path_factory, "ocr2_run", make)


@pytest.fixture(scope="module")
def tiny():
    """(spec, model, prefill kwargs) of the tiny twin in Tiny mode (512 x 512 view, no crops), real model with
    random seeded weights: the decode, routing, capture and decode-verification tests."""
    import torch

    from llm_perf_opt.dsocr.inputs import build_inputs
    from llm_perf_opt.dsocr.layout import VisionWorkload
    from llm_perf_opt.dsocr.spec import ModelSpec
    from llm_perf_opt.dsocr.twin import build_twin

    spec = ModelSpec.tiny()
    model = build_twin(spec, seed=0).eval()
    kwargs = build_inputs(spec, VisionWorkload(512, 512, False), 1700, 2200).forward_kwargs(None, torch.float32)
    return spec, model, kwargs


@pytest.fixture
def no_files_under():
    """Asserts a directory holds no file (it may not exist at all)."""

    def check(path: Path) -> None:
        found = [p for p in Path(path).rglob("*") if p.is_file()] if Path(path).exists() else []
        assert found == [], f"files were written: {found}"

    return check
