"""Replay of every recorded run's kernel counts and activation bytes (`./dev test -k replay`): the analytic model of the
run's own configuration (model, workload, batch, dtype, runtime with its autocast and GPU, read from its summary),
built here on the CPU, against the rows the run recorded from TorchLens on its device (`measure.replay`).

On the H200 recording these rows failed as recorded (commit 4cd2452: the cost formulas knew nothing of CUDA):
kernel counts 25 of 317 rows on each tiny-twin run (Tiny, Base, Gundam, and twin_tiny-tiny), 238 of 2,574 on the full
twin; activation bytes 6 of 10 parts on each tiny-twin run, 15 of 19 on the full twin. Replayed with CUDA autocast's
casts and float32 results and what SDPA does on CUDA (`analytic.autocast`, `analytic.execution`), every kernel row is
equal and every activation row within rtol (exact but for Gundam's whole forward: the crops' re-tiling reshape copies,
which TorchLens records as a view, 76,800 B of 1.13 GB, as on the CPU).

A run that finished without a verification, or no recording at all, fails here: recorded data never skips."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_perf_opt.measure.recorded_runs import recorded_runs
from llm_perf_opt.measure.replay import replay_activation_rows, replay_kernel_rows
from llm_perf_opt.prepare.builders import analytic_model_of_run

GPU_DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"
RUNS = recorded_runs(GPU_DATA)  # no data: an ArtifactError at collection, loud
CHECKED = [r for r in RUNS if r.file("verification.json") is not None]


def _ids(runs):
    return [r.label for r in runs]


def test_replay_every_finished_run_has_its_verification():
    finished = [r.label for r in RUNS if r.status == "ok"]
    assert finished and sorted(finished) == sorted(r.label for r in CHECKED), "a finished run lost its verification"
    covered = {(r.model, r.mode, r.summary.runtime.device) for r in CHECKED}
    # the configurations issue 31 names: the tiny twin in Tiny, Base and Gundam, the full twin in Tiny, on CUDA
    assert {("twin_tiny", m, "cuda") for m in ("tiny", "base", "gundam")} | {("twin", "tiny", "cuda")} <= covered


@pytest.fixture(scope="module")
def models():
    return {}


def _model(models, run):
    if run.label not in models:
        models[run.label] = analytic_model_of_run(run)
    return models[run.label]


@pytest.mark.parametrize("run", CHECKED, ids=_ids(CHECKED))
def test_replay_kernel_counts(run, models):
    recorded = run.verification().kernels
    assert recorded, f"{run.label}: verification.json has no kernel_counts rows"
    rows = replay_kernel_rows(_model(models, run), recorded)
    assert len(rows) == len(recorded) > 300
    bad = [r for r in rows if not r.ok]
    assert not bad, f"{run.label}: {len(bad)} of {len(rows)} rows differ, e.g. " + "; ".join(
        f"{r.stage} {r.step or ''} {r.part or '(total)'}: analytic {r.analytic} vs recorded {r.measured}"
        for r in bad[:5]
    )


@pytest.mark.parametrize("run", CHECKED, ids=_ids(CHECKED))
def test_replay_activation_bytes(run, models):
    v = run.verification()
    assert v.activation, f"{run.label}: verification.json has no activation_bytes rows"
    rows = replay_activation_rows(_model(models, run), v.activation, run.decode_steps, v.rtol)
    assert len(rows) == len(v.activation) >= 10 and rows[0].part == ""
    bad = [r for r in rows if not r.ok]
    assert not bad, f"{run.label}: " + "; ".join(
        f"{r.part or '(total)'}: analytic {r.analytic:,} vs recorded {r.materialised + r.unseen:,} "
        f"({r.rel_error:.2e} > rtol {v.rtol})"
        for r in bad
    )
    # every part exact; the whole forward within rtol (Gundam: the crops' re-tiling copy TorchLens calls a view)
    assert all(r.unexplained == 0 for r in rows[1:])


def test_replay_changes_only_cuda_rows(models):
    """The recorded rows that passed on the GPU still pass, and the CPU model of the same configuration would fail
    the recorded CUDA rows: the replay is sensitive to the execution (a test that cannot fail is a defect)."""
    from llm_perf_opt.analytic.execution import CPU

    run = next(r for r in CHECKED if r.model == "twin_tiny" and r.mode == "tiny")
    model = _model(models, run)
    cpu = type(model)(
        model.spec,
        model.layout,
        model.seq_len,
        dtype=model.dtype_bytes,
        decoder_attention=model.decoder_attention,
        execution=CPU,
    )
    v = run.verification()
    assert sum(1 for r in replay_kernel_rows(cpu, v.kernels) if not r.ok) > 20
    assert sum(1 for r in replay_activation_rows(cpu, v.activation, run.decode_steps, v.rtol) if not r.ok) >= 6
