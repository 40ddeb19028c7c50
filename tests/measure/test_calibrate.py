"""`hardware=measured`: calibration runs on this CPU (tiny sizes here), is cached per device and reused,
and fails with one line naming what went wrong, writing nothing."""

from __future__ import annotations

import json

import pytest
import torch
from roofline_helpers import compose_cfg

from llm_perf_opt.analytic.time.hardware import Hardware
from llm_perf_opt.config import to_typed_config
from llm_perf_opt.config.schemas import RuntimeConfig
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.measure.calibrate import (
    CALIBRATION_SCHEMA,
    LEVEL_DTYPES,
    CalibrationPlan,
    calibrate,
    hardware_for,
    level_keys,
    load_calibration,
    load_or_calibrate,
    measured_hardware,
    roof_for,
)

QUICK = CalibrationPlan.default("cpu", quick=True)


def test_cpu_calibration_measures_every_figure():
    cal = calibrate("cpu", QUICK)
    assert set(cal.matmul) == {"float32", "bfloat16"}
    for m in [*cal.matmul.values(), cal.bandwidth, cal.vector]:
        assert m.value > 0 and len(m.samples_s) == QUICK.repeats and m.warmup == QUICK.warmup
        assert m.statistic == "best" and m.value == pytest.approx(m.work / min(m.samples_s))
        assert "time.perf_counter" in m.timer
    n = int(cal.matmul["float32"].op.split("(")[1].split("x")[0])
    assert QUICK.gemm_min_n <= n <= QUICK.gemm_max_n
    assert cal.matmul["float32"].work == 2 * n**3  # 2 x n^3 FLOPs per n x n GEMM
    assert cal.bandwidth.work == 2 * QUICK.copy_bytes  # read + write
    assert cal.threads == torch.get_num_threads()
    hw = cal.hardware()
    assert isinstance(hw, Hardware) and hw.kind == "measured"
    assert hw.matmul_flops["bfloat16"] == cal.matmul["bfloat16"].value
    src = hw.sources["matmul.float32"]
    assert "warm-up" in src and "timed samples" in src and "the fastest" in src and "median" in src


def test_threads_are_applied_and_restored():
    before = torch.get_num_threads()
    cal = calibrate("cpu", QUICK, threads=1, matmul_keys=("float32",))
    assert cal.threads == 1 and torch.get_num_threads() == before


def test_the_cache_is_reused_until_recalibrate(tmp_path):
    logs: list[str] = []
    first, path, reused = load_or_calibrate("cpu", tmp_path, plan=QUICK, log=logs.append)
    assert not reused and path.parent == tmp_path and path.exists()
    doc = json.loads(path.read_text())
    assert doc["schema"] == CALIBRATION_SCHEMA and doc["schema_version"] == 1
    assert doc["data"]["torch_version"] == torch.__version__
    again, path2, reused2 = load_or_calibrate("cpu", tmp_path, plan=QUICK)
    assert reused2 and path2 == path
    assert again.to_dict() == first.to_dict() == load_calibration(path).to_dict()
    fresh, path3, reused3 = load_or_calibrate("cpu", tmp_path, plan=QUICK, recalibrate=True)
    assert not reused3 and path3 == path
    assert load_calibration(path).to_dict() == fresh.to_dict() != first.to_dict()
    # one file per device, torch version, threads and plan
    _, other, _ = load_or_calibrate("cpu", tmp_path, plan=QUICK, threads=1)
    assert other != path and "threads1" in other.name and len(list(tmp_path.glob("*.json"))) == 2


def test_recalibrate_measures_once_per_process(tmp_path):
    """`hardware.recalibrate=true`: a job reads its calibration for its roof and again for its levels' figures; the
    second read is the calibration the first measured (the file not rewritten), where it used to measure a second
    one and price the levels on it."""
    cfg = to_typed_config(
        compose_cfg(
            "hardware=measured", "hardware.quick=true", "hardware.recalibrate=true", f"hardware.cache_dir={tmp_path}"
        )
    )
    logs: list[str] = []
    _, cal, path, reused = measured_hardware(cfg.hardware, cfg.runtime, logs.append)
    assert not reused and path.exists() and logs
    written = path.stat().st_mtime_ns
    logs.clear()
    _, again, path2, reused2 = measured_hardware(cfg.hardware, cfg.runtime, logs.append)
    assert again is cal and path2 == path and not reused2 and not logs and path.stat().st_mtime_ns == written
    # without recalibrate the job reads the cache, which is that calibration
    plain = to_typed_config(compose_cfg("hardware=measured", "hardware.quick=true", f"hardware.cache_dir={tmp_path}"))
    _, cached, path3, reused3 = measured_hardware(plain.hardware, plain.runtime)
    assert reused3 and path3 == path and cached.to_dict() == cal.to_dict()


