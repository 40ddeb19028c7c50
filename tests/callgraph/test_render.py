"""Rendering: DOT / SVG / Mermaid of grouped graphs, escaping, folding, the files, `./dev group`, and
golden files of the tiny twin's grouped graph."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from browser import mermaid_cli, run_mmdc
from callgraph_helpers import make_graph

from llm_perf_opt.callgraph.dot import build_grouped_dot, build_raw_dot
from llm_perf_opt.callgraph.grouped import load_grouped_json
from llm_perf_opt.callgraph.grouping import group_callgraph
from llm_perf_opt.callgraph.mermaid import (
    build_grouped_mermaid,
    build_raw_mermaid,
    mermaid_escape,
    mermaid_id,
)
from llm_perf_opt.callgraph.mermaid_check import validate_mermaid
from llm_perf_opt.callgraph.render import group_and_render
from llm_perf_opt.callgraph.schema import load_callgraph_json
from llm_perf_opt.jobs import group as group_cli

REPO = Path(__file__).resolve().parents[2]


def nasty_graph(runtime_log=None):
    """Class names and addresses with every character Mermaid and DOT care about."""
    mods = [("", 'Root"<x>', 0), ("enc", "Enc[#1]@{a|b};`q`&", 3), ("enc.blocks", "ModuleList", 0)]
    mods += [(f"enc.blocks.{i}", "Block(<T>)", 5) for i in range(3)]
    mods += [("end", "end", 1), ("graph", "subgraph", 0)]
    calls = [("", "enc", 2)] + [("enc", f"enc.blocks.{i}", 2) for i in range(3)] + [("", "end", 1), ("", "graph", 1)]
    ctor = {"enc": {"note": 'say "hi" \\ there', "window": 14}}
    return make_graph(mods, calls, constructor_params=ctor, runtime_log=runtime_log)


def deep_graph():
    mods = [("", "M", 0), ("a", "A", 1), ("a.b", "B", 1), ("a.b.c", "C", 1), ("a.b.c.d", "D", 1)]
    calls = [("", "a", 1), ("a", "a.b", 1), ("a.b", "a.b.c", 1), ("a.b.c", "a.b.c.d", 1)]
    return make_graph(mods, calls)


# ------------------------------------------------------------------------------------------ Mermaid
def test_mermaid_escape_and_ids():
    assert mermaid_escape('a "b" <c> [d] @e #f') == "a #quot;b#quot; #lt;c#gt; #91;d#93; #64;e #35;f"
    assert mermaid_escape("x\ny") == "x<br/>y"
    taken: set[str] = set()
    assert mermaid_id("model.layers.0", taken) == "model_layers_0"
    assert mermaid_id("model.layers.0", taken) == "model_layers_0_1"
    assert mermaid_id("0abc") == "m_0abc"
    assert mermaid_id("end") == "m_end"
    assert mermaid_id("") == "root"


def test_grouped_mermaid_is_structurally_valid_with_nasty_names():
    g = group_callgraph(nasty_graph())
    text = build_grouped_mermaid(g)
    assert validate_mermaid(text) == []
    assert text.startswith("flowchart LR\n")
    assert "#quot;" in text and "#64;" in text and "#91;" in text
    assert "Block#40;#lt;T#gt;#41; #64; enc.blocks.#91;0-2#93; for 3" in text
    raw = build_raw_mermaid(nasty_graph())
    assert validate_mermaid(raw) == []


def test_sparse_stack_renders_valid_mermaid_and_dashed_dot():
    mods = [("", "M", 0), ("moe", "MoE", 0), ("moe.experts", "ModuleList", 0)]
    mods += [(f"moe.experts.{e}", "MLP", 4) for e in range(16)]
    calls = [("", "moe", 1)] + [("moe", f"moe.experts.{e}", 1) for e in (0, 2, 3, 7, 9, 11)]
    g = group_callgraph(make_graph(mods, calls))
    mmd = build_grouped_mermaid(g)
    assert validate_mermaid(mmd) == [] and "classDef sparse" in mmd
    assert "experts.#91;6 of 16#93; for 6" in mmd  # 5 ranges > 4: a count
    assert 'style="rounded,filled,dashed"' in build_grouped_dot(g)


@pytest.mark.parametrize(
    "bad, fragment",
    [
        ('graph TD\n  a["x"]\n', "header"),
        ('flowchart LR\n  a["x"]\n  a["y"]\n', "already declared"),
        ('flowchart LR\n  a["x"]\n  a --> b\n', "undeclared node 'b'"),
        ('flowchart LR\n  a["say "hi""]\n', "unescaped"),
        ('flowchart LR\n  a["a <b> c"]\n', "unescaped"),
        ('flowchart LR\n  a["a # c"]\n', "entity"),
        ('flowchart LR\n  a.b["x"]\n', "unsafe node id"),
        ('flowchart LR\n  end["x"]\n', "unsafe node id"),
        ('flowchart LR\n  a["x"]\n  class a,zz stack\n', "undeclared node 'zz'"),
        ("flowchart LR\n  a[x]\n", "not a node"),
    ],
)
def test_validate_mermaid_catches_problems(bad, fragment):
    problems = validate_mermaid(bad)
    assert problems and any(fragment in p for p in problems), problems


@pytest.mark.slow
def test_mermaid_parses_with_mermaid_cli(tmp_path):
    found = mermaid_cli()
    g = group_callgraph(nasty_graph())
    diagrams = {"grouped": build_grouped_mermaid(g), "raw": build_raw_mermaid(nasty_graph())}
    for name, text in diagrams.items():
        src = tmp_path / f"{name}.mmd"
        src.write_text(text)
        run_mmdc(found, src, tmp_path / f"{name}.svg")
    assert "Block(&lt;T&gt;) @ enc.blocks.[0-2] for 3" in (tmp_path / "grouped.svg").read_text()


# ------------------------------------------------------------------------------------------ DOT
def test_grouped_dot_labels_tooltips_and_escaping():
    g = group_callgraph(nasty_graph())
    text = build_grouped_dot(g)
    assert text.startswith("digraph grouped_callgraph {")
    assert 'label="Block(<T>) @ enc.blocks.[0-2] for 3\\n15 params"' in text
    assert 'Root\\"<x>' in text  # quotes escaped
    assert 'note=say \\"hi\\" \\\\ there' in text  # constructor params in the tooltip, escaped
    assert '[label="parfor 2"]' in text
    assert text.count(" -> ") == len(g.edges)


def test_max_depth_folds_deeper_groups():
    g = group_callgraph(deep_graph())
    full = build_grouped_dot(g)
    assert full.count(" -> ") == 4
    folded = build_grouped_dot(g, max_depth=2)
    assert folded.count(" -> ") == 2 and "+2 folded" in folded
    assert "D @ a.b.c.d" not in folded
    mmd = build_grouped_mermaid(g, max_depth=1)
    assert validate_mermaid(mmd) == [] and "+3 folded" in mmd and "B #64;" not in mmd
    assert "+4 folded" in build_grouped_dot(g, max_depth=0)
    with pytest.raises(Exception, match="max_depth"):
        build_grouped_dot(g, max_depth=-1)
    raw = build_raw_dot(deep_graph(), max_depth=2)
    assert "a.b\\n" in raw and "a.b.c\\n" not in raw


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' is not installed")
def test_group_and_render_writes_all_files(tmp_path):
    cg = nasty_graph(runtime_log=[{"event": "llm_stack", "num_layers": 1}])
    grouped, written = group_and_render(cg, tmp_path, formats=("dot", "svg", "mmd", "raw_dot"))
    assert set(written) == {"dot", "svg", "mmd", "raw_dot", "json"}
    assert written["json"].name == "callgraph.grouped.json"
    assert "<svg" in written["svg"].read_text()
    assert validate_mermaid(written["mmd"].read_text()) == []
    back = load_grouped_json(written["json"])
    assert len(back.nodes) == len(grouped.nodes) and back.notes == []


def test_svg_skipped_without_dot(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no Graphviz `dot` to be found
    grouped, written = group_and_render(deep_graph(), tmp_path)
    assert set(written) == {"dot", "mmd", "json"}
    assert any("svg skipped" in n for n in grouped.notes)
    assert any("svg skipped" in n for n in load_grouped_json(written["json"]).notes)


# ------------------------------------------------------------------------------------------ ./dev group
def test_group_cli_regroups_an_existing_run(tmp_path, capsys):
    cg = nasty_graph()
    cg.save(tmp_path / "callgraph.json")
    (tmp_path / "runtime_log.json").write_text(
        json.dumps(
            {
                "schema": "llm_perf_opt.runtime_log",
                "schema_version": 1,
                "data": {"events": [{"seq": 0, "event": "vision_inputs", "vision": True, "vision_passes": 2}]},
            }
        )
    )
    assert group_cli.main([str(tmp_path), "--max-depth", "1", "--formats", "dot,mmd"]) == 0
    out = capsys.readouterr().out
    assert "groups" in out and "runtime_log.json" in out
    for name in ("callgraph.grouped.json", "callgraph.grouped.dot", "callgraph.grouped.mmd"):
        assert (tmp_path / name).is_file()
    assert "enc.blocks" not in (tmp_path / "callgraph.grouped.dot").read_text()  # folded at depth 1
    assert load_callgraph_json(tmp_path / "callgraph.json").model_name == "hand-built"


def test_group_cli_missing_or_corrupt_input_is_one_line(tmp_path, capsys):
    assert group_cli.main([str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err
    (tmp_path / "callgraph.json").write_text("{not json")
    assert group_cli.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "not valid JSON" in err and "\n" not in err
    (tmp_path / "callgraph.json").write_text(json.dumps({"call_counts": {}}))
    assert group_cli.main([str(tmp_path)]) == 2
    assert "lacks required field" in capsys.readouterr().err


@pytest.mark.slow
def test_group_cli_as_a_module(tmp_path):
    deep_graph().save(tmp_path / "callgraph.json")
    # a subprocess: the test is about `python -m llm_perf_opt.jobs.group` (the module's __main__ and its exit status)
    proc = subprocess.run(
        [sys.executable, "-m", "llm_perf_opt.jobs.group", str(tmp_path), "--formats", "mmd"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "callgraph.grouped.mmd").is_file()
    proc = subprocess.run(
        [sys.executable, "-m", "llm_perf_opt.jobs.group", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1


# ------------------------------------------------------------------------------------------ golden: twin_tiny
# The tiny twin (seed 0, CPU float32) in Gundam mode on a synthetic 1000x700 page: crops and a global
# view, so SAM / CLIP / projector are `parfor 2`; windowed and global SAM blocks; dense layer 0 and MoE
# layers 1-2. Captured once with TorchLens (capture.py) under the runtime patches.
#
# The golden files hold the normalised structure only: one line per node, indented under its parent,
# with the node's first label line (class @ pattern, for N), its variants (`{window_size=14 ×2 | ...}`)
# and the label of the edge from its parent (parfor N), then the runtime checks' names and statuses. No op counts,
# bytes, parameter counts or
# shapes (they move with dtype and versions), and no expert ranges: which experts are called depends
# on the routing, so `experts.[...]`, its `for N` and the labels of edges into it are masked. The DOT
# and Mermaid renderings are checked to draw exactly that structure.
GOLDEN_PAGE = (1000, 700)
_ROUTED = re.compile(r"(experts\.)\[[^\]]*\]")
_MERMAID_ENTITY = {
    "#64;": "@",
    "#91;": "[",
    "#93;": "]",
    "#123;": "{",
    "#125;": "}",
    "#40;": "(",
    "#41;": ")",
    "#quot;": '"',
    "#lt;": "<",
    "#gt;": ">",
    "#38;": "&",
    "#35;": "#",
    "#124;": "|",
    "#96;": "`",
    "#59;": ";",
}


def _masked(head: str, edge: str) -> tuple[str, str]:
    """Routing-dependent parts of one node's line masked: expert indices, their `for N`, their edge."""
    if not _ROUTED.search(head):
        return head, edge
    head = re.sub(r" for \d+(-\d+)?$", " for *", _ROUTED.sub(r"\1[*]", head))
    return head, "*"


