"""Serving figures on one device: TTFT, time per output token, tokens/s, pages/s and pages/day at batch B,
static and continuous batching, and the latency-vs-throughput curve as B grows.

Conventions (`CONVENTION`, written into serving.json and printed):

* One page = one sequence: the prefill (vision + the prompt) yields the first token, then N - 1 decode
  steps yield the rest (N = `output_tokens`). A decode step's time is taken at the mean context of those
  steps (`ServingModel.mean_decode_context`): exact for each unit whose bound does not change over the
  steps, and every unit is affine in the context.
* **static batching**: B pages start together: TTFT = prefill at batch B; TPOT = decode step at batch B;
  a batch takes TTFT + (N - 1)·TPOT; pages/s = B / that; tokens/s = B·N / that.
* **continuous batching, steady state** (prefills interleaved with decode steps, as vLLM schedules them):
  B slots always full; a finished page's slot is refilled by one prefill at batch 1 run between two decode
  steps. Per B pages: B prefills at batch 1 + (N - 1) decode steps at batch B, so pages/s = B / (B·prefill(1)
  + (N - 1)·step(B)); a page's TPOT = step(B) + B·prefill(1) / (N - 1) (the prefills that stall its steps,
  averaged over them); TTFT = prefill(1) + step(B) (a new page waits for the step in flight; no queueing:
  arrivals at the service rate).
* pages/day = pages/s × 86,400. Every time is at one engine's time level (`analytic.serve_engines`: `ideal`
  the roofline, `hf_eager` the eager level, `cuda_graphs` and `vllm` the kernel level), named in every output; the
  engine's `Timing` gives the prefill and the decode step at batch B (default: the roofline).
* a paged engine (`vllm`) holds its pages in a paged KV pool (`serve_engines.paged_memory`) instead of
  `memory_model`'s static allocation.

The curve over B (`latency_curve`) marks its knee: the batch where the decode step turns compute-bound
(beyond it throughput gains flatten and latency grows about linearly), or the largest batch that fits in
memory if that comes first; if neither happens in the range, throughput is still bandwidth-bound there.
At the eager level a decode step whose host work exceeds its device work is host-bound: the knee is then where
the device takes over (the first batch that is not host-bound), or none in range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from llm_perf_opt.analytic.memory_model import CONVENTION as MEMORY_CONVENTION
from llm_perf_opt.analytic.memory_model import Allowance, MemoryUse, max_batch, memory_use
from llm_perf_opt.analytic.serve_engines.paged_memory import PagedPool
from llm_perf_opt.analytic.serve_engines.timing import IdealTiming, Timing
from llm_perf_opt.analytic.serving_model import ServingModel
from llm_perf_opt.analytic.time import convention
from llm_perf_opt.analytic.time.convention import IDEAL
from llm_perf_opt.analytic.time.hardware import Roof
from llm_perf_opt.errors import ConfigError

SECONDS_PER_DAY = 86_400
# Tokens generated per page. The DeepSeek-OCR paper measures its compression on Fox benchmark pages of 600
# to 1,300 text tokens (ground truth tokenised with the model's own tokenizer); a full page of document
# text in Markdown lands in that band. 1,000 is its middle, rounded; pass serve.output_tokens for yours.
DEFAULT_OUTPUT_TOKENS = 1000
DEFAULT_CURVE_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)

CONVENTION = {
    "page": "one sequence: the prefill yields the first token, N - 1 decode steps the rest",
    "decode_step": "at the mean context of the N - 1 steps (prompt + (N - 2) / 2); units are affine in the context",
    "static": "B pages together: TTFT = prefill(B), TPOT = step(B), batch time = TTFT + (N - 1) TPOT, "
    "pages/s = B / batch time, tokens/s = B N / batch time",
    "continuous": "steady state, B slots full, each finished slot refilled by a batch-1 prefill between decode "
    "steps: pages/s = B / (B prefill(1) + (N - 1) step(B)), TPOT = step(B) + B prefill(1) / (N - 1), "
    "TTFT = prefill(1) + step(B) (no queueing)",
    "pages_per_day": "pages/s x 86400",
    "knee": "the batch where the decode step turns compute-bound, or the largest batch that fits in memory if "
    "smaller; none in range: still bandwidth-bound",
    "memory": "; ".join(f"{k}: {v}" for k, v in MEMORY_CONVENTION.items()),
}


def check_batch(batch: Any, name: str = "workload.batch") -> int:
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError.field(name, batch, "must be a positive integer (pages served together)")
    return batch


@dataclass(frozen=True)
class Figures:
    """One batching scheme at batch B."""

    ttft_s: float
    tpot_s: float
    pages_per_s: float
    tokens_per_s: float

    @property
    def pages_per_day(self) -> float:
        return self.pages_per_s * SECONDS_PER_DAY

    def to_dict(self) -> dict[str, float]:
        return {
            "ttft_s": self.ttft_s,
            "tpot_s": self.tpot_s,
            "pages_per_s": self.pages_per_s,
            "tokens_per_s": self.tokens_per_s,
            "pages_per_day": self.pages_per_day,
        }


@dataclass(frozen=True)
class ServingPoint:
    batch: int
    output_tokens: int
    level: str
    prefill_s: float  # prefill at batch B
    prefill_1_s: float  # prefill at batch 1
    step_s: float  # decode step at batch B, mean context
    step_bound: str  # compute or memory (the decode step's)
    prefill_bound: str
    static: Figures
    continuous: Figures
    memory: MemoryUse  # static batching (prefill at batch B)
    memory_continuous: MemoryUse  # continuous batching (prefill at batch 1)
    experts_per_layer: Optional[float] = None  # routed experts a decode step touches per MoE layer

    def to_dict(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "output_tokens": self.output_tokens,
            "level": self.level,
            "prefill_s": self.prefill_s,
            "prefill_batch1_s": self.prefill_1_s,
            "decode_step_s": self.step_s,
            "decode_bound": self.step_bound,
            "prefill_bound": self.prefill_bound,
            "static": self.static.to_dict(),
            "continuous": self.continuous.to_dict(),
            "memory": self.memory.to_dict(),
            "memory_continuous": self.memory_continuous.to_dict(),
            "experts_per_layer": self.experts_per_layer,
        }


def timing_of(model: ServingModel, roof: Roof, level: str, timing: Optional[Timing]) -> Timing:
    if timing is not None:
        return timing
    if level != IDEAL:
        raise ConfigError.field("level", level, "needs an engine's timing (analytic.serve_engines.select)")
    return IdealTiming(model, roof)


def _figures(model: ServingModel, timing: Timing, batches: np.ndarray, output_tokens: int):
    ctx = model.mean_decode_context(model.prompt_tokens, output_tokens)
    pre = timing.prefill(batches)
    pre1 = timing.prefill([1.0]).time_s[0]
    step = timing.decode(batches, ctx)
    return pre, pre1, step


def memory_of(
    model: ServingModel,
    batch: int,
    output_tokens: int,
    allowance: Allowance,
    capacity: Optional[float],
    paged: Optional[PagedPool],
    prefill_batch: Optional[int] = None,
) -> MemoryUse:
    if paged is not None:
        return paged.use(model, batch, output_tokens, allowance, capacity)
    return memory_use(model, batch, output_tokens, allowance, capacity, prefill_batch=prefill_batch)


def fit_batch(
    model: ServingModel,
    output_tokens: int,
    capacity: float,
    allowance: Allowance,
    continuous: bool = False,
    paged: Optional[PagedPool] = None,
) -> int:
    """The largest batch that fits (a paged engine: the pages its KV pool holds)."""
    if paged is not None:
        return paged.max_batch(model, output_tokens, capacity, allowance)
    return max_batch(model, output_tokens, capacity, allowance, continuous)


def serving_points(
    model: ServingModel,
    roof: Roof,
    batches: Sequence[int],
    output_tokens: int,
    allowance: Allowance = Allowance(),
    capacity: Optional[float] = None,
    level: str = IDEAL,
    timing: Optional[Timing] = None,
    paged: Optional[PagedPool] = None,
) -> list[ServingPoint]:
    """Static and continuous figures at each batch (vectorised over the batches)."""
    for b in batches:
        check_batch(b)
    model.check_output_tokens(output_tokens)
    bs = np.asarray(batches, dtype=float)
    timing = timing_of(model, roof, level, timing)
    level = timing.level
    pre, pre1, step = _figures(model, timing, bs, output_tokens)
    n = output_tokens
    out = []
    for i, b in enumerate(batches):
        p, s = float(pre.time_s[i]), float(step.time_s[i])
        batch_time = p + (n - 1) * s
        static = Figures(p, s, b / batch_time, b * n / batch_time)
        cycle = b * pre1 + (n - 1) * s
        tpot_cb = s + (b * pre1 / (n - 1) if n > 1 else 0.0)
        continuous = Figures(pre1 + s, tpot_cb, b / cycle, b * n / cycle)
        experts = model.moe.touched_per_layer(b) if model.moe else None
        out.append(
            ServingPoint(
                b,
                n,
                level,
                p,
                float(pre1),
                s,
                step.bound(i),
                pre.bound(i),
                static,
                continuous,
                memory_of(model, b, n, allowance, capacity, paged),
                memory_of(model, b, n, allowance, capacity, paged, prefill_batch=1),
                experts,
            )
        )
    return out


def serving_point(
    model: ServingModel,
    roof: Roof,
    batch: int,
    output_tokens: int,
    allowance: Allowance = Allowance(),
    capacity: Optional[float] = None,
    level: str = IDEAL,
    timing: Optional[Timing] = None,
    paged: Optional[PagedPool] = None,
) -> ServingPoint:
    return serving_points(model, roof, [batch], output_tokens, allowance, capacity, level, timing, paged)[0]


@dataclass(frozen=True)
class Knee:
    batch: Optional[int]
    reason: str  # compute, memory, bandwidth (no knee in range), host (eager level: host-bound in the whole range)
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {"batch": self.batch, "reason": self.reason, "note": self.note}


def find_knee(points: Sequence[ServingPoint], fit_batch: Optional[int]) -> Knee:
    compute = next((p.batch for p in points if p.step_bound == "compute"), None)
    if fit_batch is not None and (compute is None or fit_batch < compute):
        if fit_batch == 0:
            return Knee(0, "memory", "not even one page fits in the device's memory")
        at = next((p.step_bound for p in points if p.batch == fit_batch), "memory")
        still = {"memory": "bandwidth", "launch": "launch"}.get(at, at)
        return Knee(
            fit_batch,
            "memory",
            f"memory capacity: the largest batch that fits is {fit_batch}; the decode "
            f"step is still {still}-bound there, so more memory would buy throughput",
        )
    if compute is not None:
        return Knee(
            compute,
            "compute",
            f"the decode step turns compute-bound at batch {compute}: beyond it "
            "throughput gains flatten and latency grows about linearly with the batch",
        )
    last = points[-1].batch if points else None
    if points and all(p.step_bound == "host" for p in points):
        return Knee(
            None,
            "host",
            f"no knee up to batch {last}: the decode step is host-bound (the host's per-kernel work and syncs set "
            "its time), so larger batches buy throughput at almost no latency until the device takes over",
        )
    return Knee(
        None,
        "bandwidth",
        f"no knee up to batch {last}: the decode step is still bandwidth-bound "
        "(weights and KV reads dominate), so larger batches still buy throughput",
    )


def latency_curve(
    model: ServingModel,
    roof: Roof,
    output_tokens: int,
    batches: Sequence[int] = DEFAULT_CURVE_BATCHES,
    allowance: Allowance = Allowance(),
    capacity: Optional[float] = None,
    level: str = IDEAL,
    continuous: bool = False,
    timing: Optional[Timing] = None,
    paged: Optional[PagedPool] = None,
) -> tuple[list[ServingPoint], Knee, Optional[int]]:
    """The points over `batches` (up to the largest that fits, and that one too, when a capacity is given),
    the knee, and the largest batch that fits (None without a capacity; `continuous`: with prefills at
    batch 1, else static batching's; a paged engine: its pool's, and no more than its concurrency)."""
    fit = fit_batch(model, output_tokens, capacity, allowance, continuous, paged) if capacity is not None else None
    memory_fit = fit  # what the memory holds (the knee's memory reason)
    if paged is not None and (fit is None or paged.concurrency < fit):  # the engine admits no more than its slots
        fit, memory_fit = paged.concurrency, None
    wanted = sorted({b for b in batches if fit is None or b <= fit} | ({fit} if fit else set()))
    points = (
        serving_points(model, roof, wanted, output_tokens, allowance, capacity, level, timing, paged) if wanted else []
    )
    return points, find_knee(points, memory_fit), fit


CURVE_COLUMNS = (
    "batch",
    "level",
    "ttft_static_s",
    "tpot_static_s",
    "tokens_per_s_static",
    "pages_per_day_static",
    "ttft_continuous_s",
    "tpot_continuous_s",
    "tokens_per_s_continuous",
    "pages_per_day_continuous",
    "decode_step_s",
    "decode_bound",
    "experts_per_layer",
    "memory_bytes",
    "memory_dominant",
    "fits",
)


def curve_rows(points: Sequence[ServingPoint]) -> list[dict[str, Any]]:
    return [
        {
            "batch": p.batch,
            "level": p.level,
            "ttft_static_s": p.static.ttft_s,
            "tpot_static_s": p.static.tpot_s,
            "tokens_per_s_static": p.static.tokens_per_s,
            "pages_per_day_static": p.static.pages_per_day,
            "ttft_continuous_s": p.continuous.ttft_s,
            "tpot_continuous_s": p.continuous.tpot_s,
            "tokens_per_s_continuous": p.continuous.tokens_per_s,
            "pages_per_day_continuous": p.continuous.pages_per_day,
            "decode_step_s": p.step_s,
            "decode_bound": p.step_bound,
            "experts_per_layer": p.experts_per_layer,
            "memory_bytes": p.memory.total,
            "memory_dominant": p.memory.dominant,
            "fits": p.memory.fits,
        }
        for p in points
    ]


def conventions(level: str) -> dict[str, str]:
    return {"level": convention.batch_level(level), **CONVENTION}


def pages_per_day(
    model: ServingModel,
    roof: Roof,
    batches: Sequence[float],
    output_tokens: int,
    level: str = IDEAL,
    timing: Optional[Timing] = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(static, continuous) pages/day at each batch, vectorised (the sweep and the sizing benchmark's path;
    `serving_points` gives the same figures with memory and bounds, one object per batch)."""
    bs = np.asarray(batches, dtype=float)
    pre, pre1, step = _figures(model, timing_of(model, roof, level, timing), bs, output_tokens)
    n = output_tokens
    static = bs / (pre.time_s + (n - 1) * step.time_s) * SECONDS_PER_DAY
    continuous = bs / (bs * pre1 + (n - 1) * step.time_s) * SECONDS_PER_DAY
    return static, continuous
