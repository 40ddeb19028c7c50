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

Every stage is one call of `DeepseekOCRForCausalLM` costed through the registry
(`analytic.registry`, formulas in `deepseek_ocr_shared.costs` and `dsocr.costs` under the `dsocr.` namespace):
each node names the module class it models, and a class without a formula cannot be counted. Stages are cached per spec (bounded; see
`clear_caches`). No multipliers and no calibration: every number is a product of these shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, Callable

from llm_perf_opt.analytic import registry
from llm_perf_opt.analytic.costs import kv_cache_bytes as kv_cache
from llm_perf_opt.analytic.costs_file import STAGES
from llm_perf_opt.analytic.dtypes import dtype_bytes
from llm_perf_opt.analytic.registry import module_cost
from llm_perf_opt.analytic.stage import StageCost
from llm_perf_opt.deepseek_ocr_shared.costs import ForwardShape, Passes
from llm_perf_opt.deepseek_ocr_shared.layout import ViewLayout
from llm_perf_opt.dsocr import costs  # noqa: F401 - registers v1's CLIP formulas and its vision
from llm_perf_opt.dsocr import parts as P
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ConfigError

DEFAULT_PROMPT_TOKENS = 4  # "\nFree OCR." after the image tokens: 4 tokens of the vendor's tokenizer


@dataclass(frozen=True)
class VisionPass:
    """One call of SAM → CLIP → projector: `batch` square images of side `side`."""

    name: str  # "crops" or "global"
    batch: int
    side: int


def vision_passes(layout: ViewLayout) -> tuple[VisionPass, ...]:
    """The vision calls of `DeepseekOCRModel.forward` for this layout, in call order."""
    passes = []
    if layout.num_crops:
        passes.append(VisionPass("crops", layout.num_crops, layout.crop_side))
    passes.append(VisionPass("global", 1, layout.global_side))
    return tuple(passes)


def default_seq_len(layout: ViewLayout, prompt_tokens: int = DEFAULT_PROMPT_TOKENS) -> int:
    """BOS + image tokens + text tokens, as `infer()` builds the prompt."""
    return 1 + layout.image_tokens + prompt_tokens


# ------------------------------------------------------------------------------------------- stages
# The class of the decoder's self_attn for each `decoder_attention` knob (the twin's names; the vendor's
# eager path is LlamaAttention).
ATTENTION_CLASSES = {"eager": "dsocr.LlamaAttention", "sdpa": "dsocr.LlamaSdpaAttention"}


def _pass_shapes(passes: Passes, image_tokens: int) -> dict[str, Any]:
    return {"passes": [{"name": n, "batch": b, "side": s} for n, b, s in passes], "image_tokens": image_tokens}


def _batch_shapes(batch: int, more: tuple) -> dict[str, Any]:
    if batch == 1:
        return {}
    return {"batch": batch, "more_images": [_pass_shapes(p, t) for p, t in more]}


def _vision_stage(
    spec: ModelSpec, passes: Passes, image_tokens: int, b: int, batch: int = 1, more: tuple = ()
) -> StageCost:
    root = module_cost(
        "dsocr.DeepseekOCRForCausalLM",
        ForwardShape(spec, passes, image_tokens, 0, 0, "", b, False, batch, more, batch > 1),
    )
    return StageCost(
        "vision", root, P.VISION_PATHS, _pass_shapes(passes, image_tokens) | _batch_shapes(batch, more), P.VOCABULARY
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
) -> StageCost:
    root = module_cost(
        "dsocr.DeepseekOCRForCausalLM",
        ForwardShape(spec, passes, image_tokens, seq_len, 0, attention, b, True, batch, more, batch > 1),
    )
    shapes = (
        _pass_shapes(passes, image_tokens)
        | {"seq_len": seq_len, "q_len": seq_len, "past_len": 0}
        | _batch_shapes(batch, more)
    )
    return StageCost("prefill", root, ("",), shapes, P.VOCABULARY)


