"""Imports point down the stages: no module imports a package above its own (docs/extending.md, "Layout of the code").

The layers, bottom first: the plain helpers (errors, artifacts, units, run_lock, run_artifacts, family: the seam's
interface) and config; callgraph (model-agnostic); analytic; measure; export; report; runs (run control:
directories, locks, the job's life); model_runtime (what running any family needs: session, loading, patches,
runtime log, decode, routing); the shared model packages (deepseek_ocr_shared: the code two families really share,
imported by families only); the model families (dsocr, dsocr2, and any package with a `family.py`: each a plug-in
above the generic layers it uses); families (the registry, which names them by import string); prepare (the
validation and the builders every job shares); trace (the trace job's stages); gate (the verification gate); jobs
(the entry points). A module may import its own layer or any layer below; no module outside a family package
imports a family package (by name: the registry loads them from strings), and none outside a family or a shared
model package imports a shared model package. Read from the source with `ast`, so an import inside a function
counts too, and so does a `"module:function"` string (a loader or a plug-in named for a later `importlib` call, as
the run-file entries name their loaders): the module it names is imported when it is used. The one module that
names family packages by such strings is their registry, `families`. Two kinds of module sit on a lower layer than
their package: a stage package's config section (`<package>/<name>_config.py`, the config layer, composed by
`config.schemas`) and its section of summary.json (`<package>/<name>_summary.py`, the base layer, composed by
`run_artifacts`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "llm_perf_opt"
LAYERS = {
    "__init__": 0,
    "errors": 0,
    "artifacts": 0,
    "units": 0,
    "quantities": 0,
    "run_lock": 0,
    "run_artifacts": 0,
    "run_files": 0,
    "typecheck": 0,
    "conf": 0,
    "family": 0,
    "lazy": 0,
    "config": 1,
    "early_refusal": 2,  # a command-line check on top of config.fields, below everything a job imports
    "callgraph": 2,
    "analytic": 3,
    "measure": 4,
    "export": 5,
    "report": 6,
    "runs": 7,
    "model_runtime": 8,
    "deepseek_ocr_shared": 9,
    "dsocr": 10,
    "families": 11,
    "prepare": 12,
    "trace": 13,
    "gate": 14,
    "jobs": 15,
}
FAMILY_LAYER = LAYERS["dsocr"]
# Model code two families really share (not a family, no `family.py`): only families and itself import it.
SHARED_MODEL_PACKAGES = {"deepseek_ocr_shared"}


KNOWN_FAMILIES = {"dsocr", "dsocr2"}  # the built-in families, present even before their family.py is read


def family_packages(root: Path = SRC) -> set[str]:
    """The top-level packages that are model families: those with a `family.py`, and the known ones present."""
    return {p.parent.name for p in root.glob("*/family.py")} | {n for n in KNOWN_FAMILIES if (root / n).is_dir()}


def layer(name: str, families: set[str]) -> int:
    return FAMILY_LAYER if name in families else LAYERS[name]


def is_config_section(parts: list[str] | tuple[str, ...]) -> bool:
    """A stage package's config section, `<package>/<name>_config.py` (as path parts or a dotted name's parts):
    it sits on the config layer, whatever its package's layer, so `config.schemas` composes it into `RootConfig`."""
    return len(parts) == 2 and parts[1].removesuffix(".py").endswith("_config")


def is_summary_section(parts: list[str] | tuple[str, ...]) -> bool:
    """A stage package's section of summary.json, `<package>/<name>_summary.py`: it sits on the base layer, so
    `run_artifacts` composes it into `Summary`."""
    return len(parts) == 2 and parts[1].removesuffix(".py").endswith("_summary")


def module_layer(parts: list[str] | tuple[str, ...], families: set[str]) -> int:
    """The layer of a module given by its parts under `llm_perf_opt` (`("measure", "profile_config.py")`)."""
    if is_summary_section(parts):
        return LAYERS["run_artifacts"]
    return LAYERS["config"] if is_config_section(parts) else layer(parts[0].removesuffix(".py"), families)


