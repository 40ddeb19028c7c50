"""The compare page's ranking, chart, node panel and tables (issue 33, item 4), on the session's timed run
(tests/conftest.py `timed_run`) against a copy of it in which one leaf got slower and another faster, as a real
change would show: the leaf's own time and the inclusive time of every ancestor move by the same amount. In a real
browser (Playwright on the system's chromium): the chart and the panel answer clicks, the tables sort and filter,
nothing is wider than the screen, nothing is fetched. Screenshots go to tmp/screens/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from browser import WIDER_THAN_VIEWPORT, offline_page

from llm_perf_opt.report.compare import SELF_TIME, compare_runs, keyed_nodes, write_comparison

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
SCREENS = REPO / "tmp" / "screens"


def _shift(nodes: dict, node_id: str, seconds: float) -> None:
    """The node's own time and its ancestors' inclusive times, `seconds` more."""
    node = nodes[node_id]
    node["costs"]["time_measured_self"]["total"] += seconds
    while node is not None:
        node["costs"]["time_measured"]["total"] += seconds
        node = nodes.get(node.get("parent"))


@pytest.fixture(scope="module")
def changed(timed_run, tmp_path_factory) -> tuple[Path, Path, str, str]:
    """(run A, run B, the key of the leaf made slower, the key of the leaf made faster)."""
    b = tmp_path_factory.mktemp("changed") / "run"
    shutil.copytree(timed_run, b)
    doc = json.loads((b / "callgraph.grouped.json").read_text())
    nodes = {n["id"]: n for n in doc["data"]["nodes"]}
    leaves = [
        n for n in nodes.values() if not n["children"] and (n["costs"].get("time_measured_self") or {}).get("total")
    ]
    slower = next(n for n in leaves if n["pattern"] == "lm_head")
    faster = max((n for n in leaves if n is not slower), key=lambda n: n["costs"]["time_measured_self"]["total"])
    _shift(nodes, slower["id"], 0.5)  # far above the run's own times: the two changes lead the ranking
    _shift(nodes, faster["id"], -0.5 * faster["costs"]["time_measured_self"]["total"])
    (b / "callgraph.grouped.json").write_text(json.dumps(doc))
    from llm_perf_opt.callgraph.grouped import load_grouped_json

    # the keys the comparison matches nodes by (`keyed_nodes`): a pattern two nodes share (SAM's neck holds a
    # convolution and a LayerNorm2d under one `neck.[*]`) is told apart by its class, and which leaf is the slowest
    # depends on the run's own times
    keys = {n.id: k for k, n in keyed_nodes(load_grouped_json(b / "callgraph.grouped.json")).items()}
    return timed_run, b, keys[slower["id"]], keys[faster["id"]]


def test_changed_most_lists_each_change_once(changed):
    a, b, slower, faster = changed
    cmp = compare_runs(a, b)
    assert cmp.rank_metric() == SELF_TIME
    by_self = [r.key for r in cmp.changed_nodes(SELF_TIME)]
    assert by_self == [slower, faster]
    # the inclusive time repeats each change on every ancestor of the leaf
    g, ancestors = cmp.b.grouped, set()
    keys = {n.id: k for k, n in keyed_nodes(g).items()}
    for r in cmp.changed_nodes(SELF_TIME):
        node = g.node(r.b_id)
        while node.parent is not None:
            node = g.node(node.parent)
            ancestors.add(keys[node.id])
    by_inclusive = {r.key for r in cmp.changed_nodes("time_measured")}
    assert len(ancestors) >= 2 and by_inclusive == {slower, faster} | ancestors


def _shown(page, selector: str) -> list[str]:
    return page.eval_on_selector_all(
        selector, "els => els.filter(e => e.offsetParent !== null).map(e => e.getAttribute('data-key'))"
    )


def test_compare_page_chart_panel_and_tables_in_chromium(changed, tmp_path):
    a, b, slower, faster = changed
    cmp = compare_runs(a, b)
    out = write_comparison(cmp, tmp_path / "cmp")["html"]
    SCREENS.mkdir(parents=True, exist_ok=True)
    for w, h in ((1366, 768), (1920, 1080)):
        with offline_page(w, h) as (page, errors, foreign):
            page.goto(out.as_uri(), wait_until="load")
            scroll, inner, wide = page.evaluate(WIDER_THAN_VIEWPORT)
            assert scroll <= inner and wide == [], (w, scroll, inner, wide)
            # the chart: one bar per change, the slower first; the panel opens on it
            assert page.eval_on_selector_all(
                "#changechart g.bar", "els => els.map(e => e.getAttribute('data-key'))"
            ) == [
                slower,
                faster,
            ]
            assert page.get_attribute("#panel-body", "data-key") == slower
            assert "measured self time" in page.inner_text("#panel-body")
            page.click(f"#changechart g.bar[data-key='{faster}'] rect")
            assert page.get_attribute("#panel-body", "data-key") == faster
            # a click on run B's graph node opens it
            lm = next(r for r in cmp.nodes if r.key == slower)
            page.click("#fit-all")
            page.click(f"#graph svg g.node#{lm.b_id}")
            assert page.get_attribute("#panel-body", "data-key") == slower
            page.screenshot(path=str(SCREENS / f"compare_chart_{w}x{h}.png"))
            # the node table: sorted by the change of self time, largest first, then smallest first
            delta = "table#nodes th[data-group='measured self time']:text-is('Δ')"
            page.click(delta)
            assert _shown(page, "table#nodes tbody tr")[-1] == slower  # ascending: the largest increase last
            page.click(delta)
            rows = _shown(page, "table#nodes tbody tr")
            assert rows[0] == slower and rows[-1] == faster and len(rows) == len(cmp.nodes)
            # filtering hides the rows without the text
            page.fill(".tabletools:has(+ .tablewrap table#nodes) input[type=search]", "lm_head")
            left = _shown(page, "table#nodes tbody tr")
            assert 1 <= len(left) < len(cmp.nodes) and all("lm_head" in k for k in left), left
            # a column group one tick away
            before = page.eval_on_selector_all(
                "table#nodes th", "els => els.filter(e => e.offsetParent !== null).length"
            )
            page.check(".tabletools:has(+ .tablewrap table#nodes) input[value='analytic FLOPs']")
            after = page.eval_on_selector_all(
                "table#nodes th", "els => els.filter(e => e.offsetParent !== null).length"
            )
            assert after == before + 5  # the group's header and its A, B, Δ, B/A
            assert errors == [] and foreign == []
