"""Every package's `__init__` docstring names its files: a `| file | job |` table with one row per module file of the
package (`name.py`) and one per subpackage (`sub/`), and no row for a file that is not there. A new module without
a row, or a row left behind by a moved or deleted file, fails here.

The docstring is read with `ast` (nothing is imported). Outside the table, a bare `name.py` (not part of a path such
as `prepare/validate.py`) must be a file of the package too, so the prose cannot name a file that has gone.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "llm_perf_opt"
PACKAGES = sorted(init.parent for init in SRC.rglob("__init__.py") if "__pycache__" not in init.parts)
CELL = re.compile(r"^`([A-Za-z_][\w.]*/?)`$")  # one backticked name per row: `name.py` or `sub/`
BARE_FILE = re.compile(r"(?<![\w/.<>-])([A-Za-z_]\w*\.py)\b")  # `name.py`, not `pkg/name.py` or `<x>_y.py`


def file_table(doc: str) -> list[list[str]] | None:
    """The rows (cells stripped) of the docstring's first table whose header's first cell is `file`, or None."""
    rows: list[list[str]] = []
    started = False
    for line in doc.splitlines():
        line = line.strip()
        if line.startswith("|"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if not started:
                started = cells[0] == "file"
                continue
            if not all(set(cell) <= {"-", ":"} for cell in cells):
                rows.append(cells)
        elif started:
            break
    return rows if started else None


def table_problems(package: Path) -> list[str]:
    """What the package's `__init__` docstring gets wrong about its files, one line each (empty: it is right)."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
    if not doc:
        return ["no docstring"]
    rows = file_table(doc)
    if rows is None:
        return ["no `| file | job |` table"]
    modules = {path.name for path in package.glob("*.py")} - {"__init__.py"}
    subpackages = {f"{path.parent.name}/" for path in package.glob("*/__init__.py")}
    problems, named = [], []
    for cells in rows:
        match = CELL.match(cells[0])
        if match is None:
            problems.append(f"row {cells[0]!r}: the first cell must be one `name.py` or `sub/`")
            continue
        name = match.group(1)
        if not (package / name).exists() or name == "__init__.py":
            problems.append(f"row `{name}`: no such file in the package")
        if len(cells) < 2 or not cells[1]:
            problems.append(f"row `{name}`: no job")
        if name in named:
            problems.append(f"row `{name}`: twice")
        named.append(name)
    problems += [f"`{name}` has no row" for name in sorted((modules | subpackages) - set(named))]
    problems += [
        f"`{name}` is named but is no file of the package"
        for name in sorted(set(BARE_FILE.findall(doc)))
        if name != "__init__.py" and not (package / name).is_file()
    ]
    return problems


def test_every_package_is_checked():
    names = {package.relative_to(SRC).as_posix() for package in PACKAGES}
    assert {".", "analytic", "analytic/time", "trace", "dsocr/twin"} <= names


@pytest.mark.parametrize("package", PACKAGES, ids=lambda package: package.relative_to(SRC.parent).as_posix())
def test_the_init_docstring_names_every_file_of_its_package(package):
    assert table_problems(package) == []


def write_package(root: Path, doc: str, files=("a.py", "b.py"), subpackages=("sub",)) -> Path:
    root.mkdir()
    (root / "__init__.py").write_text(f'"""{doc}"""\n', encoding="utf-8")
    for name in files:
        (root / name).write_text('"""A module."""\n', encoding="utf-8")
    for name in subpackages:
        (root / name).mkdir()
        (root / name / "__init__.py").write_text('"""A subpackage."""\n', encoding="utf-8")
    return root


GOOD = """A package.

| file | job |
|---|---|
| `a.py` | does a |
| `b.py` | does b (see `a.py` and `other/c.py`) |
| `sub/` | the subpackage |
"""


def test_the_check_passes_a_right_table(tmp_path):
    assert table_problems(write_package(tmp_path / "pkg", GOOD)) == []


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        (GOOD.replace("| `b.py` | does b (see `a.py` and `other/c.py`) |\n", ""), "`b.py` has no row"),
        (GOOD.replace("| `sub/` | the subpackage |\n", ""), "`sub/` has no row"),
        (GOOD + "| `gone.py` | was here |\n", "row `gone.py`: no such file"),
        (GOOD + "\nSee `gone.py`.\n", "`gone.py` is named but is no file"),
        (GOOD.replace("| `sub/` |", "| `a.py` | again |\n| `sub/` |"), "row `a.py`: twice"),
        (GOOD.replace("`a.py` | does a", "`a.py`, `b.py` | does a and b"), "the first cell must be one"),
        (GOOD.replace("| does a |", "|  |"), "row `a.py`: no job"),
        (GOOD.replace("(see `a.py`", "(see `old.py`"), "`old.py` is named but is no file"),
        ("A package without a table; `a.py`, `b.py`.", "no `| file | job |` table"),
    ],
)
def test_the_check_fails_a_wrong_table(tmp_path, doc, problem):
    problems = table_problems(write_package(tmp_path / "pkg", doc))
    assert any(problem in line for line in problems), problems
