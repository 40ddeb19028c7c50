"""The default `./dev trace` run: costs on every grouped node, module_costs.json, activation bytes verified,
run.html and model_explorer/ there and consistent (group sums equal the nodes' totals); the same run with a
profile and a roofline added and regrouped carries measured and predicted times."""

from __future__ import annotations

import json

import pytest
from job_scripts import run_job_in_process

from llm_perf_opt.callgraph.grouped import load_grouped_json
from llm_perf_opt.callgraph.model_explorer import GROUPED_ID, INTENSITY, RAW_ID
from llm_perf_opt.callgraph.node_costs import load_module_costs
from llm_perf_opt.jobs import explore
from llm_perf_opt.measure.verification_file import load_verification
from llm_perf_opt.run_artifacts import load, load_summary

pytestmark = pytest.mark.slow
TRACE_METRICS = [
    "flops_analytic",
    "flops_matmul_analytic",
    "io_bytes_analytic",
    "weight_bytes_analytic",
    "activation_bytes_analytic",
    "flops_measured",
    "activation_bytes_observed",
]
# the profile and roofline stages (time_predicted: the ideal level; then the kernel and eager levels)
TIME_METRICS = [
    "time_measured",
    "time_measured_self",
    "time_predicted",
    "time_predicted_kernel",
    "time_predicted_eager",
]
DEFAULT_METRICS = TRACE_METRICS + TIME_METRICS  # what the default trace job puts on the graph
COMPARED_NODES = 60  # grouped nodes of the default run with both matmul FLOP figures, no notes (68 of 74 today)


def node(grouped, pattern):
    (n,) = [n for n in grouped.nodes if n.pattern == pattern]
    return n


def test_costs_on_every_grouped_node(traced_run):
    grouped = load_grouped_json(traced_run / "callgraph.grouped.json")
    costs = load_module_costs(traced_run / "module_costs.json")
    assert costs.names() == DEFAULT_METRICS and costs.absent == {}
    for n in grouped.nodes:
        for name in DEFAULT_METRICS:
            fig = n.costs[name]
            # a figure, or the reason there is none with the instances' notes (experts: costed as a whole)
            assert fig["total"] is not None or (fig.get("reason") and fig["with_figure"] == 0), (n.name, name, fig)
        assert n.costs["flops_measured"]["total"] is not None, n.name  # every node: measured FLOPs
        assert n.costs["activation_bytes_observed"]["total"] is not None, n.name
    root = grouped.node(grouped.root)
    assert all(
        root.costs[m]["share"] == pytest.approx(1.0) for m in TRACE_METRICS + ["time_measured", "time_predicted"]
    )
    # the SAM stack: one node, two variants, each costed; a global block costs more than a windowed one
    sam = node(grouped, "model.sam_model.blocks.[0-3]")
    windowed, glob = sam.variants
    assert (windowed.label, len(windowed.members), glob.label, len(glob.members)) == (
        "window_size=14",
        2,
        "window_size=0",
        2,
    )
    for m in DEFAULT_METRICS:
        assert windowed.costs[m]["total"] + glob.costs[m]["total"] == pytest.approx(sam.costs[m]["total"])
    assert glob.costs["flops_measured"]["mean"] > windowed.costs["flops_measured"]["mean"]
    assert sam.costs["flops_measured"]["slowest"] in glob.members
    # measured and analytic matmul FLOPs agree per node where both exist (the verification's 0 % rows)
    compared = 0
    for n in grouped.nodes:
        a, m = n.costs["flops_matmul_analytic"].get("total"), n.costs["flops_measured"].get("total")
        if a is not None and m is not None and not n.costs["flops_measured"].get("notes"):
            assert a == pytest.approx(m, rel=1e-3), n.name
            compared += 1
    assert compared >= COMPARED_NODES, compared
    # experts: the analytic model costs them together; the node gets the containers' sum
    experts = next(n for n in grouped.nodes if ".mlp.experts.[" in n.pattern and n.template.endswith("*"))
    assert experts.costs["flops_analytic"]["containers"] == ["model.layers.1.mlp.experts", "model.layers.2.mlp.experts"]


def test_summary_verification_and_files(traced_run):
    summary = load_summary(traced_run / "summary.json")
    assert summary.graph is not None and summary.graph.metrics == DEFAULT_METRICS
    assert "Block @ model.sam_model.blocks.[0-3] for 4" in summary.graph.raw["stacks"]
    assert summary.verification.extra["activation_passed"] is True
    v = load_verification(traced_run / "verification.json")
    assert v.activation and all(r.ok for r in v.activation)
    parts = {r.part: r for r in v.activation}
    assert parts["lm_head"].unexplained == 0 and parts["model.layers.1"].unexplained == 0
    assert parts["model.sam_model"].unseen > 0 and parts["model.sam_model"].unexplained == 0  # LayerNorm mean/rstd
    for name in ("run.html", "module_costs.json", "model_explorer/graph.json", "model_explorer/raw.json"):
        assert (traced_run / name).is_file(), name
    assert load("module_costs", traced_run).names() == DEFAULT_METRICS
    checks = {c["name"]: c for c in load_grouped_json(traced_run / "callgraph.grouped.json").checks}
    assert (
        checks["block_loop:sam_model.blocks"]["status"] == "ok"
        and checks["block_loop:sam_model.blocks"]["expected"] == 4
    )


