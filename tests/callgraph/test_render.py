"""Rendering: DOT / SVG / Mermaid of grouped graphs, escaping, folding, the files, `./dev group`, and
golden files of the tiny twin's grouped graph."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from callgraph_helpers import make_graph
from llm_perf_opt.callgraph import render
from llm_perf_opt.callgraph.grouping import group_callgraph, load_grouped_json
from llm_perf_opt.callgraph.render import (
    build_grouped_dot,
    build_grouped_mermaid,
    build_raw_dot,
    build_raw_mermaid,
    group_and_render,
    mermaid_escape,
    mermaid_id,
    validate_mermaid,
)
from llm_perf_opt.callgraph.schema import load_callgraph_json
from llm_perf_opt.pipelines import group as group_cli

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


@pytest.mark.parametrize("bad, fragment", [
    ('graph TD\n  a["x"]\n', "header"),
    ('flowchart LR\n  a["x"]\n  a["y"]\n', "already declared"),
    ('flowchart LR\n  a["x"]\n  a --> b\n', "undeclared node 'b'"),
    ('flowchart LR\n  a["say "hi""]\n', "unescaped"),
    ('flowchart LR\n  a["a <b> c"]\n', "unescaped"),
    ('flowchart LR\n  a["a # c"]\n', "entity"),
    ('flowchart LR\n  a.b["x"]\n', "unsafe node id"),
    ('flowchart LR\n  end["x"]\n', "unsafe node id"),
    ('flowchart LR\n  a["x"]\n  class a,zz stack\n', "undeclared node 'zz'"),
    ('flowchart LR\n  a[x]\n', "not a node"),
])
def test_validate_mermaid_catches_problems(bad, fragment):
    problems = validate_mermaid(bad)
    assert problems and any(fragment in p for p in problems), problems


def _mmdc() -> tuple[str, str] | None:
    """mermaid-cli: $MMDC or /opt/mmdc/node_modules/.bin/mmdc; puppeteer config from $MMDC_PUPPETEER_CONFIG,
    beside the install (puppeteer.json), or made here for a system chromium."""
    exe = os.environ.get("MMDC") or "/opt/mmdc/node_modules/.bin/mmdc"
    if not (Path(exe).is_file() or shutil.which(exe)):
        return None
    cfg = os.environ.get("MMDC_PUPPETEER_CONFIG")
    if not cfg:
        beside = Path(exe).resolve().parents[2] / "puppeteer.json" if Path(exe).is_file() else None
        if beside is not None and beside.is_file():
            cfg = str(beside)
    if not cfg:
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if not chromium:
            return None
        cfg_path = Path(os.environ.get("TMPDIR", "/tmp")) / "llm_perf_opt_puppeteer.json"
        cfg_path.write_text(json.dumps({"executablePath": chromium, "headless": "shell",
                                        "args": ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]}))
        cfg = str(cfg_path)
    return exe, cfg


@pytest.mark.slow
def test_mermaid_parses_with_mermaid_cli(tmp_path):
    found = _mmdc()
    if found is None:
        pytest.skip("mermaid-cli not found (set MMDC, or install it in /opt/mmdc; see shared/facts/environment.md)")
    exe, cfg = found
    g = group_callgraph(nasty_graph())
    diagrams = {"grouped": build_grouped_mermaid(g), "raw": build_raw_mermaid(nasty_graph())}
    for name, text in diagrams.items():
        src = tmp_path / f"{name}.mmd"
        src.write_text(text)
        proc = subprocess.run([exe, "-p", cfg, "-i", str(src), "-o", str(tmp_path / f"{name}.svg")],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"{name}: mermaid-cli rejected the diagram:\n{proc.stdout}\n{proc.stderr}"
        svg = (tmp_path / f"{name}.svg").read_text()
        assert "<svg" in svg
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
    monkeypatch.setattr(render, "dot_executable", lambda: None)
    grouped, written = group_and_render(deep_graph(), tmp_path)
    assert set(written) == {"dot", "mmd", "json"}
    assert any("svg skipped" in n for n in grouped.notes)
    assert any("svg skipped" in n for n in load_grouped_json(written["json"]).notes)


# ------------------------------------------------------------------------------------------ ./dev group
def test_group_cli_regroups_an_existing_run(tmp_path, capsys):
    cg = nasty_graph()
    cg.save(tmp_path / "callgraph.json")
    (tmp_path / "runtime_log.json").write_text(json.dumps({
        "schema": "llm_perf_opt.runtime_log", "schema_version": 1,
        "data": {"events": [{"seq": 0, "event": "vision_inputs", "vision": True, "vision_passes": 2}]}}))
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
    proc = subprocess.run([sys.executable, "-m", "llm_perf_opt.pipelines.group", str(tmp_path), "--formats", "mmd"],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "callgraph.grouped.mmd").is_file()
    proc = subprocess.run([sys.executable, "-m", "llm_perf_opt.pipelines.group", str(tmp_path / "x")],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1