def structure_text(nodes: dict[str, str], edges: list[tuple[str, str, str]], checks=None) -> str:
    """An indented tree from {id: first label line} and (parent, child, edge label) in order."""
    children: dict[str, list[tuple[str, str]]] = {}
    has_parent = set()
    for parent, child, label in edges:
        children.setdefault(parent, []).append((child, label))
        has_parent.add(child)
    (root,) = [n for n in nodes if n not in has_parent]
    lines: list[str] = []

    def walk(node: str, edge: str, depth: int) -> None:
        head, edge = _masked(nodes[node], edge)
        lines.append("  " * depth + head + (f"  <- {edge}" if edge else ""))
        for child, label in children.get(node, []):
            walk(child, label, depth + 1)

    walk(root, "", 0)
    if checks is not None:
        lines.append("checks:")
        lines += [f"  {c['name']}: {c['status']}" for c in checks]
    return "\n".join(lines) + "\n"


_VARIANT = re.compile(r"^◦ (.*?) ×(\d+)")


def with_variants(lines) -> str:
    """The first label line, and the variant lines (`◦ label ×k...`) as `{label ×k | ...}`."""
    variants = [f"{m.group(1)} ×{m.group(2)}" for line in lines[1:] if (m := _VARIANT.match(line))]
    return lines[0] + (f"  {{{' | '.join(variants)}}}" if variants else "")


