"""The declared fillers of what an older kernel-level version lacks, on the H200 calibration (version 5) and its
recorded run: from the recording when it is there, else the file's older figure kept and labelled, else a named
default, else the figure is named as missing; a file of the current version, or of a device the change does not
touch, keeps its figures."""

from __future__ import annotations

import copy
import json
import statistics
from pathlib import Path

import pytest

from llm_perf_opt.measure.calibrate_levels import LEVELS_VERSION
from llm_perf_opt.measure.level_fillers import (
    CONV_FIXED_PERCENTILE,
    FILLERS,
    GEMM_FIXED_PERCENTILE,
    MIN_KERNEL_PERCENTILE,
    WAVE_KERNEL_PERCENTILE,
    WAVE_KINDS,
    MissingFigure,
    fill_levels,
    known_levels_version,
    percentile,
)
from llm_perf_opt.measure.recorded_profile import read_recorded_profile, recordings_beside

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu" / "h200-2026-11-26"
H200 = DATA / "NVIDIA_H200-torch2.11.0+cu130-threads16-cuda.json"
TRACE = DATA / "twin_tiny-tiny" / "profile.trace.json.gz"


@pytest.fixture(scope="module")
def h200_levels():
    levels = json.loads(H200.read_text())["data"]["levels"]
    assert sorted(levels) == ["bfloat16", "float32"] and {lv["version"] for lv in levels.values()} == {5}
    return levels


@pytest.fixture(scope="module")
def recording():
    return [read_recorded_profile(TRACE)]


def test_the_table_declares_the_version_6_7_and_9_figures():
    assert [(f.figure, f.since, f.devices) for f in FILLERS] == [
        # 7: a one-block kernel's CUPTI duration, with the graph period beside it (`min_kernel_graph_s` marks it)
        ("min_kernel_s", 7, ("cuda",)),
        ("gemm_fixed_s", 6, ("cuda",)),  # measured by version-6 calibrations written since; earlier ones lack it
        ("conv_fixed_s", 7, ("cuda",)),  # measured by version-7 CUDA calibrations written since
        ("multiprocessors", 6, ("cuda",)),  # the same as gemm_fixed_s
        # measured by version-7 CUDA calibrations written since (`measure_wave_kernels`); earlier ones lack them
        *((f"wave_kernel_s.{kind}", 7, ("cuda",)) for kind in WAVE_KINDS),
        ("host.op_s", 9, ("cuda",)),  # 9: measured on the model's own eager forward (declared ahead)
    ]
    assert WAVE_KINDS == ("elementwise", "copy", "cast", "reduction")
    assert [f.present_with for f in FILLERS if f.present_with] == ["min_kernel_graph_s"]
    assert known_levels_version() == max(LEVELS_VERSION, 9)
    assert known_levels_version([]) == LEVELS_VERSION


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert [percentile(values, p) for p in (1, 5, 50, 100)] == [1.0, 5.0, 50.0, 100.0]
    assert percentile([3.0, 1.0, 2.0], 5) == 1.0


