"""`hardware=measured hardware.calibration=PATH`: a recorded calibration (the H200 file, kernel-level version 5, and
the recorded run beside it in tests/data/gpu/h200-2026-11-26/) read on this machine: its device and its host, older
figures filled from the recording or kept and labelled; never measured nor written. Every bad file is one line naming
the file and the field."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from roofline_helpers import compose_cfg

from llm_perf_opt.analytic.time.figures import time_model_for
from llm_perf_opt.config import to_typed_config
from llm_perf_opt.config.schemas import RuntimeConfig
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.measure.calibrate import check_hardware, hardware_for, measured_hardware, roof_for
from llm_perf_opt.measure.calibration_file import read_calibration_file
from llm_perf_opt.measure.levels_stage import job_time_model

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu" / "h200-2026-11-26"
H200 = DATA / "NVIDIA_H200-torch2.11.0+cu130-threads16-cuda.json"
RUN = DATA / "twin_tiny-tiny"


def _alone(tmp_path: Path) -> Path:
    """The H200 file copied alone (no recording beside it)."""
    (tmp_path / "alone").mkdir(exist_ok=True)
    return Path(shutil.copy(H200, tmp_path / "alone" / H200.name))


def _beside(tmp_path: Path) -> Path:
    """The H200 file with its recorded run beside it."""
    shutil.copytree(RUN, tmp_path / "beside" / RUN.name)
    return Path(shutil.copy(H200, tmp_path / "beside" / H200.name))


def _cfg(path: Path, *overrides: str):
    return to_typed_config(compose_cfg("hardware=measured", f"hardware.calibration={path}", *overrides))


def test_the_h200_file_alone_is_the_recorded_device_and_host(tmp_path):
    path = _alone(tmp_path)
    before = path.read_bytes()
    got = read_calibration_file(path)
    assert got.device_type == "cuda" and got.levels_versions == {"float32": 5, "bfloat16": 5}
    assert got.recordings == () and got.left_out == ()
    assert {o.origin for by in got.filled.values() for o in by.values()} == {"older", "launch-bound", "default"}
    # alone, the fixed GEMM time (which only a recording or a newer calibration gives) is the named default: none
    assert {by[f].origin for by in got.filled.values() for f in ("gemm_fixed_s", "multiprocessors")} == {"default"}
    cfg = _cfg(path, "runtime=cuda")  # the recorded run's runtime: bfloat16 under CUDA autocast
    check_hardware(cfg)  # no CUDA on this machine: nothing but the file is needed
    hw = hardware_for(cfg)
    roof = roof_for(cfg, hw)
    assert roof.dtype == "bfloat16" and roof.matmul_flops == json.loads(before)["data"]["matmul"]["bfloat16"]["value"]
    assert hw.label.startswith("NVIDIA H200 (torch 2.11.0+cu130, 16 threads; recorded 2026-11-26")
    assert any(str(path) in note for note in hw.notes)
    tm = job_time_model(cfg, roof)
    lv = json.loads(before)["data"]["levels"]["bfloat16"]
    assert tm.device is not None and tm.host is not None and tm.missing == {}
    assert not tm.device.synchronous  # the recorded device is asynchronous, whatever this machine is
    assert tm.device.min_kernel_s == lv["min_kernel_s"] and tm.device.sync_s == lv["host"]["sync_s"]
    assert tm.host.dispatch_s == lv["host"]["op_s"] and tm.host.where == "the recorded host"
    assert tm.label.startswith("the recorded host (Intel(R) Xeon(R) Processor (16 logical CPUs), torch 2.11.0+cu130")
    assert "NVIDIA H200" in tm.label and "recorded calibration, bfloat16" in tm.label
    assert "launch-bound" in tm.device.sources["min_kernel"]
    assert tm.device.gemm_fixed_s == 0.0 and any(n.startswith("gemm_fixed_s: named default 0") for n in tm.notes)
    assert tm.device.multiprocessors == 0 and tm.device.attention_full == ()  # the attention curve as calibrated
    assert any(n.startswith("min_kernel_s: the file's version-5 figure, kept: launch-bound") for n in tm.notes)
    assert path.read_bytes() == before and sorted(p.name for p in path.parent.iterdir()) == [H200.name]


def test_the_h200_file_with_its_recording_fills_the_version_6_figures(tmp_path):
    path = _beside(tmp_path)
    logs: list[str] = []
    cfg = _cfg(path)  # this machine's runtime (cpu, float32): the file's float32 figures
    hw, cal, given, reused = measured_hardware(cfg.hardware, cfg.runtime, logs.append)
    assert given == path and reused and cal.recorded_from == str(path)
    assert len(logs) == 2 and "read by path, nothing measured" in logs[0] and "from the recording" in logs[0]
    assert "runtime=cuda predicts the forward as the recorded device ran it" in logs[1]
    tm = time_model_for(hw.roof("float32"), cfg.hardware, cal.levels)
    assert tm.device is not None and tm.host is not None
    assert tm.device.min_kernel_s < 2e-6 and "149 one-block small kernel durations" in tm.device.sources["min_kernel"]
    assert 5e-6 < tm.host.dispatch_s < 100e-6 and "CPU op events" in tm.host.source
    assert tm.device.min_kernel_s < tm.device.gemm_fixed_s < 4e-6  # the recorded GEMM kernels' shortest times
    assert "GEMM kernel durations" in tm.device.sources["gemm_fixed"]
    assert tm.device.multiprocessors == 132 and len(tm.device.attention_full) == len(tm.device.attention) == 5
    assert "132 multiprocessors" in tm.device.sources["attention_occupancy"]
    assert any("twin_tiny-tiny/profile.trace.json.gz" in n for n in tm.notes)
    assert sorted(p.name for p in path.parent.iterdir()) == [H200.name, RUN.name]  # nothing written beside it


def test_the_file_in_the_repository_reads_with_what_lies_beside_it(tmp_path):
    got = read_calibration_file(H200)
    assert RUN / "profile.trace.json.gz" in got.recordings
    assert {o.origin for by in got.filled.values() for o in by.values()} == {"recording", "launch-bound"}
    # with the recording, the launch-bound elementwise, copy and GEMM figures are set aside (`launch_bound_rules`),
    # the attention points kept; alone (above), every one is kept
    lv = got.data["levels"]["bfloat16"]
    assert lv["elementwise"]["small"]["bytes_per_s"] == lv["elementwise"]["large"]["bytes_per_s"]
    assert len(lv["gemm_launch_bound"]) == 25 and "attention_launch_bound" not in lv
    alone = read_calibration_file(_alone(tmp_path)).data["levels"]["bfloat16"]
    assert (
        "gemm_launch_bound" not in alone
        and alone["elementwise"] == json.loads(H200.read_text())["data"]["levels"]["bfloat16"]["elementwise"]
    )


def test_a_compressed_file_reads_the_same(tmp_path):
    path = _alone(tmp_path)
    packed = tmp_path / "alone" / "h200.json.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert read_calibration_file(packed).data == {
        **read_calibration_file(path).data,
        "levels": {
            k: dict(v, recorded={"file": str(packed), "version": 5})
            for k, v in read_calibration_file(path).data["levels"].items()
        },
    }


def _edited(tmp_path: Path, edit) -> Path:
    doc = json.loads(H200.read_text())
    edit(doc)
    path = tmp_path / "bad" / H200.name
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def _pop(*keys: str):
    def edit(doc):
        node = doc
        for k in keys[:-1]:
            node = node[k]
        del node[keys[-1]]

    return edit


BAD = {
    "missing": (lambda tmp: tmp / "nope.json", "file: no such file"),
    "a directory": (lambda tmp: tmp, "file: not a file"),
    "not text": (lambda tmp: _write(tmp / "c.json", b"\xff\xfe\x00binary"), "file: not text"),
    "not JSON": (lambda tmp: _write(tmp / "c.json", b"{calibration"), "file: not valid JSON"),
    "bad gzip": (lambda tmp: _write(tmp / "c.json.gz", b"not gzip"), "file: cannot be read"),
    "not an object": (lambda tmp: _write(tmp / "c.json", b"[1, 2]"), "file: a JSON list"),
    "another schema": (
        lambda tmp: _edited(tmp, lambda d: d.update(schema="llm_perf_opt.profile")),
        "schema: 'llm_perf_opt.profile' is not a calibration",
    ),
    "a newer schema version": (
        lambda tmp: _edited(tmp, lambda d: d.update(schema_version=2)),
        "schema_version: 2 is newer than this code",
    ),
    "a newer levels version": (
        lambda tmp: _edited(tmp, lambda d: d["data"]["levels"]["bfloat16"].update(version=99)),
        "levels.bfloat16.version: 99 is newer than this code knows",
    ),
    "no device name": (lambda tmp: _edited(tmp, _pop("data", "device_name")), "device_name: missing"),
    "a measurement without its value": (
        lambda tmp: _edited(tmp, _pop("data", "matmul", "bfloat16", "value")),
        "matmul.bfloat16.value: missing",
    ),
    "a levels figure of version 2": (
        lambda tmp: _edited(tmp, _pop("data", "levels", "float32", "copy", "medium")),
        "levels.float32.copy.medium.bytes_per_s: missing (a version-5 calibration has it)",
    ),
    "a GEMM point without x": (
        lambda tmp: _edited(tmp, _pop("data", "levels", "float32", "gemm", 3, "x")),
        "levels.float32.gemm[3].x: missing or not a number",
    ),
    "no min kernel and no recording": (
        lambda tmp: _edited(tmp, _pop("data", "levels", "bfloat16", "min_kernel_s")),
        "levels.bfloat16.min_kernel_s: absent from the file, and no recording beside the file or named default",
    ),
}


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_file_is_one_line_naming_the_file_and_the_field(tmp_path, case):
    make, needle = BAD[case]
    path = make(tmp_path)
    files = sorted(tmp_path.rglob("*"))
    with pytest.raises(ConfigError) as err:
        check_hardware(_cfg(path))
    message = str(err.value)
    assert message.startswith(f"hardware.calibration={str(path)!r}: ") and needle in message, message
    assert "\n" not in message
    assert sorted(tmp_path.rglob("*")) == files  # nothing written


def test_a_missing_min_kernel_is_filled_when_the_recording_is_beside(tmp_path):
    path = _edited(tmp_path, _pop("data", "levels", "bfloat16", "min_kernel_s"))
    shutil.copytree(RUN, path.parent / RUN.name)
    got = read_calibration_file(path)
    assert got.filled["bfloat16"]["min_kernel_s"].origin == "recording"
    assert got.data["levels"]["bfloat16"]["min_kernel_s"] == got.data["levels"]["float32"]["min_kernel_s"] < 2e-6


def test_a_dtype_the_file_has_no_peak_for_names_the_field(tmp_path):
    path = _edited(tmp_path, _pop("data", "matmul", "float32"))
    with pytest.raises(ConfigError, match=r"hardware.dtype='float32' is invalid: measured has no matmul peak"):
        check_hardware(_cfg(path))


@pytest.mark.parametrize(
    "overrides, needle",
    [
        (["hardware=h100_sxm"], "hardware.calibration='/x.json' is invalid: a calibration file is read by "),
        (["hardware=measured", "hardware.recalibrate=true"], "hardware.recalibrate=True is invalid: a calibration"),
    ],
)
def test_a_calibration_file_is_for_a_measured_roof_that_is_not_measured_again(overrides, needle):
    with pytest.raises(ConfigError) as err:
        to_typed_config(compose_cfg(*overrides, "hardware.calibration=/x.json"))
    assert needle in str(err.value)


def test_a_relative_path_is_the_users(tmp_path, monkeypatch):
    path = _alone(tmp_path)
    monkeypatch.setenv("LLM_PERF_OPT_CWD", str(path.parent.parent))
    cfg = to_typed_config(compose_cfg("hardware=measured", f"hardware.calibration=alone/{path.name}"))
    assert cfg.hardware.calibration == str(path)
    assert measured_hardware(cfg.hardware, RuntimeConfig())[1].device_name == "NVIDIA H200"
