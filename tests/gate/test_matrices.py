"""The verification matrices (conf/verify/) and the gate's plan: which jobs, which overrides, what is refused.
Nothing here runs a job; the plan composes and validates each job's config as the gate does."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from job_scripts import run_job_in_process
from omegaconf import OmegaConf

from llm_perf_opt.config import to_typed_config
from llm_perf_opt.config.compose import compose, group_options
from llm_perf_opt.config.sweeps import planned_jobs
from llm_perf_opt.dsocr.parts import mode_names
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.gate.plan import plan

PAGES = ["page=letter_portrait", "page=slide"]


def test_the_matrices_are_the_verify_group_and_expected_yaml_is_not_one():
    assert set(group_options("verify")) >= {"default", "quick", "vendor"}
    from llm_perf_opt.config.options import unknown_group_option

    problem = unknown_group_option(["verify=expected"])
    assert problem is not None and "one of default, quick, vendor" in str(problem)


def test_default_matrix_is_every_mode_on_two_pages_on_the_full_twin(tmp_path):
    gate = plan(["verify=default", f"verify.out_dir={tmp_path}"])
    assert len(gate.jobs) == len(mode_names()) * 2 == 12
    assert {o for job in gate.jobs for o in job if o.startswith("workload=")} == {f"workload={m}" for m in mode_names()}
    assert {o for job in gate.jobs for o in job if o.startswith("page=")} == set(PAGES)
    assert all("model=twin" in job for job in gate.jobs)
    assert gate.axes == ["workload", "page"]
    assert gate.label(gate.jobs[1]) == "workload=tiny page=slide"


def test_default_is_the_matrix_when_none_is_chosen(tmp_path):
    assert plan([f"verify.out_dir={tmp_path}"], validate_jobs=False).matrix == "default"


def test_quick_matrix_is_the_tiny_twin_on_cpu(tmp_path):
    gate = plan(["verify=quick", f"verify.out_dir={tmp_path}"])
    assert gate.jobs == planned_jobs({"hydra": {"overrides": {"task": gate.arguments}}})
    assert [gate.label(j) for j in gate.jobs] == ["workload=tiny", "workload=gundam"]
    for raw in (compose(job) for job in gate.jobs):
        cfg = to_typed_config(raw)
        assert (cfg.model.name, cfg.runtime.device, cfg.verify.name, cfg.verify.rtol) == (
            "twin_tiny",
            "cpu",
            "quick",
            1e-3,
        )
        assert cfg.trace.verify and cfg.trace.capture


def test_command_line_overrides_reach_every_job_and_gate_knobs_do_not(tmp_path):
    out = tmp_path / "out"
    gate = plan(
        [
            "verify=quick",
            "verify.rtol=0.01",
            "workload.page.width=900",
            f"verify.out_dir={out}",
            "page=slide,small",
            "hydra/launcher=submitit_local",
        ]
    )
    assert len(gate.jobs) == 4  # the matrix's 2 modes x the 2 pages added on the command line
    assert all("verify.rtol=0.01" in job and "workload.page.width=900" in job for job in gate.jobs)
    assert not any(o.startswith("verify.out_dir") for job in gate.jobs for o in job)
    assert gate.rtol == 0.01 and gate.out_dir == out.absolute()
    cmd = gate.command()
    assert cmd[:4] == [sys.executable, "-m", "llm_perf_opt.jobs.cli", "sweep"]
    assert f"hydra.sweep.dir={out.absolute() / 'sweep'}" in cmd and cmd[-1] == "hydra/launcher=submitit_local"


def test_a_matrix_does_not_leak_into_ordinary_sweeps():
    """A matrix lives under `verify`: choosing one sets no hydra.sweeper.params, and an experiment's params
    stay what the experiment says."""
    plain = compose(["verify=default"], return_hydra_config=True)
    assert not OmegaConf.select(plain, "hydra.sweeper.params")
    modes = compose(["verify=default", "experiment=modes"], return_hydra_config=True)
    assert OmegaConf.to_container(modes.hydra.sweeper.params) == {"workload": ",".join(mode_names())}
    assert compose([]).verify.name is None  # the trace job's default: no matrix


def test_verify_rtol_still_drives_the_trace_job():
    cfg = to_typed_config(compose(["verify.rtol=0.05"]))
    assert cfg.verify.rtol == 0.05 and cfg.verify.name is None


@pytest.mark.parametrize(
    "args,message",
    [
        (["verify=quick", "verify.rtoll=1"], "Could not override 'verify.rtoll': Key 'rtoll' not in 'VerifyConfig'"),
        (["verify=quick", "verify.rtol=2"], "verify.rtol=2.0 is invalid: must be in [0, 1)"),
        (
            ["verify=quick", "workload.base_size=1000"],
            "verify=quick job 0 (workload=tiny): workload.base_size=1000 is invalid",
        ),
        (
            ["verify=quick", "+verify.analytic_spec.decoder.experts=3"],
            "verify=quick job 0 (workload=tiny): verify.analytic_spec.decoder.experts=3 is invalid: "
            "not a field of DecoderSpec",
        ),
        (["verify=null"], "verify=null chooses no verification matrix"),
    ],
)
def test_bad_input_is_one_config_error(tmp_path, args, message):
    with pytest.raises(ConfigError) as err:
        plan([*args, f"verify.out_dir={tmp_path}"])
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_cuda_without_a_gpu_is_refused_before_any_job(tmp_path):
    with pytest.raises(ConfigError, match=r"runtime.device='cuda' is invalid: needs a CUDA GPU"):
        plan(["verify=quick", "runtime=cuda", f"verify.out_dir={tmp_path}"])


def test_vendor_matrix_without_the_vendor_directory_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.delenv("DSOCR_MODEL_PATH", raising=False)
    with pytest.raises(ConfigError) as err:
        plan(["verify=vendor", f"verify.out_dir={tmp_path}"])
    assert str(err.value) == (
        "verify=vendor job 0 (workload=tiny): model.path is required for model=vendor: "
        "pass model.path=DIR or set DSOCR_MODEL_PATH"
    )


@pytest.mark.vendor
def test_vendor_matrix_with_the_vendor_directory(vendor_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("DSOCR_MODEL_PATH", str(vendor_dir))
    gate = plan(["verify=vendor", f"verify.out_dir={tmp_path}"])
    assert len(gate.jobs) == len(mode_names())
    cfg = to_typed_config(compose(gate.jobs[0]))
    assert cfg.model.source == "vendor" and Path(cfg.model.path) == vendor_dir


def test_an_out_dir_holding_a_sweep_is_refused(tmp_path):
    (tmp_path / "sweep" / "0").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"verify.out_dir=.* already holds a sweep"):
        plan(["verify=quick", f"verify.out_dir={tmp_path}"])


@pytest.mark.parametrize(
    "args,line",
    [
        (["verify=nosuch"], "error: verify='nosuch' is invalid: one of default, quick, vendor"),
        (
            ["verify=quick", "verify.rtol=abc"],
            "error: Error merging override verify.rtol=abc: Value 'abc' of type 'str' could not be converted to Float",
        ),
    ],
)
def test_the_command_prints_one_line_and_exits_2(tmp_path, args, line):
    proc = run_job_in_process("verify", *args, f"verify.out_dir={tmp_path}")
    assert proc.returncode == 2
    assert proc.stderr.strip() == line and proc.stdout == ""
    assert not (tmp_path / "sweep").exists()  # nothing ran


def test_help_names_the_exit_codes():
    proc = run_job_in_process("verify", "--help")
    assert proc.returncode == 0 and "Exit status: 0" in proc.stdout and "2 bad input" in proc.stdout


def test_the_gate_is_a_console_script_job():
    from llm_perf_opt.jobs import cli

    assert "verify" in cli.JOBS
    assert json.dumps(sorted(cli.JOBS))  # (the packaging test checks pipelines/*.py against cli.JOBS)


def test_an_analytic_spec_change_is_checked_and_named():
    from llm_perf_opt.dsocr.spec import ModelSpec
    from llm_perf_opt.prepare.validate import changed_spec

    tiny = ModelSpec.tiny()
    changed = changed_spec(tiny, {"decoder": {"num_experts_per_tok": 3}, "sam": {"global_attn_indexes": [0, 3]}})
    assert changed.decoder.num_experts_per_tok == 3 and changed.sam.global_attn_indexes == (0, 3)
    assert changed.name == "deepseek-ocr-tiny+decoder.num_experts_per_tok=3+sam.global_attn_indexes=[0, 3]"
    assert changed.decoder.hidden_size == tiny.decoder.hidden_size  # nothing else moved
    with pytest.raises(ConfigError, match=r"verify.analytic_spec.decoder.num_layers=True is invalid: must be a int"):
        changed_spec(tiny, {"decoder": {"num_layers": True}})
    with pytest.raises(ConfigError, match=r"model spec decoder.num_experts_per_tok=9 is invalid"):
        changed_spec(tiny, {"decoder": {"num_experts_per_tok": 9}})  # ModelSpec's own rule (<= 8 routed experts)