def _decode_stage(spec: ModelSpec, context_len: int, b: int, attention: str, batch: int = 1) -> StageCost:
    root = module_cost(
        "dsocr.DeepseekOCRForCausalLM",
        ForwardShape(spec, (), 0, 1, context_len, attention, b, True, batch, (), batch > 1),
    )
    shapes = {"q_len": 1, "past_len": context_len, "kv_len": context_len + 1} | ({"batch": batch} if batch > 1 else {})
    return StageCost("decode", root, ("",), shapes, P.VOCABULARY)


class SpecStages:
    """The stages of one spec, each in a bounded cache keyed by the shapes that decide it; `vision`,
    `prefill` and `decode` are a family's stage functions, each taking the spec first."""

    def __init__(
        self,
        spec: Any,
        vision: Callable[..., StageCost],
        prefill: Callable[..., StageCost],
        decode: Callable[..., StageCost],
    ) -> None:
        self.vision = lru_cache(maxsize=4096)(partial(vision, spec))
        self.prefill = lru_cache(maxsize=4096)(partial(prefill, spec))
        self.decode = lru_cache(maxsize=4096)(partial(decode, spec))


@lru_cache(maxsize=8)
def _stages_by_spec(spec: ModelSpec) -> SpecStages:
    return SpecStages(spec, _vision_stage, _prefill_stage, _decode_stage)


# The last spec asked for, by identity: a sweep builds one model per page from the same spec object,
# and hashing a nested frozen dataclass costs more than the rest of a cached evaluation.
_last: tuple[ModelSpec, SpecStages] | None = None


def _stages_for(spec: ModelSpec) -> SpecStages:
    global _last
    last = _last
    if last is not None and last[0] is spec:
        return last[1]
    stages = _stages_by_spec(spec)
    _last = (spec, stages)
    return stages


def clear_caches() -> None:
    """Drop every cached node and stage (for benchmarks of the cold path, and to free memory)."""
    global _last
    _last = None
    _stages_by_spec.cache_clear()
    registry.clear_caches()