def test_a_version_5_cuda_file_with_its_recording(h200_levels, recording):
    lv = h200_levels["bfloat16"]
    out, filled = fill_levels(lv, "cuda", lambda: recording)
    waves = [f"wave_kernel_s.{kind}" for kind in WAVE_KINDS]
    assert sorted(filled) == sorted(
        ["conv_fixed_s", "gemm_fixed_s", "host.op_s", "min_kernel_s", "multiprocessors", *waves]
    )
    assert {f.origin for f in filled.values()} == {"recording"}
    # a one-wave small kernel's device time, per kind: the median of the recorded ones, above the shortest kernel's;
    # a strided copy and a norm take twice to thrice a cast (the tiny twin's forward on an H200)
    for kind in WAVE_KINDS:
        durations = recording[0].wave_kernel_s[kind]
        assert len(durations) >= 20 and out["wave_kernel_s"][kind] == percentile(durations, WAVE_KERNEL_PERCENTILE)
        assert (
            f"one-wave {kind} kernel durations" in out["wave_kernel_op"][kind] == filled[f"wave_kernel_s.{kind}"].source
        )
    wave = out["wave_kernel_s"]
    # a one-block kernel and a one-wave cast both ~1.1 µs; a strided copy and a norm two to three times that
    assert max(out["min_kernel_s"], wave["cast"]) < 1.5e-6 < wave["copy"] < wave["reduction"] < 4e-6
    assert out["multiprocessors"] == recording[0].multiprocessors == 132  # an H200's, as its trace names them
    kernels = sorted(recording[0].kernel_s)
    gemms = recording[0].gemm_kernel_s
    assert 50 <= len(gemms) < len(kernels)
    # the shortest GEMMs' device time: above the shortest kernels' (a GEMM's fixed cost), a few µs on the H200
    assert out["gemm_fixed_s"] == percentile(gemms, GEMM_FIXED_PERCENTILE)
    assert out["min_kernel_s"] < out["gemm_fixed_s"] < 4e-6
    assert out["gemm_fixed_op"] == filled["gemm_fixed_s"].source and "GEMM kernel durations" in out["gemm_fixed_op"]
    # a one-block kernel's device time: the median of the recorded one-block small kernels (a decode row's add, cast,
    # copy), above the shortest kernels (0.6-0.7 µs fills), under the graph-timed 1.55 µs of 2026-11-27
    blocks = recording[0].block_kernel_s
    assert 100 <= len(blocks) < len(kernels) and percentile(kernels, 5) < out["min_kernel_s"]
    assert out["min_kernel_s"] == percentile(blocks, MIN_KERNEL_PERCENTILE) and 1.0e-6 < out["min_kernel_s"] < 1.3e-6
    # the host's cost per op the model's forward called (pooled over the one run: its own), marked per op
    assert out["host"]["op_s"] == pytest.approx(recording[0].host_per_op_s()) and out["host"]["op_unit"] == "op"
    assert out["host"]["op_s"] > recording[0].host_per_kernel_s() > lv["host"]["op_s"]
    assert out["min_kernel_op"] == filled["min_kernel_s"].source
    assert f"{len(blocks)} one-block small kernel durations" in out["min_kernel_op"]
    # a convolution call's fixed device time: the median of the recorded calls (SAM's: the patch embedding, a 1 x 1
    # neck cuDNN runs as one GEMM, three 3 x 3 with cuDNN's layout transforms), ~10 µs where each call's work at the
    # GEMM rate is under 2 µs
    convs = recording[0].conv_call_s
    assert len(convs) == 5 and out["conv_fixed_s"] == percentile(convs, CONV_FIXED_PERCENTILE)
    assert 8e-6 < out["conv_fixed_s"] < 11e-6 and "5 convolution calls' device times" in out["conv_fixed_op"]
    assert "twin_tiny-tiny/profile.trace.json.gz" in out["min_kernel_op"] and "device-only" in out["min_kernel_op"]
    assert out["host"]["op_module"] == filled["host.op_s"].source and "CPU op events" in out["host"]["op_module"]
    assert lv["min_kernel_s"] == 7.722976207733155e-06  # the file's figures are not touched
    # every other figure as the file has it
    same = [k for k in lv if k not in ("min_kernel_s", "min_kernel_op", "host", "wave_kernel_s", "wave_kernel_op")]
    assert len(same) == 13 and all(out[k] == lv[k] for k in same)
    host_same = [k for k in lv["host"] if k not in ("op_s", "op_module")]
    assert len(host_same) == 10 and all(out["host"][k] == lv["host"][k] for k in host_same)


def test_a_version_5_cuda_file_alone_keeps_its_figures_labelled(h200_levels):
    lv = h200_levels["float32"]
    out, filled = fill_levels(lv, "cuda", lambda: [])
    assert {f: g.origin for f, g in filled.items()} == {
        "min_kernel_s": "older",
        "gemm_fixed_s": "default",  # no older figure of that name: the levels before it, named
        "conv_fixed_s": "default",
        "multiprocessors": "default",
        **{f"wave_kernel_s.{kind}": "default" for kind in WAVE_KINDS},  # the min kernel floors every small kernel
        "host.op_s": "older",
    }
    assert out["wave_kernel_s"] == dict.fromkeys(WAVE_KINDS, 0.0)
    assert all(op.startswith("named default 0: no recording") for op in out["wave_kernel_op"].values())
    assert out["gemm_fixed_s"] == 0.0 and out["gemm_fixed_op"].startswith("named default 0: no recording")
    assert out["conv_fixed_s"] == 0.0 and out["conv_fixed_op"].startswith("named default 0: no recording")
    assert out["multiprocessors"] == 0.0 and "no occupancy" in out["multiprocessors_op"]
    assert out["min_kernel_s"] == lv["min_kernel_s"] and out["host"]["op_s"] == lv["host"]["op_s"]
    assert "launch-bound" in out["min_kernel_op"] and "version-5 figure, kept" in out["min_kernel_op"]
    assert "no device launch" in out["host"]["op_module"]
    assert "op_unit" not in out["host"]  # a kept figure keeps its unit: per kernel


