"""The model-family seam: the registry, each family validating its own knobs, a vendor directory of another
family refused by name, and the analytic side-by-side of two families / models at the same pages."""

from __future__ import annotations

import csv
import json
import sys
import textwrap

import pytest

from llm_perf_opt import families
from llm_perf_opt.config.compose import compose_each
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.family import ModelFamily, PartVocabulary
from llm_perf_opt.prepare.validate import validate


def test_the_default_family_is_v1_and_is_one_object():
    fam = families.family()
    assert fam.name == "dsocr" and isinstance(fam, ModelFamily)
    assert families.family("dsocr") is fam
    assert isinstance(fam.parts, PartVocabulary) and fam.parts.family == "dsocr"
    (raw,) = compose_each([[]])
    assert families.for_config(raw) is fam  # conf/model/*.yaml say family: dsocr


def test_an_unknown_family_is_one_line_naming_the_field():
    with pytest.raises(ConfigError) as err:
        families.family("nope")
    assert str(err.value) == "model.family='nope' is invalid: must be one of dsocr, dsocr2"
    (raw,) = compose_each([["model.family=nope"]])
    with pytest.raises(ConfigError, match=r"^model.family='nope' is invalid"):
        validate(raw, runs_model=False)


@pytest.fixture
def second_family(tmp_path, monkeypatch):
    """A second family registered by import string, as a plug-in would be: v1's behaviour except its own
    workload rule (no 640-px tiles) and its own vendor class."""
    (tmp_path / "fake_family_two.py").write_text(
        textwrap.dedent("""
        from llm_perf_opt.dsocr.family import DeepSeekOCRFamily
        from llm_perf_opt.errors import ConfigError

        class Two(DeepSeekOCRFamily):
            name = "two"
            vendor_architectures = ("DeepseekOCRTwoForCausalLM",)

            def workload_for(self, w):
                if w.image_size == 640:
                    raise ConfigError.field("workload.image_size", w.image_size,
                                            "a DeepSeek-OCR v1 knob: model.family=two crops 768-px tiles")
                return super().workload_for(w)

        FAMILY = Two()
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(families.BUILTIN, "two", "fake_family_two:FAMILY")
    families.family.cache_clear()
    yield families.family("two")
    families.family.cache_clear()
    sys.modules.pop("fake_family_two", None)


def test_a_v1_knob_on_another_familys_run_names_the_field_and_the_family(second_family):
    assert families.names() == ("dsocr", "dsocr2", "two")
    (raw,) = compose_each([["model.family=two", "workload=gundam"]])  # gundam: image_size 640
    with pytest.raises(ConfigError) as err:
        validate(raw, runs_model=False)
    message = str(err.value)
    assert message.startswith("workload.image_size=640 is invalid:") and "model.family=two" in message
    assert "\n" not in message
    (ok,) = compose_each([["model.family=two", "workload=base"]])  # base: 1024, no crops
    assert validate(ok, runs_model=False).family is second_family


def _vendor_dir(root, auto_model: str):
    root.mkdir()
    module = auto_model.rpartition(".")[0]
    (root / "config.json").write_text(
        json.dumps({"auto_map": {"AutoConfig": f"{module}.Config", "AutoModel": auto_model}})
    )
    (root / f"{module}.py").write_text("# not a model: the check reads config.json only\n")
    return root


def test_a_vendor_directory_of_another_family_is_refused_by_name(second_family, tmp_path):
    other = _vendor_dir(tmp_path / "two", "modeling_two.DeepseekOCRTwoForCausalLM")
    (raw,) = compose_each([["model=vendor", f"model.path={other}"]])
    with pytest.raises(ConfigError) as err:
        validate(raw, runs_model=False)
    assert str(err.value) == (
        f"model.path='{other}' is invalid: holds the two family's code (config.json auto_map.AutoModel "
        "DeepseekOCRTwoForCausalLM), not model.family=dsocr (DeepseekOCRForCausalLM)"
    )
    unknown = _vendor_dir(tmp_path / "other", "modeling_x.SomethingElseForCausalLM")
    (raw,) = compose_each([["model=vendor", f"model.path={unknown}"]])
    with pytest.raises(ConfigError, match="holds code of no known family"):
        validate(raw, runs_model=False)


def test_side_by_side_compares_two_models_at_the_same_pages(tmp_path):
    from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
    from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
    from llm_perf_opt.dsocr.spec import ModelSpec
    from llm_perf_opt.jobs.report import compare_entries
    from llm_perf_opt.report.analytic_sweep import build_family_comparison

    entries = compare_entries(["full=dsocr:deepseek_ocr:gundam", "tiny=dsocr:tiny:gundam"])
    pages = {"letter": (1700, 2200), "square": (1024, 1024)}
    csv_path, md_path, n = build_family_comparison(tmp_path, entries, pages=pages, hardware=["h100_sxm"])
    rows = list(csv.DictReader(csv_path.open()))
    assert n == len(rows) == 4
    gundam = VisionWorkload(base_size=1024, image_size=640, crop_mode=True)
    compared = 0
    for row in rows:
        spec = ModelSpec.deepseek_ocr() if row["model"] == "full" else ModelSpec.tiny()
        layout = compute_view_layout(gundam, int(row["width"]), int(row["height"]))
        model = DeepseekOCRAnalyticModel(spec, layout)
        assert int(row["image_tokens"]) == layout.image_tokens
        for stage in ("vision", "prefill", "decode"):
            assert int(row[f"{stage}_flops_matmul"]) == model.stage(stage).total.flops_matmul
            assert float(row[f"{stage}_h100_sxm_s"]) > 0
        compared += 1
    assert compared == 4
    by = {(r["page"], r["model"]): r for r in rows}
    for page in pages:  # same page, same layout rules: the same image tokens, the full model costs more
        assert by[(page, "full")]["image_tokens"] == by[(page, "tiny")]["image_tokens"]
        assert int(by[(page, "full")]["prefill_flops_matmul"]) > int(by[(page, "tiny")]["prefill_flops_matmul"])
    assert md_path.read_text().startswith("# Side by side: full, tiny")
    with pytest.raises(ConfigError, match=r"^--compare="):
        build_family_comparison(tmp_path, entries[:1], pages=pages)
    with pytest.raises(ConfigError, match=r"^--compare='v1=dsocr' is invalid"):
        compare_entries(["v1=dsocr"])


def test_side_by_side_v1_gundam_and_ocr2_default(tmp_path):
    """The question people ask about the two models: v1 Gundam against OCR-2's default mode on the same pages.
    Image tokens from each family's rules, derived here independently: v1 Gundam = (1024/16/4)^2 global tokens
    with a newline per row + 1 separator + the crops' (640/16/4)^2 tokens with a newline per row of the grid;
    OCR-2 = (1024/64)^2 + 1 + (768/64)^2 per crop."""
    from llm_perf_opt.jobs.report import compare_entries
    from llm_perf_opt.report.analytic_sweep import build_family_comparison

    entries = compare_entries(["v1=dsocr:deepseek_ocr:gundam", "v2=dsocr2:deepseek_ocr2:ocr2_default"])
    pages = {"letter": (1700, 2200), "small": (600, 500)}  # a 2x3 grid for both; no crops for both
    csv_path, _, n = build_family_comparison(tmp_path, entries, pages=pages, hardware=["h100_sxm"])
    rows = {(r["page"], r["model"]): r for r in csv.DictReader(csv_path.open())}
    assert n == len(rows) == 4
    g, c = 1024 // 16 // 4, 640 // 16 // 4  # 16 and 10 tokens per side
    v1_letter = g * (g + 1) + 1 + (3 * c) * (2 * c + 1)  # grid 2 across x 3 down: 30 rows of 20 tokens + a newline
    v1_small = g * (g + 1) + 1
    v2 = lambda crops: (1024 // 64) ** 2 + 1 + (768 // 64) ** 2 * crops  # noqa: E731
    expected = {("letter", "v1"): v1_letter, ("small", "v1"): v1_small, ("letter", "v2"): v2(6), ("small", "v2"): v2(0)}
    assert {k: int(rows[k]["image_tokens"]) for k in expected} == expected
    for page in pages:
        assert rows[(page, "v2")]["family"] == "dsocr2" and rows[(page, "v1")]["family"] == "dsocr"
        for stage in ("vision", "prefill", "decode"):
            assert (
                int(rows[(page, "v1")][f"{stage}_flops_matmul"]) > 0 < int(rows[(page, "v2")][f"{stage}_flops_matmul"])
            )


# ------------------------------------------------------------------ the families' workload schemas
def test_each_family_declares_its_workload_schema_and_its_files_name_it():
    """v1 and OCR-2 declare the shared DeepSeek-OCR schema; their workload files name it, so Hydra types the
    `workload` node as it (a knob of the wrong type or an unknown key is refused while composing)."""
    from omegaconf import OmegaConf

    from llm_perf_opt.config.schemas import COMMON_WORKLOAD_FIELDS, WorkloadConfig
    from llm_perf_opt.deepseek_ocr_shared.workload_config import DeepSeekWorkloadConfig

    schemas = families.workload_schemas()
    assert schemas == {"dsocr": DeepSeekWorkloadConfig, "dsocr2": DeepSeekWorkloadConfig}
    assert issubclass(DeepSeekWorkloadConfig, WorkloadConfig)
    for fam in map(families.family, schemas):  # the knobs it records are fields of its schema, not generic ones
        assert set(fam.workload_knobs) <= set(DeepSeekWorkloadConfig.__dataclass_fields__) - set(COMMON_WORKLOAD_FIELDS)
    v1, ocr2, alone = compose_each([["workload=tiny"], ["workload=ocr2/nocrop_768"], ["model=ocr2_twin_tiny"]])
    for raw in (v1, ocr2, alone):
        assert OmegaConf.get_type(raw.workload) is DeepSeekWorkloadConfig
    assert (alone.workload.name, alone.workload.tile_size) == ("ocr2_default", 768)
    (bare,) = compose_each([["~workload"]])  # no workload file: the generic schema, no knob
    assert OmegaConf.get_type(bare.workload) is WorkloadConfig and "base_size" not in bare.workload


def test_a_workload_without_the_familys_knobs_is_refused_in_one_line():
    (raw,) = compose_each([["~workload"]])
    with pytest.raises(ConfigError) as err:
        validate(raw, runs_model=False)
    assert str(err.value) == (
        "workload='default' is invalid: is a WorkloadConfig, without the knobs of model.family=dsocr "
        "(DeepSeekWorkloadConfig): choose one of that family's workloads"
    )


def test_a_workload_schema_must_subclass_the_generic_one():
    from dataclasses import dataclass

    from llm_perf_opt.config.registry import register_configs

    @dataclass
    class Loose:
        base_size: int = 1

    with pytest.raises(ConfigError, match="the workload schema of 'loose' is .*not a subclass of"):
        register_configs({"loose": Loose})


def test_composing_without_the_families_schemas_says_what_to_call():
    """A script that composes `conf/` without the family registry's schemas gets one line saying what to call."""
    code = (
        "from llm_perf_opt.config.compose import compose\n"
        "from llm_perf_opt.errors import ConfigError\n"
        "try:\n    compose([])\nexcept ConfigError as exc:\n    print(exc)\n"
    )
    import subprocess

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Could not load 'workload_schema/dsocr'" in proc.stdout
    assert "llm_perf_opt.families.register_configs()" in proc.stdout
