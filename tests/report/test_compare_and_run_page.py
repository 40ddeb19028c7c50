"""The run page and `./dev compare` on real runs of the trace job (tiny twin, the default page), in a real
browser (Playwright on Debian's chromium), and the comparison's figures against the runs' own files.

Run A: the default job (`./dev trace`: profile and roofline on). Run B: the same job with
`runtime.attn_implementation=sdpa` and without its timing stages (`profile=off ~hardware`; the decoder's
attention no longer materialises its score matrices, so its observed activation bytes drop; no measured time in
B): the session's `untimed_run` (tests/conftest.py). Screenshots go to tmp/screens/ for a person to look at."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from browser import browser_page
from job_scripts import run_job_in_process

REPO = Path(__file__).resolve().parents[2]
SCREENS = REPO / "tmp" / "screens"
pytestmark = pytest.mark.slow
VIEWPORTS = ((1366, 768), (1920, 1080))


@pytest.fixture(scope="module")
def runs(default_run, untimed_run) -> tuple[Path, Path, subprocess.CompletedProcess]:
    """The default job (eager attention: the session's `default_run`, tests/conftest.py) and the same with
    sdpa attention and no timing stages (the session's `untimed_run`)."""
    (a, proc_a), b = default_run, untimed_run
    return a, b, proc_a


def test_the_default_job_prints_no_profiler_usdt_lines(runs):
    _, _, proc = runs
    out = proc.stdout + proc.stderr
    assert "profile: repeat 3/3" in out  # the profiler did run
    assert "USDT" not in out and "profiler_start" not in out


def _values(run: Path, metric: str) -> dict:
    data = json.loads((run / "module_costs.json").read_text())["data"]
    (table,) = [t for t in data["metrics"] if t["name"] == metric]
    return table["values"]


def test_compare_shows_the_changed_attention_with_the_files_delta(runs, tmp_path):
    a, b, _ = runs
    out = tmp_path / "cmp"
    proc = run_job_in_process("compare", a, b, "--out", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "attention eager" in proc.stdout and "attention sdpa" in proc.stdout
    from llm_perf_opt.report.compare import compare_runs

    cmp = compare_runs(a, b)
    assert cmp.only_a == [] and cmp.only_b == []  # same model: every node matched
    changed = cmp.changed_nodes("activation_bytes_observed")
    keys = [r.key for r in changed]
    assert "model.layers.0.self_attn" in keys and "model.layers.[*].self_attn" in keys, keys
    assert all("sam_model" not in k and "vision_model" not in k for k in keys), keys  # the vision side is untouched
    # the delta of one node, from the runs' own module_costs.json (one member, so the node's total is its value)
    path = "model.layers.0.self_attn"
    want = _values(b, "activation_bytes_observed")[path] - _values(a, "activation_bytes_observed")[path]
    assert want < 0  # sdpa keeps no score matrix
    row = next(r for r in cmp.nodes if r.key == path)
    assert row.figure("activation_bytes_observed").delta == want
    # the CSV says the same
    rows = [
        r
        for r in csv.DictReader((out / "compare.csv").open())
        if r["key"] == path and r["metric"] == "activation_bytes_observed"
    ]
    assert len(rows) == 1 and float(rows[0]["delta"]) == want
    # the FLOPs did not change anywhere (attention's FLOPs are the same in eager and sdpa)
    assert cmp.changed_nodes("flops_measured") == []
    # B was not profiled: no time to colour by, and the page says so
    assert not (out / "compare.graph.svg").exists()
    assert "no node has measured time in both runs" in (out / "compare.html").read_text()


def test_delta_time_colours_the_slower_node(runs, tmp_path):
    """Run A against a copy of itself whose lm_head node took twice its measured time: that node alone
    changes, by its own time, and is drawn in the 'slower' colours; the others are unchanged."""
    a, _, _ = runs
    from llm_perf_opt.callgraph.dot import build_grouped_dot
    from llm_perf_opt.callgraph.heat import BINS, Heat
    from llm_perf_opt.report.compare import compare_runs, delta_graph

    slower = tmp_path / "slower"
    shutil.copytree(a, slower)
    doc = json.loads((slower / "callgraph.grouped.json").read_text())
    nodes = doc["data"]["nodes"]
    (lm,) = [n for n in nodes if n["pattern"] == "lm_head"]
    before = lm["costs"]["time_measured"]["total"]
    lm["costs"]["time_measured"]["total"] = 2 * before
    (slower / "callgraph.grouped.json").write_text(json.dumps(doc))
    cmp = compare_runs(a, slower)
    changed = cmp.changed_nodes("time_measured")
    assert [r.key for r in changed] == ["lm_head"] and changed[0].figure("time_measured").delta == before
    g = delta_graph(cmp)
    node = g.node(lm["id"])
    heat = Heat.of(g, "delta_time")
    assert heat.active and heat.colours(node)[0] in {fill for _, fill, _, _ in BINS}
    assert heat.line(node).startswith("+")
    unchanged = next(n for n in g.nodes if n.pattern == "model.sam_model")
    assert heat.line(unchanged).startswith("±")
    assert heat.colours(node)[0] in build_grouped_dot(g, color_by="delta_time")


def test_compare_refuses_bad_input_in_one_line(runs, tmp_path):
    a, b, _ = runs
    for other, text in (
        (tmp_path, "not a run directory (no summary.json"),
        (tmp_path / "missing", "not a run directory (no such directory)"),
    ):
        out = tmp_path / "out1"
        proc = run_job_in_process("compare", a, other, "--out", out)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and text in proc.stderr, proc.stderr
        assert not out.exists()
    bumped = tmp_path / "bumped"
    shutil.copytree(b, bumped)
    doc = json.loads((bumped / "module_costs.json").read_text())
    doc["schema_version"] = doc["schema_version"] + 1
    (bumped / "module_costs.json").write_text(json.dumps(doc))
    out = tmp_path / "out2"
    proc = run_job_in_process("compare", a, bumped, "--out", out)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "incompatible schema versions: module_costs.json" in proc.stderr
    assert not out.exists()


OVERFLOW = "() => [document.documentElement.scrollWidth, window.innerWidth]"


def _visible(page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    return box is not None and box["width"] > 50 and box["height"] > 20


FOREIGN = ("file:", "data:", "about:")


def test_run_page_answers_first_and_fits_the_screen(runs):
    """At 1366x768 and 1920x1080 the first screen (no scrolling) holds the headline card, the legend and the stage
    chart with its numbers; nothing is wider than the window; no console error, no request leaves the machine; a
    stage bar selects its stage, a part bar its node, a tree node opens its children."""
    a, _, _ = runs
    from llm_perf_opt.callgraph.grouped import load_grouped_json

    grouped = load_grouped_json(a / "callgraph.grouped.json")
    SCREENS.mkdir(parents=True, exist_ok=True)
    for w, h in VIEWPORTS:
        with browser_page(w, h) as (page, errors):
            foreign = []
            page.on("request", lambda r: foreign.append(r.url) if not r.url.startswith(FOREIGN) else None)
            page.goto((a / "run.html").as_uri(), wait_until="load")
            scroll, inner = page.evaluate(OVERFLOW)
            assert scroll <= inner, (w, scroll, inner)
            wide = page.evaluate(
                "() => [...document.querySelectorAll('body *')].filter(e => { const r = e.getBoundingClientRect();"
                " return r.width > 0 && r.right > innerWidth + 1 && !e.closest('.tablewrap'); }).length"
            )
            assert wide == 0, (w, wide)
            for sel in ("#headline", "#levels-legend", "#stagechart", "#shares"):
                box = page.locator(sel).bounding_box()
                assert box is not None and box["width"] > 50 and box["y"] + box["height"] <= h, (w, sel, box)
            assert "units within 25%" in page.inner_text("#accuracy")
            numbers = page.locator("#stagechart text.num")
            assert numbers.count() >= 8 and all(
                (numbers.nth(i).text_content() or "").strip() for i in range(numbers.count())
            )
            assert page.locator("#levels-legend .li").count() >= 4  # measured and the three levels
            for sel in ("#timechart", "#times", "#icicle", "#tree"):
                assert _visible(page, sel), (w, sel)
            page.screenshot(path=str(SCREENS / f"run_page_{w}x{h}.png"))
            # a stage bar selects that stage (not the root node)
            page.click("#stagechart rect[data-stage='vision'][data-series='measured']")
            assert page.get_attribute("#panel-body", "data-stage") == "vision"
            assert "vision (stage)" in page.inner_text("#panel-body")
            page.click("#timechart rect[data-stage='prefill'][data-series='measured']")
            assert page.get_attribute("#panel-body", "data-stage") == "prefill"
            # a part's bar opens its node with its figures
            sam = next(n for n in grouped.nodes if n.pattern == "model.sam_model")
            page.click("#timechart rect[data-row='prefill/sam'][data-series='measured']")
            panel = page.inner_text("#panel-body")
            assert "ImageEncoderViT" in panel and "model.sam_model" in panel and "measured time" in panel, panel[:500]
            assert page.get_attribute("#panel-body", "data-node") == sam.id
            # the panel fits its box
            over = page.evaluate(
                "() => { const p = document.getElementById('panel'); return p.scrollWidth - p.clientWidth; }"
            )
            assert over <= 0, over
            # an icicle cell opens its node
            lm = next(n for n in grouped.nodes if n.pattern == "lm_head")
            page.click(f"#icicle .cell[data-node='{lm.id}']")
            assert "Linear @ lm_head" in page.inner_text("#panel-body")
            # the tree: opening SAM shows its children
            kids = page.locator(f"#tree tr[data-parent='{sam.id}']")
            assert kids.count() == len(sam.children) > 0 and not kids.first.is_visible()
            page.click(f"#tree tr[data-id='{sam.id}'] button.tog")
            assert all(kids.nth(i).is_visible() for i in range(kids.count()))
            # the whole drawing is one click away and keeps the page's width when zoomed
            page.click("#show-drawing")
            page.click("#fit-width")
            page.click("#zoom-in")
            assert page.evaluate(OVERFLOW)[0] <= inner
            assert errors == [] and foreign == []


def _cli_levels(out: str) -> dict[str, dict[str, str]]:
    """{key: {column: text}} of the time-levels table the job printed (keys as the run page's: stage, stage/part)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("time levels on "))
    head = next(i for i in range(start, len(lines)) if lines[i].startswith("stage / part"))
    rows, stage = {}, None
    for line in lines[head + 2 :]:
        if not line.strip() or line.startswith(
            ("device figures", "host figures", "figures:", "convention", "measured")
        ):
            break
        cells = [c for c in line[20:].split("  ") if c.strip()]
        name = line[:20].strip()
        if not line.startswith("  "):
            stage, key = name, name
        else:
            key = f"{stage}/{name}"
        rows[key] = {
            "ideal": cells[0].strip(),
            "kernel": cells[1].strip(),
            "eager": cells[2].strip(),
            "measured": cells[3].strip(),
        }
    return rows


def test_one_number_per_quantity_on_the_page_the_console_and_summary(runs):
    """The fastest-run measured time and the eager prediction of every stage and part: the same text in
    summary.json (formatted), the console's time-levels table and the run page (in the browser); a decoder layer is
    never slower than the decoder within that quantity."""
    a, _, proc = runs
    from llm_perf_opt import units
    from llm_perf_opt.quantities import label

    out = proc.stdout + proc.stderr
    assert f"measured = {label('fastest')}" in out and "verdict = bound at the eager level" in out
    cli = _cli_levels(out)
    levels = json.loads((a / "summary.json").read_text())["data"]["roofline"]["levels"]["stages"]
    decoder = levels["prefill"]["decoder"]["measured_s"]
    layers = [e["measured_s"] for k, e in levels["prefill"].items() if k.startswith("decoder.layer.")]
    assert len(layers) == 3 and all(x <= decoder for x in layers), (layers, decoder)
    with browser_page(1366, 768) as (page, errors):
        page.goto((a / "run.html").as_uri(), wait_until="load")
        page_measured = page.eval_on_selector_all(
            "#times td[data-q='fastest']",
            "els => Object.fromEntries(els.map(e => [e.dataset.key, e.textContent.trim()]))",
        )
        head = page.eval_on_selector_all(
            "#headline-table td[data-q='fastest']",
            "els => Object.fromEntries(els.map(e => [e.dataset.key, e.textContent.trim()]))",
        )
        eager_col = page.eval_on_selector_all("#times thead th", "els => els.map(e => e.textContent.trim())").index(
            "eager"
        )
        page_eager = page.eval_on_selector_all(
            "#times tbody tr",
            "rows => Object.fromEntries(rows.map(r => [r.children[1].dataset.key, "
            f"r.children[{eager_col}].textContent.trim()]))",
        )
        assert errors == []
    compared = 0
    for stage, parts in levels.items():
        for alias, e in parts.items():
            key = stage if alias == "" else f"{stage}/{alias}"
            if key not in page_measured or e.get("measured_s") is None:
                continue
            text = units.seconds(e["measured_s"])
            assert cli[key]["measured"] == text == page_measured[key], (key, cli[key], text, page_measured[key])
            assert cli[key]["eager"] == units.seconds(e["eager_s"]) == page_eager[key], key
            if alias == "":
                assert head[stage] == text
            compared += 1
    assert compared >= 10, compared  # the prefill, vision and every prefill part and layer


def test_compare_page_fits_the_screen(runs, tmp_path):
    a, b, _ = runs
    out = tmp_path / "cmp"
    assert run_job_in_process("compare", a, b, "--out", out).returncode == 0
    for w, h in VIEWPORTS:
        with browser_page(w, h) as (page, errors):
            page.goto((out / "compare.html").as_uri(), wait_until="load")
            scroll, inner = page.evaluate(OVERFLOW)
            assert scroll <= inner, (w, scroll, inner)
            for sel in ("#stages", "#nodes"):
                assert _visible(page, sel), (w, sel)
            assert "self_attn" in page.inner_text("#nodes")
            page.screenshot(path=str(SCREENS / f"compare_{w}x{h}.png"), full_page=True)
            assert errors == []
