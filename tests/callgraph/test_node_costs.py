"""Costs on the grouped graph (callgraph.node_costs) on hand-built graphs: sums over instances, per
instance figures, the slowest instance, shares, variants, missing figures said so (never zero), stack
totals from containers, the module_costs.json artifact, and agreement with measure.time_groups."""

from __future__ import annotations

import json
import math

import pytest
from callgraph_helpers import make_graph  # noqa: E402

from llm_perf_opt.callgraph.grouped import load_grouped_json
from llm_perf_opt.callgraph.grouping import group_callgraph  # noqa: E402
from llm_perf_opt.callgraph.node_costs import (  # noqa: E402
    MODULE_COSTS_SCHEMA,
    MetricTable,
    ModuleCosts,
    attach_costs,
    load_module_costs,
    member_figures,
    subtree_sums,
)
from llm_perf_opt.errors import ArtifactError  # noqa: E402
from llm_perf_opt.measure.time_groups import group_times  # noqa: E402


def sam_like():
    """root -> enc (called twice: crops and global) -> 6 blocks (2 and 5 global: bigger tables) -> attn."""
    mods = [("", "M", 0), ("enc", "Enc", 0), ("enc.blocks", "ModuleList", 0)]
    calls = [("", "enc", 2)]
    ctor = {}
    for i in range(6):
        glob = i in (2, 5)
        mods += [(f"enc.blocks.{i}", "Block", 0), (f"enc.blocks.{i}.attn", "Attention", 90 if glob else 20)]
        calls += [("enc", f"enc.blocks.{i}", 2), (f"enc.blocks.{i}", f"enc.blocks.{i}.attn", 2)]
        ctor[f"enc.blocks.{i}"] = {"window_size": 0 if glob else 14}
    return make_graph(mods, calls, constructor_params=ctor)


def block_flops(i: int) -> float:
    return 300.0 if i in (2, 5) else 100.0  # a global block costs 3x a windowed one


def costs_for(cg, with_time=True) -> ModuleCosts:
    flops = {f"enc.blocks.{i}": block_flops(i) for i in range(6)}
    flops.update({f"enc.blocks.{i}.attn": block_flops(i) / 2 for i in range(6)})
    flops["enc"] = sum(block_flops(i) for i in range(6))
    flops[""] = flops["enc"] + 200.0  # work outside enc: shares are of the run's total
    metrics = [MetricTable("flops_measured", "measured FLOPs", "FLOP", "flops", "a counter", flops)]
    absent = {}
    if with_time:
        times = {f"enc.blocks.{i}": block_flops(i) / 1e3 for i in range(6) if i != 4}  # block 4 has no range
        metrics.append(
            MetricTable(
                "time_measured",
                "measured time",
                "s",
                "time",
                "ranges",
                times,
                total=2.0,
                notes={"enc.blocks.4": "no range"},
            )
        )
    else:
        absent["time_measured"] = "the profile stage did not run"
    return ModuleCosts("prefill", metrics, absent)


def by_pattern(g, pattern):
    (node,) = [n for n in g.nodes if n.pattern == pattern]
    return node


def test_stack_sums_instances_and_names_the_slowest():
    g = attach_costs(group_callgraph(sam_like()), costs_for(sam_like()))
    blocks = by_pattern(g, "enc.blocks.[0-5]")
    fig = blocks.costs["flops_measured"]
    assert fig["total"] == 4 * 100 + 2 * 300 and fig["instances"] == 6 and fig["complete"]
    assert (fig["mean"], fig["min"], fig["max"]) == (1000 / 6, 100, 300)
    assert fig["slowest"] == "enc.blocks.2" and fig["fastest"] == "enc.blocks.0"  # first on a tie
    assert fig["share"] == pytest.approx(1000 / 1200)
    assert fig["per_call"] == pytest.approx(1000 / 12)  # 6 blocks x 2 calls (crops and global)
    assert fig["spread"] == 3.0
    # each variant carries its own costs
    windowed, glob = blocks.variants
    assert (windowed.label, glob.label) == ("window_size=14", "window_size=0")
    assert windowed.costs["flops_measured"]["total"] == 400 and glob.costs["flops_measured"]["total"] == 600
    assert glob.costs["flops_measured"]["per_call"] == 600 / 4
    # nested: the attn node sums the attn of every block
    assert by_pattern(g, "enc.blocks.[0-5].attn").costs["flops_measured"]["total"] == 500
    assert g.node(g.root).costs["flops_measured"]["share"] == 1.0