def test_a_dtype_a_job_needs_is_added_to_the_cached_file(tmp_path):
    """On the CPU a job calibrates the kernel-level and host figures of its own dtype only; a later job in another
    dtype adds its figures to the same file, measured then, the roof and the first dtype's figures kept as cached;
    `./dev calibrate` (level_dtypes None) wants every dtype."""
    first, path, reused = load_or_calibrate("cpu", tmp_path, plan=QUICK, level_dtypes=("bfloat16",))
    assert not reused and sorted(first.levels) == ["bfloat16"] and sorted(first.matmul) == ["bfloat16", "float32"]
    logs: list[str] = []
    both, path2, reused2 = load_or_calibrate("cpu", tmp_path, plan=QUICK, level_dtypes=("float32",), log=logs.append)
    assert reused2 and path2 == path and sorted(both.levels) == ["bfloat16", "float32"]
    assert [line for line in logs if "measuring them now" in line] == [
        f"{path} has no kernel-level figures for float32: measuring them now"
    ]
    kept = {k: v for k, v in both.to_dict().items() if k != "levels"}
    assert kept == {k: v for k, v in first.to_dict().items() if k != "levels"}
    assert both.levels["bfloat16"] == first.levels["bfloat16"]
    assert load_calibration(path).to_dict() == both.to_dict()
    logs.clear()
    again, _, _ = load_or_calibrate("cpu", tmp_path, plan=QUICK, level_dtypes=("float32", "bfloat16"), log=logs.append)
    assert again.to_dict() == both.to_dict() and not [line for line in logs if "measuring" in line]
    assert level_keys("cpu", CalibrationPlan.default("cpu")) == LEVEL_DTYPES == ("float32", "bfloat16")
    assert level_keys("cpu", CalibrationPlan.default("cpu"), ("bfloat16", "bfloat16")) == ("bfloat16",)
    assert level_keys("cuda", CalibrationPlan.default("cuda"), ("bfloat16",)) == LEVEL_DTYPES


def test_an_unknown_cache_version_is_measured_again(tmp_path):
    _, path, _ = load_or_calibrate("cpu", tmp_path, plan=QUICK)
    doc = json.loads(path.read_text())
    doc["schema_version"] = 99
    path.write_text(json.dumps(doc))
    logs: list[str] = []
    _, path2, reused = load_or_calibrate("cpu", tmp_path, plan=QUICK, log=logs.append)
    assert not reused and path2 == path and json.loads(path.read_text())["schema_version"] == 1
    assert any("schema_version 99 is unknown" in line for line in logs)


def test_a_cache_of_an_older_levels_version_is_measured_again_with_one_line(tmp_path):
    # this machine's own cache is measured again (a file given by path never is: test_calibration_file.py)
    from llm_perf_opt.measure.calibrate_levels import LEVELS_VERSION

    _, path, _ = load_or_calibrate("cpu", tmp_path, plan=QUICK)
    doc = json.loads(path.read_text())
    assert [lv["version"] for lv in doc["data"]["levels"].values()] == [LEVELS_VERSION]
    for lv in doc["data"]["levels"].values():
        lv["version"] = LEVELS_VERSION - 1
    path.write_text(json.dumps(doc))
    logs: list[str] = []
    fresh, path2, reused = load_or_calibrate("cpu", tmp_path, plan=QUICK, log=logs.append)
    assert not reused and path2 == path
    assert [lv["version"] for lv in json.loads(path.read_text())["data"]["levels"].values()] == [LEVELS_VERSION]
    notes = [line for line in logs if "calibrating again" in line]
    assert notes == [
        f"{path} holds kernel-level and host figures of version [{LEVELS_VERSION - 1}], this code measures version "
        f"{LEVELS_VERSION}: calibrating again"
    ]


