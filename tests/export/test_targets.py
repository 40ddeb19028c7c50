"""Which submodules are exported at which call, and bad requests refused with one line naming the field
(before any model is built)."""

from __future__ import annotations

import pytest
from export_helpers import typed_cfg

from llm_perf_opt.config import ExportConfig
from llm_perf_opt.dsocr.family import EXPORT_SUBMODULES, FAMILY
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.export import plan_targets

GUNDAM = VisionWorkload(base_size=1024, image_size=640, crop_mode=True)
TINY_MODE = VisionWorkload(base_size=512, image_size=512, crop_mode=False)


def plan(cfg: ExportConfig, workload=GUNDAM, width=1700, height=2200, spec=None):
    layout = compute_view_layout(workload, width, height)
    seq_len = 1 + layout.image_tokens + 4
    return (
        plan_targets(cfg, spec or ModelSpec.tiny(), layout, seq_len, mode="test", family=FAMILY),
        layout,
        seq_len,
    )


def test_default_plan_in_gundam_has_every_submodule_at_its_call():
    p, layout, seq_len = plan(ExportConfig())
    assert p.names() == list(EXPORT_SUBMODULES) and not p.notes
    by = {t.name: t for t in p.targets}
    assert layout.num_crops == 6
    # crop mode with crops: SAM, CLIP and the projector run on the crops first, then on the global view
    assert (by["sam.crops"].call, by["sam.crops"].expected_batch) == (0, 6)
    assert (by["sam.global"].call, by["sam.global"].expected_batch) == (1, 1)
    assert by["sam.global"].path == "model.sam_model" and by["clip.crops"].path == "model.vision_model"
    assert by["dense_layer"].path == "model.layers.0" and not by["dense_layer"].moe
    assert by["moe_layer"].path == "model.layers.1" and by["moe_layer"].moe  # the first MoE layer of the spec
    assert (by["decode_layer"].stage, by["decode_layer"].context) == ("decode", seq_len)
    assert by["decode_layer"].part == "decoder.layer.0"


def test_no_crop_mode_leaves_the_crop_batch_out_with_a_note():
    p, _, _ = plan(ExportConfig(), workload=TINY_MODE)
    assert [t.name for t in p.targets if t.view] == ["sam.global", "clip.global", "projector.global"]
    assert {t.call for t in p.targets if t.view} == {0}  # one vision call per part
    assert len(p.notes) == 3 and all("crop_mode is false" in n for n in p.notes)


@pytest.mark.parametrize(
    "workload, width, height, why",
    [
        (TINY_MODE, 1700, 2200, "crop_mode is false"),
        (GUNDAM, 600, 500, "not tiled (grid 1x1)"),
    ],
)
def test_crop_batch_the_workload_cannot_produce_is_refused_naming_the_field(workload, width, height, why):
    with pytest.raises(ConfigError) as err:
        plan(ExportConfig(submodules=["sam.global", "sam.crops"]), workload, width, height)
    message = str(err.value)
    assert message.startswith("export.submodules='sam.crops' is invalid: needs the crop batch")
    assert why in message and "\n" not in message


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"moe_layer": 0}, "export.moe_layer=0"),  # layer 0 of the spec is dense
        ({"moe_layer": 7}, "export.moe_layer=7"),  # the tiny spec has 3 layers
        ({"decode_layer": 3}, "export.decode_layer=3"),
        ({"decode_context": 10}, "export.decode_context=10"),  # shorter than the prompt
    ],
)
def test_layer_and_cache_requests_the_model_cannot_serve(kwargs, field):
    with pytest.raises(ConfigError, match="^" + field.replace(".", r"\.") + " is invalid"):
        plan(ExportConfig(**kwargs))


def test_a_longer_cache_is_a_later_decode_step():
    p, _, seq_len = plan(ExportConfig(submodules=["decode_layer"], decode_context=2000, decode_layer=2))
    (t,) = p.targets
    assert (t.context, t.layer, t.moe) == (2000, 2, True)


@pytest.mark.parametrize(
    "override, needle",
    [
        ("export.submodules=[]", "export.submodules=[] is invalid"),
        ("export.moe_remedy=magic", "export.moe_remedy='magic' is invalid"),
        ("export.decode_layer=-1", "export.decode_layer=-1 is invalid"),
        ("export.onnx_rtol=2", "export.onnx_rtol=2.0 is invalid"),
    ],
)
def test_config_refuses_bad_export_values(override, needle):
    with pytest.raises(ConfigError) as err:
        typed_cfg(override)
    assert str(err.value).startswith(needle)


def test_a_submodule_the_family_does_not_export_is_refused_naming_the_family():
    """Which names exist is the model family's rule, checked at validation (one line naming field and family)."""
    from llm_perf_opt.config.compose import compose_each
    from llm_perf_opt.prepare.validate import validate

    (raw,) = compose_each([["export.submodules=[sam.global,sam.bogus]"]])
    with pytest.raises(ConfigError) as err:
        validate(raw, runs_model=False)
    assert str(err.value).startswith("export.submodules='sam.bogus' is invalid: must be one of sam.crops")
    assert str(err.value).endswith("(model.family=dsocr)") and "\n" not in str(err.value)


def test_default_config_composes_with_the_export_group():
    cfg = typed_cfg()
    assert cfg.export == ExportConfig() and cfg.trace.export is False
