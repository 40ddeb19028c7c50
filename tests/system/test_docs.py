"""The docs site: `mkdocs build --strict` passes (a broken link or an unknown reference marker fails it), the
reference tables are generated from the code (a changed column changes the page), and the hand-written tables
that remain (report statuses, summary statuses) say what the code does."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from llm_perf_opt.errors import ExitCode
from llm_perf_opt.report.collect import STATUS_FORMS
from llm_perf_opt.run_artifacts import Summary

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def reference_hook():
    spec = importlib.util.spec_from_file_location("docs_reference", DOCS / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table_after(text: str, heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first Markdown table after `heading`, without the header."""
    rest = text[text.index(heading) :]
    rows, started = [], False
    for line in rest.splitlines():
        if line.startswith("|"):
            started = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= {"-", ":"} for c in cells):
                rows.append(cells)
        elif started:
            break
    return rows[1:]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site as `./dev docs` builds it (mkdocs build --strict), into a directory of this module's."""
    out = tmp_path_factory.mktemp("docs") / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def nav_pages() -> list[tuple[str, str]]:
    """(label, page) of every entry of mkdocs.yml's nav."""
    import yaml

    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    return [next(iter(entry.items())) for entry in nav]


def test_the_site_builds_strictly(site):
    page = (site / "sweeps.html").read_text(encoding="utf-8")  # use_directory_urls: false: a page is a file
    assert "flops_verified" in page  # the generated column table is on the built page
    assert "<!-- ref:" not in page


class Fetches(HTMLParser):
    """What a page makes the browser fetch by itself: scripts, styles, icons, fonts, images, frames, media, and
    url(...) in inline styles; links a reader clicks (<a href>) are not fetches."""

    FETCHING_RELS = {"stylesheet", "icon", "preload", "modulepreload", "prefetch", "preconnect", "dns-prefetch",
                     "manifest", "apple-touch-icon", "shortcut"}  # fmt: skip

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.links: list[str] = []
        self._style = False

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
        if tag == "link" and set(a.get("rel", "").lower().split()) & self.FETCHING_RELS:
            self.urls.append(a.get("href", ""))
        for name in ("src", "data", "poster"):
            if name in a and tag != "a":
                self.urls.append(a[name])
        if "srcset" in a:
            self.urls += [part.strip().split(" ")[0] for part in a["srcset"].split(",")]
        if "style" in a:
            self.urls += CSS_URL.findall(a["style"])
        self._style = tag == "style"

    def handle_data(self, data):
        if self._style:
            self.urls += CSS_URL.findall(data)

    def handle_endtag(self, tag):
        self._style = False


CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)|@import\s+['"]([^'"]+)""")
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.I)


def _external(urls) -> list[str]:
    flat = [u if isinstance(u, str) else next(x for x in u if x) for u in urls]
    return [u for u in flat if EXTERNAL.match(u.strip())]


def test_the_site_fetches_nothing_from_other_sites(site):
    """Offline clusters: no page, and no stylesheet of the site, asks for anything of another site (fonts,
    scripts, styles, images); links a reader clicks may point anywhere."""
    pages = sorted(site.rglob("*.html"))
    assert len(pages) == len(nav_pages()) + 1  # every nav page and the 404 page
    foreign = {}
    for page in pages:
        parser = Fetches()
        parser.feed(page.read_text(encoding="utf-8"))
        assert parser.links, page  # the parser saw the page (its navigation at least)
        if _external(parser.urls):
            foreign[page.name] = _external(parser.urls)
    sheets = sorted(site.rglob("*.css"))
    assert sheets
    for sheet in sheets:
        found = _external(CSS_URL.findall(sheet.read_text(encoding="utf-8")))
        if found:
            foreign[str(sheet.relative_to(site))] = found
    assert foreign == {}


def test_every_link_of_the_site_opens_a_file(site):
    """From file://, a link to a directory opens a directory listing: every link inside the site names a file."""
    checked, broken = 0, []
    for page in sorted(p for p in site.rglob("*.html") if p.name != "404.html"):  # a server's page, site-absolute
        parser = Fetches()
        parser.feed(page.read_text(encoding="utf-8"))
        for href in parser.links:
            path = href.split("#", 1)[0].split("?", 1)[0]
            if not path or EXTERNAL.match(href) or href.startswith(("mailto:", "javascript:")):
                continue
            target = (page.parent / path).resolve()
            checked += 1
            if not target.is_file():
                broken.append(f"{page.name}: {href}")
    assert checked > 20 * len(nav_pages())  # each page links every other through the navigation
    assert broken == []


