"""`Timing`: the prefill (vision + the prompt, one page per sequence) and a decode step of a `ServingModel` at batch
B on one device, at one engine's time level, as `BatchTimes`.

* `IdealTiming`: the roofline over the model's unit tables (`time.batch.level_times`, vectorised over B).
* `LevelTiming`: the kernel or eager level (`time.levels.LevelPredictor`, the same functions as the levels at batch
  1) of the family's stage at batch B (`ServingModel.stage_at`): the batch-B forward's kernel census, the MoE's
  routed kernels scaled to the experts B x T tokens touch in expectation (`moe_batch`; the census assumes
  min(E, T x k), `kernels_taken_off` scales the counts), for the "vllm" kernel list the fused census
  (`vllm_kernels.fused_stage`); at the eager level a decode step adds the generate loop's host work per step
  (`generate_host.GenerateHost`). Each (stage, batch, context) is computed once.

`scaled(matmul, vector, bandwidth)`: the same engine on a device whose figures are that many times the reference's
(sizing's requirements).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional, Sequence

import numpy as np

from llm_perf_opt.analytic.kernels_taken_off import kernels_taken_off
from llm_perf_opt.analytic.serve_engines.engine import Engine
from llm_perf_opt.analytic.serve_engines.generate_host import GenerateHost
from llm_perf_opt.analytic.serving_model import ServingModel
from llm_perf_opt.analytic.stage import StageCost
from llm_perf_opt.analytic.time.batch import BatchTimes, level_times
from llm_perf_opt.analytic.time.convention import IDEAL, KERNEL
from llm_perf_opt.analytic.time.figures import TimeModel
from llm_perf_opt.analytic.time.hardware import Roof
from llm_perf_opt.analytic.time.levels import LevelPredictor, LevelTimes


class Timing:
    level: str = IDEAL
    roof: Roof
    generate: Optional[GenerateHost] = None  # the generate loop's host work it charges per decode step (None: none)

    def prefill(self, batches: Sequence[float]) -> BatchTimes:
        raise NotImplementedError

    def decode(self, batches: Sequence[float], context: float) -> BatchTimes:
        raise NotImplementedError

    def scaled(self, matmul: float = 1.0, vector: float = 1.0, bandwidth: float = 1.0) -> "Timing":
        raise NotImplementedError


class IdealTiming(Timing):
    def __init__(self, model: ServingModel, roof: Roof) -> None:
        self.model, self.roof, self.level = model, roof, IDEAL

    def prefill(self, batches):
        return level_times(self.model.prefill, batches, self.roof, self.model.moe)

    def decode(self, batches, context):
        return level_times(self.model.decode.at(context), batches, self.roof, self.model.moe)

    def scaled(self, matmul=1.0, vector=1.0, bandwidth=1.0):
        return IdealTiming(self.model, self.roof.scaled(matmul, vector, bandwidth))


def routed_census(stage: StageCost, model: ServingModel, tokens: float) -> StageCost:
    """The stage with its routed units' kernels scaled from the census's min(E, T x k) experts to the distinct
    experts `tokens` routed tokens touch (`MoEShape.touched_per_layer`: expected, or logged for that token count)."""
    moe, rules = model.moe, model.rules
    if moe is None or rules is None:
        return stage
    listed = min(moe.n_experts, tokens * moe.top_k)
    touched = moe.touched_per_layer(tokens)
    if listed <= 0 or touched >= listed:
        return stage
    off = {}
    for path, node in stage.root.walk():
        if path and rules.routed(path, node.module) and node.own.kernels:
            n = node.own.kernels.count
            off[path] = off.get(path, 0) + int(round(n * (1 - touched / listed)))
    return kernels_taken_off(stage, off) if off else stage


def stage_levels(stage: StageCost, predictor: LevelPredictor) -> LevelTimes:
    """The levels of a whole stage (its roots run one after another; a decode step the device's last-level cache
    holds on its resident figures, `LevelPredictor.for_stage`)."""
    predictor = predictor.for_stage(stage)
    if stage.roots == ("",):
        nodes = [stage.root]
    else:
        flat: dict = {}
        for path, node in stage.root.walk():
            flat.setdefault(path, []).append(node)
        nodes = [n for r in stage.roots for n in flat.get(r, [])]
    return predictor.levels(nodes, 0.0)


class LevelTiming(Timing):
    """The kernel or eager level of `engine` at batch B (see the module docstring)."""

    def __init__(
        self,
        model: ServingModel,
        time_model: TimeModel,
        engine: Engine,
        generate: Optional[GenerateHost] = None,
    ) -> None:
        self.model, self.time_model, self.engine, self.generate = model, time_model, engine, generate
        self.roof = time_model.roof
        self.level = engine.level
        self._predictor = LevelPredictor(time_model)
        self._cache: dict[tuple, tuple[float, float, float, str, float]] = {}

    def _stage(self, stage: str, batch: int, context: Optional[int]) -> StageCost:
        sm = self.model
        st = sm.stage_at(stage, batch, context, self.engine.kernels)  # type: ignore[misc]
        tokens = batch * (sm.prompt_tokens if stage == "prefill" else 1)
        if self.engine.kernels == "vllm":
            from llm_perf_opt.analytic.serve_engines.vllm_kernels import fused_stage

            return fused_stage(st, sm, tokens)
        return routed_census(st, sm, tokens)

    def _one(self, stage: str, batch: int, context: Optional[int]) -> tuple[float, float, float, str, float]:
        key = (stage, batch, context)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        lt = stage_levels(self._stage(stage, batch, context), self._predictor)
        kb = lt.kernel_bound_s
        compute, memory = kb.get("compute", 0.0), kb.get("memory", 0.0) + kb.get("launch", 0.0)
        host = 0.0
        if self.level == KERNEL:
            t = lt.kernel_s
            bound = max(kb.items(), key=lambda kv: kv[1])[0] if kb else "none"
        else:
            t = lt.eager_s
            bound = lt.verdict or "none"
            host = lt.host_s or 0.0
            if stage == "decode" and self.generate is not None:
                extra = self.generate.step_s(batch, float(context or 0))
                t, host = t + extra, host + extra  # type: ignore[operator]
                if extra > lt.kernel_s:  # type: ignore[operator]
                    bound = "host"
        out = (float(t), compute, memory, bound, host)  # type: ignore[arg-type]
        self._cache[key] = out
        return out

    def _times(self, stage: str, batches: Sequence[float], context: Optional[int]) -> BatchTimes:
        rows = [self._one(stage, int(b), context) for b in batches]
        return BatchTimes(
            self.level,
            np.array([r[0] for r in rows]),
            np.array([r[1] for r in rows]),
            np.array([r[2] for r in rows]),
            tuple(r[3] for r in rows),
        )

    def prefill(self, batches):
        return self._times("prefill", batches, None)

    def decode(self, batches, context):
        return self._times("decode", batches, int(round(float(context))))

    def scaled(self, matmul=1.0, vector=1.0, bandwidth=1.0):
        tm = self.time_model
        dev = tm.device.scaled(matmul, vector, bandwidth) if tm.device is not None else None
        roof = self.roof.scaled(matmul, vector, bandwidth)
        return LevelTiming(self.model, replace(tm, roof=roof, device=dev), self.engine, self.generate)
