"""Loading the vendor code: every problem is one ConfigError / PatchError naming it, and leaves nothing behind.

The fake vendor directories here are small files written for the test (no vendor code)."""

from __future__ import annotations

import json
import sys
import types

import pytest
import torch
from torch import nn

from llm_perf_opt.config.schemas import ModelConfig, RuntimeConfig
from llm_perf_opt.dsocr.session import REQUIRED_VENDOR_NAMES, DeepSeekOCRSession
from llm_perf_opt.errors import ConfigError, PatchError
from llm_perf_opt.model_runtime.vendor import check_vendor_modules, read_vendor_config

CPU = RuntimeConfig(device="cpu", dtype="float32", attn_implementation="eager")

LANGUAGE = {  # small decoder dimensions of our own; only what ModelSpec.from_config_dict needs
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "moe_intermediate_size": 32,
    "n_routed_experts": 4,
    "n_shared_experts": 1,
    "num_experts_per_tok": 2,
    "first_k_dense_replace": 1,
    "vocab_size": 130000,
    "use_mla": False,
}
AUTO_MAP = {
    "AutoConfig": "modeling_deepseekocr.DeepseekOCRConfig",
    "AutoModel": "modeling_deepseekocr.DeepseekOCRForCausalLM",
}

CONFIG_ONLY = """
from transformers import PretrainedConfig


class DeepseekOCRConfig(PretrainedConfig):
    model_type = "{model_type}"
"""

MISSING_PACKAGE = """
import package_that_does_not_exist_llm_perf_opt
from transformers import PretrainedConfig


class DeepseekOCRConfig(PretrainedConfig):
    model_type = "fake_missing_pkg"
"""


def model_cfg_for(path) -> ModelConfig:
    cfg = ModelConfig(name="vendor", source="twin")  # build valid, then point at the directory under test
    cfg.source, cfg.path = "vendor", str(path)
    return cfg


def write_fake_vendor(path, modeling_source: str, config: dict | None = None):
    path.mkdir(parents=True, exist_ok=True)
    raw = {"auto_map": AUTO_MAP, "language_config": LANGUAGE, "model_type": "fake_ocr"}
    if config is not None:
        raw = config
    (path / "config.json").write_text(json.dumps(raw))
    (path / "modeling_deepseekocr.py").write_text(modeling_source)
    (path / "__init__.py").write_text("")
    return path


@pytest.fixture
def clean_process():
    """Process-wide state that a failed load must leave unchanged."""
    before = (
        vars(torch.Tensor).get("cuda"),
        nn.Linear.reset_parameters,
        nn.LayerNorm.reset_parameters,
        nn.Module.register_parameter,
        torch.get_default_dtype(),
        sys.modules.get("torchvision"),
    )
    yield
    after = (
        vars(torch.Tensor).get("cuda"),
        nn.Linear.reset_parameters,
        nn.LayerNorm.reset_parameters,
        nn.Module.register_parameter,
        torch.get_default_dtype(),
        sys.modules.get("torchvision"),
    )
    assert after == before


def test_missing_directory(tmp_path, clean_process):
    missing = tmp_path / "no_such_model"
    with pytest.raises(ConfigError, match="no_such_model"):
        ModelConfig(name="vendor", source="vendor", path=str(missing))
    with pytest.raises(ConfigError, match="does not exist"):
        DeepSeekOCRSession.open(model_cfg_for(missing), CPU)


def test_path_is_a_file(tmp_path, clean_process):
    f = tmp_path / "config.json"
    f.write_text("{}")
    with pytest.raises(ConfigError, match="not a directory"):
        DeepSeekOCRSession.open(model_cfg_for(f), CPU)


def test_directory_without_config_json(tmp_path, clean_process):
    (tmp_path / "modeling_deepseekocr.py").write_text("")
    with pytest.raises(ConfigError, match="config.json"):
        DeepSeekOCRSession.open(model_cfg_for(tmp_path), CPU)


