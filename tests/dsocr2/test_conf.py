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


@pytest.mark.parametrize("model", ["ocr2_twin", "ocr2_twin_tiny", "ocr2_vendor"])
def test_an_ocr2_model_brings_its_default_workload(model):
    """`model=ocr2_*` alone composes OCR-2's default mode (the model's defaults list); a `workload=` on the
    command line still wins, and v1's default run keeps v1's Gundam."""
    from llm_perf_opt.config.compose import compose_each

    alone, chosen, v1 = compose_each([[f"model={model}"], [f"model={model}", "workload=ocr2/nocrop_768"], []])
    assert (alone.workload.name, alone.workload.image_size, alone.workload.tile_size) == ("ocr2_default", 768, 768)
    assert chosen.workload.name == "ocr2_nocrop_768"
    assert (v1.workload.name, v1.model.family) == ("gundam", "dsocr")