# --------------------------------------------------------------------------------------------- model
class DeepseekOCRAnalyticModel:
    """Analytic costs of DeepSeek-OCR for one page layout.

    Args:
        spec: the model dimensions.
        layout: the view layout of the page (`compute_view_layout(workload, width, height)`).
        seq_len: prompt length including BOS and the image tokens (default: BOS + image tokens +
            `prompt_tokens`, as `infer()` builds it).
        prompt_tokens: text tokens when `seq_len` is not given (4 for "\\nFree OCR.").
        context_len: tokens already in the KV cache for the decode stage (default `seq_len`: the first
            generated token after the prefill); the new token attends over context_len + 1 keys.
        dtype: element type for bytes ("bfloat16" as the vendor runs it, a torch dtype, or a size).
        decoder_attention: "eager" (the vendor's LlamaAttention) or "sdpa"; changes activation bytes
            only (fused attention does not materialise the scores), never FLOPs.
    """

    def __init__(
        self,
        spec: ModelSpec,
        layout: ViewLayout,
        seq_len: int | None = None,
        *,
        prompt_tokens: int = DEFAULT_PROMPT_TOKENS,
        context_len: int | None = None,
        dtype: Any = "bfloat16",
        decoder_attention: str = "eager",
        batch: int = 1,
        batch_layouts: tuple[ViewLayout, ...] | None = None,
    ) -> None:
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ConfigError.field("workload.batch", batch, "must be a positive integer (pages served together)")
        # batch > 1: generate()'s batched inputs, every prompt left-padded to the longest (`seq_len`); the
        # sequences' layouts (default: `layout` for every one)
        layouts = tuple(batch_layouts) if batch_layouts else (layout,) * batch
        if len(layouts) != batch or layouts[0] != layout:
            raise ConfigError.field(
                "workload.batch", batch, f"{len(layouts)} page layouts given, the first must be `layout`"
            )
        longest = max(lay.image_tokens for lay in layouts)
        if seq_len is None:
            seq_len = max(default_seq_len(lay, prompt_tokens) for lay in layouts)
        if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 1 + longest:
            raise ConfigError.field(
                "analytic.seq_len", seq_len, f"must be an integer >= 1 + image tokens = {1 + longest}"
            )
        if context_len is None:
            context_len = seq_len
        if isinstance(context_len, bool) or not isinstance(context_len, int) or context_len < 0:
            raise ConfigError.field("analytic.context_len", context_len, "must be a non-negative integer")
        if decoder_attention not in ATTENTION_CLASSES:
            raise ConfigError.field(
                "analytic.decoder_attention", decoder_attention, f"one of {list(ATTENTION_CLASSES)}"
            )
        self.spec = spec
        self.vocabulary = P.VOCABULARY
        self.layout = layout
        self.seq_len = seq_len
        self.context_len = context_len
        self.dtype_bytes = dtype_bytes(dtype)
        self.decoder_attention = decoder_attention
        self._passes_key = tuple((p.name, p.batch, p.side) for p in vision_passes(layout))
        self.batch = batch
        self.layouts = layouts
        self._more = tuple(
            (tuple((p.name, p.batch, p.side) for p in vision_passes(lay)), lay.image_tokens) for lay in layouts[1:]
        )
        self._attention = ATTENTION_CLASSES[decoder_attention]
        self._stages = _stages_for(spec)

    @classmethod
    def for_page(
        cls, spec: ModelSpec, workload: VisionWorkload, width: int, height: int, **kwargs: Any
    ) -> "DeepseekOCRAnalyticModel":
        return cls(spec, compute_view_layout(workload, width, height), **kwargs)

    def parameter_count(self) -> int:
        """Every parameter of the model, from the spec (`dsocr.serving.parameter_count`)."""
        from llm_perf_opt.dsocr.serving import parameter_count

        return parameter_count(self.spec)

    def serving_model(self, moe: Any = None, dtype: Any = None) -> Any:
        """The serving model of this page (`dsocr.serving.serving_model`): batch rules, memory, MoE at batch."""
        from llm_perf_opt.dsocr.serving import serving_model

        # the serving math scales one sequence by its batch rules: a batch model serves its first page
        return serving_model(self.sequence(0), moe, dtype if dtype is not None else "bfloat16")

    def sequence(self, i: int = 0) -> "DeepseekOCRAnalyticModel":
        """Sequence `i` of the batch alone (batch 1, its own unpadded prompt); itself at batch 1."""
        if self.batch == 1:
            return self
        lay = self.layouts[i]  # the same prompt text, its own image tokens (the batch pads to the longest)
        own = self.seq_len - (max(x.image_tokens for x in self.layouts) - lay.image_tokens)
        return DeepseekOCRAnalyticModel(
            self.spec, lay, own, dtype=self.dtype_bytes, decoder_attention=self.decoder_attention
        )

    def moe_from_routing(self, routing_path: str) -> Any:
        """The MoE shape measured in a routing.json (`dsocr.serving.moe_from_routing`)."""
        from llm_perf_opt.dsocr.serving import moe_from_routing

        return moe_from_routing(self.spec, self.dtype_bytes, routing_path)

    def with_dtype(self, dtype: Any) -> "DeepseekOCRAnalyticModel":
        """The same page and prompt with bytes counted in another dtype (a roof's prediction dtype)."""
        return DeepseekOCRAnalyticModel(
            self.spec,
            self.layout,
            self.seq_len,
            context_len=self.context_len,
            dtype=dtype,
            decoder_attention=self.decoder_attention,
            batch=self.batch,
            batch_layouts=self.layouts,
        )

    @property
    def passes(self) -> tuple[VisionPass, ...]:
        return vision_passes(self.layout)

    def vision(self) -> StageCost:
        return self._stages.vision(self._passes_key, self.layout.image_tokens, self.dtype_bytes, self.batch, self._more)

    def prefill(self) -> StageCost:
        return self._stages.prefill(
            self._passes_key,
            self.layout.image_tokens,
            self.seq_len,
            self.dtype_bytes,
            self._attention,
            self.batch,
            self._more,
        )

    def decode(self, context_len: int | None = None) -> StageCost:
        ctx = self.context_len if context_len is None else context_len
        if isinstance(ctx, bool) or not isinstance(ctx, int) or ctx < 0:
            raise ConfigError.field("analytic.context_len", ctx, "must be a non-negative integer")
        return self._stages.decode(ctx, self.dtype_bytes, self._attention, self.batch)

    def kv_cache_bytes(self, context_len: int | None = None, per_layer: bool = False) -> int | dict[str, int]:
        """Bytes of the KV cache holding `context_len` tokens (default: the prompt, `seq_len`), summed over
        the decoder layers (`per_layer`: {layer path: bytes}); each layer keeps keys and values of
        (1, kv_heads, context_len, head_dim) in the model's dtype (`costs.kv_cache_bytes`). After decode
        step k the cache holds seq_len + k tokens."""
        ctx = self.seq_len if context_len is None else context_len
        if isinstance(ctx, bool) or not isinstance(ctx, int) or ctx < 0:
            raise ConfigError.field("analytic.context_len", ctx, "must be a non-negative integer")
        d = self.spec.decoder
        layer = kv_cache(self.batch, d.num_kv_heads, ctx, d.head_dim, self.dtype_bytes)
        if per_layer:
            return {P.decoder_layer_path(i): layer for i in range(d.num_layers)}
        return layer * d.num_layers

    def stage(self, name: str) -> StageCost:
        if name == "vision":
            return self.vision()
        if name == "prefill":
            return self.prefill()
        if name == "decode":
            return self.decode()
        raise ConfigError.field("analytic.stage", name, f"one of {list(STAGES)}")

    def stages(self) -> dict[str, StageCost]:
        return {name: self.stage(name) for name in STAGES}

    def to_dict(self, with_parts: bool = True) -> dict[str, Any]:
        return costs_dict(self, with_parts=with_parts)


