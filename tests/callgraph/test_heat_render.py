"""The heat map in DOT, SVG and Mermaid: colour by bin of the node's share, the metric line
(`1 kFLOP · 83.3%`), the legend, variants with their costs, tooltips with parameters, shapes and costs,
color_by fallbacks and notes; Mermaid checked by the structural validator and, when installed, by the
real mermaid-cli."""

from __future__ import annotations

import shutil

import pytest
from test_node_costs import costs_for, sam_like  # noqa: E402

from llm_perf_opt.callgraph.dot import build_grouped_dot
from llm_perf_opt.callgraph.grouping import group_callgraph  # noqa: E402
from llm_perf_opt.callgraph.heat import BINS, COLOR_CHOICES, NO_FIGURE, Heat, bin_of  # noqa: E402
from llm_perf_opt.callgraph.labels import node_tooltip
from llm_perf_opt.callgraph.mermaid import build_grouped_mermaid
from llm_perf_opt.callgraph.mermaid_check import validate_mermaid
from llm_perf_opt.callgraph.node_costs import attach_costs  # noqa: E402
from llm_perf_opt.callgraph.render import group_and_render
from llm_perf_opt.config.schemas import RENDER_COLOR_BY  # noqa: E402
from llm_perf_opt.errors import ArtifactError  # noqa: E402


def grouped_with_costs(with_time=True):
    return attach_costs(group_callgraph(sam_like()), costs_for(sam_like(), with_time=with_time))


def test_bins_and_choices():
    assert [bin_of(s) for s in (1.0, 0.5, 0.3, 0.15, 0.07, 0.03, 0.015, 0.005, 0.0)] == [0, 0, 1, 2, 3, 4, 5, 6, 7]
    assert bin_of(None) is None
    assert set(COLOR_CHOICES) == set(RENDER_COLOR_BY)  # the config accepts exactly what the renderer knows
    with pytest.raises(ArtifactError, match="color_by='heat'"):
        Heat.of(grouped_with_costs(), "heat")


def test_dot_heat_map_labels_legend_and_tooltips():
    g = grouped_with_costs()
    dot = build_grouped_dot(g, color_by="flops")
    blocks = next(n for n in g.nodes if n.pattern == "enc.blocks.[0-5]")
    line = next(row for row in dot.splitlines() if row.startswith(f"\t{blocks.id} "))
    # 1000 of 1200 FLOP: 83.3 %, the darkest bin, white text; the variants with their own costs
    assert "Block @ enc.blocks.[0-5] for 6\\n1 kFLOP · 83.3%" in line
    assert "◦ window_size=14 ×4: 400 FLOP · 33.3%" in line and "◦ window_size=0 ×2: 600 FLOP · 50%" in line
    assert f'fillcolor="{BINS[0][1]}"' in line and 'fontcolor="#ffffff"' in line and f"id={blocks.id}" in line
    # the tooltip: costs with per-instance figures and the slowest instance, variants, absent metrics
    tip = node_tooltip(blocks, g)
    assert (
        "measured FLOPs: 1 kFLOP (83.3% of the run); per instance 167 FLOP (min 100 FLOP, max 300 FLOP, "
        "slowest enc.blocks.2)" in tip
    )
    assert "measured time: 900 ms (45% of the run)" in tip and "5 of 6 instances have a figure" in tip
    assert "variant window_size=0 ×2: 2, 5" in tip
    assert "legend [label=<<table" in dot and "colour: measured FLOPs, share of 1.2 kFLOP" in dot
    # time: the block without a range is said so in the label
    dot_t = build_grouped_dot(g, color_by="time")
    assert "900 ms · 45% (5/6 instances)" in dot_t
    attn = next(n for n in g.nodes if n.pattern == "enc.blocks.[0-5].attn")
    attn_line = next(row for row in dot_t.splitlines() if row.startswith(f"\t{attn.id} "))
    assert "no measured time" in attn_line and f'fillcolor="{NO_FIGURE[0]}"' in attn_line


def test_params_and_none():
    g = grouped_with_costs()
    dot = build_grouped_dot(g, color_by="params")
    assert "260 params · 100%" in dot  # the root: 4 windowed x 20 + 2 global x 90 parameters
    plain = build_grouped_dot(g, color_by="none")
    assert "legend" not in plain and "#dbeafe" in plain  # node-kind colours, no metric line
    assert "for 6\\n1 kFLOP" not in plain and "measured FLOPs: 1 kFLOP" in plain  # costs stay in the tooltips


def test_color_by_a_metric_the_run_lacks_is_a_note(tmp_path):
    cg = sam_like()
    grouped, _ = group_and_render(
        cg, tmp_path, formats=("dot", "mmd"), costs=costs_for(cg, with_time=False), color_by="time"
    )
    assert any(
        "color_by=time: no time_measured or time_predicted" in n and "profile stage did not run" in n
        for n in grouped.notes
    )
    assert "legend" not in (tmp_path / "callgraph.grouped.dot").read_text()


def test_mermaid_heat_map_is_valid(tmp_path):
    g = grouped_with_costs()
    for color_by in ("flops", "time", "bytes", "params", "none"):
        text = build_grouped_mermaid(g, color_by=color_by)
        assert validate_mermaid(text) == [], (color_by, validate_mermaid(text))
    text = build_grouped_mermaid(g, color_by="flops")
    assert 'subgraph legend["colour: measured FLOPs, share of 1.2 kFLOP"]' in text
    assert f"classDef heat0 fill:{BINS[0][1]},color:{BINS[0][2]}" in text
    assert "1 kFLOP · 83.3%" in text and "◦ window_size=0 ×2: 600 FLOP · 50%" in text
    bad = text.replace("  end\n", "")
    assert any("never closed" in p for p in validate_mermaid(bad))


@pytest.mark.slow
def test_mermaid_with_costs_parses_with_mermaid_cli(tmp_path):
    from browser import mermaid_cli, run_mmdc

    found = mermaid_cli()
    g = grouped_with_costs()
    src = tmp_path / "heat.mmd"
    src.write_text(build_grouped_mermaid(g, color_by="flops"))
    run_mmdc(found, src, tmp_path / "heat.svg")
    svg = (tmp_path / "heat.svg").read_text()
    assert "Block @ enc.blocks.[0-5] for 6" in svg.replace("&amp;", "&") or "enc.blocks.[0-5]" in svg
    assert BINS[0][1] in svg  # the heat colour reached the drawing


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' is not installed")
def test_svg_nodes_carry_ids_and_tooltips(tmp_path):
    cg = sam_like()
    grouped, written = group_and_render(cg, tmp_path, formats=("svg",), costs=costs_for(cg))
    svg = written["svg"].read_text()
    for n in grouped.nodes:
        assert f'id="{n.id}"' in svg
    assert "measured FLOPs: 1 kFLOP" in svg  # tooltips become SVG titles
