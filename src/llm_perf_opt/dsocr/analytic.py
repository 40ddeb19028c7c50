"""The DeepSeek-OCR analytic model: per-stage, per-module costs from `ModelSpec` + `ViewLayout` alone.

Shapes follow the vendor's forward exactly (read in the vendor's deepencoder.py,
modeling_deepseekocr.py, modeling_deepseekv2.py and transformers 4.46's LlamaAttention):

vision (per image; `vision_passes` = crop batch then global view in crop mode with a grid > 1×1,
else the global view alone; each pass runs SAM → CLIP → projector on a batch):
* SAM: patch conv (k = s = 16) → grid G = side // 16; `pos_embed` (pretraining grid 64) resized
  bicubically when G ≠ 64 (not a matmul) and added; blocks: windowed ones partition the grid padded
  to a multiple of the window (G → ceil(G/14)·14) into B·(Gp/14)² windows and attend inside each
  (rel-pos tables of 2·14-1 need no resizing), global ones attend over all G² positions (their tables of
  2·64-1 are linearly resized when G ≠ 64); attention = qkv linear, the two decomposed rel-pos einsums
  (bmm in torch's counter), SDPA with the rel-pos bias as mask, proj; the MLP runs on the unpadded
  grid. Neck conv1×1 → LayerNorm2d → conv3×3 → LayerNorm2d, then net_2 and net_3 (3×3 stride 2).
* CLIP: the SAM output (B, 1024, g, g) is the patch embedding: N = g² + 1 tokens (class token),
  the 257-entry position table is resized bicubically when g ≠ 16; pre-LayerNorm, then 24 blocks of
  LayerNorm → attention (SDPA, no mask) → LayerNorm → FFN (quick_gelu). Each block calls its
  `self_attn` and `mlp` through `.forward`, so those two are containers, not entered modules.
* projector: Linear(clip.width + sam.out_dim → n_embed) over the B·g² tokens.
prefill (vision + language over the whole prompt of `seq_len` tokens, images scattered in):
* embed_tokens, then per layer RMSNorm → LlamaAttention (q/k/v/o, one rotary_emb call building the
  cos/sin table with a bmm, RoPE, eager Q·Kᵀ + causal mask + float32 softmax + P·V over the full
  T × T scores) → RMSNorm → dense gated MLP (layers < first_k_dense_replace) or MoE (float32 gate
  linear, each token through exactly top_k routed experts, shared experts on all tokens);
  final RMSNorm; lm_head over all T positions; `logits.float()`.
decode (one new token after `context_len` cached ones; vision is skipped because the vendor runs it
only when input_ids has more than one position): the same language stack with q_len 1 over
context_len + 1 keys, KV-cache reads in the bytes, lm_head over 1 position.

The model (`DeepseekOCRAnalyticModel`) is the shared one (`deepseek_ocr_shared.analytic.DeepSeekOCRAnalyticBase`)
with v1's stage functions, parts and parameter count. Every stage is one call of `DeepseekOCRForCausalLM` costed
through the registry (`analytic.registry`, formulas in `deepseek_ocr_shared.costs` and `dsocr.costs` under the
`dsocr.` namespace): each node names the module class it models, and a class without a formula cannot be
counted. Stages are cached per spec (bounded; see `deepseek_ocr_shared.analytic.clear_caches`). No multipliers
and no calibration: every number is a product of these shapes.
"""

from __future__ import annotations

from typing import Any

from llm_perf_opt.analytic.execution import CPU, Execution
from llm_perf_opt.analytic.registry import module_cost
from llm_perf_opt.analytic.stage import StageCost
from llm_perf_opt.deepseek_ocr_shared.analytic import (
    DeepSeekOCRAnalyticBase,
    StageCache,
    _batch_shapes,
    _pass_shapes,
)
from llm_perf_opt.deepseek_ocr_shared.costs import ForwardShape, Passes
from llm_perf_opt.deepseek_ocr_shared.serving import language_parameters, sam_parameters
from llm_perf_opt.dsocr import costs  # noqa: F401 - registers v1's CLIP formulas and its vision
from llm_perf_opt.dsocr import parts as v1_parts
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr.spec import ModelSpec


