"""Imports point down the stages: no module imports a package above its own (README, "Layout").

The layers, bottom first: the plain helpers (errors, artifacts, units, run_lock, run_artifacts) and config;
callgraph (model-agnostic); dsocr (DeepSeek-OCR's own knowledge, which plugs checks into the generic
grouping); analytic; measure; export; report; runs (run control: directories, locks, the job's life);
trace (the trace job's stages and the builders every job shares); gate (the verification gate); jobs (the
entry points). A module may import its own layer or any layer below. Read from the source with `ast`, so an import inside a function counts too.
"""
from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "llm_perf_opt"
LAYERS = {
    "__init__": 0, "errors": 0, "artifacts": 0, "units": 0, "run_lock": 0, "run_artifacts": 0, "conf": 0,
    "config": 1, "callgraph": 2, "dsocr": 3, "analytic": 4, "measure": 5, "export": 6, "report": 7,
    "runs": 8, "trace": 9, "gate": 10, "jobs": 11,
    "dsocr2": 5,  # DeepSeek-OCR 2 (family plug-in): uses dsocr, analytic and measure; until the family seam
}


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
    for path in sorted(root.rglob("*.py")):
        own = path.relative_to(root).parts[0].removesuffix(".py")
        for line, name in project_imports(path):
            target = name.split(".")[1]
            if LAYERS[target] > LAYERS[own]:
                bad.append(f"{path.relative_to(root)}:{line} ({own}) imports {name} ({target})")
    return bad


def test_every_top_level_module_has_a_layer():
    names = {p.name.removesuffix(".py") for p in SRC.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert names <= set(LAYERS), f"give {sorted(names - set(LAYERS))} a layer in this test"


def test_imports_point_down():
    assert upward_imports() == []


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