def test_the_host_figure_is_pooled_per_op_over_the_recorded_runs():
    from llm_perf_opt.measure.level_fillers import host_op_from_recording

    both = DATA.parent / "h200-2026-11-27"
    runs, _ = recordings_beside(next(both.glob("NVIDIA_H200*.json")), "NVIDIA H200")
    assert len(runs) == 5 and all(r.ops and r.profiled_traced_s for r in runs)
    got = host_op_from_recording(runs)
    # each op weighs the same: the full twin's forwards (3,308 and 4,570 ops, 20.4-20.9 µs an op) outweigh the tiny
    # twin's (482-696 ops, whose one plain wall each scales them: 23-30 µs)
    assert got.value == pytest.approx(sum(r.plain_host_s() for r in runs) / sum(r.ops for r in runs))
    per_run = sorted(r.host_per_op_s() for r in runs)
    assert per_run[0] < got.value < statistics.median(per_run) and 20e-6 < got.value < 23e-6
    assert "pooled over 5 run(s)" in got.source and "twin-gundam" in got.source and got.origin == "recording"


def test_a_named_default_stands_in_and_a_figure_without_any_source_is_named(h200_levels):
    lv = copy.deepcopy(h200_levels["bfloat16"])
    del lv["host"]["op_s"]
    out, filled = fill_levels(lv, "cuda", lambda: [])
    assert filled["host.op_s"].origin == "default" and out["host"]["op_s"] == lv["host"]["dispatch_s"]
    assert out["host"]["op_module"].startswith("named default host.dispatch_s")
    del lv["min_kernel_s"]
    with pytest.raises(MissingFigure) as err:
        fill_levels(lv, "cuda", lambda: [])
    assert err.value.figure == "min_kernel_s" and "absent from the file" in err.value.why


def test_a_current_file_and_a_cpu_file_keep_their_figures(h200_levels):
    def no_recording():
        raise AssertionError("the recording is read only when a figure needs it")

    current = dict(
        copy.deepcopy(h200_levels["bfloat16"]),
        version=known_levels_version(),
        gemm_fixed_s=2.2e-6,
        gemm_fixed_op="x",
        conv_fixed_s=9e-6,
        conv_fixed_op="x",
        min_kernel_s=1.1e-6,
        min_kernel_graph_s=1.5e-6,
        multiprocessors=132,
        wave_kernel_s=dict.fromkeys(WAVE_KINDS, 2e-6),
        wave_kernel_op=dict.fromkeys(WAVE_KINDS, "x"),
    )
    assert fill_levels(current, "cuda", no_recording) == (current, {})
    # on the CPU a version-5 figure already means the version-6 thing: min kernel 0 by convention, the host is the
    # device
    # device; a figure the CPU file lacks (gemm_fixed_s) stays absent: the CPU has none (`DeviceFigures`)
    cpu = copy.deepcopy(h200_levels["float32"])
    assert fill_levels(cpu, "cpu", no_recording) == (cpu, {})


def test_a_version_7_cuda_file_without_the_graph_marker_takes_its_min_kernel_from_its_recording(h200_levels, recording):
    # written before the min kernel was the CUPTI duration of a one-block kernel: its min_kernel_s is a graph's period
    lv = dict(copy.deepcopy(h200_levels["bfloat16"]), version=7, min_kernel_s=1.55e-6)
    out, filled = fill_levels(lv, "cuda", lambda: recording)
    assert filled["min_kernel_s"].origin == "recording" and out["min_kernel_s"] < 1.3e-6
    alone, filled = fill_levels(lv, "cuda", lambda: [])
    assert filled["min_kernel_s"].origin == "older" and alone["min_kernel_s"] == 1.55e-6
    assert "version-7 figure, kept" in alone["min_kernel_op"] and "period of a CUDA graph" in alone["min_kernel_op"]
    # with the marker: the figure as the file has it
    marked = dict(lv, min_kernel_graph_s=1.55e-6, min_kernel_s=1.1e-6)
    out, filled = fill_levels(marked, "cuda", lambda: recording)
    assert "min_kernel_s" not in filled and out["min_kernel_s"] == 1.1e-6


