"""The DeepSeek-OCR analytic model both generations share: per-stage, per-module costs from a `ModelSpec` + a
`ViewLayout` alone (`DeepSeekOCRAnalyticBase`), the vision passes of a layout, the stage cache, `costs.json`'s data.

Each family's subclass (`dsocr.analytic`, `dsocr2.analytic`) names its stage functions (one call of its
causal-LM root, costed through `analytic.registry`), its parts, its parameter count. The stages:

* vision (per image; `vision_passes` = crop batch then global view in crop mode with a grid > 1×1, else the
  global view alone; each pass runs the family's vision stack on a batch);
* prefill (vision + language over the whole prompt of `seq_len` tokens, images scattered in);
* decode (one new token after `context_len` cached ones; vision is skipped because the vendor runs it only when
  input_ids has more than one position): the language stack with q_len 1 over context_len + 1 keys, KV-cache
  reads in the bytes, lm_head over 1 position.

Stages are cached per spec (bounded; see `clear_caches`). No multipliers and no calibration: every number is a
product of the shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, Callable

from llm_perf_opt.analytic import registry
from llm_perf_opt.analytic.costs import kv_cache_bytes as kv_cache
from llm_perf_opt.analytic.costs_file import STAGES
from llm_perf_opt.analytic.dtypes import dtype_bytes
from llm_perf_opt.analytic.execution import CPU, Execution
from llm_perf_opt.analytic.stage import StageCost
from llm_perf_opt.deepseek_ocr_shared.costs import Passes
from llm_perf_opt.deepseek_ocr_shared.layout import ViewLayout
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
    return {"batch": batch, "more_images": [_pass_shapes(p, t) | {"count": n} for p, t, n in more]}


def more_images(layouts: tuple[ViewLayout, ...]) -> tuple[tuple[tuple, int, int], ...]:
    """The images of a batch's sequences 2.. as ((passes, image tokens, count), ...): identical images once, with
    how many sequences have them, in first-seen order (so a batch of identical pages is priced once)."""
    counts: dict[tuple, int] = {}
    keys: dict[int, tuple] = {}  # a batch of one page repeats one layout object: its key once
    for lay in layouts:
        key = keys.get(id(lay))
        if key is None:
            key = keys[id(lay)] = (tuple((p.name, p.batch, p.side) for p in vision_passes(lay)), lay.image_tokens)
        counts[key] = counts.get(key, 0) + 1
    return tuple((passes, tokens, n) for (passes, tokens), n in counts.items())


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


class StageCache:
    """A family's `SpecStages` per spec (bounded), for its stage functions; the last spec asked for is kept by
    identity: a sweep builds one model per page from the same spec object, and hashing a nested frozen
    dataclass costs more than the rest of a cached evaluation. `clear_caches` empties every one."""

    def __init__(
        self,
        vision: Callable[..., StageCost],
        prefill: Callable[..., StageCost],
        decode: Callable[..., StageCost],
    ) -> None:
        self._functions = (vision, prefill, decode)
        self._by_spec = lru_cache(maxsize=8)(self._build)
        self._last: tuple[Any, SpecStages] | None = None
        _STAGE_CACHES.append(self)

    def _build(self, spec: Any) -> SpecStages:
        return SpecStages(spec, *self._functions)

    def __call__(self, spec: Any) -> SpecStages:
        last = self._last
        if last is not None and last[0] is spec:
            return last[1]
        stages = self._by_spec(spec)
        self._last = (spec, stages)
        return stages

    def cache_clear(self) -> None:
        self._last = None
        self._by_spec.cache_clear()


_STAGE_CACHES: list[StageCache] = []


def clear_caches() -> None:
    """Drop every cached node and stage (for benchmarks of the cold path, and to free memory)."""
    for cache in _STAGE_CACHES:
        cache.cache_clear()
    registry.clear_caches()


# --------------------------------------------------------------------------------------------- model
class DeepSeekOCRAnalyticBase:
    """Analytic costs of a DeepSeek-OCR model (either generation) for one page layout. A family's subclass names
    its `vocabulary`, its `stage_cache` (its stage functions), its `vision_labels` (the batch rules' text), and
    defines `parameter_count()` and `for_page(...)`.

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
        execution: where the forward runs (`analytic.execution.Execution`: the device, CUDA autocast, the GPU's
            compute capability): what CUDA autocast casts and makes float32, what SDPA launches and copies there.
            Default: the CPU, as the formulas always counted it. A float32 model is costed without autocast
            (`Execution.for_dtype`). Never changes FLOPs.
    """

    vocabulary: Any = None  # the family's `PartVocabulary`
    stage_cache: StageCache  # the family's stage functions, cached per spec
    vision_labels = "the vision parts"  # the parts the forward loops over per image, in words (batch rules)

    def __init__(
        self,
        spec: Any,
        layout: ViewLayout,
        seq_len: int | None = None,
        *,
        prompt_tokens: int = DEFAULT_PROMPT_TOKENS,
        context_len: int | None = None,
        dtype: Any = "bfloat16",
        decoder_attention: str = "eager",
        batch: int = 1,
        batch_layouts: tuple[ViewLayout, ...] | None = None,
        execution: Execution = CPU,
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
        self.vocabulary = type(self).vocabulary
        self.layout = layout
        self.seq_len = seq_len
        self.context_len = context_len
        self.dtype_bytes = dtype_bytes(dtype)
        if not isinstance(execution, Execution):
            raise ConfigError.field("analytic.execution", execution, "must be an analytic.execution.Execution")
        self.requested_execution = execution  # as asked: `with_dtype` re-resolves it for the new dtype
        self.execution = execution.for_dtype(self.dtype_bytes)
        self.decoder_attention = decoder_attention
        self._passes_key = tuple((p.name, p.batch, p.side) for p in vision_passes(layout))
        self.batch = batch
        self.layouts = layouts
        self._more = more_images(layouts[1:])
        self._attention = ATTENTION_CLASSES[decoder_attention]
        self._stages = self.stage_cache(spec)

    def batch_rules(self) -> Any:
        """How the serving math scales this model's costs with the batch (`serving.batch_rules`): the vision parts
        run once per image."""
        from llm_perf_opt.deepseek_ocr_shared.serving import batch_rules

        return batch_rules(tuple(self.vocabulary.vision_paths), self.vision_labels)

    def serving_model(self, moe: Any = None, dtype: Any = None) -> Any:
        """The serving model of this page (`serving.serving_model`): batch rules, memory, MoE at batch."""
        from llm_perf_opt.deepseek_ocr_shared.serving import serving_model

        # the serving math scales one sequence by its batch rules: a batch model serves its first page
        return serving_model(self.sequence(0), moe, dtype if dtype is not None else "bfloat16")

    def sequence(self, i: int = 0) -> "DeepSeekOCRAnalyticBase":
        """Sequence `i` of the batch alone (batch 1, its own unpadded prompt); itself at batch 1."""
        if self.batch == 1:
            return self
        lay = self.layouts[i]  # the same prompt text, its own image tokens (the batch pads to the longest)
        own = self.seq_len - (max(x.image_tokens for x in self.layouts) - lay.image_tokens)
        return type(self)(
            self.spec,
            lay,
            own,
            dtype=self.dtype_bytes,
            decoder_attention=self.decoder_attention,
            execution=self.requested_execution,
        )

    def moe_from_routing(self, routing_path: str) -> Any:
        """The MoE shape measured in a routing.json (`serving.moe_from_routing`)."""
        from llm_perf_opt.deepseek_ocr_shared.serving import moe_from_routing

        return moe_from_routing(self.spec, self.dtype_bytes, routing_path)

    def with_dtype(self, dtype: Any) -> "DeepSeekOCRAnalyticBase":
        """The same page and prompt with bytes counted in another dtype (a roof's prediction dtype)."""
        return type(self)(
            self.spec,
            self.layout,
            self.seq_len,
            context_len=self.context_len,
            dtype=dtype,
            decoder_attention=self.decoder_attention,
            batch=self.batch,
            batch_layouts=self.layouts,
            execution=self.requested_execution,
        )

    @property
    def passes(self) -> tuple[VisionPass, ...]:
        return vision_passes(self.layout)

    def vision(self) -> StageCost:
        return self._stages.vision(
            self._passes_key, self.layout.image_tokens, self.dtype_bytes, self.batch, self._more, self.execution
        )

    def prefill(self) -> StageCost:
        return self._stages.prefill(
            self._passes_key,
            self.layout.image_tokens,
            self.seq_len,
            self.dtype_bytes,
            self._attention,
            self.batch,
            self._more,
            self.execution,
        )

    def decode(self, context_len: int | None = None) -> StageCost:
        ctx = self.context_len if context_len is None else context_len
        if isinstance(ctx, bool) or not isinstance(ctx, int) or ctx < 0:
            raise ConfigError.field("analytic.context_len", ctx, "must be a non-negative integer")
        return self._stages.decode(ctx, self.dtype_bytes, self._attention, self.batch, self.execution)

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
            return {self.vocabulary.decoder_layer_path(i): layer for i in range(d.num_layers)}
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


def costs_dict(model: DeepSeekOCRAnalyticBase, with_parts: bool = True) -> dict[str, Any]:
    """JSON-able data for `costs.json` (`costs_file.write_costs` writes it; `load_costs` reads it back)."""
    return {
        "model": model.spec.name,
        "layout": model.layout.as_dict(),
        "seq_len": model.seq_len,
        "context_len": model.context_len,
        **({"batch": model.batch, "layouts": _layout_dicts(model.layouts)} if model.batch > 1 else {}),
        "dtype_bytes": model.dtype_bytes,
        "decoder_attention": model.decoder_attention,
        # where the forward runs, when not on the CPU (the formulas' default; a CPU run's file is unchanged)
        **(
            {
                "execution": {
                    "device": model.execution.device,
                    "autocast": model.execution.autocast,
                    "capability": list(model.execution.capability) if model.execution.capability else None,
                    "label": model.execution.label,
                }
            }
            if model.execution != CPU
            else {}
        ),
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


def _layout_dicts(layouts: tuple[ViewLayout, ...]) -> list[dict[str, Any]]:
    """Each sequence's layout as a dict, each distinct layout converted once."""
    done: dict[int, dict[str, Any]] = {}
    return [done[id(lay)] if id(lay) in done else done.setdefault(id(lay), lay.as_dict()) for lay in layouts]