def test_corrupt_config_json(tmp_path, clean_process):
    (tmp_path / "config.json").write_text('{"auto_map": {"AutoConfig": ')
    with pytest.raises(ConfigError, match=r"not valid JSON .*line 1"):
        DeepSeekOCRSession.open(model_cfg_for(tmp_path), CPU)


def test_config_json_without_auto_map(tmp_path, clean_process):
    (tmp_path / "config.json").write_text(json.dumps({"language_config": LANGUAGE}))
    with pytest.raises(ConfigError, match="auto_map"):
        DeepSeekOCRSession.open(model_cfg_for(tmp_path), CPU)


def test_auto_map_names_a_missing_file(tmp_path, clean_process):
    (tmp_path / "config.json").write_text(json.dumps({"auto_map": AUTO_MAP, "language_config": LANGUAGE}))
    with pytest.raises(ConfigError, match="modeling_deepseekocr.py"):
        DeepSeekOCRSession.open(model_cfg_for(tmp_path), CPU)


def test_wrong_transformers_version(tmp_path, monkeypatch, clean_process):
    import transformers

    write_fake_vendor(tmp_path / "fake_version", CONFIG_ONLY.format(model_type="fake_version"))
    monkeypatch.setattr(transformers, "__version__", "5.0.0")
    with pytest.raises(ConfigError, match=r"transformers 4\.46\.x, found 5\.0\.0"):
        DeepSeekOCRSession.open(model_cfg_for(tmp_path / "fake_version"), CPU)


def test_vendor_code_without_expected_classes(tmp_path, clean_process):
    path = write_fake_vendor(tmp_path / "fake_ocr_classes", CONFIG_ONLY.format(model_type="fake_ocr_classes"))
    with pytest.raises(PatchError) as info:
        DeepSeekOCRSession.open(model_cfg_for(path), CPU)
    msg = str(info.value)
    assert "DeepseekOCRForCausalLM" in msg and "DeepseekOCRModel" in msg
    assert "deepencoder" in msg and "modeling_deepseekv2" in msg  # modules that were never loaded
    assert str(path) in msg


def test_vendor_code_importing_a_missing_package(tmp_path, clean_process):
    path = write_fake_vendor(tmp_path / "fake_missing_pkg", MISSING_PACKAGE)
    with pytest.raises(ConfigError, match="package_that_does_not_exist_llm_perf_opt"):
        DeepSeekOCRSession.open(model_cfg_for(path), CPU)


def test_check_vendor_modules_names_each_missing_name():
    def module(name, **attrs):
        m = types.ModuleType(name)
        for k, v in attrs.items():
            setattr(m, k, v)
        return m

    class DeepseekOCRModel:
        def forward(self):
            return None

    modules = {
        "modeling_deepseekocr": module(
            "modeling_deepseekocr",
            DeepseekOCRModel=DeepseekOCRModel,
            DeepseekOCRConfig=object,
            DeepseekOCRForCausalLM=object,
        ),
        "modeling_deepseekv2": module("modeling_deepseekv2"),
        "deepencoder": module(
            "deepencoder",
            ImageEncoderViT=object,
            VitModel=object,
            MlpProjector=object,
            Block=object,
            NoTPTransformerBlock=object,
        ),
    }
    with pytest.raises(PatchError) as info:
        check_vendor_modules(modules, "DIR", REQUIRED_VENDOR_NAMES, "DeepSeek-OCR")
    msg = str(info.value)
    assert "deepencoder has no quick_gelu" in msg
    assert "modeling_deepseekv2 has no DeepseekV2Model, DeepseekV2Model.forward" in msg
    assert "MoEGate" in msg and "DeepseekV2MoE" in msg
    assert "modeling_deepseekocr" not in msg


def test_read_vendor_config_accepts_a_good_directory(tmp_path):
    write_fake_vendor(tmp_path, CONFIG_ONLY.format(model_type="fake_good"))
    assert read_vendor_config(tmp_path)["auto_map"] == AUTO_MAP
