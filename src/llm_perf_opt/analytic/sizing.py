"""Sizing: the device a set of serving targets needs, and how many of a named device a daily volume needs.

Targets: `ttft_s`, `tpot_s` (per page, continuous batching's figures: `analytic.serving`), `pages_per_day`,
with `output_tokens` per page. The reference device (`hardware=...`, a datasheet or `custom`) supplies the
figures a requirement holds fixed. Conventions (`CONVENTION`, in every output):

* latency targets are requirements at batch 1 (the lowest latency a device gives): TTFT = prefill(1) +
  step(1), TPOT = step(1) + prefill(1) / (N - 1);
* required matmul TFLOP/s: the smallest matmul peak that meets the target with the reference's vector peak
  and bandwidth; required bandwidth: the smallest bandwidth with the reference's peaks (infinite when the
  other side alone is already over the target); memory: what batch 1 holds (`analytic.memory_model`);
* pages/day on the reference device: the most pages/day of a batch whose TTFT and TPOT meet the targets
  and whose memory fits (continuous batching); replicas = ceil(target / that), at least 1; each replica runs
  the smallest such batch that carries its share (target / replicas: a small volume is served at batch 1, in
  batch 1's memory, not at the batch of the most pages/day); a single device carrying the whole volume needs
  every compute and bandwidth figure scaled by target / the most pages/day (the ideal level's time scales as
  1 / k when every figure does) and the memory of that batch;
* a reference device whose memory cannot hold one page at batch 1 serves nothing: the volume's row binds on
  memory (what batch 1 needs against what the device has) and no replica count is given;
* `binds`: per target, the resource whose requirement is largest against the reference's figure; overall,
  the largest of those;
* bounds: `pages_per_day` at most `MAX_PAGES_PER_DAY` (beyond it the replica count says nothing), the batch
  at most `MAX_SEARCH_BATCH`;
* a latency target no device within `max_scale` times every figure of the reference meets is refused
  (one line naming the target, the bound that holds it, and by how much);
* engines (`serve.engine`, `analytic.serve_engines`): every figure at the engine's level; a required figure scales
  the reference's (at the kernel and eager levels: every calibrated matmul rate, or every bandwidth, by the same
  factor, the efficiencies, kernel floors and the host kept: a target the host alone misses is unreachable by
  compute or bandwidth); the batches searched above the ideal level are `engine_batches` (1, 2, 3, 4, 6, 8, 12,
  ...: powers of two and 1.5 times them, up to the largest that fits, which is searched too); a paged engine's
  memory is its KV pool's, its batch at most `serve.concurrency`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from llm_perf_opt.analytic.memory_model import Allowance
from llm_perf_opt.analytic.serve_config import MAX_PAGES_PER_DAY_TARGET
from llm_perf_opt.analytic.serve_engines.paged_memory import PagedPool
from llm_perf_opt.analytic.serve_engines.timing import Timing
from llm_perf_opt.analytic.serving import SECONDS_PER_DAY, fit_batch, memory_of, timing_of
from llm_perf_opt.analytic.serving_model import ServingModel
from llm_perf_opt.analytic.time.convention import BATCH_LEVELS, IDEAL
from llm_perf_opt.analytic.time.hardware import Hardware, Roof
from llm_perf_opt.config.fields import MAX_BATCH
from llm_perf_opt.errors import ConfigError

TERA, GIGA = 1e12, 1e9
DEFAULT_MAX_SCALE = 10.0  # about two generations beyond the reference device
MAX_SEARCH_BATCH = MAX_BATCH  # the largest batch any job takes (config.fields)
MAX_PAGES_PER_DAY = MAX_PAGES_PER_DAY_TARGET  # a trillion pages a day (config: analytic.serve_config)
_HUGE = 1e30

CONVENTION = {
    "latency_targets": "at batch 1: TTFT = prefill(1) + step(1), TPOT = step(1) + prefill(1) / (N - 1) "
    "(continuous batching's figures, analytic.serving)",
    "required_matmul": "smallest matmul peak meeting the target with the reference's vector peak and bandwidth",
    "required_bandwidth": "smallest bandwidth meeting the target with the reference's peaks",
    "required_memory": "weights + KV cache + peak activations + allowance at the batch the target is met with",
    "pages_per_day": "reference device: the most pages/day of a batch meeting TTFT and TPOT and fitting "
    "memory (continuous batching); replicas = max(1, ceil(target / that)), each at the smallest such batch "
    "carrying target / replicas; one device carrying it all: every compute and bandwidth figure x (target / "
    "the most pages/day); a device that cannot hold one page: memory binds, no replicas",
    "binds": "the resource whose requirement is largest against the reference's figure",
    "engines": "every figure at the engine's level; required figures scale the reference's rates (efficiencies, "
    "floors and host kept); above the ideal level the batches searched are 1, 2, 3, 4, 6, 8, 12, ... (powers of two "
    "and 1.5x them) up to the largest that fits",
}


def engine_batches(top: int) -> np.ndarray:
    """1, 2, 3, 4, 6, 8, 12, 16, ... up to `top`, and `top` (the batches sizing searches above the ideal level)."""
    out, p = {1}, 1
    while p <= top:
        out.update(b for b in (p, p + p // 2) if b <= top)
        p *= 2
    out.add(top)
    return np.array(sorted(out), dtype=float)


@dataclass(frozen=True)
class Targets:
    ttft_s: Optional[float]  # None: no TTFT target
    tpot_s: float
    pages_per_day: float
    output_tokens: int

    def __post_init__(self) -> None:
        for name in ("ttft_s", "tpot_s", "pages_per_day"):
            v = getattr(self, name)
            if name == "ttft_s" and v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf:
                raise ConfigError.field(f"size.{name}", v, "must be a positive number")
        if self.pages_per_day > MAX_PAGES_PER_DAY:
            raise ConfigError.field(
                "size.pages_per_day", self.pages_per_day, f"must be at most {MAX_PAGES_PER_DAY:.0e} pages a day"
            )
        o = self.output_tokens
        if isinstance(o, bool) or not isinstance(o, int) or o < 1:
            raise ConfigError.field("serve.output_tokens", o, "must be a positive integer")


@dataclass(frozen=True)
class Requirement:
    target: str  # "ttft_s", "tpot_s", "pages_per_day"
    value: float  # the target's value
    achieved: float  # the reference device's figure for it (seconds, or pages/day per device)
    matmul_tflops: float  # required (inf: not reachable by this resource alone)
    bandwidth_gbs: float
    memory_gb: float
    batch: int
    binds: str  # compute, bandwidth or memory
    ratio: float  # the binding requirement / the reference's figure (> 1: the reference misses)

    def to_dict(self) -> dict[str, Any]:
        f = lambda x: x if math.isfinite(x) else None  # noqa: E731  JSON has no infinity
        return {
            "target": self.target,
            "value": self.value,
            "achieved": self.achieved,
            "required_matmul_tflops": f(self.matmul_tflops),
            "required_bandwidth_gbs": f(self.bandwidth_gbs),
            "required_memory_gb": self.memory_gb,
            "batch": self.batch,
            "binds": self.binds,
            "ratio": self.ratio,
        }


@dataclass(frozen=True)
class Sizing:
    hardware: str
    level: str
    targets: Targets
    requirements: tuple[Requirement, ...]
    batch: int  # each replica's batch: the smallest carrying its share (0: no batch meets the targets or fits)
    pages_per_day_per_device: float  # the most one reference device carries within the targets
    replicas: Optional[int]  # None: the reference device meets the latency targets at no batch, or holds no page
    max_fit_batch: Optional[int]
    best_batch: int = 0  # the batch of the most pages/day per device
    batch1_memory_gb: float = 0.0  # what one page at batch 1 holds (the least memory any batch needs)
    capacity_gb: Optional[float] = None  # the reference device's memory (None: not given)
    engine: str = "ideal"

    @property
    def holds_no_page(self) -> bool:
        """The reference device's memory cannot hold one page at batch 1."""
        return self.capacity_gb is not None and self.batch1_memory_gb > self.capacity_gb

    @property
    def binding(self) -> Requirement:
        return max(self.requirements, key=lambda r: r.ratio)

    def to_dict(self) -> dict[str, Any]:
        b = self.binding
        return {
            "hardware": self.hardware,
            "engine": self.engine,
            "level": self.level,
            "level_convention": BATCH_LEVELS.get(self.level),
            "targets": self.targets.__dict__,
            "requirements": [r.to_dict() for r in self.requirements],
            "batch": self.batch,
            "pages_per_day_per_device": self.pages_per_day_per_device,
            "replicas": self.replicas,
            "max_fit_batch": self.max_fit_batch,
            "best_batch": self.best_batch,
            "batch1_memory_gb": self.batch1_memory_gb,
            "binding": {"target": b.target, "resource": b.binds, "ratio": b.ratio},
            "convention": dict(CONVENTION),
        }


