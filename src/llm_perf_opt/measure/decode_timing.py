"""Time per decode step, measured with the profile stage's method, beside its roofline prediction.

    rows = time_decode_steps(session.model, session.forward_kwargs(inputs), steps, cfg.profile,
                             context=session.forward_context, analytic=analytic, roof=roof)

After a plain prefill with a KV cache, each greedy step k is one `measure.profile.profile_forward` of
that step's forward (`input_ids` (1, 1), the previous step's `past_key_values`): `warmup` plain
forwards, then `repeats` plain and `repeats` profiled forwards interleaved, each timed with
`time.perf_counter` around the forward (CUDA synchronised before and after). Re-running a step is
exact: a legacy cache tuple, which the twin and the vendor code return, is read and never grown in
place (a transformers `Cache` object would be; such a cache is converted to the legacy tuple first).
The measured time of a step is the median plain forward; its parts' times come from the profiled
forwards' module ranges. Then the step runs once more, plainly, to give the next step its cache.

The prediction is `analytic.time.ideal.predict(analytic.decode(context), roof)` at the step's context
(seq_len + k - 1 cached tokens), with the analytic bytes in the roof's dtype, under the roofline
convention (`analytic.time.convention.ROOFLINE`); efficiency = predicted / measured.
"""

from __future__ import annotations

from typing import Any, Callable, ContextManager, Mapping, Optional

import torch
from torch import nn

from llm_perf_opt.measure.profile_config import ProfileConfig

Progress = Callable[[str], None]


def _legacy(past: Any) -> Any:
    to_legacy = getattr(past, "to_legacy_cache", None)
    return to_legacy() if callable(to_legacy) else past


def prediction_model(analytic: Any, roof: Any) -> Any:
    """The analytic model with its bytes in the roof's dtype (as `./dev analyze` predicts)."""
    from llm_perf_opt.analytic import dtype_bytes

    if roof is None or dtype_bytes(roof.dtype) == analytic.dtype_bytes:
        return analytic
    return analytic.with_dtype(roof.dtype)


def predicted_step(analytic: Any, roof: Any, context_len: int) -> dict[str, Any]:
    """The roofline prediction of one decode step at `context_len` cached tokens: total and per part."""
    from llm_perf_opt.analytic.time.ideal import predict

    prediction = predict(prediction_model(analytic, roof).decode(context_len), roof)
    return {
        "predicted_s": prediction.time_s,
        "bound": prediction.total.bound,
        "parts_predicted_s": {
            alias: e.time_s for alias, e in prediction.summary().items() if not alias.startswith("decoder.layer.")
        },
        "roof": roof.label,
        "roof_kind": roof.kind,
        "roof_dtype": roof.dtype,
    }


def time_decode_steps(
    model: nn.Module,
    forward_kwargs: Mapping[str, Any],
    steps: int,
    cfg: ProfileConfig,
    *,
    context: Callable[[], ContextManager[Any]] = torch.no_grad,
    device: Optional[torch.device] = None,
    describe: Optional[Mapping[str, Any]] = None,
    analytic: Any = None,
    roof: Any = None,
    progress: Optional[Progress] = None,
    greedy_decode: Callable[..., Any],
    parts: Optional[Mapping[str, str]] = None,
) -> list[dict[str, Any]]:
    """One row per decode step: context, measured seconds (median plain forward, min, max, profiled), the
    parts' inclusive times, and with `roof` the predicted time, its bound and the efficiency."""
    from llm_perf_opt.measure.profile import ForwardCall, profile_forward

    say = progress or (lambda _msg: None)
    kwargs = dict(forward_kwargs)
    kwargs["use_cache"] = True
    seq_len = int(kwargs["input_ids"].shape[1])
    rows: list[dict[str, Any]] = []

    def run_step(step: int, step_kwargs: dict[str, Any]) -> Any:
        step_kwargs["past_key_values"] = _legacy(step_kwargs["past_key_values"])
        past_len = seq_len + step - 1
        call = ForwardCall(
            model=model,
            kwargs=step_kwargs,
            context=context,
            device=device,
            describe={**dict(describe or {}), "decode_step": step, "past_len": past_len},
        )
        times = profile_forward(call, cfg, parts=parts)  # parts: {alias: path}, each step's parts' times
        wall = times.wall
        row: dict[str, Any] = {
            "step": step,
            "past_len": past_len,
            "measured_s": wall["plain_s"]["median"],
            "min_s": wall["plain_s"]["min"],
            "max_s": wall["plain_s"]["max"],
            "profiled_s": wall["profiled_s"]["median"],
            "min_cpu_s": (wall.get("plain_cpu_s") or {}).get("min"),
            "repeats": times.repeats,  # the rounds run: fewer than profile.repeats for a costly step
            "warmup": cfg.warmup,
            "parts_s": {alias: r["inclusive_s"]["median"] for alias, r in times.coverage.get("parts", {}).items()},
            "parts_min_s": {
                alias: r["inclusive_s"]["min"]
                for alias, r in times.coverage.get("parts", {}).items()
                if r["inclusive_s"].get("min") is not None
            },
            # the plain forwards' part clocks (CPU: no profiler cost per op; `measure.profile.PartClock`)
            "parts_plain_min_s": {
                alias: r["plain_inclusive_s"]["min"]
                for alias, r in times.coverage.get("parts", {}).items()
                if (r.get("plain_inclusive_s") or {}).get("min") is not None
            },
            "coverage": times.coverage.get("coverage"),
            "time_base": times.coverage.get("time_base"),
            "problems": len(times.problems),
        }
        if roof is not None and analytic is not None:
            row.update(predicted_step(analytic, roof, past_len))
            row["efficiency"] = row["predicted_s"] / row["measured_s"] if row["measured_s"] > 0 else None
        rows.append(row)
        say(
            f"decode timing: step {step}/{steps} (context {past_len}): {row['measured_s'] * 1e3:.2f} ms median of "
            f"{cfg.repeats}"
            + (f", predicted {row['predicted_s'] * 1e3:.3f} ms on {roof.label}" if "predicted_s" in row else "")
        )
        with context():
            return model(**step_kwargs)

    with context():
        prefill = model(**kwargs)
    greedy_decode(run_step, prefill, steps, kwargs)
    return rows