def test_missing_figures_are_listed_never_zero():
    g = attach_costs(group_callgraph(sam_like()), costs_for(sam_like()))
    fig = by_pattern(g, "enc.blocks.[0-5]").costs["time_measured"]
    assert fig["missing"] == ["enc.blocks.4"] and not fig["complete"] and fig["with_figure"] == 5
    assert fig["total"] == pytest.approx(0.1 + 0.1 + 0.3 + 0.1 + 0.3) and fig["notes"] == ["no range"]
    assert fig["share"] == pytest.approx(0.9 / 2.0)
    attn = by_pattern(g, "enc.blocks.[0-5].attn").costs["time_measured"]
    assert attn["total"] is None and attn["reason"] == "no figure for any instance" and attn["with_figure"] == 0
    g2 = attach_costs(group_callgraph(sam_like()), costs_for(sam_like(), with_time=False))
    assert "time_measured" not in by_pattern(g2, "enc.blocks.[0-5]").costs
    assert g2.absent_metrics == {"time_measured": "the profile stage did not run"}
    assert [m["name"] for m in g2.metrics] == ["flops_measured"]


def test_figures_agree_with_measure_time_groups():
    """The generic figures are the ones `measure.time_groups.group_times` gives a time table."""
    table = {f"b.{i}": {"inclusive_s": t} for i, t in enumerate([0.3, 0.1, 0.5, 0.2])} | {"b.4": {"inclusive_s": None}}
    members = [f"b.{i}" for i in range(5)]
    gt = group_times(table, members)
    fig = member_figures({m: r["inclusive_s"] for m, r in table.items() if r["inclusive_s"] is not None}, members)
    assert (fig["total"], fig["mean"], fig["min"], fig["max"], fig["slowest"], fig["fastest"], fig["spread"]) == (
        gt.total_s,
        gt.mean_s,
        gt.min_s,
        gt.max_s,
        gt.slowest,
        gt.fastest,
        gt.spread,
    )
    assert fig["missing"] == list(gt.missing) == ["b.4"]


def test_nan_and_inf_are_not_figures():
    fig = member_figures({"a": math.nan, "b": 2.0, "c": math.inf}, ["a", "b", "c"])
    assert fig["total"] == 2.0 and fig["missing"] == ["a", "c"]


def test_a_stack_costed_as_a_whole_gets_its_containers_total():
    """MoE experts: the cost model costs `layer.experts` as a whole; the experts node sums the containers
    when it holds every called expert, with no per-instance figures."""
    mods = [("", "M", 0), ("l", "ModuleList", 0)]
    calls = []
    for layer in range(2):
        mods += [(f"l.{layer}", "MoE", 0), (f"l.{layer}.experts", "ModuleList", 0)]
        mods += [(f"l.{layer}.experts.{e}", "MLP", 5) for e in range(8)]
        calls += [("", f"l.{layer}", 1)] + [(f"l.{layer}", f"l.{layer}.experts.{e}", 1) for e in (0, 3, 5)]
    g = group_callgraph(make_graph(mods, calls))
    analytic = MetricTable(
        "flops_analytic",
        "analytic FLOPs",
        "FLOP",
        "flops",
        "model",
        {"": 100.0, "l.0": 40.0, "l.1": 40.0, "l.0.experts": 30.0, "l.1.experts": 35.0},
    )
    attach_costs(g, ModuleCosts("prefill", [analytic]))
    experts = by_pattern(g, "l.[0-1].experts.[0,3,5]")
    fig = experts.costs["flops_analytic"]
    assert experts.sparse and fig["total"] == 65.0 and fig["share"] == 0.65 and fig["with_figure"] == 0
    assert fig["containers"] == ["l.0.experts", "l.1.experts"] and "mean" not in fig
    assert "costed as a whole" in fig["notes"][0]


def test_subtree_sums():
    assert subtree_sums({"a.b": 2, "a.c": 3, "d": 1, "": 4}) == {"": 10, "a": 5, "a.b": 2, "a.c": 3, "d": 1}


def test_module_costs_round_trip_and_rejections(tmp_path):
    costs = costs_for(sam_like())
    path = costs.save(tmp_path / "module_costs.json")
    doc = json.loads(path.read_text())
    assert (doc["schema"], doc["schema_version"]) == (MODULE_COSTS_SCHEMA, 1)
    back = load_module_costs(path)
    assert back.to_dict() == json.loads(json.dumps(costs.to_dict()))
    del doc["data"]["metrics"][0]["values"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match=r"metrics\[0\] lacks required field 'values'"):
        load_module_costs(path)
    doc["schema_version"] = 7
    path.write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match="schema_version 7 is unknown"):
        load_module_costs(path)
    with pytest.raises(ArtifactError, match="kind 'watts'"):
        MetricTable("p", "power", "W", "watts", "?", {})


def test_costs_survive_the_grouped_json(tmp_path):
    g = attach_costs(group_callgraph(sam_like()), costs_for(sam_like()))
    back = load_grouped_json(g.save(tmp_path / "g.json"))
    node = by_pattern(back, "enc.blocks.[0-5]")
    assert node.costs["flops_measured"]["total"] == 1000
    assert node.variants[1].costs["flops_measured"]["total"] == 600
    assert back.metrics == g.metrics and back.absent_metrics == g.absent_metrics