def test_a_cpu_cache_of_this_version_without_the_figures_added_within_it_is_measured_again(tmp_path):
    from llm_perf_opt.measure.calibrate_levels import CPU_MARKS, LEVELS_VERSION

    _, path, _ = load_or_calibrate("cpu", tmp_path, plan=QUICK)
    doc = json.loads(path.read_text())
    assert all(mark in lv for lv in doc["data"]["levels"].values() for mark in CPU_MARKS)
    for lv in doc["data"]["levels"].values():
        del lv[CPU_MARKS[0]]
    path.write_text(json.dumps(doc))
    logs: list[str] = []
    fresh, _, reused = load_or_calibrate("cpu", tmp_path, plan=QUICK, log=logs.append)
    assert not reused and all(CPU_MARKS[0] in lv for lv in fresh.levels.values())
    assert [line for line in logs if "calibrating again" in line] == [
        f"{path} holds kernel-level and host figures of version [{LEVELS_VERSION}], this code measures version "
        f"{LEVELS_VERSION} with the CPU figures added within it: calibrating again"
    ]
    assert load_or_calibrate("cpu", tmp_path, plan=QUICK)[2]  # then reused


def test_a_median_era_cache_is_measured_again(tmp_path):
    # calibrations cached before the roof took the fastest sample have no `statistic`: a median under
    # load is not a roof, so they are not reused
    _, path, _ = load_or_calibrate("cpu", tmp_path, plan=QUICK)
    doc = json.loads(path.read_text())
    del doc["data"]["plan"]["statistic"]
    for m in [*doc["data"]["matmul"].values(), doc["data"]["bandwidth"], doc["data"]["vector"]]:
        del m["statistic"]
    path.write_text(json.dumps(doc))
    old = load_calibration(path)
    assert old.plan.statistic == "median" and old.bandwidth.statistic == "median"
    assert "the median" in old.hardware().sources["bandwidth"]
    logs: list[str] = []
    fresh, _, reused = load_or_calibrate("cpu", tmp_path, plan=QUICK, log=logs.append)
    assert not reused and fresh.plan.statistic == "best"
    assert any("another device, torch, thread count or plan" in line for line in logs)


def test_measured_config_gives_the_roof_of_the_runtime_dtype(tmp_path):
    cfg = to_typed_config(
        compose_cfg("hardware=measured", "hardware.quick=true", f"hardware.cache_dir={tmp_path}", "runtime=cpu_bf16")
    )
    hw = hardware_for(cfg)
    roof = roof_for(cfg, hw)
    assert roof.kind == "measured" and roof.dtype == "bfloat16" and roof.matmul_flops == hw.matmul_flops["bfloat16"]
    assert len(list(tmp_path.glob("*.json"))) == 1


