"""Measured against predicted: the per-address tables, the per-part comparison, efficiency's definition,
the plot drawn from a summary, and where the figures are stored (CallGraph v3, summary sections)."""

from __future__ import annotations

import json
import statistics
import xml.etree.ElementTree as ET

import pytest

from llm_perf_opt.analytic.time.hardware import datasheet_for_device, load_hardware
from llm_perf_opt.analytic.time.ideal import predict, predicted_time_table
from llm_perf_opt.callgraph.schema import CallGraph, load_callgraph_json
from llm_perf_opt.dsocr import parts
from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.errors import ArtifactError
from llm_perf_opt.measure.efficiency import RoofEntry, compare, efficiency, efficiency_table, render_comparison
from llm_perf_opt.measure.module_times import module_time_table
from llm_perf_opt.run_artifacts import load_summary
from llm_perf_opt.trace.profile import callgraph_times, profile_figures


def unit_time(cost, roof) -> float:
    """One unit on a roof, by the roofline's definition: the larger of its compute time (matmul FLOPs at the
    matmul peak plus the other FLOPs at the vector peak) and its memory time (I/O bytes at the bandwidth)."""
    compute = cost.flops_matmul / roof.matmul_flops + cost.flops_other / roof.vector_flops
    return max(compute, cost.io_bytes / roof.bandwidth)


def time_by_hand(stage, roof, under=None) -> float:
    """The unit times summed over every call of every module of the stage's cost tree at or under the path
    `under` (None: the whole stage, its root's own unit included)."""
    nodes = [("", stage.root), *stage.root.walk()]
    return sum(
        unit_time(node.own, roof)
        for path, node in nodes
        if under is None or path == under or path.startswith(under + ".")
    )


def measured_by_hand(times, *paths) -> float:
    """From the profile's raw calls: per repeat the inclusive times of every call of `paths` summed, then
    the median over the repeats."""
    calls = [c for c in times.calls if c.path in paths]
    assert calls, paths
    return statistics.median(sum(c.inclusive_s.repeats[r] for c in calls) for r in range(times.repeats))


@pytest.fixture(scope="module")
def prefill(small_times):
    from llm_perf_opt.dsocr.spec import ModelSpec

    _, _, inputs = small_times
    return DeepseekOCRAnalyticModel(ModelSpec.tiny(), inputs.layout, inputs.seq_len, dtype="float32").prefill()


def test_predicted_time_table_by_hand(prefill):
    roof = load_hardware("h100_sxm").roof("float32")
    table = predicted_time_table(prefill, roof)
    assert table[""] == pytest.approx(time_by_hand(prefill, roof))
    assert set(table) == set(prefill.parts) | {""}
    # a leaf by hand: lm_head is one matmul over the vocabulary (no children)
    lm = prefill.parts["lm_head"]
    compute = lm.flops_matmul / roof.matmul_flops + lm.flops_other / roof.vector_flops
    memory = lm.io_bytes / roof.bandwidth
    assert table["lm_head"] == pytest.approx(max(compute, memory))
    # a part is the sum of its units (here: every call of SAM's first block, its own unit (residual adds)
    # on top of its children's)
    block = "model.sam_model.blocks.0"
    children = [p for p in prefill.parts if p.startswith(block + ".") and p.count(".") == block.count(".") + 1]
    assert len(children) >= 2  # attention and MLP at least
    assert table[block] == pytest.approx(time_by_hand(prefill, roof, block))
    assert table[block] > sum(table[p] for p in children) > 0


def test_efficiency_is_predicted_over_measured():
    assert efficiency(1.0, 4.0) == 0.25
    assert efficiency(None, 1.0) is None and efficiency(1.0, None) is None and efficiency(1.0, 0.0) is None


def test_compare_rows_from_a_real_profile(small_times, prefill):
    times, _, _ = small_times
    cpu = load_hardware("h100_sxm").roof("float32")  # any roof: the arithmetic is what is checked here
    here = RoofEntry("here", predict(prefill, cpu), same_device=True)
    there = RoofEntry("there", predict(prefill, load_hardware("rtx5090").roof("float32")), same_device=False)
    rows = {r.name: r for r in compare(prefill, [here, there], times)}
    assert list(rows)[:2] == ["forward", "vision"]
    assert {"sam", "clip", "projector", "decoder", "lm_head", "decoder.layer.0"} <= set(rows)
    # the forward: the plain forward's wall time (median), the whole prefill predicted
    fw = rows["forward"]
    assert fw.measured_s == statistics.median(times.wall["plain_s"]["repeats"]) and "plain forward" in fw.measured_by
    assert fw.predicted["here"]["time_s"] == pytest.approx(time_by_hand(prefill, cpu))
    assert fw.flops == prefill.total.flops and fw.io_bytes == prefill.total.io_bytes
    # a part: median over the repeats of its summed calls; efficiency = predicted / measured
    sam, sam_path = rows["sam"], parts.path("sam")
    sam_measured, sam_predicted = measured_by_hand(times, sam_path), time_by_hand(prefill, cpu, sam_path)
    assert sam.measured_s == pytest.approx(sam_measured)
    assert sam.predicted["here"]["time_s"] == pytest.approx(sam_predicted)
    assert sam.efficiency("here") == pytest.approx(sam_predicted / sam_measured)
    assert sam.achieved_flops == pytest.approx(prefill.parts[sam_path].flops / sam_measured)
    # vision: SAM + CLIP + projector, summed per repeat before the median
    assert rows["vision"].measured_s == pytest.approx(measured_by_hand(times, *parts.VISION_PATHS))
    # a roof of another device: predicted, never an efficiency
    assert all(r.predicted["there"]["efficiency"] is None for r in rows.values())
    costed = [r for r in rows.values() if r.flops]
    assert len(costed) >= 6 and all(r.predicted["there"]["time_s"] > 0 for r in costed)
    text = render_comparison(list(rows.values()), [here, there])
    assert "not the device measured here" in text and "efficiency = predicted / measured" in text


