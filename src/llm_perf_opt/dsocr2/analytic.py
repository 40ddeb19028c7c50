"""The DeepSeek-OCR 2 analytic model: per-stage, per-module costs from `ModelSpec` + `ViewLayout` alone.

Composed as v1's, on the same base (`deepseek_ocr_shared.analytic.DeepSeekOCRAnalyticBase`), so everything that
takes v1's analytic model (costs files, roofline, verification) takes this one:

vision (per image; crop batch then global view when the grid is not 1×1, else the global view alone;
each pass runs SAM -> DeepEncoder V2 -> projector on a batch):
* SAM: v1's formula (`ImageEncoderViT`), with net_3 ending at 896 channels;
* encoder: per pass of B views of n = g² SAM tokens (g = side/64), T = 2n tokens (SAM + queries) through
  24 Qwen2 layers (GQA SDPA over all T keys with the float mask, gated MLP), RoPE table once, final norm;
  the n query positions are kept;
* projector: Linear(896 -> 1280) over the B·n query rows;
prefill: the vision stage plus v1's language stack over the prompt (the same DeepSeek-V2 decoder code);
decode: v1's decode stage (vision is skipped for one-token steps).

Formulas: `dsocr2.cost_formulas` (registered as `dsocr2.<class>`). No multipliers, no calibration.
"""

from __future__ import annotations

from typing import Any

from llm_perf_opt.analytic.execution import CPU, Execution
from llm_perf_opt.analytic.registry import module_cost
from llm_perf_opt.analytic.stage import StageCost
from llm_perf_opt.deepseek_ocr_shared.analytic import (
    DEFAULT_PROMPT_TOKENS,
    STAGES,
    DeepSeekOCRAnalyticBase,
    StageCache,
    VisionPass,
    _pass_shapes,
    default_seq_len,
    vision_passes,
)
from llm_perf_opt.deepseek_ocr_shared.serving import language_parameters, sam_parameters
from llm_perf_opt.dsocr2 import cost_formulas
from llm_perf_opt.dsocr2.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr2.parts import VOCABULARY
from llm_perf_opt.dsocr2.spec import FAMILY, ModelSpec
from llm_perf_opt.errors import ConfigError

__all__ = [
    "DeepseekOCR2AnalyticModel",
    "STAGES",
    "VISION_PATHS",
    "VisionPass",
    "analytic_costs",
    "default_seq_len",
    "vision_passes",
    "DEFAULT_PROMPT_TOKENS",
]

ROOT = cost_formulas.PREFIX + "DeepseekOCR2ForCausalLM"
VISION_PATHS = ("model.sam_model", "model.qwen2_model", "model.projector")


def _single(batch: int) -> None:
    """DeepSeek-OCR 2's analytic model prices one sequence (its batched inputs are not built yet)."""
    if batch != 1:
        raise ConfigError.field("workload.batch", batch, f"{FAMILY}: the analytic model prices one page at a time")


def _vision_stage(
    spec: ModelSpec, passes, image_tokens: int, b: int, batch: int = 1, more: tuple = (), execution: Execution = CPU
) -> StageCost:
    _single(batch)
    root = module_cost(ROOT, spec, passes, image_tokens, 0, 0, "", b, False, execution=execution)
    return StageCost("vision", root, VISION_PATHS, _pass_shapes(passes, image_tokens), VOCABULARY)


def _prefill_stage(
    spec: ModelSpec,
    passes,
    image_tokens: int,
    seq_len: int,
    b: int,
    attention: str,
    batch: int = 1,
    more: tuple = (),
    execution: Execution = CPU,
) -> StageCost:
    _single(batch)
    root = module_cost(ROOT, spec, passes, image_tokens, seq_len, 0, attention, b, execution=execution)
    shapes = _pass_shapes(passes, image_tokens) | {"seq_len": seq_len, "q_len": seq_len, "past_len": 0}
    return StageCost("prefill", root, ("",), shapes, VOCABULARY)


def _decode_stage(
    spec: ModelSpec, context_len: int, b: int, attention: str, batch: int = 1, execution: Execution = CPU
) -> StageCost:
    _single(batch)
    root = module_cost(ROOT, spec, (), 0, 1, context_len, attention, b, execution=execution)
    return StageCost(
        "decode", root, ("",), {"q_len": 1, "past_len": context_len, "kv_len": context_len + 1}, VOCABULARY
    )


_stages_for = StageCache(_vision_stage, _prefill_stage, _decode_stage)


class DeepseekOCR2AnalyticModel(DeepSeekOCRAnalyticBase):
    """Analytic costs of DeepSeek-OCR 2 for one page layout (arguments as `DeepSeekOCRAnalyticBase`'s)."""

    vocabulary = VOCABULARY
    stage_cache = _stages_for
    vision_labels = "SAM, the encoder and the projector"

    def __init__(self, spec: ModelSpec, layout, seq_len: int | None = None, **kwargs: Any) -> None:
        if not isinstance(spec, ModelSpec):
            raise ConfigError.field("model spec", type(spec).__name__, f"must be a {FAMILY} ModelSpec (dsocr2.spec)")
        super().__init__(spec, layout, seq_len, **kwargs)

    def parameter_count(self) -> int:
        """Every parameter of DeepSeek-OCR 2 from the spec: SAM and the decoder as both generations count them
        (`deepseek_ocr_shared.serving`), the encoder (24 Qwen2 layers, final norm, both query banks), the
        projector's linear and the view separator."""
        e, p = self.spec.encoder, self.spec.projector
        kv = e.num_kv_heads * e.head_dim
        layer = (
            e.hidden_size * e.hidden_size
            + e.hidden_size
            + 2 * (e.hidden_size * kv + kv)  # q, k, v (bias)
            + e.hidden_size * e.hidden_size
            + 3 * e.hidden_size * e.intermediate_size
            + 2 * e.hidden_size
        )
        encoder = e.num_layers * layer + e.hidden_size + sum(e.bank_sizes) * e.hidden_size
        projector = p.input_dim * p.n_embed + p.n_embed + p.n_embed  # linear (bias) + view_seperator
        return sam_parameters(self.spec.sam) + encoder + projector + language_parameters(self.spec.decoder)

    @classmethod
    def for_page(
        cls, spec: ModelSpec, workload: VisionWorkload, width: int, height: int, **kwargs: Any
    ) -> "DeepseekOCR2AnalyticModel":
        return cls(spec, compute_view_layout(workload, width, height), **kwargs)


def analytic_costs(
    spec: ModelSpec, workload: VisionWorkload, width: int, height: int, **kwargs: Any
) -> dict[str, StageCost]:
    """The three stage costs of one page (convenience wrapper)."""
    return DeepseekOCR2AnalyticModel.for_page(spec, workload, width, height, **kwargs).stages()