def _vision_stage(
    spec: ModelSpec,
    passes: Passes,
    image_tokens: int,
    b: int,
    batch: int = 1,
    more: tuple = (),
    execution: Execution = CPU,
) -> StageCost:
    root = module_cost(
        "dsocr.DeepseekOCRForCausalLM",
        ForwardShape(spec, passes, image_tokens, 0, 0, "", b, False, batch, more, batch > 1, execution),
    )
    return StageCost(
        "vision",
        root,
        v1_parts.VISION_PATHS,
        _pass_shapes(passes, image_tokens) | _batch_shapes(batch, more),
        v1_parts.VOCABULARY,
    )


def _prefill_stage(
    spec: ModelSpec,
    passes: Passes,
    image_tokens: int,
    seq_len: int,
    b: int,
    attention: str,
    batch: int = 1,
    more: tuple = (),
    execution: Execution = CPU,
) -> StageCost:
    root = module_cost(
        "dsocr.DeepseekOCRForCausalLM",
        ForwardShape(spec, passes, image_tokens, seq_len, 0, attention, b, True, batch, more, batch > 1, execution),
    )
    shapes = (
        _pass_shapes(passes, image_tokens)
        | {"seq_len": seq_len, "q_len": seq_len, "past_len": 0}
        | _batch_shapes(batch, more)
    )
    return StageCost("prefill", root, ("",), shapes, v1_parts.VOCABULARY)


def _decode_stage(
    spec: ModelSpec, context_len: int, b: int, attention: str, batch: int = 1, execution: Execution = CPU
) -> StageCost:
    root = module_cost(
        "dsocr.DeepseekOCRForCausalLM",
        ForwardShape(spec, (), 0, 1, context_len, attention, b, True, batch, (), batch > 1, execution),
    )
    shapes = {"q_len": 1, "past_len": context_len, "kv_len": context_len + 1} | ({"batch": batch} if batch > 1 else {})
    return StageCost("decode", root, ("",), shapes, v1_parts.VOCABULARY)


def parameter_count(spec: ModelSpec) -> int:
    """Every parameter of the model, module by module (weights and biases as the vendor declares them): SAM and
    the decoder as both generations count them (`deepseek_ocr_shared.serving`), CLIP-L, the projector's linear
    and the two separators."""
    c, p = spec.clip, spec.projector
    W = c.width
    clip = W + 3 * c.patch_size**2 * W + c.num_positions * W + 2 * W  # class token, patch conv, positions, pre-LN
    clip += c.layers * (
        2 * W + (W * 3 * W + 3 * W) + (W * W + W) + 2 * W + (W * c.ffn_dim + c.ffn_dim) + (c.ffn_dim * W + W)
    )
    proj = p.input_dim * p.n_embed + p.n_embed + 2 * p.n_embed  # linear + image_newline + view_seperator
    return sam_parameters(spec.sam) + clip + proj + language_parameters(spec.decoder)


class DeepseekOCRAnalyticModel(DeepSeekOCRAnalyticBase):
    """Analytic costs of DeepSeek-OCR (v1) for one page layout (arguments as `DeepSeekOCRAnalyticBase`'s)."""

    vocabulary = v1_parts.VOCABULARY
    stage_cache = StageCache(_vision_stage, _prefill_stage, _decode_stage)
    vision_labels = "SAM, CLIP and the projector"

    @classmethod
    def for_page(
        cls, spec: ModelSpec, workload: VisionWorkload, width: int, height: int, **kwargs: Any
    ) -> "DeepseekOCRAnalyticModel":
        return cls(spec, compute_view_layout(workload, width, height), **kwargs)

    def parameter_count(self) -> int:
        """Every parameter of the model, from the spec (`parameter_count`)."""
        return parameter_count(self.spec)


def analytic_costs(
    spec: ModelSpec, workload: VisionWorkload, width: int, height: int, **kwargs: Any
) -> dict[str, StageCost]:
    """The three stage costs of one page (convenience wrapper)."""
    return DeepseekOCRAnalyticModel.for_page(spec, workload, width, height, **kwargs).stages()
