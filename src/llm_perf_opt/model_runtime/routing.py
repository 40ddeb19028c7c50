"""The MoE routing a run really took: `routing.json`, its summary, and the uniform-routing expectation.

The `routing` runtime patch (`deepseek_ocr_shared.patches`, a family's) logs one `routing` event per MoE gate call: the
gate's module path, its decoder layer, the call's index for that gate (0: the prefill, k: decode step
k), the tokens routed, top_k, the number of routed experts E, the experts the top-k indices selected
and how many tokens each got. `RoutingRecord.from_events` gathers them; `summary()` derives:

* distinct experts hit per layer and step;
* the prefill's load imbalance per layer: max tokens per expert over the mean (T·k / E tokens per
  expert), and the experts never hit;
* the expert weight bytes a step really reads: distinct experts hit × the bytes of one routed expert
  (its parameters as loaded), per layer and summed, beside the analytic model's convention
  (min(E, T·k) experts read, an upper bound for T > 1 and exact for one token);
* the uniform-routing expectation `expected_distinct(E, k, T)` = E·(1 − (1 − k/E)^T): under routing
  where each token picks k of E experts uniformly at random, an expert is missed by one token with
  probability 1 − k/E and by all T tokens with (1 − k/E)^T. Shown beside the measured counts so a user
  sees how far the real routing is from that assumption.

With random weights (the project's twin and a vendor checkout without a checkpoint) the gate is random
too: the routing is not the trained model's (random gates are typically skewed: a few experts take
many tokens). `random_weights` and `note` say so in the file, the summary and wherever it is shown.
Expert FLOPs never depend on the routing (every token visits exactly top_k experts); which experts
are called, and so the weight bytes read, does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from llm_perf_opt.analytic.moe_batch import expected_distinct  # E·(1 − (1 − k/E)^T), uniform routing
from llm_perf_opt.artifacts import file_in, read_artifact, require, write_artifact
from llm_perf_opt.errors import ArtifactError

ROUTING_FILE = "routing.json"
ROUTING_SCHEMA = "llm_perf_opt.routing"
ROUTING_VERSION = 1
ROUTING_READS = (1,)

RANDOM_WEIGHTS_NOTE = (
    "random weights: the gate is random, so this routing is not the trained model's "
    "(expert FLOPs do not depend on it; which experts are hit, and the bytes read, do)"
)
CHECKPOINT_NOTE = "weights from a checkpoint: the routing of those weights on this input"
UNKNOWN_WEIGHTS_NOTE = "weights of unknown origin: if they are random, this routing is not the trained model's"


@dataclass(frozen=True)
class GateCall:
    """One call of one MoE gate: the experts its top-k selected and the tokens each got."""

    gate: str  # module path, e.g. model.layers.3.mlp.gate
    layer: int  # decoder layer index
    step: int  # 0: the prefill; k: decode step k
    tokens: int  # tokens routed (T)
    experts: tuple[int, ...]  # experts hit, ascending
    tokens_per_expert: tuple[int, ...]  # aligned with `experts`

    @property
    def distinct(self) -> int:
        return len(self.experts)

    def max_over_mean(self, n_experts: int, top_k: int) -> float:
        """Max tokens per expert over the mean over all E experts (T·k / E): 1.0 is perfectly even."""
        mean = self.tokens * top_k / n_experts if n_experts else 0.0
        return max(self.tokens_per_expert, default=0) / mean if mean else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "gate": self.gate,
            "layer": self.layer,
            "step": self.step,
            "tokens": self.tokens,
            "experts": list(self.experts),
            "tokens_per_expert": list(self.tokens_per_expert),
        }


_CALL_FIELDS = ("gate", "layer", "step", "tokens", "experts", "tokens_per_expert")
_DATA_FIELDS = ("n_experts", "top_k", "random_weights", "note", "expert_bytes", "calls")


@dataclass
class RoutingRecord:
    """Every gate call of a run (prefill and decode steps), with the model's E, k and expert size."""

    n_experts: int
    top_k: int
    random_weights: Optional[bool]  # None: the run did not say where the weights came from
    calls: list[GateCall] = field(default_factory=list)
    expert_bytes: Optional[int] = None  # parameter bytes of one routed expert (None: unknown)

    @property
    def note(self) -> str:
        if self.random_weights is None:
            return UNKNOWN_WEIGHTS_NOTE
        return RANDOM_WEIGHTS_NOTE if self.random_weights else CHECKPOINT_NOTE

    @property
    def layers(self) -> list[int]:
        return sorted({c.layer for c in self.calls})

    @property
    def steps(self) -> list[int]:
        return sorted({c.step for c in self.calls})

    def call(self, layer: int, step: int) -> GateCall:
        for c in self.calls:
            if c.layer == layer and c.step == step:
                return c
        raise KeyError(f"no routing of layer {layer} at step {step}")

    def distinct(self) -> dict[int, list[int]]:
        """{layer: [distinct experts hit at step 0, 1, ...]}."""
        return {layer: [self.call(layer, s).distinct for s in self.steps] for layer in self.layers}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_events(
        cls,
        events: Iterable[Mapping[str, Any]],
        random_weights: Optional[bool] = None,
        expert_bytes: Optional[int] = None,
    ) -> "RoutingRecord":
        """The record of a runtime log's `routing` events (other kinds are ignored). `random_weights`
        defaults to what the events say (their `weights`: "random" or "checkpoint")."""
        calls: list[GateCall] = []
        n_experts: set[int] = set()
        top_k: set[int] = set()
        weights: set[Any] = set()
        for i, e in enumerate(events):
            if e.get("event") != "routing":
                continue
            weights.add(e.get("weights"))
            for key in ("gate", "layer", "call", "tokens", "top_k", "n_experts", "experts", "tokens_per_expert"):
                if key not in e:
                    raise ArtifactError(f"runtime log: routing event {i} lacks field '{key}'")
            if e["layer"] is None:
                raise ArtifactError(f"runtime log: routing event {i}: gate {e['gate']!r} is not in a decoder layer")
            calls.append(
                GateCall(
                    e["gate"],
                    int(e["layer"]),
                    int(e["call"]),
                    int(e["tokens"]),
                    tuple(int(x) for x in e["experts"]),
                    tuple(int(x) for x in e["tokens_per_expert"]),
                )
            )
            n_experts.add(int(e["n_experts"]))
            top_k.add(int(e["top_k"]))
        if len(n_experts) > 1 or len(top_k) > 1:
            raise ArtifactError(
                f"runtime log: routing events disagree on the experts ({sorted(n_experts)}) or top_k ({sorted(top_k)})"
            )
        if random_weights is None and len(weights) == 1:
            random_weights = {"random": True, "checkpoint": False}.get(next(iter(weights)))
        record = cls(
            n_experts.pop() if n_experts else 0, top_k.pop() if top_k else 0, random_weights, calls, expert_bytes
        )
        record.check()
        return record

    def check(self) -> None:
        """Each (layer, step) once; every call routes exactly T·k (token, expert) pairs to known experts."""
        seen: set[tuple[int, int]] = set()
        for c in self.calls:
            where = f"routing of layer {c.layer} at step {c.step}"
            if (c.layer, c.step) in seen:
                raise ArtifactError(f"{where} appears twice")
            seen.add((c.layer, c.step))
            if len(c.experts) != len(c.tokens_per_expert):
                raise ArtifactError(f"{where}: {len(c.experts)} experts but {len(c.tokens_per_expert)} token counts")
            if sum(c.tokens_per_expert) != c.tokens * self.top_k:
                raise ArtifactError(
                    f"{where}: token counts sum to {sum(c.tokens_per_expert)}, expected tokens x "
                    f"top_k = {c.tokens * self.top_k}"
                )
            if any(not 0 <= x < self.n_experts for x in c.experts):
                raise ArtifactError(f"{where}: an expert index is outside 0..{self.n_experts - 1}")

    # ------------------------------------------------------------------ summary
    def summary(self, analytic_expert_bytes: Optional[Mapping[int, Mapping[int, int]]] = None) -> dict[str, Any]:
        """The figures summary.json keeps (JSON keys are strings: layers as "1", "2", ...).

        `analytic_expert_bytes`: {step: {layer: bytes}} the analytic model charges for the routed experts
        of that step (min(E, T·k) experts), shown beside the bytes the real routing reads.
        """
        E, k = self.n_experts, self.top_k
        out: dict[str, Any] = {
            "random_weights": self.random_weights,
            "note": self.note,
            "n_experts": E,
            "top_k": k,
            "layers": self.layers,
            "steps": len(self.steps),
            "expert_bytes": self.expert_bytes,
        }
        if 0 in self.steps:
            out["prefill"] = self._prefill(analytic_expert_bytes or {})
        decode_steps = [s for s in self.steps if s > 0]
        if decode_steps:
            out["decode"] = self._decode(decode_steps, analytic_expert_bytes or {})
        return out

    def _bytes_read(self, step: int) -> dict[str, Optional[int]]:
        if self.expert_bytes is None:
            return {str(layer): None for layer in self.layers}
        return {str(layer): self.call(layer, step).distinct * self.expert_bytes for layer in self.layers}

    def _prefill(self, analytic: Mapping[int, Mapping[int, int]]) -> dict[str, Any]:
        E, k = self.n_experts, self.top_k
        calls = {layer: self.call(layer, 0) for layer in self.layers}
        tokens = next(iter(calls.values())).tokens if calls else 0
        read = self._bytes_read(0)
        return {
            "tokens": tokens,
            "distinct_experts": {str(i): c.distinct for i, c in calls.items()},
            "expected_distinct_uniform": expected_distinct(E, k, tokens),
            "never_hit": {str(i): E - c.distinct for i, c in calls.items()},
            "max_over_mean": {str(i): c.max_over_mean(E, k) for i, c in calls.items()},
            "max_tokens_per_expert": {str(i): max(c.tokens_per_expert, default=0) for i, c in calls.items()},
            "mean_tokens_per_expert": tokens * k / E if E else None,
            "expert_bytes_read": read,
            "expert_bytes_read_total": _sum(read.values()),
            "expert_bytes_analytic": _layer_bytes(analytic.get(0)),
            "expert_bytes_analytic_total": _sum((analytic.get(0) or {}).values()) if analytic.get(0) else None,
        }

    def _decode(self, steps: list[int], analytic: Mapping[int, Mapping[int, int]]) -> dict[str, Any]:
        E, k = self.n_experts, self.top_k
        per_step = []
        for s in steps:
            tokens = self.call(self.layers[0], s).tokens
            read = self._bytes_read(s)
            per_step.append(
                {
                    "step": s,
                    "tokens": tokens,
                    "distinct_experts": {str(layer): self.call(layer, s).distinct for layer in self.layers},
                    "expected_distinct_uniform": expected_distinct(E, k, tokens),
                    "expert_bytes_read": _sum(read.values()),
                    "expert_bytes_analytic": _sum((analytic.get(s) or {}).values()) if analytic.get(s) else None,
                }
            )
        union = {str(layer): len({x for s in steps for x in self.call(layer, s).experts}) for layer in self.layers}
        return {
            "steps": per_step,
            "distinct_over_all_steps": union,
            "expected_distinct_over_all_steps_uniform": expected_distinct(E, k, len(steps)),
        }

    # ------------------------------------------------------------------ artifact
    def to_dict(self) -> dict[str, Any]:
        return {
            "n_experts": self.n_experts,
            "top_k": self.top_k,
            "random_weights": self.random_weights,
            "note": self.note,
            "expert_bytes": self.expert_bytes,
            "calls": [c.to_dict() for c in self.calls],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = ROUTING_FILE) -> "RoutingRecord":
        for key in _DATA_FIELDS:
            if key not in data:
                raise ArtifactError(f"{source}: {ROUTING_SCHEMA} data lacks required field '{key}'")
        if not isinstance(data["calls"], list):
            raise ArtifactError(f"{source}: data.calls must be a list")
        calls = []
        for i, raw in enumerate(data["calls"]):
            require(raw, _CALL_FIELDS, f"data.calls[{i}]", source)
            calls.append(
                GateCall(
                    raw["gate"],
                    int(raw["layer"]),
                    int(raw["step"]),
                    int(raw["tokens"]),
                    tuple(raw["experts"]),
                    tuple(raw["tokens_per_expert"]),
                )
            )
        random_weights = data["random_weights"]
        if random_weights is not None and not isinstance(random_weights, bool):
            raise ArtifactError(f"{source}: data.random_weights must be true, false or null")
        record = cls(int(data["n_experts"]), int(data["top_k"]), random_weights, calls, data["expert_bytes"])
        try:
            record.check()
        except ArtifactError as exc:
            raise ArtifactError(f"{source}: {exc}") from None
        return record

    def write(self, path: str | os.PathLike, config: Any = None) -> Path:
        return write_artifact(path, ROUTING_SCHEMA, ROUTING_VERSION, self.to_dict(), config=config)


