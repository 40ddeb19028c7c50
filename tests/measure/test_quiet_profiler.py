"""A profiled forward prints no Kineto `USDT: ... profiler_start/stop` lines (measure.kineto_log), and a
user's own KINETO_LOG_LEVEL is kept. Each case runs in a fresh interpreter: Kineto reads its threshold
once per process, at the first profiler session, and the lines go to the process' stderr (C++)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCRIPT = """
import torch
from torch import nn
from llm_perf_opt.config.schemas import ProfileConfig
from llm_perf_opt.measure.profile import ForwardCall, profile_forward
model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
times = profile_forward(ForwardCall(model, {"input": torch.ones(2, 4)}), ProfileConfig(warmup=0, repeats=2),
                        parts={"first": "0"})
print("profiled", len(times.calls) if hasattr(times, "calls") else "ok")
"""


def _run(env_level: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KINETO_LOG_LEVEL"}
    if env_level is not None:
        env["KINETO_LOG_LEVEL"] = env_level
    return subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.slow
def test_profiled_forward_prints_no_usdt_lines():
    proc = _run(None)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "profiled" in proc.stdout
    assert "USDT" not in proc.stderr and "profiler_start" not in proc.stderr, proc.stderr[-1000:]


@pytest.mark.slow
def test_a_users_kineto_level_is_kept():
    """KINETO_LOG_LEVEL=3 (STAGE) is the user's: Kineto then prints its stages and the USDT markers, which
    also shows that the lines the first test does not see are really Kineto's and really silenced."""
    proc = _run("3")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "profiler_start" in proc.stderr and "Completed Stage" in proc.stderr