def grouped_structure(grouped, max_depth=None, with_checks=True) -> str:
    from llm_perf_opt.callgraph.labels import (
        display_patterns,
        node_label_lines,
        repeat_text,
        visible_nodes,
    )

    shown, folded = visible_nodes(grouped, max_depth)
    patterns = display_patterns(grouped)
    nodes = {n.id: with_variants(node_label_lines(n, folded.get(n.id, 0), pattern=patterns[n.id])) for n in shown}
    edges = [
        (e.parent, e.child, repeat_text(grouped.node(e.child)))
        for e in grouped.edges
        if e.parent in nodes and e.child in nodes
    ]
    return structure_text(nodes, edges, grouped.checks if with_checks else None)


_DOT_NODE = re.compile(r'^\t(\w+) \[label="((?:[^"\\]|\\.)*)"')
_DOT_EDGE = re.compile(r'^\t(\w+) -> (\w+)(?: \[label="((?:[^"\\]|\\.)*)"\])?$')


def dot_structure(text: str) -> str:
    nodes, edges = {}, []
    for line in text.splitlines():
        if m := _DOT_EDGE.match(line):
            edges.append((m.group(1), m.group(2), m.group(3) or ""))
        elif m := _DOT_NODE.match(line):
            nodes[m.group(1)] = with_variants(
                [x.replace('\\"', '"').replace("\\\\", "\\") for x in m.group(2).split("\\n")]
            )
    return structure_text(nodes, edges)


