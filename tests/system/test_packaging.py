"""Packaging: every package ships (conf/ as `llm_perf_opt.conf`), the console script runs the jobs, and a
plain (non-editable) `pip install .` into a fresh venv runs the default job from another directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from llm_perf_opt.jobs import cli

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_every_package_is_listed_in_pyproject():
    """pyproject.toml lists the packages (conf/ is mapped in from outside src/): a new one must be added."""
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    src = REPO_ROOT / "src"
    found = {".".join(p.parent.relative_to(src).parts) for p in src.rglob("__init__.py")}
    listed = set(config["packages"])
    assert found <= listed, f"packages missing from pyproject.toml [tool.setuptools] packages: {found - listed}"
    # data-only folders are listed too (conf/ and its groups, the report templates), so setuptools ships
    # their files without its "Package would be ignored" warning (tests/system/test_quiet_install.py)
    conf = {"llm_perf_opt.conf"} | {
        ".".join(("llm_perf_opt.conf",) + d.relative_to(REPO_ROOT / "conf").parts)
        for d in (REPO_ROOT / "conf").rglob("*")
        if d.is_dir() and any(d.rglob("*.yaml"))
    }
    assert listed - found == conf | {"llm_perf_opt.report.templates"}
    assert config["package-dir"]["llm_perf_opt.conf"] == "conf"


def test_console_script_names_the_cli():
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"llm-perf-opt": "llm_perf_opt.jobs.cli:main"}
    assert set(cli.JOBS) == {
        "trace",
        "analyze",
        "calibrate",
        "export",
        "sweep",
        "group",
        "report",
        "explore",
        "verify",
        "compare",
        "size",
    }
    assert {p.stem for p in (REPO_ROOT / "pipelines").glob("*.py")} == set(cli.JOBS)


def test_cli_help_and_unknown_job(capsys):
    assert cli.main(["--help"]) == 0
    assert "llm-perf-opt trace" in capsys.readouterr().out
    assert cli.main(["frobnicate"]) == 2
    assert "unknown job 'frobnicate'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:  # a config-group option that does not exist: one line
        cli.main(["analyze", "workload=huge"])
    assert stop.value.code == 2 and capsys.readouterr().err.startswith("error: workload='huge' is invalid: one of")


def test_cli_runs_the_analyze_job(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "llm_perf_opt.jobs.cli", "analyze", "workload=tiny", f"hydra.run.dir={tmp_path}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "mode tiny" in proc.stdout and (tmp_path / "costs.json").is_file()
    assert (tmp_path / "analyze.log").is_file()  # Hydra names the job after its module


@pytest.mark.slow
def test_plain_pip_install_runs_the_default_job_from_elsewhere(tmp_path, built_wheel, calibration_dir):
    """`pip install` of the session's wheel (not editable; tests/system/conftest.py builds it from the files
    git ships) into a fresh venv, then `llm-perf-opt trace` in another directory. The dependencies come from
    this project's venv through a path entry (its own .pth files are not processed, so its editable install
    of llm_perf_opt stays invisible): the package, its conf/ and templates, and the console script all come
    from the wheel. The job is the default one in Tiny mode (no crops), with the profile stage off and the
    session's calibration cache: every stage that reads a shipped file runs (tests/conftest.py's `default_run`
    runs them all in Gundam mode)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    fresh_site = Path(
        subprocess.run(
            [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (fresh_site / "project_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}  # nothing installed but the wheel
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "--quiet", "--no-deps", str(built_wheel.path)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    assert not list(fresh_site.glob("__editable__*")), "the install must not be editable"
    assert list(fresh_site.glob("llm_perf_opt-*.dist-info")), "the wheel is installed into the fresh venv"

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = subprocess.run(
        [
            py,
            "-c",
            "import json, llm_perf_opt, llm_perf_opt.config.paths as p; "
            "print(json.dumps([llm_perf_opt.__file__, str(p.conf_dir())]))",
        ],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert where.returncode == 0, where.stderr
    package_file, conf = json.loads(where.stdout)
    assert Path(package_file).is_relative_to(fresh_site) and Path(conf).is_relative_to(fresh_site)
    assert (Path(conf) / "workload" / "gundam.yaml").is_file()

    run = subprocess.run(
        [
            venv / "bin" / "llm-perf-opt",
            "trace",
            "workload=tiny",
            "profile=off",
            f"hardware.cache_dir={calibration_dir}",
        ],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    [summary] = list((elsewhere / "tmp" / "runs").glob("*/*/summary.json"))  # the default hydra.run.dir
    data = json.loads(summary.read_text())["data"]
    assert data["status"] == "ok" and data["model"]["name"] == "twin_tiny" and data["workload"]["mode"] == "tiny"
    assert data["verification"]["passed"]
