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

# (run label, unit) -> the |ratio - 1| it achieves today, above the target. Causes:
# - v5 (2026-11-26) kernel level: its small-size figures are launch-bound (CUDA events around back-to-back launches:
#   the host's launch rate, 7.7-14 µs per call); the elementwise, copy and GEMM ones are set aside, their stand-ins
#   nearer the device time per kernel, the attention points kept (`measure.level_fillers.LAUNCH_BOUND`); small
#   kernels then sit at the recorded min kernel (the 5th percentile, ~0.9 µs) where eager ones take 1-2.5 µs: SAM,
#   CLIP and the decoder at 0.6-0.9 of their device time;
# - SAM (both files): the patch-embed conv (cuDNN's implicit_convolve_sgemm, 49-944 µs, costed at the conv's
#   GEMM rate: 2-28 µs) and the rel-pos path's small kernels, costed too cheap on the tiny twin;
# - eager: one host cost per kernel (the model's own prefill, median of the runs) for kernels of every class; the
#   decode step's kernels cost the host ~24 µs, the prefill's MoE expert loop less.
GAPS: dict[tuple[str, str], float] = {
    ("h200-2026-11-26/sweep-twin_tiny/0", "vision/sam kernel/device"): 0.32,  # ratio 0.68
    ("h200-2026-11-26/sweep-twin_tiny/0", "vision/clip kernel/device"): 0.37,  # ratio 0.63
    ("h200-2026-11-26/sweep-twin_tiny/0", "prefill eager/wall"): 0.38,  # ratio 0.62
    ("h200-2026-11-26/sweep-twin_tiny/0", "prefill/sam kernel/device"): 0.32,  # ratio 0.68
    ("h200-2026-11-26/sweep-twin_tiny/0", "prefill/clip kernel/device"): 0.37,  # ratio 0.63
    ("h200-2026-11-26/sweep-twin_tiny/0", "prefill/decoder kernel/device"): 0.36,  # ratio 0.64
    ("h200-2026-11-26/sweep-twin_tiny/1", "vision/clip kernel/device"): 0.41,  # ratio 0.59
    ("h200-2026-11-26/sweep-twin_tiny/1", "prefill/clip kernel/device"): 0.41,  # ratio 0.59
    ("h200-2026-11-26/sweep-twin_tiny/1", "prefill/decoder kernel/device"): 0.32,  # ratio 0.68
    ("h200-2026-11-26/sweep-twin_tiny/2", "vision/clip kernel/device"): 0.39,  # ratio 0.62
    ("h200-2026-11-26/sweep-twin_tiny/2", "prefill eager/wall"): 0.35,  # ratio 0.66
    ("h200-2026-11-26/sweep-twin_tiny/2", "prefill/clip kernel/device"): 0.39,  # ratio 0.62
    ("h200-2026-11-26/twin-tiny", "vision/clip kernel/device"): 0.37,  # ratio 0.64
    ("h200-2026-11-26/twin-tiny", "prefill/clip kernel/device"): 0.37,  # ratio 0.64
    ("h200-2026-11-26/twin-tiny", "prefill/decoder kernel/device"): 0.37,  # ratio 0.63
    ("h200-2026-11-26/twin-tiny", "decode/decoder kernel/device"): 0.40,  # ratio 0.60
    ("h200-2026-11-26/twin_tiny-tiny", "vision/sam kernel/device"): 0.32,  # ratio 0.69
    ("h200-2026-11-26/twin_tiny-tiny", "vision/clip kernel/device"): 0.37,  # ratio 0.64
    ("h200-2026-11-26/twin_tiny-tiny", "prefill/sam kernel/device"): 0.32,  # ratio 0.69
    ("h200-2026-11-26/twin_tiny-tiny", "prefill/clip kernel/device"): 0.37,  # ratio 0.64
    ("h200-2026-11-26/twin_tiny-tiny", "prefill/decoder kernel/device"): 0.36,  # ratio 0.65
    ("h200-2026-11-27/twin_tiny-gundam", "vision/sam kernel/device"): 0.27,  # ratio 0.73
    ("h200-2026-11-27/twin_tiny-gundam", "prefill/sam kernel/device"): 0.27,  # ratio 0.73
    ("h200-2026-11-27/twin_tiny-tiny", "prefill eager/wall"): 0.29,  # ratio 0.71
}


@pytest.mark.parametrize("rec,run", CASES, ids=[run.label for _, run in CASES])
def test_replay_time_levels(rec, run):
    ratios = REPLAY.level_ratios(rec, run)
    # every stage's wall and its parts: SAM and CLIP in vision and the prefill, the decoder in the prefill and decode
    assert len(ratios) >= 8, ratios
    bad = {}
    for unit, r in ratios.items():
        bound = GAPS.get((run.label, unit), TARGET)
        if abs(r - 1) > bound:
            bad[unit] = round(r, 3)
    assert not bad, f"{run.label}: {bad} (all: { {u: round(r, 2) for u, r in ratios.items()} })"


def test_replay_time_levels_cover_the_item_5_runs():
    covered = {(run.recording, run.model, run.mode) for _, run in CASES}
    for rec in ("h200-2026-11-26", "h200-2026-11-27"):
        assert {(rec, "twin", "tiny")} | {(rec, "twin_tiny", m) for m in ("tiny", "base", "gundam")} <= covered
    assert ("h200-2026-11-27", "twin", "gundam") in covered