def test_compare_without_a_profile_predicts_only(prefill):
    roof = load_hardware("l40s").roof("float32")
    rows = compare(prefill, [RoofEntry("l40s", predict(prefill, roof), same_device=False)], None)
    assert all(r.measured_s is None and r.achieved_flops is None for r in rows)
    assert all(r.efficiency("l40s") is None for r in rows)


def test_efficiency_table_per_address(small_times, prefill):
    times, _, _ = small_times
    roof = load_hardware("h100_sxm").roof("float32")
    measured = module_time_table(times)
    predicted = predicted_time_table(prefill, roof)
    table = efficiency_table(measured, predicted, prefill.containers)
    assert set(table) == set(measured) | set(predicted)
    row = table["lm_head"]
    lm_head = prefill.parts["lm_head"]  # one unit: a matmul over the vocabulary
    assert row["efficiency"] == pytest.approx(unit_time(lm_head, roof) / measured_by_hand(times, "lm_head"))
    attn = f"{parts.path('clip')}.transformer.layers.0.self_attn"
    assert attn in prefill.containers and "caller" in table[attn]["note"]
    assert table["model"]["predicted_s"] is not None and table["model"]["measured_s"] is not None


def test_callgraph_v3_keeps_module_times_and_v2_files_load(tmp_path, small_times):
    times, _, _ = small_times
    table, method = callgraph_times(times)
    graph = {"call_counts": {"": 1}, "edges": {}, "op_call_counts": {}, "module_children": {}, "module_types": {}}
    cg = CallGraph(**graph, module_times=table, module_times_method=method)
    back = load_callgraph_json(cg.save(tmp_path / "cg.json"))
    assert back.module_times == json.loads(json.dumps(table)) and back.module_times_method["repeats"] == 3
    (tmp_path / "v2.json").write_text(
        json.dumps({"schema": "llm_perf_opt.callgraph", "schema_version": 2, "producer": {}, "data": graph})
    )
    old = load_callgraph_json(tmp_path / "v2.json")
    assert old.module_times == {} and old.module_times_method == {}
    bad = dict(graph, module_times=[1, 2])
    (tmp_path / "bad.json").write_text(
        json.dumps({"schema": "llm_perf_opt.callgraph", "schema_version": 3, "producer": {}, "data": bad})
    )
    with pytest.raises(ArtifactError, match="field 'module_times' must be an object"):
        load_callgraph_json(tmp_path / "bad.json")


def _summary_data(times) -> dict:
    return {
        "model": {"name": "m", "source": "twin", "spec": "tiny"},
        "workload": {"mode": "tiny", "base_size": 512, "image_size": 512, "crop_mode": False, "tile_size": 640},
        "page": {"width": 1, "height": 1, "image": None},
        "layout": {
            "page_width": 1,
            "page_height": 1,
            "w_crop": 1,
            "h_crop": 1,
            "num_crops": 0,
            "num_views": 1,
            "image_tokens": 73,
        },
        "tokens": {"image": 73, "prompt": 4, "sequence": 78, "prompt_source": "fallback", "batch": 1, "lengths": [78]},
        "tensors": {},
        "runtime": {"device": "cpu", "dtype": "float32", "attn_implementation": "eager", "autocast": False},
        "status": "ok",
        "profile": profile_figures(times).raw,
        "roofline": {
            "primary": "measured",
            "roofs": {"measured": {"figures": {"ttft_s": 0.5}}},
            "rows": [{"name": "forward", "measured_s": 1.0}],
        },
    }


def test_summary_sections_round_trip_and_name_a_missing_field(tmp_path, small_times):
    from llm_perf_opt.artifacts import write_artifact

    times, _, _ = small_times
    data = _summary_data(times)
    summary = load_summary(write_artifact(tmp_path / "summary.json", "llm_perf_opt.summary", 1, data))
    assert summary.profile.repeats == 3 and summary.profile.coverage == times.coverage["coverage"]
    assert summary.profile.raw["file"] == "profile.json"
    assert summary.roofline.figures() == {"ttft_s": 0.5} and summary.roofline.row("forward")["measured_s"] == 1.0
    assert summary.to_data() == data
    older = dict(data, tokens={k: v for k, v in data["tokens"].items() if k not in ("batch", "lengths")})
    back = load_summary(write_artifact(tmp_path / "older.json", "llm_perf_opt.summary", 1, older))
    assert back.tokens.batch == 1 and back.tokens.lengths == []  # a summary written before the batch fields
    for section, field_name in (("roofline", "rows"), ("profile", "repeats")):
        broken = _summary_data(times)
        del broken[section][field_name]
        path = write_artifact(tmp_path / f"{section}.json", "llm_perf_opt.summary", 1, broken)
        with pytest.raises(ArtifactError, match=f"{section} lacks required field '{field_name}'"):
            load_summary(path)


