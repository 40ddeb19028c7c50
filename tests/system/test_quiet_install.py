"""A quiet install: building the wheel prints none of setuptools' "Package would be ignored" warnings
(conf/ and the report templates are declared as packages with package data), and the wheel ships every
YAML file of conf/ and every template."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_build_prints_no_setuptools_warning(built_wheel):
    """The session's wheel (tests/system/conftest.py: `pip wheel -v` of the files git ships)."""
    proc = built_wheel.proc
    out = proc.stdout + proc.stderr
    assert "running bdist_wheel" in out  # the verbose build output is what is searched
    assert "would be ignored" not in out, out[out.find("would be ignored") - 600 :][:1500]
    assert "SetuptoolsDeprecationWarning" not in out
    names = set(zipfile.ZipFile(built_wheel.path).namelist())
    want = {
        f"llm_perf_opt/conf/{p.relative_to(REPO_ROOT / 'conf').as_posix()}"
        for p in (REPO_ROOT / "conf").rglob("*.yaml")
    }
    want |= {
        f"llm_perf_opt/report/templates/{p.name}"
        for p in (REPO_ROOT / "src/llm_perf_opt/report/templates").glob("*.j2")
    }
    assert len(want) > 40 and want <= names, sorted(want - names)
