"""The tables' script (report/templates/_tables.js.j2, inline in every HTML page) on a table of text cells, as the run
page writes them (no raw `data-v`): figures read with their SI unit sort by value ("900 µs" before "1.2 ms"),
missing ones ("—") last either way, words alphabetically; the filter keeps the rows holding every word typed. In a
real browser (Playwright on the system's chromium)."""

from __future__ import annotations

from browser import offline_page

from llm_perf_opt.report.render import environment

ROWS = [  # name, time, bytes, share
    ("decoder", "1.2 ms", "3 MiB", "12%"),
    ("sam", "900 µs", "1.5 GB", "9.5%"),
    ("lm_head", "—", "512 kB", "80%"),
    ("clip", "2 s", "2 MB", "—"),
    ("projector", "15 ns", "1,024 B", "0.5%"),
]


def page_with_table(path):
    script = environment(True).get_template("_tables.js.j2").render()
    style = environment(True).get_template("_tables.css.j2").render()
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in ROWS)
    path.write_text(
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{style}</style></head><body>"
        f"<table id='t'><thead><tr><th>name</th><th>time</th><th>bytes</th><th>share</th></tr></thead>"
        f"<tbody>{body}</tbody></table><script>{script}</script></body></html>",
        encoding="utf-8",
    )
    return path


def test_text_cells_sort_by_value_and_filter(tmp_path):
    html = page_with_table(tmp_path / "table.html")
    names = "els => els.filter(e => !e.hidden).map(e => e.cells[0].textContent)"
    with offline_page(1000, 700) as (page, errors, foreign):
        page.goto(html.as_uri(), wait_until="load")
        order = {}
        for column in ("time", "bytes", "share", "name"):
            page.click(f"th:text-is('{column}')")
            up = page.eval_on_selector_all("#t tbody tr", names)
            page.click(f"th:text-is('{column}')")
            order[column] = (up, page.eval_on_selector_all("#t tbody tr", names))
        assert order["time"] == (
            ["projector", "sam", "decoder", "clip", "lm_head"],
            ["clip", "decoder", "sam", "projector", "lm_head"],
        )
        assert order["bytes"][0] == ["projector", "lm_head", "clip", "decoder", "sam"]  # 3 MiB > 2 MB
        assert order["share"][1] == ["lm_head", "decoder", "sam", "projector", "clip"]
        assert order["name"][0] == sorted(r[0] for r in ROWS)
        assert page.get_attribute("th:text-is('name')", "aria-sort") == "descending"
        page.fill(".tabletools input[type=search]", "B  Kb")  # every word, any case: 512 kB, 1,024 B, and no other
        assert sorted(page.eval_on_selector_all("#t tbody tr", names)) == ["lm_head"]
        page.fill(".tabletools input[type=search]", "mS")  # "1.2 ms": only the decoder row holds "ms"
        assert sorted(page.eval_on_selector_all("#t tbody tr", names)) == ["decoder"]
        assert page.inner_text(".tablecount") == "1 of 5 rows"
        assert errors == [] and foreign == []