def mermaid_structure(text: str) -> str:
    def plain(label: str) -> str:
        return re.sub("#[a-z0-9]+;", lambda m: _MERMAID_ENTITY.get(m.group(0), m.group(0)), label)

    nodes, edges = {}, []
    for line in text.splitlines():
        if m := re.match(r'^  (\w+)\["(.*)"\]$', line):
            nodes[m.group(1)] = with_variants([plain(x) for x in m.group(2).split("<br/>")])
        elif m := re.match(r'^  (\w+) -->(?:\|"(.*)"\|)? (\w+)$', line):
            edges.append((m.group(1), m.group(3), plain(m.group(2) or "")))
    return structure_text(nodes, edges)


@pytest.fixture(scope="module")
def tiny_capture():
    from llm_perf_opt.callgraph.capture import capture_callgraph
    from llm_perf_opt.dsocr.inputs import build_inputs
    from llm_perf_opt.dsocr.layout import VisionWorkload
    from llm_perf_opt.dsocr.patches import LOOP_PATCHES, runtime_patches
    from llm_perf_opt.dsocr.spec import ModelSpec
    from llm_perf_opt.dsocr.twin import build_twin

    spec = ModelSpec.tiny()
    model = build_twin(spec, device="cpu", dtype=torch.float32, seed=0)
    workload = VisionWorkload(base_size=1024, image_size=640, crop_mode=True, tile_size=640)
    inputs = build_inputs(spec, workload, width=GOLDEN_PAGE[0], height=GOLDEN_PAGE[1])
    with torch.no_grad(), runtime_patches(model, ["vision_inputs", "llm_stack", *LOOP_PATCHES]) as log:
        cg = capture_callgraph(model, inputs.forward_kwargs(dtype=torch.float32), model_name="twin_tiny")
    cg.runtime_log = log.events()
    return cg


