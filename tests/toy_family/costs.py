"""The toy family's cost formulas, registered in `analytic.registry` under its own namespace (`toy.<Class>`), and
its analytic model (vision, prefill, decode at a context) composed from them. FLOPs as torch's counter counts them;
one kernel per eager op (views launch none). Every shape is a named dimension of the spec or the layout."""

from __future__ import annotations

from typing import Any, Optional

from llm_perf_opt.analytic import costs as cost_formulas
from llm_perf_opt.analytic.registry import children_node, entries, module_cost, register_cost
from llm_perf_opt.analytic.stage import StageCost
from toy_family.spec import VOCABULARY, ToyLayout, ToySpec

NS = "toy."
ROOT = NS + "ToyOCRForCausalLM"
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def cat_cost(numel: int, b: int) -> cost_formulas.LayerCost:
    """torch.cat: one copy kernel reading its inputs and writing `numel` elements, no arithmetic."""
    return cost_formulas.LayerCost(
        input_bytes=numel * b,
        output_bytes=numel * b,
        activation_bytes=numel * b,
        kernels=cost_formulas.K("copy", 0, 2 * numel * b, out=numel * b),
    )


def _register() -> None:
    @register_cost(NS + "ToyVisionEncoder", "patch conv (Cin·P² MACs per output) + projection of the patches")
    def vision(spec: ToySpec, side: int, b: int):
        patches = (side // spec.patch) ** 2
        conv = module_cost("Conv2d", 1, spec.channels, spec.vision_dim, side, side, spec.patch, spec.patch, 0, True, b)
        proj = module_cost("Linear", patches, spec.vision_dim, spec.hidden, True, b)
        return cost_formulas.ZERO, (("patch", conv), ("proj", proj))

    @register_cost(NS + "ToyAttention", "q, k, v, o linears; Q·Kᵀ·scale, softmax, ·V over past + new keys (no mask)")
    def attention(spec: ToySpec, q_len: int, past_len: int, b: int):
        h = spec.hidden
        own = cost_formulas.sdpa(1, spec.heads, q_len, past_len + q_len, spec.head_dim, fused=False, dtype_bytes=b)
        if past_len:  # the cache grows: cat(past, new) for k and for v
            own = own + cat_cost(spec.heads * (past_len + q_len) * spec.head_dim, b).times(2)
        lin = module_cost("Linear", q_len, h, h, True, b)
        return own, (("q", lin), ("k", lin), ("v", lin), ("o", lin))

    @register_cost(NS + "ToyMLP", "up linear, exact GELU, down linear")
    def mlp(spec: ToySpec, tokens: int, b: int):
        return cost_formulas.ZERO, (
            ("up", module_cost("Linear", tokens, spec.hidden, spec.intermediate, True, b)),
            ("act", module_cost("GELU", tokens * spec.intermediate, b)),
            ("down", module_cost("Linear", tokens, spec.intermediate, spec.hidden, True, b)),
        )

    @register_cost(NS + "ToyDecoderLayer", "norm, attention, residual add, norm, MLP, residual add")
    def layer(spec: ToySpec, q_len: int, past_len: int, b: int):
        norm = module_cost("LayerNorm", q_len, spec.hidden, b)
        residual = cost_formulas.elementwise(q_len * spec.hidden, "add", 2, b)
        return residual.times(2), (
            ("norm1", norm),
            ("attn", module_cost(NS + "ToyAttention", spec, q_len, past_len, b)),
            ("norm2", norm),
            ("mlp", module_cost(NS + "ToyMLP", spec, q_len, b)),
        )

    @register_cost(ROOT, "embedding, the vision encoder and one cat on a prefill, the layers, norm, LM head")
    def root(spec: ToySpec, side: int, q_len: int, past_len: int, b: int, language: bool = True):
        with_vision = past_len == 0 and side > 0
        children = [] if not language else [("embed", module_cost("Embedding", q_len, spec.vocab, spec.hidden, b))]
        own = cost_formulas.ZERO
        if with_vision:
            children.append(("vision", module_cost(NS + "ToyVisionEncoder", spec, side, b)))
            own = cat_cost(q_len * spec.hidden, b) if language else cost_formulas.ZERO
        if language:
            layer_node = module_cost(NS + "ToyDecoderLayer", spec, q_len, past_len, b)
            stack = children_node("ModuleList", tuple((str(i), layer_node) for i in range(spec.layers)), container=True)
            children += [
                ("layers", stack),
                ("norm", module_cost("LayerNorm", q_len, spec.hidden, b)),
                ("lm_head", module_cost("Linear", q_len, spec.hidden, spec.vocab, False, b)),
            ]
        return own, tuple(children)


if ROOT not in entries():  # once per process
    _register()


class ToyAnalyticModel:
    """Analytic costs of one page of the toy family: `stages()`, `vision()`, `prefill()`, `decode(ctx)`."""

    def __init__(
        self,
        spec: ToySpec,
        layout: ToyLayout,
        seq_len: Optional[int] = None,
        *,
        prompt_tokens: int = 0,
        dtype: str = "float32",
        context_len: Optional[int] = None,
        **_: Any,
    ) -> None:
        self.spec, self.layout = spec, layout
        self.seq_len = seq_len if seq_len is not None else 1 + layout.image_tokens + prompt_tokens
        self.context_len = context_len if context_len is not None else self.seq_len
        self.dtype_bytes = DTYPE_BYTES[str(dtype)]
        self.decoder_attention = "eager"
        self.vocabulary = VOCABULARY
        self.batch = 1

    def vision(self) -> StageCost:
        root = module_cost(ROOT, self.spec, self.layout.side, 0, 0, self.dtype_bytes, False)
        return StageCost("vision", root, ("vision",), {"side": self.layout.side}, VOCABULARY)

    def prefill(self) -> StageCost:
        root = module_cost(ROOT, self.spec, self.layout.side, self.seq_len, 0, self.dtype_bytes)
        return StageCost("prefill", root, ("",), {"seq_len": self.seq_len, "past_len": 0}, VOCABULARY)

    def decode(self, context_len: int) -> StageCost:
        root = module_cost(ROOT, self.spec, 0, 1, context_len, self.dtype_bytes)
        return StageCost("decode", root, ("",), {"q_len": 1, "past_len": context_len}, VOCABULARY)

    def stages(self) -> dict[str, StageCost]:
        return {"vision": self.vision(), "prefill": self.prefill(), "decode": self.decode(self.context_len)}

    def stage(self, name: str) -> StageCost:
        return self.stages()[name]

    def kv_cache_bytes(self, context_len: int) -> int:
        """Keys and values of every layer for `context_len` tokens."""
        s = self.spec
        return s.layers * 2 * s.heads * context_len * s.head_dim * self.dtype_bytes

    def to_dict(self, with_parts: bool = True) -> dict[str, Any]:
        return {
            "model": self.spec.name,
            "layout": self.layout.as_dict(),
            "seq_len": self.seq_len,
            "context_len": self.context_len,
            "dtype_bytes": self.dtype_bytes,
            "decoder_attention": self.decoder_attention,
            "conventions": {"flops": "2 x multiply-adds; flops_matmul as torch.utils.flop_counter counts them"},
            "stages": {name: stage.to_dict(with_parts) for name, stage in self.stages().items()},
        }
