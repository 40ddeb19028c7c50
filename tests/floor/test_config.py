"""Config validation: every bad input becomes a ConfigError naming field, value and what is allowed;
the Hydra app refuses bad overrides with one line and a non-zero exit."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from llm_perf_opt.config import ModelConfig, PageConfig, RuntimeConfig, WorkloadConfig, to_typed_config
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.pipelines.common import CONF_DIR

REPO_ROOT = Path(__file__).resolve().parents[2]


def compose_cfg(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


@pytest.mark.parametrize("mode", ["tiny", "small", "base", "large", "gundam", "gundam_m"])
def test_every_workload_preset_composes_and_validates(mode):
    cfg = to_typed_config(compose_cfg(f"workload={mode}"))
    assert cfg.workload.name == mode
    cfg.workload.vision()


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
        to_typed_config(compose_cfg(*overrides))
    assert needle in str(err.value)


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
    assert WorkloadConfig(name="gundam_m", base_size=1280, image_size=1024, tile_size=1024).vision().tile_size == 1024


def test_unknown_key_is_refused_by_schema():
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException):
        compose_cfg("workload.bogus=1")


def run_trace(tmp_path, *overrides):
    return subprocess.run(
        [sys.executable, "-m", "llm_perf_opt.pipelines.trace", f"hydra.run.dir={tmp_path}", *overrides],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=300,
    )


@pytest.mark.slow
def test_cli_bad_override_is_one_line_and_nonzero(tmp_path):
    proc = run_trace(tmp_path, "workload.base_size=1000", "trace.enabled=false")
    assert proc.returncode == 2
    err_lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("[")]
    assert err_lines == [err_lines[0]] and err_lines[0].startswith("error: workload.base_size=1000")
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "summary.json").exists()