def _latency_fns(model: ServingModel, n: int) -> dict[str, Callable[[Timing], float]]:
    ctx = model.mean_decode_context(model.prompt_tokens, n)

    def parts(t: Timing) -> tuple[float, float]:
        return float(t.prefill([1.0]).time_s[0]), float(t.decode([1.0], ctx).time_s[0])

    def ttft(t: Timing) -> float:
        p, s = parts(t)
        return p + s

    def tpot(t: Timing) -> float:
        p, s = parts(t)
        return s + (p / (n - 1) if n > 1 else 0.0)

    return {"ttft_s": ttft, "tpot_s": tpot}


def _smallest(fn: Callable[[float], float], target: float, ref: float) -> float:
    """The smallest x with fn(x) <= target (fn falls as x grows); inf when even x -> inf misses."""
    if fn(_HUGE) > target:
        return math.inf
    lo, hi = ref, ref
    while fn(lo) <= target and lo > 1e-12 * ref:
        lo /= 2
    while fn(hi) > target:
        hi *= 2
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if fn(mid) <= target else (mid, hi)
    return hi


def size(
    model: ServingModel,
    hardware: Hardware,
    roof: Roof,
    targets: Targets,
    allowance: Allowance = Allowance(),
    level: str = IDEAL,
    max_scale: float = DEFAULT_MAX_SCALE,
    timing: Optional[Timing] = None,
    paged: Optional[PagedPool] = None,
    engine: str = "ideal",
) -> Sizing:
    n = model.check_output_tokens(targets.output_tokens)
    timing = timing_of(model, roof, level, timing)
    level = timing.level
    capacity = hardware.memory_bytes
    mem1 = memory_of(model, 1, n, allowance, None, paged, prefill_batch=1).total
    reqs = []
    for name, fn in _latency_fns(model, n).items():
        target = getattr(targets, name)
        if target is None:
            continue
        achieved = fn(timing)
        at_max = fn(timing.scaled(max_scale, max_scale, max_scale))
        if at_max > target:
            ctx = model.mean_decode_context(model.prompt_tokens, n)
            est_ref = timing.prefill([1.0]) if name == "ttft_s" else timing.decode([1.0], ctx)
            bound = est_ref.bound(0)
            bound = "memory bandwidth" if bound == "memory" else bound
            raise ConfigError.field(
                f"size.{name}",
                target,
                f"no device within size.max_scale={max_scale:g}x every figure of {hardware.name} "
                f"meets it: {achieved:.3g} s at batch 1 there ({engine} engine, {level} level), "
                f"{achieved / target:.3g}x over ({bound}-bound; {at_max / target:.3g}x over even at {max_scale:g}x)",
            )
        p_req = _smallest(lambda p: fn(timing.scaled(matmul=p / roof.matmul_flops)), target, roof.matmul_flops)
        bw_req = _smallest(lambda bw: fn(timing.scaled(bandwidth=bw / roof.bandwidth)), target, roof.bandwidth)
        ratios = {
            "compute": p_req / roof.matmul_flops,
            "bandwidth": bw_req / roof.bandwidth,
            "memory": mem1 / capacity if capacity else 0.0,
        }
        # a resource that cannot meet the target alone (inf) says nothing about which binds: compare the finite ones
        finite = {k: v for k, v in ratios.items() if math.isfinite(v)} or ratios
        binds = max(finite, key=finite.__getitem__)
        reqs.append(
            Requirement(name, target, achieved, p_req / TERA, bw_req / GIGA, mem1 / GIGA, 1, binds, finite[binds])
        )
    # pages/day on the reference device
    fit = fit_batch(model, n, capacity, allowance, True, paged) if capacity else None
    top = min(fit if fit is not None else MAX_SEARCH_BATCH, MAX_SEARCH_BATCH)
    if paged is not None:
        top = min(top, paged.concurrency)
    best_b, best_ppd, use_b = 0, 0.0, 0
    replicas: Optional[int] = None
    if top >= 1:
        bs = np.arange(1, top + 1, dtype=float) if level == IDEAL else engine_batches(top)
        ctx = model.mean_decode_context(model.prompt_tokens, n)
        pre1 = float(timing.prefill([1.0]).time_s[0])
        step = timing.decode(bs, ctx).time_s
        ttft = pre1 + step
        tpot = step + (bs * pre1 / (n - 1) if n > 1 else 0.0)
        ppd = bs / (bs * pre1 + (n - 1) * step) * SECONDS_PER_DAY
        ttft_target = math.inf if targets.ttft_s is None else targets.ttft_s
        ok = (ttft <= ttft_target) & (tpot <= targets.tpot_s)
        if ok.any():
            i = int(np.argmax(np.where(ok, ppd, -1.0)))
            best_b, best_ppd = int(bs[i]), float(ppd[i])
            replicas = max(1, math.ceil(targets.pages_per_day / best_ppd - 1e-9))
            share = targets.pages_per_day / replicas  # what each replica carries
            carries = ok & (ppd >= share * (1 - 1e-12))
            use_b = int(bs[int(np.argmax(carries))]) if carries.any() else best_b
    if best_b:
        k = targets.pages_per_day / best_ppd
        mem = memory_of(model, use_b, n, allowance, None, paged, prefill_batch=1).total
        ratios = {"compute": k, "bandwidth": k, "memory": mem / capacity if capacity else 0.0}
        binds = max(ratios, key=ratios.__getitem__)
        if binds in ("compute", "bandwidth"):  # both scale by k: name the roof the decode step sits on
            est = timing.decode([float(best_b)], model.mean_decode_context(model.prompt_tokens, n))
            bound = est.bound(0)
            binds = "compute" if bound == "compute" else ("host" if bound == "host" else "bandwidth")
        reqs.append(
            Requirement(
                "pages_per_day",
                targets.pages_per_day,
                best_ppd,
                roof.matmul_flops * k / TERA,
                roof.bandwidth * k / GIGA,
                mem / GIGA,
                use_b,
                binds,
                max(ratios.values()),
            )
        )
    elif capacity and mem1 > capacity:  # not one page fits: memory, not latency, is what stops it
        reqs.append(
            Requirement(
                "pages_per_day",
                targets.pages_per_day,
                0.0,
                math.inf,
                math.inf,
                mem1 / GIGA,
                1,
                "memory",
                mem1 / capacity,
            )
        )
    else:
        reqs.append(
            Requirement(
                "pages_per_day", targets.pages_per_day, 0.0, math.inf, math.inf, mem1 / GIGA, 0, "latency", math.inf
            )
        )
    return Sizing(
        hardware.name,
        level,
        targets,
        tuple(reqs),
        use_b,
        best_ppd,
        replicas,
        fit,
        best_batch=best_b,
        batch1_memory_gb=mem1 / GIGA,
        capacity_gb=capacity / GIGA if capacity else None,
        engine=engine,
    )
