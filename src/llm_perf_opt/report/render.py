"""Rendering, apart from the data: CSV (every column, raw numbers), and the Markdown and HTML pages
through one jinja2 template per page and format (`templates/`). The HTML page is self-contained (inline
CSS and SVG plots; links relative to the page, so the directory can be copied or served as it is).

The report builders (`sweep`, `analytic_sweep`) make the data (`TableView`, `PlotView` and a few plain
values) and hand it to `render_page`; nothing here knows what a sweep or a job is.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

from llm_perf_opt import quantities
from llm_perf_opt.artifacts import atomic_write_text
from llm_perf_opt.report.table import MISSING, Column, csv_value, fmt


@dataclass
class TableView:
    """Rows (column key -> raw value) under columns; `links` maps a column key to row -> href (or None)."""

    columns: Sequence[Column]
    rows: Sequence[dict[str, Any]]
    links: dict[str, Callable[[dict[str, Any]], Optional[str]]] = field(default_factory=dict)
    title: str = ""
    # column key -> its group: the HTML table's column chooser (none: every column, no chooser); `shown`: the
    # groups shown when the page opens (the others one click away)
    groups: dict[str, str] = field(default_factory=dict)
    shown: Sequence[str] = ()

    def href(self, key: str, row: dict[str, Any]) -> Optional[str]:
        return self.links[key](row) if key in self.links else None

    def group(self, key: str) -> str:
        return self.groups.get(key, "")

    def raw(self, key: str, row: dict[str, Any]) -> str:
        """A cell's raw number for sorting (`data-v`), "" when it is not one number."""
        v = row.get(key)
        return repr(float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else ""


@dataclass
class PlotView:
    """A plot saved as SVG (inlined in the HTML page) and PNG (for Markdown), with hrefs relative to the page."""

    svg_path: Path
    caption: str
    svg_href: str
    png_href: str
    wide: bool = False

    def svg_markup(self) -> str:
        """The <svg> element of the file (its XML prolog and DOCTYPE dropped), for inlining."""
        text = self.svg_path.read_text(encoding="utf-8")
        start = text.find("<svg")
        return text[start:] if start >= 0 else text


def write_csv(path: Path, columns: Sequence[Column], rows: Iterable[dict[str, Any]]) -> Path:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([c.key for c in columns])
    for row in rows:
        writer.writerow([csv_value(row.get(c.key)) for c in columns])
    return atomic_write_text(path, buf.getvalue())


def md_cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


@lru_cache(maxsize=2)
def environment(html: bool) -> Any:
    """The jinja2 environment of one format: HTML autoescapes, Markdown is plain text."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("llm_perf_opt.report", "templates"),
        autoescape=html,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=html,
        lstrip_blocks=html,
    )
    env.filters["fmt"] = fmt
    env.filters["md"] = md_cell
    from llm_perf_opt import units

    env.filters.update(seconds=units.seconds, flops=units.flops, nbytes=units.nbytes)
    env.globals["missing"] = MISSING
    env.globals["quantity"] = quantities.label  # every time shown says which quantity it is
    return env


def render_page(template: str, **data: Any) -> str:
    """`template` is `<page>.html.j2` or `<page>.md.j2` in `templates/`."""
    return environment(template.endswith(".html.j2")).get_template(template).render(**data)


def write_page(path: Path, template: str, **data: Any) -> Path:
    return atomic_write_text(path, render_page(template, **data))