def test_a_version_6_file_written_before_the_gemm_fixed_time_takes_it_from_its_recording():
    from llm_perf_opt.measure.calibration_file import read_calibration_file

    path = DATA.parent / "h200-2026-11-27" / "NVIDIA_H200-torch2.11.0+cu130-threads16-cuda.json"
    raw = json.loads(path.read_text())["data"]["levels"]["bfloat16"]
    assert raw["version"] == 6 and "gemm_fixed_s" not in raw
    cal = read_calibration_file(path)
    got = cal.filled["bfloat16"]["gemm_fixed_s"]
    gemms = [d for trace in cal.recordings for d in read_recorded_profile(trace).gemm_kernel_s]
    assert got.origin == "recording" and len(cal.recordings) == 5 and len(gemms) > 1000
    assert got.value == percentile(gemms, GEMM_FIXED_PERCENTILE) == cal.data["levels"]["bfloat16"]["gemm_fixed_s"]
    assert 1.5e-6 < got.value < 3e-6 and f"{len(gemms):,} GEMM kernel durations" in got.source


def test_launch_bound_figures_of_a_version_5_cuda_file(h200_levels):
    from llm_perf_opt.measure.level_fillers import LAUNCH_BOUND, LAUNCH_BOUND_FACTOR, LaunchBound, launch_bound

    lv = h200_levels["bfloat16"]
    out, bound = launch_bound(lv, "cuda")
    assert {f.origin for f in bound.values()} == {"launch-bound"}
    # the attention rows are all within 1.5x of the fastest SDPA call (29.4-41.1 µs): labelled, kept
    assert out["attention"] == lv["attention"] and bound["attention"].value == 5 and "kept" in bound["attention"].source
    aside, _ = launch_bound(lv, "cuda", (LaunchBound("attention", "own", True, "the GEMM curve"),))
    assert aside["attention"] == [] and aside["attention_launch_bound"] == lv["attention"]
    # the small and medium add (within 1.5x of the 1-element add) and the small and medium copy: set aside, the large
    # tier's bandwidth stands in; the large tiers as they are
    assert "elementwise.small.bytes_per_s" in bound and "elementwise.medium.bytes_per_s" in bound
    assert "elementwise.large.bytes_per_s" not in bound and "copy.small.bytes_per_s" in bound
    for kind in ("elementwise", "copy"):
        large = lv[kind]["large"]["bytes_per_s"]
        assert out[kind]["large"] == lv[kind]["large"]
        assert [out[kind][t]["bytes_per_s"] for t in bound_tiers(bound, kind)] == [large] * len(
            bound_tiers(bound, kind)
        )
    assert out["elementwise"]["small"]["bytes_per_s"] > 10 * lv["elementwise"]["small"]["bytes_per_s"]
    fastest = min(g["seconds"] for g in lv["gemm"])
    left = [g for g in lv["gemm"] if g["seconds"] <= LAUNCH_BOUND_FACTOR * fastest]
    assert bound["gemm"].value == len(left) == 25 and "upper bounds" in bound["gemm"].source
    assert out["gemm_launch_bound"] == left and len(out["gemm"]) == len(lv["gemm"]) - 25
    # measured per kind (the table's comment): the stand-in is nearer the device time for all but attention
    assert [r.figure for r in LAUNCH_BOUND if r.set_aside] == ["elementwise", "copy", "gemm"]
    # a device-timed file (version 6) and a CPU file as they are
    assert launch_bound({**lv, "version": 6}, "cuda") == ({**lv, "version": 6}, {})
    assert launch_bound(lv, "cpu") == (lv, {})


def bound_tiers(bound, kind):
    return [f.split(".")[1] for f in bound if f.startswith(kind + ".")]


def test_a_set_aside_gemm_row_leaves_the_rows_and_keeps_the_fixed_cost_floor(h200_levels):
    from llm_perf_opt.analytic.time.figures import device_from_calibration
    from llm_perf_opt.measure.level_fillers import LaunchBound, launch_bound

    lv = h200_levels["bfloat16"]
    out, _ = launch_bound(lv, "cuda", (LaunchBound("gemm", "own", True, "left out"),))
    dev = device_from_calibration(out, "h200", False, 1e12)
    assert [m for m, _ in dev.gemm_rows] == [1024, 4096]  # rows 1..256 had only launch-bound points
    # the 3x fixed-cost floor is the fastest call's, the set-aside ones included: 46-178 µs products kept
    assert [x for x, _ in dev.gemm] == [1365.333333, 2730.666667]
    assert "25 launch-bound shape(s) set aside" in dev.sources["gemm"]