IMPORT_STRING = re.compile(r"(llm_perf_opt(?:\.\w+)+):\w+(?:\.\w+)*")  # "module:function", imported when used


def project_imports(path: Path, strings: bool = True) -> list[tuple[int, str]]:
    """(line, module) of every import of a project module in `path`, and with `strings` of every module a
    `"module:function"` string names (the whole string constant must be one such name: prose does not count)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif strings and isinstance(node, ast.Constant) and isinstance(node.value, str):
            found = IMPORT_STRING.fullmatch(node.value.strip())
            names = [found.group(1)] if found else []
        else:
            continue
        out += [(node.lineno, n) for n in names if n.startswith("llm_perf_opt.")]
    return out


def upward_imports(root: Path = SRC) -> list[str]:
    bad = []
    families = family_packages(root)
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        own = parts[0].removesuffix(".py")
        for line, name in project_imports(path):
            target = name.split(".")[1]
            if module_layer(name.split(".")[1:], families) > module_layer(parts, families):
                bad.append(f"{path.relative_to(root)}:{line} ({own}) imports {name} ({target})")
    return bad


def family_imports(root: Path = SRC) -> list[str]:
    """Imports of a family package from outside the families (the generic layers, the registry, the jobs), and
    of a shared model package from outside the families and the shared packages."""
    bad = []
    families = family_packages(root)
    for path in sorted(root.rglob("*.py")):
        own = path.relative_to(root).parts[0].removesuffix(".py")
        for line, name in project_imports(path, strings=own != "families"):  # the registry names them by string
            target = name.split(".")[1]
            if target in families and own not in families:
                bad.append(f"{path.relative_to(root)}:{line} ({own}) imports the family package {name}")
            elif target in SHARED_MODEL_PACKAGES and own not in families | SHARED_MODEL_PACKAGES:
                bad.append(f"{path.relative_to(root)}:{line} ({own}) imports the shared model package {name}")
    return bad


# A family importing another family's package: none, except DeepSeek-OCR 2's family class subclassing v1's until
# the declared family contract replaces that (the one line it may import).
FAMILY_CROSS_IMPORTS_ALLOWED = {("dsocr2/family.py", "llm_perf_opt.dsocr.family")}


def cross_family_imports(root: Path = SRC) -> list[str]:
    """Imports of one family package from another (what both share lives in a shared model package)."""
    bad = []
    families = family_packages(root)
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        own = rel.parts[0].removesuffix(".py")
        for line, name in project_imports(path):
            target = name.split(".")[1]
            if own in families and target in families and target != own:
                if (rel.as_posix(), name) not in FAMILY_CROSS_IMPORTS_ALLOWED:
                    bad.append(f"{rel}:{line} ({own}) imports the family package {name}")
    return bad


def test_no_family_imports_another():
    assert cross_family_imports() == []


def test_a_cross_family_import_is_found(tmp_path):
    for fam in ("dsocr", "dsocr2"):
        (tmp_path / fam).mkdir()
        (tmp_path / fam / "family.py").write_text("from llm_perf_opt.deepseek_ocr_shared import parts\n")
    (tmp_path / "dsocr2" / "m.py").write_text("def f():\n    from llm_perf_opt.dsocr.twin import model\n")
    assert cross_family_imports(tmp_path) == [
        "dsocr2/m.py:2 (dsocr2) imports the family package llm_perf_opt.dsocr.twin"
    ]


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


def test_a_module_function_string_counts_as_an_import(tmp_path):
    """A loader named as `"module:function"` (imported by `importlib` when used) is an import for both checks;
    prose that merely mentions such a name, or a string that is not one, is not; the families registry may name
    a family package by string, and nothing else may."""
    (tmp_path / "dsocr").mkdir()
    (tmp_path / "dsocr" / "family.py").write_text("")
    (tmp_path / "run_files.py").write_text(
        'LOADER = "llm_perf_opt.measure.module_times:load_module_times"\n'
        'DOC = "see llm_perf_opt.measure.module_times:load_module_times for the loader"\n'
        'PLAIN = "llm_perf_opt.measure"\n'
    )
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "m.py").write_text('FAMILY = "llm_perf_opt.dsocr.family:FAMILY"\n')
    (tmp_path / "families.py").write_text('FAMILIES = {"dsocr": "llm_perf_opt.dsocr.family:FAMILY"}\n')
    assert upward_imports(tmp_path) == [
        "report/m.py:1 (report) imports llm_perf_opt.dsocr.family (dsocr)",
        "run_files.py:1 (run_files) imports llm_perf_opt.measure.module_times (measure)",
    ]
    assert family_imports(tmp_path) == ["report/m.py:1 (report) imports the family package llm_perf_opt.dsocr.family"]


def test_a_stage_packages_summary_section_sits_on_the_base_layer(tmp_path):
    """`measure/profile_summary.py` is the profile stage's section of summary.json: `run_artifacts` may import it,
    and it may import only the base layer (not even config)."""
    (tmp_path / "measure").mkdir()
    (tmp_path / "run_artifacts.py").write_text("from llm_perf_opt.measure.profile_summary import ProfileFigures\n")
    (tmp_path / "measure" / "profile_summary.py").write_text(
        "from llm_perf_opt.typecheck import typed\nfrom llm_perf_opt.config import fields\n"
    )
    assert upward_imports(tmp_path) == [
        "measure/profile_summary.py:2 (measure) imports llm_perf_opt.config (config)",
    ]


def test_a_stage_packages_config_section_sits_on_the_config_layer(tmp_path):
    """`measure/profile_config.py` is the profile stage's section: config may import it, and it may import only
    the base and config layers (so composing the configuration never imports a stage's code)."""
    for pkg in ("config", "measure"):
        (tmp_path / pkg).mkdir()
    (tmp_path / "config" / "schemas.py").write_text("from llm_perf_opt.measure.profile_config import ProfileConfig\n")
    (tmp_path / "config" / "other.py").write_text("from llm_perf_opt.measure.profile import profile_forward\n")
    (tmp_path / "measure" / "profile_config.py").write_text(
        "from llm_perf_opt.config.fields import _one_of\nfrom llm_perf_opt.callgraph import grouped\n"
    )
    assert upward_imports(tmp_path) == [
        "config/other.py:1 (config) imports llm_perf_opt.measure.profile (measure)",
        "measure/profile_config.py:2 (measure) imports llm_perf_opt.callgraph (callgraph)",
    ]


def test_a_generic_import_of_a_shared_model_package_is_found(tmp_path):
    """A generic layer (below or above the shared package) importing it is reported; a family or the shared
    package itself importing it is not, and the shared package importing model_runtime points down."""
    (tmp_path / "dsocr").mkdir()
    (tmp_path / "dsocr" / "family.py").write_text("from llm_perf_opt.deepseek_ocr_shared import spec\n")
    for own in ("analytic", "model_runtime", "trace", "jobs", "deepseek_ocr_shared"):
        (tmp_path / own).mkdir()
        (tmp_path / own / "m.py").write_text("from llm_perf_opt.deepseek_ocr_shared.parts import x\n")
    (tmp_path / "deepseek_ocr_shared" / "n.py").write_text("from llm_perf_opt.model_runtime import patches\n")
    assert family_imports(tmp_path) == [
        f"{own}/m.py:1 ({own}) imports the shared model package llm_perf_opt.deepseek_ocr_shared.parts"
        for own in ("analytic", "jobs", "model_runtime", "trace")
    ]
    assert upward_imports(tmp_path) == [
        "analytic/m.py:1 (analytic) imports llm_perf_opt.deepseek_ocr_shared.parts (deepseek_ocr_shared)",
        "model_runtime/m.py:1 (model_runtime) imports llm_perf_opt.deepseek_ocr_shared.parts (deepseek_ocr_shared)",
    ]