@pytest.fixture(scope="module")
def tiny_grouped(tiny_capture):
    from llm_perf_opt.dsocr.checks import RUNTIME_CHECKS

    return group_callgraph(tiny_capture, checks=RUNTIME_CHECKS)


def test_golden_structure_masks_routing():
    from test_grouping import decoder_graph

    a = group_callgraph(decoder_graph(n_layers=3, n_experts=16, called={1: [0, 3, 4], 2: [1, 5]}))
    b = group_callgraph(decoder_graph(n_layers=3, n_experts=16, called={1: [2, 7], 2: [1, 5, 9, 11]}))
    c = group_callgraph(decoder_graph(n_layers=3, n_experts=16))  # every expert called
    assert grouped_structure(a) == grouped_structure(b) == grouped_structure(c)
    assert "experts.[*] for *" in grouped_structure(a)
    d = group_callgraph(decoder_graph(n_layers=4, n_experts=16))  # one more layer: the structure moves
    assert grouped_structure(d) != grouped_structure(c)


@pytest.mark.slow
def test_tiny_twin_groups_as_expected(tiny_capture, tiny_grouped):
    g = tiny_grouped
    assert 20 <= len(g.nodes) <= 120, len(g.nodes)  # a few dozen nodes, not hundreds of modules
    assert len(g.nodes) < sum(1 for n in tiny_capture.call_counts.values() if n)
    for name in ("sam_model", "vision_model", "projector"):
        (node,) = g.find(f"model.{name}")
        assert node.parfor == 2
    sam_blocks = by_pattern_r(g, "model.sam_model.blocks.[0-3]")  # one loop of 4 (spec: global blocks 1, 3)
    assert sam_blocks.for_n == 4
    assert [(v.label, v.members) for v in sam_blocks.variants] == [
        ("window_size=14", ["model.sam_model.blocks.0", "model.sam_model.blocks.2"]),
        ("window_size=0", ["model.sam_model.blocks.1", "model.sam_model.blocks.3"]),
    ]
    assert by_pattern_r(g, "model.layers.0").template == "layers.*"
    assert by_pattern_r(g, "model.layers.[1-2]").for_n == 2
    assert [c["status"] for c in g.checks] == ["ok"] * 7, g.checks
    loops = {c["name"]: (c["expected"], c["observed"]) for c in g.checks if c["name"].startswith("block_loop")}
    assert loops == {"block_loop:sam_model.blocks": (4, 4), "block_loop:vision_model.transformer.layers": (2, 2)}
    assert g.node(g.root).params == sum(tiny_capture.param_counts.values())


def by_pattern_r(g, pattern):
    found = [n for n in g.nodes if n.pattern == pattern]
    assert len(found) == 1, (pattern, [n.pattern for n in g.nodes])
    return found[0]


@pytest.mark.slow
def test_golden_tiny_twin_structure(tiny_grouped, golden):
    golden("twin_tiny.grouped.txt", grouped_structure(tiny_grouped))
    golden("twin_tiny.grouped.depth3.txt", grouped_structure(tiny_grouped, max_depth=3))


@pytest.mark.slow
def test_tiny_twin_dot_draws_the_structure(tiny_grouped):
    assert dot_structure(build_grouped_dot(tiny_grouped)) == grouped_structure(tiny_grouped, with_checks=False)
    assert dot_structure(build_grouped_dot(tiny_grouped, max_depth=3)) == grouped_structure(
        tiny_grouped, max_depth=3, with_checks=False
    )


@pytest.mark.slow
def test_tiny_twin_mermaid_draws_the_structure(tiny_grouped, tmp_path):
    text = build_grouped_mermaid(tiny_grouped)
    assert validate_mermaid(text) == []
    assert mermaid_structure(text) == grouped_structure(tiny_grouped, with_checks=False)
    src = tmp_path / "tiny.mmd"  # and the real parser
    src.write_text(text)
    run_mmdc(mermaid_cli(), src, tmp_path / "tiny.svg")