@pytest.mark.parametrize(
    "overrides, needle",
    [
        (["hardware.dtype=float16"], "hardware.dtype='float16' is invalid: measured has no matmul peak for float16"),
        (["hardware.allow_tf32=true"], "hardware.allow_tf32=True is invalid: measured has no matmul peak for tf32"),
    ],
)
def test_a_dtype_the_cpu_roof_has_no_peak_for(tmp_path, overrides, needle):
    cfg = to_typed_config(
        compose_cfg("hardware=measured", "hardware.quick=true", f"hardware.cache_dir={tmp_path}", *overrides)
    )
    with pytest.raises(ConfigError) as err:
        roof_for(cfg, hardware_for(cfg))
    assert needle in str(err.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the failure on a machine without CUDA")
def test_calibration_failure_is_one_line_and_writes_nothing(tmp_path, no_files_under):
    hw_cfg = to_typed_config(compose_cfg("hardware=measured", f"hardware.cache_dir={tmp_path / 'cache'}")).hardware
    with pytest.raises(ConfigError) as err:
        measured_hardware(hw_cfg, RuntimeConfig(device="cuda", dtype="bfloat16"))
    message = str(err.value)
    assert message.startswith("hardware=measured: runtime.device='cuda': CUDA is not available") and "\n" not in message
    no_files_under(tmp_path)


def test_an_unwritable_cache_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    hw_cfg = to_typed_config(
        compose_cfg("hardware=measured", "hardware.quick=true", f"hardware.cache_dir={blocker}")
    ).hardware
    with pytest.raises(ConfigError, match=r"^hardware=measured: calibrating runtime.device='cpu' failed: "):
        measured_hardware(hw_cfg, RuntimeConfig())
    assert blocker.read_text() == "not a directory"


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_calibration_uses_cuda_events():
    tf32_before = torch.backends.cuda.matmul.allow_tf32
    cal = calibrate("cuda", CalibrationPlan.default("cuda", quick=True))
    assert set(cal.matmul) == {"bfloat16", "float16", "float32", "tf32"}
    assert all("torch.cuda.Event" in m.timer for m in [*cal.matmul.values(), cal.bandwidth, cal.vector])
    assert all(m.value > 0 for m in [*cal.matmul.values(), cal.bandwidth, cal.vector])
    assert cal.vector.op.startswith("jiterator kernel")  # compute-bound vector kernel, not an eager op
    assert "(allow_tf32)" in cal.matmul["tf32"].op and "allow_tf32" not in cal.matmul["float32"].op
    assert cal.memory_bytes and cal.memory_bytes > 0
    assert torch.backends.cuda.matmul.allow_tf32 == tf32_before  # restored


@pytest.mark.parametrize("given", [True, False])
def test_every_calibration_follows_the_one_cache_rule(tmp_path, monkeypatch, given):
    """`hardware.cache_dir` when given, else $LLM_PERF_OPT_CALIBRATION_DIR (config.paths.calibration_dir): the
    measured roof, and the calibrated roof a datasheet job adds for its efficiencies, both calibrate there."""
    from llm_perf_opt.trace import roofline as roofline_stage

    monkeypatch.setenv("LLM_PERF_OPT_CALIBRATION_DIR", str(tmp_path / "env"))
    args = (f"hardware.cache_dir={tmp_path / 'given'}",) if given else ()
    where = tmp_path / ("given" if given else "env")
    _, path, _ = load_or_calibrate(
        "cpu", to_typed_config(compose_cfg("hardware=measured", *args)).hardware.cache_dir, plan=QUICK
    )
    assert path.parent == where
    seen = []

    def stop(hardware, runtime, log):
        seen.append(hardware.cache_dir)
        raise ConfigError("stop here")

    monkeypatch.setattr(roofline_stage, "measured_hardware", stop)
    with pytest.raises(ConfigError, match="stop here"):
        roofline_stage.job_roofs(to_typed_config(compose_cfg("hardware=h100_sxm", *args)), profiled=True)
    assert seen == ([str(where)] if given else [None])  # None: the rule, resolved where the cache is opened


def test_a_calibration_says_when_the_machine_was_loaded(tmp_path):
    """The load while it measured is kept in the file; a CPU calibration measured with more runnable threads than
    CPUs carries one line saying so in its hardware notes and in the job's log when it is made or reused."""
    logs: list[str] = []
    cal, path, _ = load_or_calibrate("cpu", tmp_path, plan=QUICK, threads=1, log=logs.append)
    assert set(cal.load) == {"before", "after", "cpus"} and cal.load["cpus"] >= 1
    assert load_calibration(path).load == cal.load
    data = json.loads(path.read_text())
    for load, loaded in ((0.5, False), (data["data"]["load"]["cpus"] + 4.0, True)):
        data["data"]["load"] = {"before": load, "after": 0.0, "cpus": cal.load["cpus"]}
        path.write_text(json.dumps(data))
        logs.clear()
        again, _, reused = load_or_calibrate("cpu", tmp_path, plan=QUICK, threads=1, log=logs.append)
        note = again.loaded_note()
        assert reused and bool(note) == loaded and (note in again.hardware().notes) == loaded
        assert (logs == [f"{path}: {note}"]) if loaded else logs == [], logs
        if loaded:
            assert f"load {load:.1f} on {cal.load['cpus']} CPUs" in note and "recalibrate" in note


def test_a_cuda_calibration_without_its_marks_is_not_current():
    """The recorded H200 calibrations: 16:35's (its medium and large tiers timed one call per CUDA graph, kept as
    recorded) lacks `tiers_single`, so a cache like it is measured again; 16:48's has it (`CUDA_MARKS`)."""
    import gzip
    from pathlib import Path

    from llm_perf_opt.measure.calibrate import Calibration, _levels_current
    from llm_perf_opt.measure.calibrate_levels import CUDA_MARKS, LEVELS_VERSION

    gpu = Path(__file__).resolve().parents[1] / "data" / "gpu"
    name = "NVIDIA_H200-torch2.11.0+cu130-threads16-cuda"
    fixed = json.loads((gpu / "h200-2026-11-27-1648" / f"{name}.json").read_text())["data"]
    with gzip.open(gpu / "h200-2026-11-27-1635" / f"{name}.as-recorded.json.gz", "rt") as fh:
        flawed = json.load(fh)["data"]
    checked = 0
    for data, current in ((fixed, True), (flawed, False)):
        cal = Calibration.from_dict(data)
        assert cal.device.startswith("cuda") and {int(v["version"]) for v in cal.levels.values()} == {LEVELS_VERSION}
        assert all((CUDA_MARKS[0] in v) == current for v in cal.levels.values())
        assert _levels_current(cal) is current
        checked += 1
    assert checked == 2