@pytest.mark.parametrize(
    "name, sheet",
    [
        ("NVIDIA H100 80GB HBM3", "h100_sxm"),
        ("NVIDIA H100 PCIe", "h100_pcie"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA A100-SXM4-80GB", "a100_80gb"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
        ("NVIDIA GeForce RTX 5090", "rtx5090"),
        ("NVIDIA GH200 480GB", None),
        ("NVIDIA H200 NVL", None),
        ("NVIDIA H100 NVL", None),
        ("NVIDIA A100 80GB PCIe", None),
        ("NVIDIA GeForce RTX 4090 D", None),
        ("Tesla T4", None),
    ],
)
def test_datasheet_found_by_the_cuda_device_name(name, sheet):
    assert datasheet_for_device(name) == sheet


def test_roofline_plot_from_a_summary_section(tmp_path):
    from llm_perf_opt.report.roofline_plot import plot_from_summary

    cpu = {
        "hardware": "measured",
        "label": "a CPU",
        "kind": "measured",
        "dtype": "float32",
        "matmul_peak": "float32",
        "matmul_flops": 1e11,
        "vector_flops": 2e10,
        "bandwidth_bytes_per_s": 1e10,
        "ridge_intensity": 10.0,
        "sources": {},
    }
    gpu = dict(
        cpu,
        hardware="h100_sxm",
        label="an H100",
        kind="datasheet",
        matmul_flops=1e15,
        bandwidth_bytes_per_s=3e12,
        ridge_intensity=333.0,
    )
    rows = [
        {
            "name": "forward",
            "kind": "stage",
            "intensity": 12.0,
            "achieved_flops": 4e10,
            "predicted": {"measured": {"attainable_flops": 9e10}},
        },
        {
            "name": "sam",
            "kind": "part",
            "intensity": 9.0,
            "achieved_flops": 3e10,
            "predicted": {"measured": {"attainable_flops": 8e10}},
        },
        {"name": "embedding", "kind": "part", "intensity": 0.0, "achieved_flops": 0.0, "predicted": {}},
    ]
    section = {
        "primary": "measured",
        "rows": rows,
        "measured_by": "how it was measured",
        "roofs": {"measured": {"roof": cpu, "same_device": True}, "h100_sxm": {"roof": gpu, "same_device": False}},
    }
    from llm_perf_opt.families import family

    parts = family("dsocr").parts  # the plot names the family's parts
    files = plot_from_summary(section, tmp_path, title="T", vocabulary=parts)
    text = "".join(ET.fromstring(files["svg"].read_text()).itertext())
    assert "sam" in text and "forward" in text and "embedding" not in text  # no FLOPs: no place on a log axis
    assert "a CPU" in text and "an H100" not in text  # measured points: only their own device's roof
    assert "how it was measured" in text
    for row in rows:
        row["achieved_flops"] = None
    files = plot_from_summary(section, tmp_path / "pred", title="T", vocabulary=parts)
    text = "".join(ET.fromstring(files["svg"].read_text()).itertext())
    assert "no measured times" in text and "sam" in text


def test_an_ambiguous_datasheet_match_names_both_files(tmp_path):
    """Two datasheets whose device_names both match one GPU name: an error naming both files, never None."""
    import shutil

    from llm_perf_opt.config.paths import conf_dir
    from llm_perf_opt.errors import ConfigError

    def conf_with(sxm_patterns: str, where):
        (where / "hardware").mkdir(parents=True)
        for name in ("h100_sxm", "h100_pcie"):
            shutil.copy(conf_dir() / "hardware" / f"{name}.yaml", where / "hardware" / f"{name}.yaml")
        sxm = where / "hardware" / "h100_sxm.yaml"
        sxm.write_text(sxm.read_text().replace("device_names: ['H100 80GB HBM3', 'H100 SXM']", sxm_patterns))
        return where

    tight = conf_with("device_names: ['H100 80GB HBM3', 'H100 SXM']", tmp_path / "tight")
    assert datasheet_for_device("NVIDIA H100 PCIe", conf=tight) == "h100_pcie"  # one match: found
    loose = conf_with("device_names: ['H100']", tmp_path / "loose")
    with pytest.raises(ConfigError) as err:
        datasheet_for_device("NVIDIA H100 PCIe", conf=loose)
    message = str(err.value)
    assert str(loose / "hardware" / "h100_sxm.yaml") in message
    assert str(loose / "hardware" / "h100_pcie.yaml") in message
