"""`measure.allocator`: the allocator regime a process started with (read in real child processes, with and
without glibc's malloc tunables, and one set too late to count), its label and file tag, and a cached CPU calibration
measured under another regime measured again (`load_or_calibrate`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from llm_perf_opt.measure.allocator import DEFAULT, MALLOC_VARS, allocator_regime, regime_label, regime_tag
from llm_perf_opt.measure.calibrate import CalibrationPlan, load_calibration, load_or_calibrate

QUICK = CalibrationPlan.default("cpu", quick=True)
PRINT = (
    "import json; from llm_perf_opt.measure.allocator import allocator_regime; print(json.dumps(allocator_regime()))"
)


def regime_of_child(env: dict[str, str], code: str = PRINT) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in MALLOC_VARS}
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_a_child_started_with_glibcs_defaults():
    assert regime_of_child({}) == DEFAULT == {"allocator": "glibc malloc", "malloc": {}}
    assert regime_label(DEFAULT) == "glibc malloc, defaults" and regime_tag(DEFAULT) == "" == regime_tag({})


def test_a_child_started_with_tunables_and_one_set_too_late():
    tuned = regime_of_child({"MALLOC_MMAP_THRESHOLD_": "4294967296", "MALLOC_TRIM_THRESHOLD_": "4294967296"})
    assert tuned == {
        "allocator": "glibc malloc",
        "malloc": {"MALLOC_MMAP_THRESHOLD_": "4294967296", "MALLOC_TRIM_THRESHOLD_": "4294967296"},
    }
    assert regime_label(tuned) == ("glibc malloc, MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296")
    tag = regime_tag(tuned)
    assert tag.startswith("-alloc-") and len(tag) == len("-alloc-") + 8 and tag == regime_tag(dict(tuned))
    # glibc read its tunables at start-up: one put in os.environ afterwards does not change this process's malloc
    late = "import os; os.environ['MALLOC_TOP_PAD_'] = '1'; " + PRINT
    assert regime_of_child({}, late) == DEFAULT


def test_a_cached_calibration_of_another_regime_is_measured_again(tmp_path):
    regime = allocator_regime()
    first, path, reused = load_or_calibrate("cpu", tmp_path, plan=QUICK, level_dtypes=("float32",))
    assert not reused and first.allocator == regime and path.name.endswith(f"{regime_tag(regime)}.json")
    other = {"allocator": "jemalloc", "malloc": {}} if regime != {"allocator": "jemalloc", "malloc": {}} else DEFAULT
    doc = json.loads(path.read_text())
    doc["data"]["allocator"] = other
    path.write_text(json.dumps(doc))
    logs: list[str] = []
    again, path2, reused2 = load_or_calibrate("cpu", tmp_path, plan=QUICK, level_dtypes=("float32",), log=logs.append)
    assert path2 == path and not reused2 and again.allocator == regime == load_calibration(path).allocator
    moved = [line for line in logs if "was measured under" in line]
    assert len(moved) == 1 and regime_label(other) in moved[0] and regime_label(regime) in moved[0], logs
    _, _, reused3 = load_or_calibrate("cpu", tmp_path, plan=QUICK, level_dtypes=("float32",))
    assert reused3
