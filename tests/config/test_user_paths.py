"""Relative paths mean the directory the user ran the command from, not the repository `./dev` changes
into; messages print them absolute."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from job_scripts import REPO_ROOT, one_line_error, run_job
from PIL import Image

from llm_perf_opt.config.paths import USER_CWD_ENV, user_path


def dev(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """The real ./dev, run from `cwd` (it changes into the repository itself)."""
    env = {k: v for k, v in os.environ.items() if k != USER_CWD_ENV}
    return subprocess.run(
        [str(REPO_ROOT / "dev"), *args], cwd=cwd, capture_output=True, text=True, timeout=600, env=env
    )


def test_dev_takes_relative_paths_from_the_users_directory(tmp_path):
    Image.new("RGB", (800, 600), "white").save(tmp_path / "page.png")
    proc = dev(tmp_path, "analyze", "workload.page.image=page.png", "hydra.run.dir=out/run")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "page 800x600" in proc.stdout
    assert (tmp_path / "out" / "run" / "costs.json").is_file()
    assert f"wrote {tmp_path / 'out' / 'run' / 'costs.json'}" in proc.stderr  # absolute in messages
    assert not (REPO_ROOT / "out").exists()


def test_dev_names_the_missing_file_by_its_absolute_path(tmp_path):
    line = one_line_error(dev(tmp_path, "trace", "workload.page.image=missing.png", "hydra.run.dir=run"))
    assert f"workload.page.image='{tmp_path / 'missing.png'}' is invalid: must be an existing image file" in line


def test_report_and_group_take_relative_directories_from_the_users_directory(tmp_path):
    (tmp_path / "runs" / "0").mkdir(parents=True)
    line = one_line_error(dev(tmp_path, "report", "runs"))
    assert f"error: {tmp_path / 'runs'}: not a sweep" in line
    line = one_line_error(dev(tmp_path, "group", "runs/0"))
    assert str(tmp_path / "runs" / "0" / "callgraph.json") in line


def test_the_user_directory_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(USER_CWD_ENV, str(tmp_path))
    assert user_path("a/b.png") == tmp_path / "a" / "b.png"
    assert user_path("/abs/x") == Path("/abs/x")
    monkeypatch.delenv(USER_CWD_ENV)
    assert user_path("x") == Path.cwd() / "x"


def test_without_dev_the_current_directory_is_the_users(tmp_path):
    """The console script (and pipelines/*.py run directly) work where the user is."""
    Image.new("RGB", (640, 640), "white").save(tmp_path / "page.png")
    proc = run_job("analyze", "workload.page.image=page.png", "hydra.run.dir=run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "run" / "costs.json").is_file()
