"""A stage's cost at batch B, from its cost at batch 1: per-unit tables and the time levels over them.

The analytic model costs one sequence (`StageCost`). At batch B every unit (a `LayerCost` of the stage:
a leaf module call, or a module's own work outside its children, as `ideal` predicts them)
does B sequences' work; what it reads once for the whole batch are its weights. `BatchRules` (given by
the model family) say which units differ:

* **per-sequence units** repeat whole for every sequence, weights included: a module the forward calls
  once per sample (DeepSeek-OCR's vision encoders run in a Python loop over the images), an embedding
  (it gathers one table row per token);
* **routed units** hold routed-expert weights: at batch B they read the experts the B·T routed tokens
  touch (`analytic.moe_batch`), shared among the routed units in proportion to their batch-1 bytes;
* every other unit: FLOPs, inputs, outputs and activations × B, weights once.

A `UnitTable` holds one stage's units as numpy arrays (identical units merged with a count), so a stage
at many batches and on many roofs costs a few vector operations. A decode step is affine in its context
length (attention scores, KV reads and the rotary table grow linearly with it; nothing else depends on
it), so `DecodeTable` keeps two contexts and interpolates exactly.

Time levels (`BATCH_LEVELS`, by name; their convention `convention.BATCH_LEVELS`): a level maps (table,
batches, roof, MoE shape) to `BatchTimes`, seconds per batch. `ideal` is the roofline per unit at batch B, with
`ideal`'s formula over whole arrays: max(B·compute_seconds(flops), memory_seconds(weights read +
B·(inputs + outputs))), summed over units. The kernel and eager levels at batch B (the serving engines': CUDA
graphs and the vLLM-like engine at the kernel level, the vendor's eager loop at the eager level) need the kernel
census at batch B, not a unit table: they are `analytic.serve_engines.timing.LevelTiming`'s, their texts in
`convention.BATCH_LEVELS`; `level_times` refuses any level but the unit-table ones by name.
Pure Python + numpy; no torch, no family.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Optional, Sequence

import numpy as np

from llm_perf_opt.analytic.costs import LayerCost
from llm_perf_opt.analytic.moe_batch import MoEShape
from llm_perf_opt.analytic.stage import CostNode, StageCost
from llm_perf_opt.analytic.time.convention import IDEAL
from llm_perf_opt.analytic.time.hardware import Roof
from llm_perf_opt.analytic.time.ideal import compute_seconds, memory_seconds
from llm_perf_opt.errors import ConfigError


@dataclass(frozen=True)
class BatchRules:
    """How a family's units scale with the batch (see the module docstring). Both predicates take the
    unit's module path and the module class its cost models."""

    per_sequence: Callable[[str, str], bool]
    routed: Callable[[str, str], bool]
    description: Mapping[str, str] = field(default_factory=dict)


def _units(stage: StageCost) -> Iterable[tuple[str, CostNode]]:
    yield "", stage.root
    yield from stage.root.walk()


_EMPTY = LayerCost()


def _classify(stage: StageCost, rules: BatchRules) -> list[tuple[LayerCost, int]]:
    """[(own cost, kind)] of every unit with work; kind 0 batched, 1 per sequence, 2 routed. A unit below a
    per-sequence path is per sequence too."""
    out: list[tuple[LayerCost, int]] = []
    looped: list[str] = []
    for path, node in _units(stage):
        inside = any(path == p or path.startswith(p + ".") for p in looped)
        if not inside and path and rules.per_sequence(path, node.module):
            looped.append(path)
            inside = True
        if node.own == _EMPTY:
            continue
        kind = 1 if inside else (2 if rules.routed(path, node.module) else 0)
        out.append((node.own, kind))
    return out


@dataclass(frozen=True, eq=False)
class UnitTable:
    """One stage's units (merged when identical) as arrays, per sequence. `w`: weight bytes one call reads;
    `io`: input + output bytes (activations and caches moved); `live`: input + activation bytes (what is
    alive while the unit runs: its inputs and every tensor it produces); `kind`: 0 batched, 1 per sequence,
    2 routed; `count`: identical units merged."""

    stage: str
    tokens_per_sequence: int  # tokens a sequence routes through the MoE in this stage (q_len)
    count: np.ndarray
    kind: np.ndarray
    fm: np.ndarray
    fo: np.ndarray
    w: np.ndarray
    io: np.ndarray
    live: np.ndarray

    @classmethod
    def build(cls, stage: StageCost, rules: BatchRules, tokens_per_sequence: int) -> "UnitTable":
        merged: dict[tuple[LayerCost, int], int] = {}
        for cost, kind in _classify(stage, rules):
            merged[(cost, kind)] = merged.get((cost, kind), 0) + 1
        return cls._from_merged(stage.stage, tokens_per_sequence, merged)

    @classmethod
    def _from_merged(cls, name: str, tokens: int, merged: Mapping[tuple[LayerCost, int], int]) -> "UnitTable":
        keys = list(merged)
        f = lambda get: np.array([get(c) for c, _ in keys], dtype=float)  # noqa: E731
        return cls(
            name,
            tokens,
            np.array([merged[k] for k in keys], dtype=float),
            np.array([k for _, k in keys]),
            f(lambda c: c.flops_matmul),
            f(lambda c: c.flops_other),
            f(lambda c: c.weight_bytes),
            f(lambda c: c.input_bytes + c.output_bytes),
            f(lambda c: c.input_bytes + c.activation_bytes),
        )

    # ------------------------------------------------------------------ totals at batch 1
    @property
    def flops(self) -> float:
        return float(self.count @ (self.fm + self.fo))

    @property
    def routed_weight_bytes(self) -> float:
        return float(self.count @ np.where(self.kind == 2, self.w, 0.0))

    def weight_bytes_at(self, batches: np.ndarray, moe: Optional[MoEShape]) -> np.ndarray:
        """Weight bytes one step at each batch reads (per-sequence units × B; routed: experts touched)."""
        c = self.count
        shared = float(c @ np.where(self.kind == 0, self.w, 0.0))
        looped = float(c @ np.where(self.kind == 1, self.w, 0.0))
        return shared + looped * batches + self._routed_total(batches, moe)

    def _routed_total(self, batches: np.ndarray, moe: Optional[MoEShape]) -> np.ndarray:
        r1 = self.routed_weight_bytes
        if r1 == 0:
            return np.zeros_like(batches, dtype=float)
        if moe is None:
            raise ConfigError("a stage with routed experts needs the model's MoE shape (moe)")
        return np.array([moe.bytes_read(b * self.tokens_per_sequence) for b in batches], dtype=float)

    def peak_live(self, batch: float) -> float:
        """The largest unit's live bytes at `batch` (per-sequence units live one sequence at a time)."""
        if not len(self.live):
            return 0.0
        scale = np.where(self.kind == 1, 1.0, float(batch))
        return float(np.max(self.live * scale))


