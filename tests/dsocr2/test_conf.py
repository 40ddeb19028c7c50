"""The DeepSeek-OCR 2 presets in conf/ read into the family's own objects (until the family seam types them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from llm_perf_opt.dsocr.parts import modes as v1_modes
from llm_perf_opt.dsocr2.layout import compute_view_layout, workload_from_config
from llm_perf_opt.dsocr2.spec import ModelSpec

CONF = Path(__file__).resolve().parents[2] / "conf"
PRESETS = sorted((CONF / "workload" / "ocr2").glob("*.yaml"))


def test_presets_give_the_documented_tokens():
    expected = {"ocr2_default": 256 + 1 + 6 * 144, "ocr2_nocrop_768": 144 + 1, "ocr2_nocrop_1024": 256 + 1}
    got = {}
    for file in PRESETS:
        raw = OmegaConf.load(file)
        assert file.read_text().startswith("# @package workload")
        got[raw.name] = compute_view_layout(workload_from_config(raw), 1700, 2200).image_tokens
    assert got == expected


def test_v1_modes_do_not_see_the_v2_presets():
    assert not any(name.startswith("ocr2") for name in v1_modes(CONF))


@pytest.mark.parametrize("name,spec", [("ocr2_twin", "deepseek_ocr2"), ("ocr2_twin_tiny", "ocr2_tiny")])
def test_model_presets_name_v2_specs(name, spec):
    raw = OmegaConf.load(CONF / "model" / f"{name}.yaml")
    assert raw.spec == spec and ModelSpec.named(raw.spec).family == "dsocr2"
