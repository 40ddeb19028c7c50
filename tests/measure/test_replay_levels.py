"""Replay of the time levels on every recorded batch-1 CUDA run (`./dev test -k replay`; issue 31 item 5): the
analytic model of the run's own configuration, its kernels that ran (the routed experts its recorded routing left
idle taken off: `measure.replay.recorded_unrouted`, `levels_stage.stages_that_ran`), on the recording's own
calibration (`hardware=measured hardware.calibration=FILE`, older versions completed by `measure.level_fillers`),
against the times the run measured (its summary's `roofline.levels`, `levels_stage.MEASURED_BY`); the ratios are
`benchmarks/replay_levels.py`'s (`./dev bench replay_levels` prints them all):

* kernel level / measured device time (profiled module ranges' kernel time) for every part holding >= 5% of its
  stage's device time;
* eager level / measured wall (fastest plain forward) for the prefill and decode step 1.

Target (item 5): every unit within 25%. Units that do not meet it yet are listed in `GAPS` with the bound they
achieve today and why: the bound asserted for them is that one, never a looser one, so a regression still fails."""

from __future__ import annotations

from pathlib import Path

import pytest
from shared_runs import load_benchmark

from llm_perf_opt.measure.recorded_runs import recordings

GPU_DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"
REPLAY = load_benchmark("replay_levels")  # the ratios it prints: `./dev bench replay_levels`
TARGET = REPLAY.BOUND
assert recordings(GPU_DATA)  # no data: an ArtifactError at collection, loud
CASES = REPLAY.replay_cases(GPU_DATA)

# (run label, unit) -> the |ratio - 1| it achieves today, above the target. Every kernel-level unit is within it since
# the one-wave small-kernel times (`DeviceFigures.wave_kernel`, filled for both files from their recordings: a
# strided copy ~2.7 µs, a norm ~3.5 µs, where the shortest kernel is ~1 µs): 56 -> 77 of 80 units, median
# |ratio - 1| 0.168 -> 0.103; then the min kernel as a one-block kernel's own device time (CUPTI, ~1.1 µs; the
# 2026-11-27 file's 1.55 µs was a CUDA graph's period, each kernel + the gap to the next: its tiny twin's decode step
# 1.19-1.24 -> 0.98-1.01) and a convolution call's fixed device time (`DeviceFigures.conv_fixed_s`: cuDNN's layout
# transforms + its kernel, ~10 µs a call where the work is under 2 µs: SAM 0.77-0.89 -> 0.80-0.99 on the tiny twin):
# median 0.103 -> 0.073; then an autocast upcast at the copy kind's one-wave time (TensorIterator's casting copy, ~2.9
# µs, not the vectorized downcast's 1.1: the full twin's CLIP upcasts its layer norms' bf16 weights 196 times, 0.78
# -> 0.87-0.89): median 0.057; then the host figure filled from the recording scaled by the fastest plain / the
# *traced* profiled forward (it was scaled by the fastest profiled one, but the trace is the last round's: the
# 2026-11-26 tiny twin's per-kernel figure 25.3 -> 18.8 µs, the file's median 22.0 -> 18.4, both dates now ~18.4):
# the 2026-11-26 decode steps had looked right only by the inflated figure (0.93-1.04 -> 0.78-0.87); 77 -> 76 of 80,
# median 0.069; then the host's cost per op the code calls, not per kernel launched (`HostFigures.per_op`,
# `Kernels.op_count`: an op's inner kernels, autocast's casts, cuDNN's layout transforms, SDPA's memsets, are launched
# by the dispatcher inside it), filled per op from the recording (its traces' outermost ops that launched device
# work, within 1% of TorchLens' counts) and pooled over its runs: per op the full twin's prefill and its decode step
# are 1.18x apart (20.1-20.9 and 23.6-26.1 µs), per kernel 1.28x; decode steps 0.74-0.87 -> 0.83-0.94, 76 -> 77 of 80.
# Causes of what is left, the eager level of the tiny twin's prefill (host-bound): its plain walls differ between runs
# of the same forward far more than the predicted figures can (twin_tiny-tiny: 11.5 ms on 2026-11-26, 15.5 ms on
# 2026-11-27; the 2026-11-26 sweep's Tiny and Gundam runs, `profile.repeats=1`: one plain forward each, 20.5 and 29.6
# ms, where the same forwards' fastest elsewhere took 11.5 and 16.4 ms and the profiled ones 28.0 and 27.9 ms alike).
# The 2026-11-27 Tiny job's host ran slow throughout: its host pace (`measure.host_pace`, `test_host_pace`) is 1.50,
# every other traced run's 0.88-1.03; its three plain forwards agree (15.5-15.9 ms, and one at 24.2).
# The two recordings of 2026-11-27 16:35 and 16:48 replay on the second one's calibration (version 8, measured: see
# their READMEs; the first one's own file timed its medium and large tiers one call per CUDA graph, a bug). The full
# twin's CLIP in Gundam comes out at 0.72 of its device time there (0.87 on the 05:40 file): that calibration measures
# the one-wave small kernels itself (`measure_wave_kernels`: copy 1.6, reduction 2.24, elementwise 0.99 µs), where
# the model's own one-wave kernels of the same recording take 2.9, 3.6 and 1.3 µs (`wave_kernel_from_recording`, the
# figures the 05:40 file was filled with): the microbenchmark's 256-wide rows are not the model's kernels.
GAPS: dict[tuple[str, str], float] = {
    ("h200-2026-11-26/sweep-twin_tiny/0", "prefill eager/wall"): 0.50,  # ratio 0.50
    ("h200-2026-11-26/sweep-twin_tiny/2", "prefill eager/wall"): 0.49,  # ratio 0.52
    ("h200-2026-11-27/twin_tiny-tiny", "prefill eager/wall"): 0.28,  # ratio 0.72
    ("h200-2026-11-27-1635/twin-gundam", "vision/clip kernel/device"): 0.29,  # ratio 0.718
    ("h200-2026-11-27-1635/twin-gundam", "prefill/clip kernel/device"): 0.29,  # ratio 0.718
    ("h200-2026-11-27-1648/twin-gundam", "vision/clip kernel/device"): 0.29,  # ratio 0.716
    ("h200-2026-11-27-1648/twin-gundam", "prefill/clip kernel/device"): 0.29,  # ratio 0.716
}


