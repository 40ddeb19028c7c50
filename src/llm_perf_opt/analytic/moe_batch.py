"""MoE at batch: how many routed experts a batch of tokens touches, and the expert weight bytes a step reads.

A step that routes `tokens` tokens, each to `top_k` of `n_experts` experts, reads each expert it touches
once (the expert's weights are streamed once, whatever number of rows it multiplies). Two estimates of the
experts touched, per MoE layer:

* **uniform** (no routing known): a token picks k of E experts uniformly, so it misses a given expert with
  probability 1 - k/E, and all T tokens miss it with (1 - k/E)^T: E·(1 - (1 - k/E)^T) touched. Exactly k
  for one token; it tends to E as T grows, which is why a batched decode step costs less than B steps.
* **logged** (a serving curve's routing log provides it): the distinct experts per layer a forward of T tokens
  touched, used for that T as it is (the other token counts keep the estimate above): what prices a measured
  forward at its own routing, not a serving forecast.
* **measured popularity** (a trace's routing record provides it): expert e received n_e of the T·k routed
  slots of the record, so one token selects it with probability p_e = n_e / T (Σ p_e = k). A batch of T
  tokens drawn like that touches Σ_e 1 - (1 - p_e)^T experts in expectation; uniform popularity
  (p_e = k/E) gives the uniform formula back. A skewed routing (random gates are) touches fewer experts, so
  batching buys more.

Pure Python: no torch, no model family (the family passes its MoE dimensions as a `MoEShape`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from llm_perf_opt.errors import ConfigError

UNIFORM = "uniform"
MEASURED = "measured"


def expected_distinct(n_experts: int, top_k: int, tokens: float) -> float:
    """Experts touched by `tokens` tokens each routed to `top_k` of `n_experts` uniformly: E·(1 - (1 - k/E)^T)."""
    if n_experts <= 0 or tokens <= 0:
        return 0.0
    return n_experts * (1.0 - (1.0 - top_k / n_experts) ** tokens)


def distinct_from_popularity(probabilities: Sequence[float], tokens: float) -> float:
    """Experts touched by `tokens` tokens when a token selects expert e with probability p_e: Σ 1 - (1 - p_e)^T."""
    if tokens <= 0:
        return 0.0
    return sum(1.0 - (1.0 - min(max(p, 0.0), 1.0)) ** tokens for p in probabilities)


@dataclass(frozen=True)
class MoEShape:
    """The routed experts of a model: `layers` MoE layers of `n_experts` experts, `top_k` per token, each
    expert `expert_bytes` of weights. `popularity` (optional, per MoE layer in layer order): the measured
    p_e of each expert (see the module docstring) from a routing record; `source` says where it is from."""

    layers: int
    n_experts: int
    top_k: int
    expert_bytes: int
    popularity: tuple[tuple[float, ...], ...] = ()
    source: str = UNIFORM
    note: str = ""
    logged: tuple[tuple[float, float], ...] = ()  # (tokens, experts touched per layer) a logged forward touched
    _cache: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        if self.popularity and len(self.popularity) != self.layers:
            raise ConfigError.field(
                "routing.layers",
                len(self.popularity),
                f"the routing record covers {len(self.popularity)} MoE layers; the model has {self.layers}",
            )

    @property
    def routing(self) -> str:
        return MEASURED if self.popularity else UNIFORM

    def touched(self, tokens: float) -> float:
        """Experts touched per step, summed over the MoE layers, for `tokens` tokens routed in that step."""
        key = float(tokens)
        hit = self._cache.get(key)
        if hit is None:
            logged = dict(self.logged).get(key)
            if logged is not None:
                hit = logged * self.layers
            elif self.popularity:
                hit = sum(distinct_from_popularity(p, tokens) for p in self.popularity)
            else:
                hit = self.layers * expected_distinct(self.n_experts, self.top_k, tokens)
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[key] = hit
        return hit

    def touched_per_layer(self, tokens: float) -> float:
        return self.touched(tokens) / self.layers if self.layers else 0.0

    def bytes_read(self, tokens: float) -> float:
        """Routed expert weight bytes one step reads (all MoE layers): touched experts × bytes per expert."""
        return self.touched(tokens) * self.expert_bytes

    def with_routing(
        self, per_layer_tokens_per_expert: Sequence[Mapping[int, int]], tokens: Sequence[int], note: str = ""
    ) -> "MoEShape":
        """This shape with the measured popularity of a routing record: for each MoE layer (in order), the
        tokens each expert received in one gate call of `tokens[i]` tokens."""
        if len(per_layer_tokens_per_expert) != self.layers or len(tokens) != self.layers:
            raise ConfigError.field(
                "routing.layers",
                len(per_layer_tokens_per_expert),
                f"the routing record covers {len(per_layer_tokens_per_expert)} MoE layers; the model has {self.layers}",
            )
        popularity = []
        for counts, t in zip(per_layer_tokens_per_expert, tokens):
            if t <= 0:
                raise ConfigError.field("routing.tokens", t, "a gate call routes at least one token")
            popularity.append(tuple(counts.get(e, 0) / t for e in range(self.n_experts)))
        return MoEShape(self.layers, self.n_experts, self.top_k, self.expert_bytes, tuple(popularity), MEASURED, note)

    def with_logged(self, per_layer: Mapping[float, float], note: str = "") -> "MoEShape":
        """This shape with the experts per MoE layer logged forwards touched: {routed tokens: distinct experts per
        layer}; other token counts keep this shape's estimate."""
        for tokens, n in per_layer.items():
            if not 0 < n <= min(self.n_experts, tokens * self.top_k):
                raise ConfigError.field(
                    "experts", n, f"{tokens:g} tokens touch between 1 and min(E, T x k) experts per layer"
                )
        logged = tuple(sorted((float(t), float(n)) for t, n in per_layer.items()))
        return MoEShape(
            self.layers,
            self.n_experts,
            self.top_k,
            self.expert_bytes,
            self.popularity,
            self.source,
            "; ".join(x for x in (self.note, note) if x),
            logged,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "layers": self.layers,
            "n_experts": self.n_experts,
            "top_k": self.top_k,
            "expert_bytes": self.expert_bytes,
            "routing": self.routing,
            **({"logged": [{"tokens": t, "experts_per_layer": n} for t, n in self.logged]} if self.logged else {}),
            "note": self.note,
            "convention": (
                "experts touched per MoE layer and step: E·(1-(1-k/E)^T) for T tokens (uniform), or "
                "Σ_e 1-(1-p_e)^T with p_e the measured share of tokens choosing expert e; each touched "
                "expert's weights read once per step"
            ),
        }


def batch_curve(shape: MoEShape, batches: Sequence[int], tokens_per_sequence: int = 1) -> list[dict[str, float]]:
    """Experts touched per layer and routed bytes per step (and per sequence) as the batch grows."""
    out = []
    for b in batches:
        t = b * tokens_per_sequence
        read = shape.bytes_read(t)
        out.append(
            {
                "batch": b,
                "tokens": t,
                "experts_per_layer": shape.touched_per_layer(t),
                "routed_bytes": read,
                "routed_bytes_per_sequence": read / b if b else 0.0,
            }
        )
    return out
