"""Config validation: every bad input becomes a ConfigError naming field, value and what is allowed;
plain rules in the config schemas, DeepSeek-OCR's rules in the jobs' validation step, all of them before
any work; the Hydra app refuses bad overrides with one line and a non-zero exit."""

from __future__ import annotations

import subprocess
import sys

import pytest
from job_scripts import run_job_in_process

from llm_perf_opt.config import ModelConfig, PageConfig, RuntimeConfig, WorkloadConfig, to_typed_config
from llm_perf_opt.config.compose import compose
from llm_perf_opt.deepseek_ocr_shared.workload_config import DeepSeekWorkloadConfig
from llm_perf_opt.dsocr.parts import mode_names
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.prepare.validate import validate


def compose_cfg(*overrides: str):
    return compose(overrides)


@pytest.mark.parametrize("mode", mode_names())
def test_every_workload_preset_composes_and_validates(mode):
    job = validate(compose_cfg(f"workload={mode}"))
    assert job.cfg.workload.name == mode
    assert (job.workload.base_size, job.workload.image_size) == (
        job.cfg.workload.base_size,
        job.cfg.workload.image_size,
    )


@pytest.mark.parametrize("model", ["twin", "twin_tiny"])
@pytest.mark.parametrize("runtime", ["cpu", "cpu_bf16", "cuda"])
def test_model_and_runtime_presets(model, runtime):
    cfg = to_typed_config(compose_cfg(f"model={model}", f"runtime={runtime}"))
    assert cfg.model.source == "twin"


@pytest.mark.parametrize(
    "overrides, needle",
    [
        (["workload.base_size=1000"], "workload.base_size=1000"),
        (["workload.image_size=0"], "workload.image_size=0"),
        (["workload=gundam", "workload.image_size=1024"], "workload.image_size=1024"),
        (["workload.page.width=0"], "workload.page.width=0"),
        (["workload.page.image=/no/such/page.png"], "workload.page.image"),
        (["workload.prompt=no placeholder"], "workload.prompt"),
        (["model=vendor", "model.path=/no/such/dir"], "model.path='/no/such/dir'"),
        (["model.spec=huge"], "model.spec='huge'"),
        (["runtime.attn_implementation=flash_attention_2"], "flash_attention_2 needs runtime=cuda"),
        (["runtime.dtype=float16"], "runtime.dtype='float16'"),
        (["runtime.device=tpu"], "runtime.device='tpu'"),
        (["verify.rtol=2.0"], "verify.rtol=2.0"),
    ],
)
def test_bad_values_raise_config_error_naming_field(overrides, needle):
    with pytest.raises(ConfigError) as err:
        validate(compose_cfg(*overrides))
    assert needle in str(err.value)
    assert len(str(err.value).splitlines()) == 1


@pytest.mark.parametrize(
    "overrides, needle",
    [
        (["workload.base_size=1000"], "must be a positive multiple of 64"),
        (["workload=gundam", "workload.image_size=1024"], "in crop mode it must equal workload.tile_size=640"),
        (["workload.prompt=no placeholder"], "must contain '<image>' exactly once"),
    ],
)
def test_deepseek_rules_live_in_the_validation_step(overrides, needle):
    """The schemas take plain values (these are valid integers and strings); the DeepSeek-OCR rules
    refuse them in `validate`, which every job runs first."""
    to_typed_config(compose_cfg(*overrides))
    with pytest.raises(ConfigError, match=needle):
        validate(compose_cfg(*overrides))


@pytest.mark.parametrize(
    "overrides, needle",
    [
        (["workload.base_size=0"], "workload.base_size=0 is invalid: must be a positive integer"),
        (["workload.tile_size=-64"], "workload.tile_size=-64 is invalid: must be a positive integer"),
        (["workload.prompt=''"], "workload.prompt='' is invalid: must be a non-empty string"),
    ],
)
def test_plain_rules_stay_in_the_schema(overrides, needle):
    with pytest.raises(ConfigError, match=needle):
        to_typed_config(compose_cfg(*overrides))


def test_importing_the_config_does_not_import_torch_or_dsocr():
    code = (
        "import sys, llm_perf_opt.config, llm_perf_opt.config.compose, llm_perf_opt.config.sweeps; "
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('llm_perf_opt.dsocr')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_vendor_needs_a_path(monkeypatch):
    monkeypatch.delenv("DSOCR_MODEL_PATH", raising=False)
    with pytest.raises(ConfigError, match="model.path is required"):
        to_typed_config(compose_cfg("model=vendor"))


def test_vendor_dir_without_config_json(tmp_path):
    with pytest.raises(ConfigError, match="must contain config.json"):
        ModelConfig(name="vendor", source="vendor", path=str(tmp_path))


def test_dataclasses_validate_directly(tmp_path):
    with pytest.raises(ConfigError, match="workload.page.height=-3"):
        PageConfig(width=10, height=-3)
    with pytest.raises(ConfigError, match="runtime.attn_implementation='magic'"):
        RuntimeConfig(attn_implementation="magic")
    page = tmp_path / "p.png"
    page.write_bytes(b"")
    assert PageConfig(image=str(page)).image == str(page)
    assert DeepSeekWorkloadConfig(name="gundam_m", base_size=1280, image_size=1024, tile_size=1024).tile_size == 1024
    with pytest.raises(ConfigError, match="workload.crop_mode='yes'"):
        DeepSeekWorkloadConfig(crop_mode="yes")
    with pytest.raises(ConfigError, match="workload.base_size=0 is invalid"):
        DeepSeekWorkloadConfig(base_size=0)
    with pytest.raises(ConfigError, match="workload.batch=0 is invalid"):
        DeepSeekWorkloadConfig(batch=0)  # the generic checks run too


def test_the_generic_workload_has_no_knobs():
    """The generic workload section holds what every family has; the DeepSeek-OCR knobs are that schema's."""
    from dataclasses import fields

    from llm_perf_opt.config.schemas import COMMON_WORKLOAD_FIELDS

    assert tuple(f.name for f in fields(WorkloadConfig)) == COMMON_WORKLOAD_FIELDS
    knobs = [f.name for f in fields(DeepSeekWorkloadConfig) if f.name not in COMMON_WORKLOAD_FIELDS]
    assert knobs == ["base_size", "image_size", "crop_mode", "tile_size", "min_num", "max_num"]
    with pytest.raises(TypeError):
        WorkloadConfig(base_size=1024)


def test_unknown_key_is_refused_by_schema():
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException):
        compose_cfg("workload.bogus=1")


def run_job(job, tmp_path, *overrides):
    """`./dev JOB hydra.run.dir=TMP OVERRIDES` in this process (`run_job_in_process`: the exit code, stdout and
    stderr the job's script in pipelines/ would give, a bug as exit 1 with its traceback on stderr)."""
    return run_job_in_process(job, f"hydra.run.dir={tmp_path}", *overrides)


@pytest.mark.slow
@pytest.mark.parametrize("job", ["trace", "analyze"])
@pytest.mark.parametrize(
    "override, first",
    [
        ("workload.base_size=1000", "error: workload.base_size=1000 is invalid: must be a positive multiple of 64"),
        ("workload.prompt=plain", "error: workload.prompt='plain' is invalid: must contain '<image>' exactly once"),
    ],
)
def test_cli_bad_override_is_one_line_and_nonzero(job, override, first, tmp_path):
    proc = run_job(job, tmp_path, override, "trace.enabled=false")
    assert proc.returncode == 2
    err_lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("[")]
    assert len(err_lines) == 1 and err_lines[0].startswith(first), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list(tmp_path.glob("*.json"))  # nothing written before the check