def load_routing(path: str | os.PathLike) -> RoutingRecord:
    """Read `routing.json` (or the run directory holding it); unknown versions and missing fields raise."""
    path = file_in(path, ROUTING_FILE)
    _, data = read_artifact(path, ROUTING_SCHEMA, ROUTING_READS, required=_DATA_FIELDS)
    return RoutingRecord.from_dict(data, str(path))


def expert_weight_bytes(model: Any, gate_path: str) -> Optional[int]:
    """Parameter bytes of one routed expert of the MoE block that holds `gate_path` (its first expert;
    all are the same size), None when the model has no such module."""
    block = gate_path.rpartition(".")[0]
    try:
        experts = model.get_submodule(f"{block}.experts" if block else "experts")
        first = next(m for m in experts.children() if m is not None)
    except (AttributeError, StopIteration):
        return None
    return sum(p.numel() * p.element_size() for p in first.parameters())


def hit_over_steps(record: RoutingRecord, layer: int) -> set[int]:
    """Experts of `layer` hit in any step (the prefill and every decode step): those the graph calls."""
    return {x for c in record.calls if c.layer == layer for x in c.experts}


def bracket(record: RoutingRecord, layers: Iterable[int]) -> Optional[str]:
    """The grouped graph's index bracket of an expert node over `layers`: experts hit over all steps, per
    layer (min-max over the layers), of E: `[35-49 of 64]`."""
    layers = [i for i in layers if i in record.layers]
    if not layers:
        return None
    return f"[{_range([len(hit_over_steps(record, i)) for i in layers])} of {record.n_experts}]"