def test_model_explorer_groups_sum_to_the_nodes(traced_run):
    grouped = load_grouped_json(traced_run / "callgraph.grouped.json")
    me = traced_run / "model_explorer"
    graph = json.loads((me / "graph.json").read_text())
    (g,) = graph["graphs"]
    assert g["id"] == GROUPED_ID and len(g["nodes"]) == len(grouped.nodes)
    ids = {n["id"] for n in g["nodes"]}
    assert any(n["namespace"].startswith("model/sam_model/blocks.[0-3] ×4") for n in g["nodes"])
    raw = json.loads((me / "raw.json").read_text())["graphs"][0]
    assert raw["id"] == RAW_ID and any(n["namespace"] == "model/sam_model/blocks/1/attn" for n in raw["nodes"])
    for metric in ("flops_measured", "activation_bytes_observed"):
        data = json.loads((me / f"{metric}.json").read_text())
        results = data[GROUPED_ID]["results"]
        assert set(results) <= ids
        root_total = grouped.node(grouped.root).costs[metric]["total"]
        # every op node's own share, summed (as Model Explorer sums a group), is the root's total
        assert sum(r["value"] for r in results.values()) == pytest.approx(root_total, rel=1e-9)
        # and the SAM namespace sums to the SAM node
        sam_ns = [n["id"] for n in g["nodes"] if n["namespace"].startswith("model/sam_model")]
        assert sum(results[i]["value"] for i in sam_ns if i in results) == pytest.approx(
            node(grouped, "model.sam_model").costs[metric]["total"], rel=1e-9
        )
        raw_results = data[RAW_ID]["results"]
        assert sum(r["value"] for r in raw_results.values()) == pytest.approx(root_total, rel=1e-9)
    assert (me / f"{INTENSITY}.json").is_file()


def test_timed_run_has_measured_and_predicted_times(timed_run):
    grouped = load_grouped_json(timed_run / "callgraph.grouped.json")
    costs = load_module_costs(timed_run / "module_costs.json")
    # the levels on a datasheet: kernel from its min_kernel_us; eager needs this host's cached calibration too
    eager = ["time_predicted_eager"] if "time_predicted_eager" in costs.names() else []
    assert (
        costs.names()
        == TRACE_METRICS + ["time_measured", "time_measured_self", "time_predicted", "time_predicted_kernel"] + eager
    )
    assert costs.absent == ({} if eager else {"time_predicted_eager": costs.absent.get("time_predicted_eager")})
    assert eager or "calibrat" in costs.absent["time_predicted_eager"]
    assert "repeats" in costs.get("time_measured").source and "h100" in costs.get("time_predicted").source.lower()
    sam = node(grouped, "model.sam_model.blocks.[0-3]")
    t = sam.costs["time_measured"]
    assert t["complete"] and t["total"] > 0 and t["slowest"].startswith("model.sam_model.blocks.")
    assert sam.costs["time_predicted"]["total"] > 0
    assert grouped.node(grouped.root).costs["time_predicted"]["share"] == pytest.approx(1.0)
    page = (timed_run / "run.html").read_text()
    assert "predicted time" in page and "measured time" in page


def test_explore_refuses_bad_input_in_one_line(tmp_path, capsys):
    assert explore.main([str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "no such run directory" in err and "\n" not in err
    assert explore.main([str(tmp_path)]) == 2
    assert "run ./dev trace first" in capsys.readouterr().err


def test_explore_makes_the_files_from_a_bare_callgraph(traced_run, tmp_path):
    """A run directory with only callgraph.json (and module_costs.json) gets model_explorer/ on demand."""
    import shutil

    run = tmp_path / "run"
    run.mkdir()
    for name in ("callgraph.json", "module_costs.json"):
        shutil.copy(traced_run / name, run / name)
    files = explore.explorer_files(run)
    assert (files / "graph.json").is_file() and (files / "flops_measured.json").is_file()
    cmd = explore.explorer_command(files, "127.0.0.1", 8123)
    assert cmd[1].endswith("graph.json," + str(files / "raw.json")) and "--node_data_paths" in cmd


def test_group_cli_colours_by_another_metric(traced_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(traced_run, run)
    proc = run_job_in_process("group", run, "--color-by", "bytes")
    assert proc.returncode == 0, proc.stderr
    assert "costs from module_costs.json" in proc.stdout
    grouped = load_grouped_json(run / "callgraph.grouped.json")
    assert grouped.source["color_by"] == "bytes"
    assert "colour: activation bytes observed" in (run / "callgraph.grouped.dot").read_text()
    assert "colour: activation bytes observed" in (run / "run.html").read_text()
