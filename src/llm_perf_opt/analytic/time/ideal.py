"""The ideal level: roofline predictions from the analytic costs, per layer, part and stage, on one `Roof`.

The convention (`convention.ROOFLINE`, written into every prediction and artifact):

* The unit of prediction is one `LayerCost` of the analytic model: a leaf module call, or the work a
  module does itself outside its children (its own ops, merged into one cost). Units run one after the
  other: a part's or a stage's time is the sum of its units' times (no overlap, no fusion across units).
* compute time = flops_matmul / matmul peak + flops_other / vector peak. flops_matmul is the
  matmul-class work (mm/addmm/bmm/conv/SDPA/einsum: what torch's FlopCounterMode counts) and goes to the
  dense tensor-core peak of the prediction dtype (float32: the CUDA-core FP32 peak unless allow_tf32, then
  TF32); flops_other (elementwise, norms, softmax, by `analytic.costs.ELEMENTWISE_FLOPS`) goes to the
  vector (non-tensor) peak.
* memory time = io_bytes / bandwidth, io_bytes as `analytic.costs` defines it: weights read + inputs read
  + outputs written, each once per call (the minimum traffic; intermediates a non-fused implementation
  materialises, `activation_bytes`, are not in it, so this is the roof of a fused implementation).
* predicted time = max(compute time, memory time); bound = "compute" when compute time >= memory time,
  else "memory". For a sum of units the bound is the one holding most of the predicted time
  (`compute_bound_fraction` says how much).
* arithmetic intensity = (flops_matmul + flops_other) / io_bytes; attainable FLOP/s = flops / predicted
  time, which for one unit is min(blended peak, intensity × bandwidth), the blended peak being
  flops / compute time.

`predict(stage_cost, roof)` gives a `StagePrediction` (total, every module path, rows for tables and
artifacts); `predict_latency(stages, roof)` the stage figures: vision time, prefill time (= time to first
token), decode time per token at the decode stage's context, tokens per second. Pure Python, no torch;
predictions of cost nodes are cached per roof (identical blocks share one node), so a sweep over
thousands of pages costs microseconds per page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Mapping, Optional

from llm_perf_opt.analytic.costs import LayerCost
from llm_perf_opt.analytic.stage import CostNode, StageCost
from llm_perf_opt.analytic.time import convention
from llm_perf_opt.analytic.time.hardware import Roof


def compute_seconds(flops_matmul: Any, flops_other: Any, roof: Roof) -> Any:
    """The ideal compute time (`convention.ROOFLINE["compute_time"]`): the matmul-class FLOPs at the matmul peak
    plus the other FLOPs at the vector peak. Numbers or numpy arrays alike: the one formula of `estimate` (one
    unit) and of the levels at batch B (`batch`, every unit of a stage at once)."""
    return flops_matmul / roof.matmul_flops + flops_other / roof.vector_flops


def memory_seconds(io_bytes: Any, roof: Roof) -> Any:
    """The ideal memory time (`convention.ROOFLINE["memory_time"]`): the bytes moved at the bandwidth; numbers or
    numpy arrays alike."""
    return io_bytes / roof.bandwidth


@dataclass(frozen=True, slots=True)
class Estimate:
    """Predicted time of one unit or of a sum of units (seconds, FLOPs, bytes)."""

    flops_matmul: int = 0
    flops_other: int = 0
    io_bytes: int = 0
    compute_s: float = 0.0  # sum over units of their compute times
    memory_s: float = 0.0  # sum over units of their memory times
    time_s: float = 0.0  # sum over units of max(compute, memory)
    compute_bound_s: float = 0.0  # the part of time_s spent in compute-bound units
    units: int = 0

    def __add__(self, other: "Estimate") -> "Estimate":
        return Estimate(
            self.flops_matmul + other.flops_matmul,
            self.flops_other + other.flops_other,
            self.io_bytes + other.io_bytes,
            self.compute_s + other.compute_s,
            self.memory_s + other.memory_s,
            self.time_s + other.time_s,
            self.compute_bound_s + other.compute_bound_s,
            self.units + other.units,
        )

    @property
    def flops(self) -> int:
        return self.flops_matmul + self.flops_other

    @property
    def intensity(self) -> float:
        """FLOPs per I/O byte (inf for work that moves no bytes, 0 for pure data movement)."""
        if self.io_bytes == 0:
            return math.inf if self.flops else 0.0
        return self.flops / self.io_bytes

    @property
    def attainable_flops(self) -> float:
        """FLOPs per predicted second (0 when nothing is predicted)."""
        return self.flops / self.time_s if self.time_s > 0 else 0.0

    @property
    def compute_bound_fraction(self) -> float:
        return self.compute_bound_s / self.time_s if self.time_s > 0 else 0.0

    @property
    def bound(self) -> str:
        """ "compute" or "memory" (the one holding most of the predicted time); "none" for no work."""
        if self.time_s <= 0:
            return "none"
        return "compute" if self.compute_bound_s * 2 >= self.time_s else "memory"

    def to_dict(self) -> dict[str, Any]:
        return {
            "flops": self.flops,
            "flops_matmul": self.flops_matmul,
            "flops_other": self.flops_other,
            "io_bytes": self.io_bytes,
            "intensity": self.intensity,
            "compute_s": self.compute_s,
            "memory_s": self.memory_s,
            "time_s": self.time_s,
            "bound": self.bound,
            "compute_bound_fraction": self.compute_bound_fraction,
            "attainable_flops": self.attainable_flops,
            "units": self.units,
        }


ZERO_ESTIMATE = Estimate()


def estimate(cost: LayerCost, roof: Roof) -> Estimate:
    """One unit on `roof`: compute and memory time, the larger one is the prediction."""
    compute = compute_seconds(cost.flops_matmul, cost.flops_other, roof)
    io = cost.io_bytes
    memory = memory_seconds(io, roof)
    time = compute if compute >= memory else memory
    return Estimate(
        cost.flops_matmul,
        cost.flops_other,
        io,
        compute,
        memory,
        time,
        time if compute >= memory and time > 0 else 0.0,
        1,
    )


class Predictor:
    """Predictions on one roof, cached per cost node (nodes are shared by identical blocks and by the
    analytic model's stage caches, and hash by identity)."""

    MAX_CACHED_NODES = 200_000
    MAX_CACHED_STAGES = 4096

    def __init__(self, roof: Roof) -> None:
        self.roof = roof
        self._nodes: dict[CostNode, Estimate] = {}
        self._stages: dict[StageCost, StagePrediction] = {}  # StageCost hashes by identity (eq=False)

    def node(self, node: CostNode) -> Estimate:
        """The node's own unit plus all its descendants."""
        hit = self._nodes.get(node)
        if hit is not None:
            return hit
        total = estimate(node.own, self.roof) if node.own != _NO_COST else ZERO_ESTIMATE
        for _, child in node.children:
            total = total + self.node(child)
        if len(self._nodes) >= self.MAX_CACHED_NODES:
            self._nodes.clear()
        self._nodes[node] = total
        return total

    def stage(self, cost: StageCost) -> "StagePrediction":
        """The stage's prediction; the same object for the same StageCost (its per-part table is built once)."""
        hit = self._stages.get(cost)
        if hit is None:
            if len(self._stages) >= self.MAX_CACHED_STAGES:
                self._stages.clear()
            hit = self._stages[cost] = StagePrediction(cost.stage, self.roof, self.node(cost.root), cost, self)
        return hit

    def clear(self) -> None:
        self._nodes.clear()
        self._stages.clear()


_NO_COST = LayerCost()
_PREDICTORS: dict[Roof, Predictor] = {}


def predictor(roof: Roof) -> Predictor:
    """The shared predictor of a roof (so repeated predictions reuse its node cache)."""
    found = _PREDICTORS.get(roof)
    if found is None:
        if len(_PREDICTORS) >= 32:
            _PREDICTORS.clear()
        found = _PREDICTORS[roof] = Predictor(roof)
    return found


def clear_caches() -> None:
    """Drop every cached prediction (for benchmarks of the cold path)."""
    _PREDICTORS.clear()


@dataclass(frozen=True, eq=False)
class StagePrediction:
    """One stage on one roof: the total and, on demand, every module path of the stage."""

    stage: str
    roof: Roof
    total: Estimate
    cost: StageCost
    _predictor: Predictor

    @property
    def time_s(self) -> float:
        return self.total.time_s

    @cached_property
    def parts(self) -> dict[str, Estimate]:
        """Every module path of the stage (as `StageCost.parts`) -> its predicted estimate, summed over
        its calls."""
        out: dict[str, Estimate] = {}
        node_estimate = self._predictor.node
        for path, node in self.cost.root.walk():
            e = node_estimate(node)
            out[path] = out[path] + e if path in out else e
        return out

    def part(self, name: str) -> Estimate:
        """A part by alias (`sam`, `decoder.layer.3`) or module path; a path the stage does not run: zero."""
        vocabulary = self.cost.vocabulary
        path = vocabulary.path(name) if vocabulary is not None else ("" if name in ("total", "all") else name)
        return self.total if path == "" else self.parts.get(path, ZERO_ESTIMATE)

    def summary(self) -> dict[str, Estimate]:
        """The top-level parts by alias, in forward order, with the decoder layers after `decoder`."""
        vocabulary = self.cost.vocabulary
        return vocabulary.summary(self.parts) if vocabulary is not None else {}

    def rows(self) -> list[dict[str, Any]]:
        """One row per module path (forward order): path, alias, depth, leaf, then `Estimate.to_dict()`."""
        containers = self.cost.containers
        leaves = {path for path, node in self.cost.root.walk() if not node.children}
        alias = self.cost.vocabulary.alias if self.cost.vocabulary is not None else str
        return [
            {
                "path": path,
                "alias": alias(path),
                "depth": path.count(".") + 1,
                "leaf": path in leaves,
                "container": path in containers,
                **e.to_dict(),
            }
            for path, e in self.parts.items()
        ]

    def to_dict(self, with_parts: bool = True, with_roof: bool = True) -> dict[str, Any]:
        """JSON-able: the stage's figures, with the roof and the convention unless a caller holds them."""
        out: dict[str, Any] = {
            "stage": self.stage,
            "shapes": dict(self.cost.shapes),
            "total": self.total.to_dict(),
            "summary": {k: v.to_dict() for k, v in self.summary().items()},
        }
        if with_roof:
            out["roof"] = self.roof.to_dict()
            out["convention"] = dict(convention.ROOFLINE)
        if with_parts:
            out["parts"] = self.rows()
        return out


def predict(stage: StageCost, roof: Roof) -> StagePrediction:
    """Predicted time of one stage on one roof (total now, parts on demand)."""
    return predictor(roof).stage(stage)


@dataclass(frozen=True, eq=False)
class LatencyPrediction:
    """The stage figures of one page on one roof: vision, prefill (= time to first token), decode."""

    roof: Roof
    vision: StagePrediction
    prefill: StagePrediction
    decode: StagePrediction

    @property
    def vision_s(self) -> float:
        return self.vision.time_s

    @property
    def prefill_s(self) -> float:
        return self.prefill.time_s

    @property
    def ttft_s(self) -> float:
        """Time to first token: the prefill, which runs the vision stack and the whole prompt."""
        return self.prefill.time_s

    @property
    def decode_s(self) -> float:
        """Decode time per token at the decode stage's context."""
        return self.decode.time_s

    @property
    def context_len(self) -> Optional[int]:
        return self.decode.cost.shapes.get("past_len")

    @property
    def tokens_per_s(self) -> float:
        return 1.0 / self.decode_s if self.decode_s > 0 else math.inf

    def stages(self) -> dict[str, StagePrediction]:
        return {"vision": self.vision, "prefill": self.prefill, "decode": self.decode}

    def figures(self) -> dict[str, Any]:
        return {
            "vision_s": self.vision_s,
            "prefill_s": self.prefill_s,
            "ttft_s": self.ttft_s,
            "decode_s_per_token": self.decode_s,
            "decode_context_len": self.context_len,
            "tokens_per_s": self.tokens_per_s,
        }

    def to_dict(self, with_parts: bool = True) -> dict[str, Any]:
        return {
            "roof": self.roof.to_dict(),
            "convention": dict(convention.ROOFLINE),
            "figures": self.figures(),
            "stages": {name: s.to_dict(with_parts, with_roof=False) for name, s in self.stages().items()},
        }


def predict_latency(stages: Mapping[str, StageCost], roof: Roof) -> LatencyPrediction:
    """`stages` holds `vision`, `prefill` and `decode` (as `DeepseekOCRAnalyticModel.stages()` gives them)."""
    p = predictor(roof)
    return LatencyPrediction(roof, p.stage(stages["vision"]), p.stage(stages["prefill"]), p.stage(stages["decode"]))


def predicted_time_table(stage: StageCost, roof: Roof) -> dict[str, float]:
    """{module path: predicted seconds} of one stage on one roof: every path the stage runs, summed over
    its calls, and "" for the whole stage. The per-address counterpart of the measured
    `measure.module_times.module_time_table`, keyed the same way (`named_modules()` paths), to attach to
    call-graph nodes. A path in `stage.containers` (a ModuleList, or CLIP's `self_attn` / `mlp`, run
    through `.forward()`) holds only its children's time: its own ops are costed in its caller."""
    prediction = predict(stage, roof)
    table = {path: estimate.time_s for path, estimate in prediction.parts.items()}
    table[""] = prediction.total.time_s
    return table
