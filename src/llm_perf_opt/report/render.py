"""Writers: CSV (every column, raw numbers), Markdown (the brief columns, human units) and one
self-contained HTML page (inline CSS and SVG plots; links relative to the page, so the sweep directory
can be copied or served as it is)."""
from __future__ import annotations

import csv
import html
import io
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from llm_perf_opt.artifacts import atomic_write_text
from llm_perf_opt.report.table import MISSING, Column, csv_value, fmt

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.5rem auto;max-width:1280px;
 padding:0 1rem;color:#1d1d1f;line-height:1.4}
h1{font-size:1.5rem;margin-bottom:.2rem} h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd;
 padding-bottom:.2rem} .sub{color:#666;margin-top:0}
.cards{display:flex;gap:.8rem;flex-wrap:wrap;margin:1rem 0} .card{border:1px solid #ddd;border-radius:6px;
 padding:.5rem .9rem;min-width:7rem} .card b{display:block;font-size:1.3rem} .card.bad b{color:#b00020}
.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:1.2rem}
figure{margin:0;border:1px solid #eee;border-radius:6px;padding:.5rem;min-width:0}
figure svg{width:auto;max-width:100%;height:auto;display:block;margin:0 auto} figure.wide{grid-column:1/-1}
figcaption{font-size:.85rem;color:#555;margin-top:.3rem}
.tablewrap{overflow-x:auto;max-height:75vh;border:1px solid #ddd;border-radius:6px}
table{border-collapse:collapse;font-size:.82rem;white-space:nowrap} th,td{padding:.25rem .5rem;
 border-bottom:1px solid #eee;text-align:right} th{position:sticky;top:0;background:#f6f6f6;z-index:1}
td.s,th.s{text-align:left} tr.failed td{background:#fff1f1} td.status-failed{color:#b00020;white-space:normal;
 min-width:18rem;text-align:left} tr:hover td{background:#f4f8ff}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;font-size:.85rem} dt{font-family:monospace}
code{background:#f3f3f3;padding:0 .25rem;border-radius:3px} .muted{color:#888}
"""


def write_csv(path: Path, columns: Sequence[Column], rows: Iterable[dict[str, Any]]) -> Path:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([c.key for c in columns])
    for row in rows:
        writer.writerow([csv_value(row.get(c.key)) for c in columns])
    return atomic_write_text(path, buf.getvalue())


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(columns: Sequence[Column], rows: Iterable[dict[str, Any]],
                   link: Optional[dict[str, str]] = None) -> str:
    lines = ["| " + " | ".join(c.header for c in columns) + " |",
             "|" + "|".join("---" if c.kind in ("str", "bool") else "--:" for c in columns) + "|"]
    for row in rows:
        cells = []
        for c in columns:
            text = fmt(row.get(c.key), c.kind)
            if c.key == "grouped_svg" and row.get(c.key):
                text = f"[svg]({row[c.key]})"
            cells.append(_md_cell(text))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def glossary_md(columns: Sequence[Column]) -> str:
    return "\n".join(f"- `{c.key}` ({c.header}): {c.doc}" for c in columns) + "\n"


# ------------------------------------------------------------------------------------------- HTML
def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def html_table(columns: Sequence[Column], rows: Sequence[dict[str, Any]], links: Optional[dict[str, Any]] = None) -> str:
    """A table; `links` maps a column key to a function row -> href (or None) for that column's cells."""
    links = links or {}
    head = "".join(f'<th class="{"s" if c.kind in ("str", "bool") else ""}" title="{esc(c.doc)}">{esc(c.header)}</th>'
                   for c in columns)
    body = []
    for row in rows:
        failed = str(row.get("status", "ok")).startswith("failed")
        cells = []
        for c in columns:
            value = row.get(c.key)
            text = fmt(value, c.kind)
            cls = "s" if c.kind in ("str", "bool") else ""
            if c.key == "status" and failed:
                cls = "status-failed"
            href = links[c.key](row) if c.key in links else None
            inner = f'<a href="{esc(href)}">{esc(text)}</a>' if href and text != MISSING else esc(text)
            if text == MISSING:
                inner = f'<span class="muted">{MISSING}</span>'
            cells.append(f'<td class="{cls}">{inner}</td>')
        body.append(f'<tr class="{"failed" if failed else ""}">' + "".join(cells) + "</tr>")
    return f'<div class="tablewrap"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def html_figure(svg_markup: str, caption: str, png_href: Optional[str] = None, svg_href: Optional[str] = None,
                wide: bool = False) -> str:
    files = " · ".join(f'<a href="{esc(h)}">{k}</a>' for k, h in (("svg", svg_href), ("png", png_href)) if h)
    cls = ' class="wide"' if wide else ""
    return f"<figure{cls}>{svg_markup}<figcaption>{esc(caption)}{' — ' + files if files else ''}</figcaption></figure>"


def html_page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )


def glossary_html(columns: Sequence[Column]) -> str:
    return "<dl>" + "".join(f"<dt>{esc(c.key)}</dt><dd>{esc(c.doc)}</dd>" for c in columns) + "</dl>"