@dataclass(frozen=True, eq=False)
class DecodeTable:
    """A decode step's units at context `c0` and their change per context token (exact: affine)."""

    at_c0: UnitTable
    slope: UnitTable  # per context token
    c0: int

    @classmethod
    def build(cls, step_a: StageCost, step_b: StageCost, rules: BatchRules, ctx_a: int, ctx_b: int) -> "DecodeTable":
        if ctx_b <= ctx_a:
            raise ValueError("decode contexts must grow")
        a, b = _classify(step_a, rules), _classify(step_b, rules)
        if len(a) != len(b) or any(ka != kb for (_, ka), (_, kb) in zip(a, b)):
            raise ValueError("decode steps at two contexts have different units")
        order: dict = {}
        for (ca, kind), (cb, _) in zip(a, b):
            key = (ca, cb, kind)
            order[key] = order.get(key, 0) + 1
        span = ctx_b - ctx_a
        keys = list(order)
        count = np.array([order[k] for k in keys], dtype=float)
        kinds = np.array([k[2] for k in keys])

        def arr(get, which):
            return np.array([get(k[which]) for k in keys], dtype=float)

        getters = (
            lambda c: c.flops_matmul,
            lambda c: c.flops_other,
            lambda c: c.weight_bytes,
            lambda c: c.input_bytes + c.output_bytes,
            lambda c: c.input_bytes + c.activation_bytes,
        )
        va = [arr(g, 0) for g in getters]
        vs = [(arr(g, 1) - arr(g, 0)) / span for g in getters]
        t_a = UnitTable(step_a.stage, 1, count, kinds, *va)
        t_s = UnitTable(step_a.stage, 1, count, kinds, *vs)
        return cls(t_a, t_s, ctx_a)

    def at(self, context: float) -> UnitTable:
        d = float(context) - self.c0
        a, s = self.at_c0, self.slope
        return UnitTable(
            a.stage,
            1,
            a.count,
            a.kind,
            a.fm + d * s.fm,
            a.fo + d * s.fo,
            a.w + d * s.w,
            a.io + d * s.io,
            a.live + d * s.live,
        )


# --------------------------------------------------------------------------------------- time levels
@dataclass(frozen=True)
class BatchTimes:
    """One level at each batch: predicted seconds, and the compute and memory parts (their sums over units)."""

    level: str
    time_s: np.ndarray
    compute_s: np.ndarray
    memory_s: np.ndarray
    bounds: Optional[tuple[str, ...]] = None  # per batch, where a level names its own (eager: host, kernel: launch)

    def bound(self, i: int) -> str:
        if self.bounds is not None:
            return self.bounds[i]
        return "compute" if self.compute_s[i] >= self.memory_s[i] else "memory"


BatchLevel = Callable[[UnitTable, np.ndarray, Roof, Optional[MoEShape]], BatchTimes]


def ideal_at_batch(table: UnitTable, batches: np.ndarray, roof: Roof, moe: Optional[MoEShape]) -> BatchTimes:
    """The ideal level at each batch (`convention.BATCH_LEVELS["ideal"]`)."""
    b = np.asarray(batches, dtype=float)[None, :]  # (1, nb)
    kind = table.kind[:, None]
    compute = compute_seconds(table.fm, table.fo, roof)[:, None] * b
    weights = np.where(kind == 1, table.w[:, None] * b, np.where(kind == 0, table.w[:, None], 0.0))
    r1 = table.routed_weight_bytes
    if r1:
        share = np.where(kind == 2, table.w[:, None] / r1, 0.0)  # this unit's share of the routed bytes
        weights = weights + share * table._routed_total(np.asarray(batches), moe)[None, :]
    memory = memory_seconds(weights + table.io[:, None] * b, roof)
    count = table.count
    return BatchTimes(IDEAL, count @ np.maximum(compute, memory), count @ compute, count @ memory)


# The levels at batch B by name (see the module docstring: where the kernel and eager levels go).
BATCH_LEVELS: dict[str, BatchLevel] = {IDEAL: ideal_at_batch}


def level_times(
    table: UnitTable, batches: Sequence[float], roof: Roof, moe: Optional[MoEShape] = None, level: str = IDEAL
) -> BatchTimes:
    if level not in BATCH_LEVELS:
        raise ConfigError.field("serve.level", level, f"one of {', '.join(BATCH_LEVELS)} (the levels available here)")
    return BATCH_LEVELS[level](table, np.asarray(batches, dtype=float), roof, moe)
