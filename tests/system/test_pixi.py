"""pixi.toml in step with ./dev and pyproject.toml, checked mechanically (pixi itself cannot run here).

* every ./dev task has a pixi task running the same thing (`python` excepted: `pixi run python ...` runs the
  environment's python without a task, and `help` prints ./dev's own header);
* the torch pin is ./dev's (TORCH_SPEC), in both environments, and satisfies pyproject's floor;
* the extras are ./dev's defaults (DEV_EXTRAS) and exist in pyproject;
* any PyPI package named in both files has the same version specifier (flash-attn: the `gpu` extra).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

REPO_ROOT = Path(__file__).resolve().parents[2]
NOT_PIXI_TASKS = {"python": "pixi run python ... runs the environment's python", "help": "./dev's own usage text"}


def pixi() -> dict:
    return tomllib.loads((REPO_ROOT / "pixi.toml").read_text())


def pyproject() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def dev_script() -> str:
    return (REPO_ROOT / "dev").read_text()


def dev_tasks() -> set[str]:
    """The task names of ./dev's `case "$task" in` (patterns such as `trace|analyze)`; not the `*)` fallback)."""
    body = dev_script().split('case "$task" in', 1)[1].split("esac", 1)[0]
    names = set()
    for pattern in re.findall(r"^\s{2}([\w|-]+)\)", body, re.M):
        names.update(p for p in pattern.split("|") if not p.startswith("-"))
    return names


def dev_default(variable: str, pattern: str) -> str:
    found = re.search(pattern, dev_script())
    assert found, f"./dev no longer sets {variable} like this: {pattern}"
    return found.group(1)


def pixi_pypi_specs() -> dict[str, list[str]]:
    """Every pypi-dependency of pixi.toml (top level and features): canonical name -> its specifiers."""
    doc = pixi()
    tables = [doc.get("pypi-dependencies", {})]
    tables += [feature.get("pypi-dependencies", {}) for feature in doc.get("feature", {}).values()]
    out: dict[str, list[str]] = {}
    for table in tables:
        for name, spec in table.items():
            out.setdefault(canonicalize_name(name), []).append(
                spec if isinstance(spec, str) else spec.get("version", "")
            )
    return out


def pyproject_specs() -> dict[str, str]:
    project = pyproject()["project"]
    reqs = list(project["dependencies"])
    reqs += [r for extra in project["optional-dependencies"].values() for r in extra]
    return {canonicalize_name(Requirement(r).name): str(Requirement(r).specifier) for r in reqs}


def test_dev_tasks_are_found():
    assert {
        "trace",
        "analyze",
        "calibrate",
        "export",
        "sweep",
        "group",
        "report",
        "verify",
        "test",
        "lint",
        "bench",
        "python",
        "help",
    } <= dev_tasks()


def test_every_dev_task_has_a_pixi_task_doing_the_same():
    tasks = pixi()["tasks"]
    for task in sorted(dev_tasks() - set(NOT_PIXI_TASKS)):
        assert task in tasks, f"./dev {task} has no pixi task"
    jobs = re.search(
        r"^\s{2}([\w|]+)\)\n\s+ensure_venv; ensure_dot\n(?:\s+[^\n]*\n)*?\s+run_py \"pipelines/\$task.py\"",
        dev_script(),
        re.M,
    )
    assert jobs, "./dev's job dispatch changed"
    for job in jobs.group(1).split("|"):
        assert tasks[job] == f"python pipelines/{job}.py"
        assert (REPO_ROOT / "pipelines" / f"{job}.py").is_file()
    assert tasks["test"] == "python -m pytest" and '"$VENV/bin/python" -m pytest' in dev_script()
    assert tasks["lint"] == "ruff format --check . && ruff check ." and '"$VENV/bin/ruff" check "$@" .' in dev_script()
    assert "benchmarks/{{ name }}.py" in tasks["bench"]["cmd"] and tasks["bench"]["args"][0] == "name"


def test_torch_is_pinned_as_dev_pins_it():
    version = dev_default("TORCH_SPEC", r'TORCH_SPEC="\$\{TORCH_SPEC:-torch==([\w.+]+)\}"')
    features = pixi()["feature"]
    for feature in ("cpu", "cuda"):
        assert features[feature]["pypi-dependencies"]["torch"] == f"=={version}", feature
    floor = SpecifierSet(pyproject_specs()["torch"])
    assert version in floor, f"torch {version} (./dev, pixi) is outside pyproject's torch{floor}"


def test_extras_are_devs_defaults_and_exist():
    extras = set(dev_default("DEV_EXTRAS", r'EXTRAS="\$\{DEV_EXTRAS-([\w,]+)\}"').split(","))
    package = pixi()["pypi-dependencies"]["llm-perf-opt"]
    assert set(package["extras"]) == extras
    assert package["path"] == "." and package["editable"] is True
    assert extras <= set(pyproject()["project"]["optional-dependencies"])


def test_packages_named_in_both_files_have_the_same_specifier():
    ours = pyproject_specs()
    compared = 0
    for name, specs in pixi_pypi_specs().items():
        if name in ("llm-perf-opt", "torch"):  # the project itself; torch: pinned above
            continue
        assert name in ours, f"pixi.toml installs {name}, which pyproject.toml does not name"
        for spec in specs:
            assert SpecifierSet(spec) == SpecifierSet(ours[name]), f"{name}: pixi {spec!r}, pyproject {ours[name]!r}"
            compared += 1
    assert compared >= 1  # flash-attn at least (the cuda feature)
    assert pixi()["feature"]["cuda"]["pypi-options"]["no-build-isolation"] == ["flash-attn"]
    flash = re.search(r'"flash-attn([^"]*)"', dev_script())  # ./dev builds it itself for DEV_EXTRAS=gpu
    assert flash and SpecifierSet(flash.group(1)) == SpecifierSet(ours["flash-attn"])


def test_python_is_one_pyproject_allows():
    python = pixi()["dependencies"]["python"]
    version = python.rstrip(".*")
    assert version in SpecifierSet(pyproject()["project"]["requires-python"]), python
    assert re.search(
        r'python-version: "' + re.escape(version) + '"', (REPO_ROOT / ".github/workflows/ci.yml").read_text()
    )


def test_the_environments_are_the_ones_the_workflow_uses():
    envs = pixi()["environments"]
    assert envs == {"default": ["cpu"], "rtx5090": ["cuda"]}
    assert "pixi run -e rtx5090 verify" in (REPO_ROOT / ".github/workflows/gpu-verify.yml").read_text()
