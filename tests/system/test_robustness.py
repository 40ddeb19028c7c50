"""Issue 24, the rows that one process shows in-process (rows 7, 8, 9, 10, 11, 13, 15, 17 and the two extra
points), and the few that need their own process (a read-only directory as a non-root user, a full disk,
no HOME). Each test reproduces its row: it failed before the fix."""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest
from job_scripts import REPO_ROOT, job_cmd, one_line_error
from PIL import Image

from llm_perf_opt.errors import ArtifactError, ConfigError, ExitCode
from llm_perf_opt.run_lock import claim, hold

from .test_refused_runs import run


# ------------------------------------------------------------------ row 13: EXIF orientation
def test_an_exif_rotated_page_is_traced_upright_as_the_vendor_loads_it(tmp_path):
    from llm_perf_opt.config import PageConfig, RootConfig, WorkloadConfig
    from llm_perf_opt.deepseek_ocr_shared.inputs import load_page
    from llm_perf_opt.dsocr.inputs import build_inputs
    from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
    from llm_perf_opt.dsocr.spec import ModelSpec
    from llm_perf_opt.prepare.validate import page_size

    upright = np.zeros((800, 1000, 3), np.uint8)  # 1000 wide, 800 high, a bright top-left corner
    upright[:100, :200] = 255
    stored = Image.fromarray(upright).transpose(Image.Transpose.ROTATE_90)  # on its side: 800 x 1000
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation 6: turn 90° clockwise to view
    path = tmp_path / "exif_rot.png"
    stored.save(path, exif=exif)
    assert Image.open(path).size == (800, 1000)
    page = load_page(path)
    assert page.size == (1000, 800) and np.array_equal(np.asarray(page), upright)
    cfg = RootConfig(workload=WorkloadConfig(page=PageConfig(image=str(path))))
    assert page_size(cfg) == (1000, 800)
    gundam = VisionWorkload(base_size=1024, image_size=640, crop_mode=True, tile_size=640)
    inputs = build_inputs(ModelSpec.named("tiny"), gundam, image=path)
    assert inputs.layout == compute_view_layout(gundam, 1000, 800)
    assert inputs.layout.image_tokens != compute_view_layout(gundam, 800, 1000).image_tokens


# ------------------------------------------------------------------ row 8: overwrite removes everything
def test_overwrite_removes_every_file_of_the_previous_run(tmp_path, capsys):
    out = tmp_path / "run"
    assert run(capsys, "analyze", "model=twin_tiny", f"hydra.run.dir={out}")[0] == ExitCode.OK
    stale = [out / "model_explorer" / "time_total.json", out / "export" / "ops.csv", out / "stray.txt"]
    for p in stale:
        p.parent.mkdir(exist_ok=True)
        p.write_text("from the previous run")
    code, lines = run(capsys, "analyze", "model=twin_tiny", "run.overwrite=true", f"hydra.run.dir={out}")
    assert code == ExitCode.OK, lines
    assert [p for p in stale if p.exists()] == [] and not (out / "model_explorer").exists()
    assert (out / "costs.json").is_file()


# ------------------------------------------------------------------ row 17: the run directory vanishes
def test_a_run_whose_directory_vanished_never_ends_ok(tmp_path):
    from llm_perf_opt.runs.job_run import JobRun

    out = tmp_path / "run"
    out.mkdir()
    run_ = JobRun(out, stage="capture")
    shutil.rmtree(out)
    out.mkdir()  # what atomic_path's mkdir did: a new, empty directory under the same name
    with pytest.raises(ArtifactError, match="removed or replaced during stage capture"):
        run_.step("group")
    with pytest.raises(ArtifactError):
        run_.finish_ok()
    assert run_.ended is None


# ------------------------------------------------------------------ row 9: a live sweep's pending jobs
def test_the_report_of_a_live_sweep_calls_jobs_not_yet_started_pending(tmp_path):
    from omegaconf import OmegaConf

    from llm_perf_opt.report.collect import collect_sweep

    sweep = tmp_path / "sweep"
    (sweep / "0" / ".hydra").mkdir(parents=True)
    OmegaConf.save({"hydra": {"overrides": {"task": ["workload.page.width=800,900"]}}}, sweep / "multirun.yaml")
    with hold(sweep):  # the sweep's process, alive
        jobs = collect_sweep(sweep).jobs
        assert [j.status for j in jobs][1:] == ["pending"] and jobs[1].running and not jobs[1].failed
    after = collect_sweep(sweep).jobs  # the process is gone: it never will start
    assert after[1].status.startswith("failed: not started") and after[1].failed
    assert len(jobs) == len(after) == 2


# ------------------------------------------------------------------ row 10: group while a run writes
def test_group_is_refused_while_a_job_holds_the_run(tmp_path, capsys):
    from llm_perf_opt.jobs import group

    out = tmp_path / "run"
    with claim(out):
        (out / "callgraph.json").write_text("{}")
        with pytest.raises(ConfigError, match="is in use by a running job"):
            hold(out)
        assert group.main([str(out)]) == ExitCode.CONFIG
    line = capsys.readouterr().err.strip()
    assert line.startswith("error: ") and "\n" not in line