def test_each_page_heading_is_its_nav_label():
    pages = nav_pages()
    assert len(pages) == len(list(DOCS.glob("*.md")))  # every page is in the navigation
    headings = {}
    for label, page in pages:
        first = next(line for line in (DOCS / page).read_text(encoding="utf-8").splitlines() if line.startswith("# "))
        headings[page] = (label, first[2:].strip())
    assert {p: h for p, h in headings.items() if h[0] != h[1]} == {}


def test_the_site_works_offline_in_chromium(site, browser):
    """Every page opened from file:// in a real browser: no request leaves the machine, no console error, the
    theme's own style applied (not the browser's default), and a code block wraps its long lines."""
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    requests, errors = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    opened = 0
    for label, name in nav_pages():
        page.goto((site / name.replace(".md", ".html")).as_uri(), wait_until="load")
        assert page.inner_text("article h1").strip().rstrip("¶").strip() == label
        opened += 1
    assert opened == len(nav_pages())
    foreign = [u for u in requests if not u.startswith(("file:", "data:", "about:", "blob:"))]
    assert foreign == [] and errors == []
    page.goto((site / "getting-started.html").as_uri(), wait_until="load")
    wraps = "() => getComputedStyle(document.querySelector('.md-typeset pre > code')).whiteSpace"
    assert page.evaluate(wraps) == "pre-wrap"
    page.close()


def test_every_marker_in_the_pages_has_a_table():
    hook = reference_hook()
    markers = [m for p in DOCS.glob("*.md") for m in hook.MARKER.findall(p.read_text(encoding="utf-8"))]
    assert len(markers) >= 7
    assert set(markers) == set(hook.TABLES)  # every table is used, every marker known
    with pytest.raises(KeyError, match="unknown reference marker"):
        hook.render("<!-- ref:no-such-table -->")


def test_a_changed_column_changes_the_page(monkeypatch):
    from llm_perf_opt.report import table

    hook = reference_hook()
    before = hook.render("<!-- ref:report-columns -->")
    rows_before = [line for line in before.splitlines() if line.startswith("| `")]
    assert len(rows_before) == len(table.COLUMNS)
    extra = table.Column("pages_per_joule", "pages/J", "float", "a column added by this test", lambda j: None)
    monkeypatch.setattr(table, "COLUMNS", [*table.COLUMNS[:-1], extra])
    after = hook.render("<!-- ref:report-columns -->")
    assert "`pages_per_joule`" in after and "a column added by this test" in after
    assert f"`{table.COLUMNS[-2].key}`" in after
    dropped = [line for line in rows_before if line not in after.splitlines()]
    assert len(dropped) == 1  # the column replaced by the test is gone from the page


def test_exit_codes_have_a_meaning_each():
    hook = reference_hook()
    rows = [
        line for line in hook.render("<!-- ref:exit-codes -->").splitlines() if line.startswith("| ") and "`" in line
    ]
    assert [int(r.split("|")[1]) for r in rows] == list(ExitCode.all().values())
    assert all(ExitCode.meaning(name) for name in ExitCode.all())


def test_status_table_matches_the_report():
    rows = table_after((DOCS / "sweeps.md").read_text(encoding="utf-8"), "A job's status is:")
    assert [row[0].strip("`") for row in rows] == list(STATUS_FORMS)


def test_summary_statuses_are_documented():
    text = (DOCS / "outputs.md").read_text(encoding="utf-8")
    section = text[text.index("`summary.json` is written as soon as") :]
    found = [s for s in Summary.STATUSES if re.search(rf"`{s}`", section)]
    assert found == list(Summary.STATUSES)


def test_family_report_columns_are_listed_per_family():
    from llm_perf_opt import families

    text = reference_hook().render("<!-- ref:family-report-columns -->")
    compared = 0
    for name in families.names():
        own = families.family(name).report_columns()
        rows = [line for line in text.splitlines() if f"(`{name}`)" in line]
        assert len(rows) == max(1, len(own)), name  # a family without columns of its own: one "(none)" row
        for col in own:
            assert any(line.startswith(f"| `{col.key}` |") and col.doc in line for line in rows), col.key
            compared += 1
    assert compared >= 1  # DeepSeek-OCR 2's encoder columns at least
