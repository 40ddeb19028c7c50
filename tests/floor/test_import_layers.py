"""Imports point down the stages: no module imports a package above its own (docs/extending.md, "Layout of the code").

The layers, bottom first: the plain helpers (errors, artifacts, units, run_lock, run_artifacts, family: the
seam's interface) and config; callgraph (model-agnostic); analytic; measure; export; report; runs (run control:
directories, locks, the job's life); the model families (dsocr, and any package with a `family.py`: each a
plug-in above the generic layers it uses); families (the registry, which names them by import string); trace
(the trace job's stages and the builders every job shares); gate (the verification gate); jobs (the entry
points). A module may import its own layer or any layer below, and no module outside a family package imports a
family package (by name: the registry loads them from strings). Read from the source with `ast`, so an import
inside a function counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "llm_perf_opt"
LAYERS = {
    "__init__": 0,
    "errors": 0,
    "artifacts": 0,
    "units": 0,
    "run_lock": 0,
    "run_artifacts": 0,
    "run_files": 0,
    "typecheck": 0,
    "conf": 0,
    "family": 0,
    "lazy": 0,
    "config": 1,
    "callgraph": 2,
    "analytic": 3,
    "measure": 4,
    "export": 5,
    "report": 6,
    "runs": 7,
    "dsocr": 8,
    "families": 9,
    "trace": 10,
    "gate": 11,
    "jobs": 12,
}
FAMILY_LAYER = LAYERS["dsocr"]


# The family packages (also found by their family.py), and the module of the base class the two DeepSeek-OCR
# families share (`deepseek_family`): family-side code, which the generic layers never import.
KNOWN_FAMILIES = {"dsocr", "dsocr2", "deepseek_family"}


def family_packages(root: Path = SRC) -> set[str]:
    """The top-level packages that are model families: those with a `family.py`, and the known ones present."""
    known = {n for n in KNOWN_FAMILIES if (root / n).is_dir() or (root / f"{n}.py").is_file()}
    return {p.parent.name for p in root.glob("*/family.py")} | known


def layer(name: str, families: set[str]) -> int:
    return FAMILY_LAYER if name in families else LAYERS[name]


def project_imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out += [(node.lineno, n) for n in names if n.startswith("llm_perf_opt.")]
    return out


def upward_imports(root: Path = SRC) -> list[str]:
    bad = []
    families = family_packages(root)
    for path in sorted(root.rglob("*.py")):
        own = path.relative_to(root).parts[0].removesuffix(".py")
        for line, name in project_imports(path):
            target = name.split(".")[1]
            if layer(target, families) > layer(own, families):
                bad.append(f"{path.relative_to(root)}:{line} ({own}) imports {name} ({target})")
    return bad


def family_imports(root: Path = SRC) -> list[str]:
    """Imports of a family package from outside it (the generic layers, the registry, the jobs, another family)."""
    bad = []
    families = family_packages(root)
    for path in sorted(root.rglob("*.py")):
        own = path.relative_to(root).parts[0].removesuffix(".py")
        for line, name in project_imports(path):
            target = name.split(".")[1]
            if target in families and own not in families:  # a family may build on another (v2 on v1)
                bad.append(f"{path.relative_to(root)}:{line} ({own}) imports the family package {name}")
    return bad


def test_every_top_level_module_has_a_layer():
    names = {p.name.removesuffix(".py") for p in SRC.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    families = family_packages()
    assert "dsocr" in families
    assert names - families <= set(LAYERS), f"give {sorted(names - families - set(LAYERS))} a layer in this test"


def test_imports_point_down():
    assert upward_imports() == []


def test_no_module_outside_a_family_imports_one():
    assert family_imports() == []


def test_a_generic_import_of_a_family_is_found(tmp_path):
    """Every generic layer, the registry and the jobs importing v1 or a second family (found by its family.py,
    so dsocr2 is covered by name) are each reported; a family importing a generic layer is not."""
    for fam in ("dsocr", "dsocr2"):
        (tmp_path / fam).mkdir()
        (tmp_path / fam / "family.py").write_text("from llm_perf_opt.analytic import costs\n")
    generic = (
        "config",
        "callgraph",
        "analytic",
        "measure",
        "export",
        "report",
        "runs",
        "families",
        "trace",
        "gate",
        "jobs",
    )
    for own in generic:
        pkg = tmp_path / own
        pkg.mkdir()
        (pkg / "m.py").write_text(
            "def f():\n    from llm_perf_opt.dsocr2.spec import x\n    import llm_perf_opt.dsocr\n"
        )
    found = family_imports(tmp_path)
    assert len(found) == 2 * len(generic)
    assert "analytic/m.py:2 (analytic) imports the family package llm_perf_opt.dsocr2.spec" in found
    assert "jobs/m.py:3 (jobs) imports the family package llm_perf_opt.dsocr" in found
    # and the layer order: a family sits above measure and report, below the registry and the trace stages
    assert [u for u in upward_imports(tmp_path) if u.startswith(("analytic/", "report/"))] == [
        "analytic/m.py:2 (analytic) imports llm_perf_opt.dsocr2.spec (dsocr2)",
        "analytic/m.py:3 (analytic) imports llm_perf_opt.dsocr (dsocr)",
        "report/m.py:2 (report) imports llm_perf_opt.dsocr2.spec (dsocr2)",
        "report/m.py:3 (report) imports llm_perf_opt.dsocr (dsocr)",
    ]


def test_an_upward_import_is_found(tmp_path):
    pkg = tmp_path / "config"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("def f():\n    from llm_perf_opt.jobs import cli\n")
    assert upward_imports(tmp_path) == ["config/__init__.py:2 (config) imports llm_perf_opt.jobs (jobs)"]


def test_the_new_layers_are_ordered(tmp_path):
    """Run control sits below the trace stages, which sit below the gate, which sits below the entry points:
    an import the other way is found."""
    for own, target in (("runs", "trace"), ("trace", "gate"), ("gate", "jobs"), ("report", "runs")):
        pkg = tmp_path / own
        pkg.mkdir()
        (pkg / "m.py").write_text(f"from llm_perf_opt.{target} import x\n")
    found = upward_imports(tmp_path)
    assert found == [
        "gate/m.py:1 (gate) imports llm_perf_opt.jobs (jobs)",
        "report/m.py:1 (report) imports llm_perf_opt.runs (runs)",
        "runs/m.py:1 (runs) imports llm_perf_opt.trace (trace)",
        "trace/m.py:1 (trace) imports llm_perf_opt.gate (gate)",
    ]
