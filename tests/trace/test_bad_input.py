"""Bad input to the trace job's timing stages: one line naming the field, exit status 2, nothing written;
and the same rules as functions (the validation step runs them before any work)."""

from __future__ import annotations

import pytest
import torch
from job_scripts import run_job_in_process
from timing_helpers import error_lines, files_under

from llm_perf_opt.config import to_typed_config
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.measure.calibrate import check_hardware
from llm_perf_opt.prepare.validate import validate


def _compose(*overrides: str):
    from hydra import compose, initialize_config_dir

    from llm_perf_opt.runs.entry import CONF_DIR

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


CASES = [
    (["hardware=h999"], "error: hardware='h999' is invalid: one of a100_40gb, a100_80gb"),
    (
        ["hardware.dtype=float16"],
        "error: hardware.dtype='float16' is invalid: measured has no matmul peak for float16 on cpu",
    ),
    (["hardware.allow_tf32=true"], "error: hardware.allow_tf32=True is invalid: measured has no matmul peak for tf32"),
    (["hardware=h100_sxm", "hardware.dtype=float8"], "error: hardware.dtype='float8' is invalid"),
    (["profile.repeats=0"], "error: profile.repeats=0 is invalid: must be an integer >= 1"),
    (["profile.nvtx=true"], "error: profile.nvtx=True is invalid: NVTX ranges need runtime=cuda"),
]


@pytest.mark.slow
@pytest.mark.parametrize("overrides, first_words", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_trace_job_refuses_in_one_line_and_writes_nothing(tmp_path, overrides, first_words):
    if "profile.nvtx=true" in overrides and torch.cuda.is_available():
        pytest.skip("runtime=cpu with a GPU present is still refused, but this machine checks the CPU-only case")
    run = tmp_path / "run"
    # the job in this process (jobs.cli.main, what pipelines/trace.py runs): its exit status, stderr and files
    proc = run_job_in_process("trace", f"hydra.run.dir={run}", f"hardware.cache_dir={tmp_path / 'cache'}", *overrides)
    assert proc.returncode == 2, proc.stderr
    lines = error_lines(proc)
    assert len(lines) == 1 and lines[0].startswith(first_words), proc.stderr
    assert "Traceback" not in proc.stderr
    assert files_under(run) == [] and not (tmp_path / "cache").exists()


def test_the_rules_fire_in_the_validation_step():
    # the validation step is the first thing every job does: these never reach a model or a calibration
    with pytest.raises(ConfigError, match=r"^profile\.nvtx=True is invalid: NVTX ranges need runtime=cuda"):
        validate(_compose("profile.nvtx=true"))
    with pytest.raises(ConfigError, match=r"^hardware\.dtype='float16' is invalid: measured has no matmul peak"):
        validate(_compose("hardware.dtype=float16"))
    with pytest.raises(ConfigError, match=r"^profile\.repeats=0 is invalid"):
        validate(_compose("profile.repeats=0"))
    validate(_compose("profile.nvtx=true", "profile=off"))  # NVTX of a profile that does not run: no objection
    validate(_compose("~hardware"))  # no roof: no roofline stage, nothing to check


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_measured_roof_of_a_missing_gpu_is_refused_before_calibrating():
    cfg = to_typed_config(_compose("runtime=cuda", "runtime.attn_implementation=sdpa"))
    with pytest.raises(ConfigError, match=r"^hardware=measured: runtime\.device='cuda': CUDA is not available"):
        check_hardware(cfg)


def test_datasheets_have_every_prediction_dtype():
    for name in ("h100_sxm", "rtx4090"):
        for dtype in ("bfloat16", "float16", "float32"):
            check_hardware(to_typed_config(_compose(f"hardware={name}", f"hardware.dtype={dtype}")))