_RATIOS: dict[str, dict[str, float]] = {}


def ratios_of(rec, run) -> dict[str, float]:
    """The run's ratios (`REPLAY.level_ratios`), computed once per process: the test over every recording reuses
    what the per-run tests of the same worker computed."""
    if run.label not in _RATIOS:
        _RATIOS[run.label] = REPLAY.level_ratios(rec, run)
    return _RATIOS[run.label]


@pytest.mark.parametrize("rec,run", CASES, ids=[run.label for _, run in CASES])
def test_replay_time_levels(rec, run):
    ratios = ratios_of(rec, run)
    # every stage's wall and its parts: SAM and CLIP in vision and the prefill, the decoder in the prefill and decode
    assert len(ratios) >= 8, ratios
    bad = {}
    for unit, r in ratios.items():
        bound = GAPS.get((run.label, unit), TARGET)
        if abs(r - 1) > bound:
            bad[unit] = round(r, 3)
    assert not bad, f"{run.label}: {bad} (all: { {u: round(r, 2) for u, r in ratios.items()} })"


# over every recording: the units within the target and the median |ratio - 1| today (`./dev bench replay_levels`'s
# last line); fewer, or a larger median, fails
WITHIN, MEDIAN = 129, 0.098  # 77 of 80 and 0.069 before the two recordings of 2026-11-27 16:35 and 16:48


def test_replay_time_levels_over_all_recordings_do_not_regress():
    import statistics

    errors = [abs(r - 1) for rec, run in CASES for r in ratios_of(rec, run).values()]
    assert len(errors) == 136
    assert sum(e <= TARGET for e in errors) >= WITHIN and statistics.median(errors) <= MEDIAN


def test_replay_time_levels_cover_the_item_5_runs():
    covered = {(run.recording, run.model, run.mode) for _, run in CASES}
    for rec in ("h200-2026-11-26", "h200-2026-11-27"):
        assert {(rec, "twin", "tiny")} | {(rec, "twin_tiny", m) for m in ("tiny", "base", "gundam")} <= covered
    assert ("h200-2026-11-27", "twin", "gundam") in covered
    for rec in ("h200-2026-11-27-1635", "h200-2026-11-27-1648"):  # the full twin on the fixed calibration
        assert {(rec, "twin", "tiny"), (rec, "twin", "gundam")} <= covered