# ------------------------------------------------------------------ rows 7, 11: explore and verify's paths
def test_explore_and_verify_take_paths_from_the_callers_directory_and_refuse_bad_ports(tmp_path, monkeypatch, capsys):
    from llm_perf_opt.gate.plan import plan
    from llm_perf_opt.jobs import explore

    monkeypatch.setenv("LLM_PERF_OPT_CWD", str(tmp_path))
    (tmp_path / "grp9").mkdir()
    with pytest.raises(ArtifactError, match=f"{tmp_path / 'grp9'}: neither"):  # found, and named absolute
        explore.explorer_files(explore.user_path("grp9"))
    for port in (99999, -1):
        with pytest.raises(ConfigError, match=f"--port={port} is invalid: must be a port number from 1 to 65535"):
            explore.free_port("127.0.0.1", port)
    with pytest.raises(ConfigError, match="--host='no.such.host.invalid' is invalid"):
        explore.free_port("no.such.host.invalid", None)
    gate = plan(["verify=quick", "verify.out_dir=relverify"], validate_jobs=False)
    assert gate.out_dir == tmp_path / "relverify"
    gate = plan(["verify=quick", "hydra.sweep.dir=mine"], validate_jobs=False)  # row 5: the user's sweep dir
    assert gate.sweep_dir == gate.out_dir == tmp_path / "mine" and "hydra.sweep.dir" not in " ".join(
        gate.command()[:-1]
    )
    assert gate.command().count(f"hydra.sweep.dir={tmp_path / 'mine'}") == 1
    a, b = (plan(["verify=quick"], validate_jobs=False, now=1000.25) for _ in range(2))  # row 6: same instant
    assert a.out_dir.name.endswith(f".250000-{os.getpid()}")


def test_two_gates_never_share_a_directory(tmp_path):
    from llm_perf_opt.gate.run import GATE_LOCK

    with claim(tmp_path / "gate", sweep=True, field="verify.out_dir", lock_file=GATE_LOCK):
        with pytest.raises(ConfigError, match="verify.out_dir=.* is in use by another run"):
            claim(tmp_path / "gate", sweep=True, field="verify.out_dir", lock_file=GATE_LOCK)
        claim(tmp_path / "gate", sweep=True).release()  # the gate's sweep may share the directory


# ------------------------------------------------------------------ row 15 and the extra points
def test_error_lines_are_short_and_argparse_errors_are_one_line(tmp_path, capsys):
    from llm_perf_opt.jobs import group, report

    code, lines = run(capsys, "analyze", "workload.prompt=" + "x" * 100_000, f"hydra.run.dir={tmp_path / 'r'}")
    assert code == ExitCode.CONFIG and len(lines) == 1 and len(lines[0]) < 400, len(lines[0])
    assert "100,002 characters" in lines[0] and not (tmp_path / "r").exists()
    for call, args, says in [
        (report.main, [], "the following arguments are required: directory"),
        (report.main, [str(tmp_path), "--bogus"], "unrecognized arguments: --bogus"),
        (group.main, [str(tmp_path), "--color-by", "rainbow"], "invalid choice: 'rainbow'"),
        (
            report.main,
            ["--analytic", str(tmp_path / "a"), "--n", "100000"],
            "--n=100000 is invalid: must be at most 256",
        ),
    ]:
        try:
            code = call(args)
        except SystemExit as exc:
            code = exc.code
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert code == ExitCode.CONFIG and len(err) == 1 and says in err[0], err
        assert "usage:" not in err[0]
    assert not (tmp_path / "a").exists()


# ------------------------------------------------------------------ row 11 (files), row 12: own processes
def test_read_only_full_disk_and_no_home_are_one_line_or_fine(tmp_path):
    from omegaconf import OmegaConf

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    OmegaConf.save({"hydra": {"overrides": {"task": ["workload.page.width=800,900"]}}}, sweep / "multirun.yaml")
    tmp_path.chmod(0o755)
    readonly = tmp_path / "readonly"
    readonly.mkdir(mode=0o555)
    as_nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        pytest.skip("needs setpriv and root to run as a non-root user")
    for args in ([str(sweep), "--out", str(readonly), "--no-plots"], [str(sweep), "--no-plots"]):
        proc = subprocess.run(
            as_nobody + job_cmd("report", *args),
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            timeout=300,
        )
        assert "Permission denied" in one_line_error(proc)
    full = tmp_path / "full"
    full.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(full)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        with open(full / "filler", "wb", buffering=0) as fh:
            try:
                while True:
                    fh.write(b"\0" * 4096)
                    fh.flush()
            except OSError:
                pass
        proc = subprocess.run(
            job_cmd("report", str(sweep), "--out", str(full / "out"), "--no-plots"),
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert "No space left on device" in one_line_error(proc)
    finally:
        subprocess.run(["umount", str(full)], check=False)
    env = {k: v for k, v in os.environ.items() if k != "HOME"}
    proc = subprocess.run(
        [str(REPO_ROOT / "dev"), "analyze", "model=twin_tiny", f"hydra.run.dir={tmp_path / 'nohome'}"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0 and (tmp_path / "nohome" / "costs.json").is_file(), proc.stderr[-2000:]