def costs_dict(model: DeepseekOCRAnalyticModel, with_parts: bool = True) -> dict[str, Any]:
    """JSON-able data for `costs.json` (`costs_file.write_costs` writes it; `load_costs` reads it back)."""
    return {
        "model": model.spec.name,
        "layout": model.layout.as_dict(),
        "seq_len": model.seq_len,
        "context_len": model.context_len,
        **({"batch": model.batch, "layouts": [lay.as_dict() for lay in model.layouts]} if model.batch > 1 else {}),
        "dtype_bytes": model.dtype_bytes,
        "decoder_attention": model.decoder_attention,
        "conventions": {
            "flops": "2 x multiply-adds; flops_matmul is what torch.utils.flop_counter counts "
            "(mm/addmm/bmm/conv/sdpa/einsum), flops_other is an analytic estimate of "
            "elementwise, norm and softmax work (not measured)",
            "io_bytes": "weights read + inputs read + outputs written, once per layer call",
            "weight_bytes": "parameter bytes read, summed over calls (a module called twice reads twice); "
            "embeddings read only the gathered rows; MoE routed experts: "
            "min(n_routed, tokens x top_k) experts read",
            "activation_bytes": "bytes of every tensor the eager op sequence produces (outputs and "
            "materialised intermediates)",
            "units": "tflops = flops / 1e12, io_tb = io_bytes / 1e12, weights_gb and activations_gb = bytes / 1e9",
        },
        "stages": {name: stage.to_dict(with_parts=with_parts) for name, stage in model.stages().items()},
    }


def analytic_costs(
    spec: ModelSpec, workload: VisionWorkload, width: int, height: int, **kwargs: Any
) -> dict[str, StageCost]:
    """The three stage costs of one page (convenience wrapper)."""
    return DeepseekOCRAnalyticModel.for_page(spec, workload, width, height, **kwargs).stages()
