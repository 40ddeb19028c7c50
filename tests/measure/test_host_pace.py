"""`measure.host_pace`: each recorded run's host pace against its recording's other runs, on hand-made profiles (the
geometric mean by calls, names in one run only left out) and on the recorded H200 traces (`./dev test -k replay`):
the one run whose host ran slow is the tiny twin's 2026-11-27 Tiny job, the eager-level unit listed in
`test_replay_levels.GAPS` with its three consistent plain forwards."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from llm_perf_opt.measure.host_pace import host_paces
from llm_perf_opt.measure.recorded_profile import RecordedProfile, run_profile
from llm_perf_opt.measure.recorded_runs import recordings

GPU_DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"


def profile(run: str, ops: dict[str, tuple[int, float]]) -> RecordedProfile:
    return RecordedProfile(Path(run) / "profile.trace.json", "dev", (), 0.0, 0.0, outer_ops=ops)


def test_pace_is_the_call_weighted_geometric_mean_of_the_shared_ops():
    a = profile("a", {"aten::add": (3, 10e-6), "aten::linear": (1, 40e-6), "aten::only_here": (50, 1e-3)})
    b = profile("b", {"aten::add": (1, 20e-6), "aten::linear": (2, 40e-6)})
    c = profile("c", {"aten::add": (1, 40e-6), "aten::linear": (1, 80e-6)})
    paces = host_paces([a, b, c])
    assert len(paces) == 3
    # references: add median(10, 20, 40) = 20 µs, linear median(40, 40, 80) = 40 µs; only_here is in one run
    assert paces[Path("a")].pace == pytest.approx(math.exp((3 * math.log(0.5) + 1 * math.log(1.0)) / 4))
    assert (paces[Path("a")].ops, paces[Path("a")].names) == (4, 2)
    assert paces[Path("b")].pace == pytest.approx(1.0)
    assert paces[Path("c")].pace == pytest.approx(2.0)


def test_one_run_has_no_pace():
    assert host_paces([profile("a", {"aten::add": (3, 10e-6)})]) == {}


def test_replay_host_pace_names_the_slow_host_run():
    paces = {}
    for rec in recordings(GPU_DATA):
        profiles = [p for p in (run_profile(r.path) for r in rec.runs) if p is not None]
        for path, pace in host_paces(profiles).items():
            paces[f"{rec.name}/{path.relative_to(rec.path)}"] = pace
    # every run that kept its profile trace: 2 on 2026-11-26 (the sweep kept none), 5 on 2026-11-27 05:40, 5 at
    # 16:35 and 2 at 16:48
    assert len(paces) == 14, sorted(paces)
    slow = {label for label, p in paces.items() if p.pace > 1.25}
    want = {"h200-2026-11-27/twin_tiny-tiny", "h200-2026-11-27-1635/twin-tiny"}  # paces 1.50 and 1.40
    assert slow == want, {k: round(p.pace, 2) for k, p in paces.items()}
    assert all(paces[label].pace > 1.35 for label in want)
    assert all(0.8 < p.pace < 1.1 for label, p in paces.items() if label not in slow)
    assert all(p.names >= 50 and p.ops >= 700 for p in paces.values())
