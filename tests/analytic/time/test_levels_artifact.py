"""roofline.json version 2 carries the time levels per stage, part and module path; the loader still reads
version 1; the run page's table (`report.time_levels`) and the grouped graph's tables read the levels back."""

from __future__ import annotations

import json

import pytest

from llm_perf_opt.analytic.roofline_artifact import ABSENT_V1, load_roofline, write_roofline
from llm_perf_opt.analytic.time.figures import DeviceFigures, HostFigures, TimeModel
from llm_perf_opt.analytic.time.hardware import Roof, load_hardware
from llm_perf_opt.analytic.time.ideal import predict_latency
from llm_perf_opt.analytic.time.levels import latency_levels, latency_paths, levels_payload
from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ArtifactError

GEMM_RATE, BW, PER_KERNEL = 1e10, 1e10, 5e-6


def _model() -> tuple[DeepseekOCRAnalyticModel, Roof, TimeModel]:
    model = DeepseekOCRAnalyticModel.for_page(
        ModelSpec.tiny(), VisionWorkload(512, 512, False), 512, 512, dtype="float32"
    )
    roof = Roof("test", "test cpu", "measured", "float32", "float32", 1e11, 1e10, 2e10)
    dev = DeviceFigures("test cpu", True, ((1.0, GEMM_RATE),), 1e10, BW, BW, 0.0)
    return model, roof, TimeModel(roof, dev, HostFigures("host", PER_KERNEL, "test"))


def _write(tmp_path):
    model, roof, tm = _model()
    lat = predict_latency(model.stages(), roof)
    levels = latency_levels(model.stages(), lat, tm)
    payload = levels_payload(levels, tm, latency_paths(model.stages(), tm))
    path = write_roofline(tmp_path / "roofline.json", model, lat, load_hardware("h100_sxm"), levels=payload)
    return model, lat, levels, path


def test_levels_stored_per_stage_part_and_path(tmp_path):
    model, lat, levels, path = _write(tmp_path)
    art = load_roofline(path)
    assert art.version == 2 and art.levels == ("ideal", "kernel", "eager") and art.absent_levels == {}
    compared = 0
    for stage in ("vision", "prefill", "decode"):
        for alias, lt in levels[stage].items():
            got = art.unit_levels(stage, alias)
            assert got["kernel"]["time_s"] == pytest.approx(lt.kernel_s)
            # CPU (synchronous): eager = kernel time + the host's cost per kernel, each kernel once
            assert got["eager"]["time_s"] == pytest.approx(lt.kernel_s + PER_KERNEL * lt.kernels)
            assert got["kernel"]["kernels"] == lt.kernels and got["eager"]["bound"] == lt.verdict
            compared += 1
    assert compared >= 3 + 5
    rows = {r["path"]: r for r in art.stage_rows("prefill")}
    assert rows and all(r["kernel_s"] is not None and r["eager_s"] >= r["kernel_s"] for r in rows.values())


def test_run_page_and_graph_read_the_levels(tmp_path):
    from llm_perf_opt.report.time_levels import run_times
    from llm_perf_opt.trace.graph import level_time_tables

    _, _, levels, path = _write(tmp_path)
    times = run_times(tmp_path)
    assert times.levels == ["ideal", "kernel", "eager"] and times.absent == {}
    prefill = times.row("prefill")
    assert prefill.predicted("eager") == pytest.approx(levels["prefill"][""].eager_s)
    tables, absent = level_time_tables(load_roofline(path))
    assert [t.name for t in tables] == ["time_predicted_kernel", "time_predicted_eager"] and not absent
    assert tables[1].values[""] == pytest.approx(levels["prefill"][""].eager_s)


def test_version_1_still_loads_with_levels_absent(tmp_path):
    from llm_perf_opt.report.time_levels import run_times
    from llm_perf_opt.trace.graph import level_time_tables

    _, lat, _, path = _write(tmp_path)
    doc = json.loads(path.read_text())
    data = doc["data"]
    for key in ("levels", "absent_levels", "time_model"):
        del data[key]
    for st in data["stages"].values():
        st["total"].pop("levels")
        for e in st["summary"].values():
            e.pop("levels")
        for r in st["parts"]:
            r.pop("kernel_s", None), r.pop("eager_s", None)
    doc["schema_version"] = 1
    path.write_text(json.dumps(doc))
    art = load_roofline(path)
    assert art.version == 1 and art.levels == ("ideal",)
    assert art.absent_levels == {"kernel": ABSENT_V1, "eager": ABSENT_V1}
    assert art.unit_levels("prefill") == {
        "ideal": {"time_s": pytest.approx(lat.ttft_s), "bound": lat.prefill.total.bound}
    }
    tables, absent = level_time_tables(art)
    assert tables == [] and absent == {"time_predicted_kernel": ABSENT_V1, "time_predicted_eager": ABSENT_V1}
    assert run_times(tmp_path).absent == {
        "kernel": "not in this run's roofline.json",
        "eager": "not in this run's roofline.json",
    }
    # a version 2 file without its levels list is refused by name
    doc["schema_version"] = 2
    path.write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match="lacks required field 'levels'"):
        load_roofline(path)