def label(record: RoutingRecord, layers: Iterable[int]) -> Optional[str]:
    """The grouped graph's text for an expert node spanning `layers`: experts hit in the prefill (min-max
    over the layers) and per decode step, of E; None when the record has none of those layers."""
    layers = [i for i in layers if i in record.layers]
    if not layers:
        return None
    E = record.n_experts
    parts = []
    if 0 in record.steps:
        parts.append(f"{_range([record.call(i, 0).distinct for i in layers])} of {E} in prefill")
    decode = [record.call(i, s).distinct for i in layers for s in record.steps if s > 0]
    if decode:
        parts.append(f"{_range(decode)} per decode step")
    weights = {True: "random weights", None: "weights unknown"}.get(record.random_weights)
    return ", ".join(parts) + (f" ({weights})" if weights else "")


def _range(values: list[int]) -> str:
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _sum(values: Iterable[Optional[int]]) -> Optional[int]:
    values = list(values)
    return None if not values or any(v is None for v in values) else sum(values)  # type: ignore[arg-type]


def _layer_bytes(by_layer: Optional[Mapping[int, int]]) -> Optional[dict[str, int]]:
    return None if not by_layer else {str(k): int(v) for k, v in by_layer.items()}


def routing_record(events: Any, session: Any) -> Optional[RoutingRecord]:
    """The MoE routing of a capture's gate events (the `routing` patch's), or None without any."""
    if not events:
        return None
    bytes_ = expert_weight_bytes(session.model, events[0]["gate"])
    return RoutingRecord.from_events(events, random_weights=session.weights == "random", expert_bytes=bytes_)


def unrouted_expert_kernels(analytic: Any, path: str | os.PathLike, decoder_stack: str) -> dict[int, dict[str, int]]:
    """{step (0: the prefill): {experts container path: kernels}}: the routed-expert kernels the analytic model
    lists for experts the run's gates sent no token (its routing record at `path`). The cost formula runs
    min(E, T x top_k) experts per MoE layer and call (uniform routing of T tokens); the forward's loop runs
    only the experts that got tokens, one MLP each. Empty without a routing record."""
    if not os.path.isfile(path):
        return {}
    record = load_routing(path)
    out: dict[int, dict[str, int]] = {}
    for call in record.calls:
        stage = analytic.prefill() if call.step == 0 else analytic.decode(analytic.seq_len + call.step - 1)
        experts = f"{decoder_stack}.{call.layer}.mlp.experts"
        listed = stage.parts[experts].kernel_count if experts in stage.parts else 0
        assumed = min(record.n_experts, call.tokens * record.top_k)
        missing = assumed - len(call.experts)
        if missing > 0 and assumed and listed % assumed == 0:
            out.setdefault(call.step, {})[experts] = listed // assumed * missing
    return out
