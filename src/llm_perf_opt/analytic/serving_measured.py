"""The measured side of serving: a serving curve measured with plain forwards (`benchmarks/serving_curve.py`'s
`serving_curve.json`: prefill and greedy decode steps at batches 1..N on one device) beside the `hf_eager` engine's
prediction of the same forwards at each batch, and the ratio predicted / measured.

What is compared: the measured fastest time of the prefill at batch B, and the mean over the recorded decode steps of
their fastest times at batch B (`measured_field`: the wall time, or on a CPU curve measured on one thread the
thread's CPU time, `cpu_s`: equal to the wall on an idle host, without the time other processes held the core),
against `hf_eager`'s eager level of the same forwards (the prefill at batch B; the decode step at batch B at the
recorded steps' mean context), without the generate loop's host work (the plain forwards run no `generate()`). The
record's own configuration (model, mode, runtime) must be the job's; the prediction is the job's device and host
figures (`hardware=`), named in `predicted_by`.

A MoE curve that logged the experts each call touched (`logged_experts`) is priced a second time at those counts
(`MoEShape.with_logged`): the `*_touched` fields, the forwards as they ran, beside the forecast's expected experts.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional

from llm_perf_opt.analytic.serve_engines.timing import Timing
from llm_perf_opt.artifacts import read_artifact
from llm_perf_opt.errors import ArtifactError, ConfigError

CURVE_SCHEMA = "llm_perf_opt.serving_curve"
CURVE_READS = (1,)


def load_curve(path: str | os.PathLike, field: str = "serve.measured") -> dict[str, Any]:
    """A `serving_curve.json`'s data; ConfigError naming `field` when it is not one."""
    try:
        _, data = read_artifact(path, CURVE_SCHEMA, CURVE_READS, required=("rows", "config"))
    except (ArtifactError, OSError) as exc:
        raise ConfigError.field(field, str(path), f"must be a serving_curve.json ({exc})") from None
    return data


def measured_field(data: Mapping[str, Any]) -> str:
    """The row field compared: `cpu_s` when every row has one (a CPU curve on one thread), else `wall_s`."""
    rows = data["rows"]
    return "cpu_s" if rows and all(r.get("cpu_s") is not None for r in rows) else "wall_s"


def measured_rows(data: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """{batch: {"prefill_s", "step_s", "context", "steps"}} of a curve's rows (batches with a prefill row), in
    `measured_field`'s seconds."""
    key = measured_field(data)
    out: dict[int, dict[str, Any]] = {}
    for r in data["rows"]:
        b = int(r["batch"])
        if r["phase"] == "prefill":
            out.setdefault(b, {"steps": []})["prefill_s"] = float(r[key])
        elif r["phase"] == "decode":
            out.setdefault(b, {"steps": []})["steps"].append((int(r["context_len"]), float(r[key])))
    rows = {}
    for b, v in sorted(out.items()):
        if "prefill_s" not in v or not v["steps"]:
            continue
        steps = v.pop("steps")
        v["step_s"] = sum(s for _, s in steps) / len(steps)
        v["context"] = sum(c for c, _ in steps) / len(steps)
        v["steps"] = len(steps)
        rows[b] = v
    return rows


def logged_experts(data: Mapping[str, Any]) -> dict[float, float]:
    """{routed tokens: distinct experts per MoE layer} a curve's calls touched (each row's routing log, calls of one
    token count averaged); {} for a curve that logged none."""
    seen: dict[float, list[float]] = {}
    for r in data["rows"]:
        e = r.get("experts")
        if e:
            seen.setdefault(float(e["tokens"]), []).append(float(e["mean"]))
    return {t: sum(v) / len(v) for t, v in seen.items()}


def measured_block(
    data: Mapping[str, Any], timing: Timing, label: str, path: str = "", touched: Optional[Timing] = None
) -> dict[str, Any]:
    """serving.json's `measured`: per batch measured vs `timing` (hf_eager without the generate loop) and ratios;
    with `touched` (the same engine on the curve's logged experts), the `*_touched` prices and ratios too."""
    rows = []
    for b, m in measured_rows(data).items():
        pre = float(timing.prefill([b]).time_s[0])
        step = float(timing.decode([b], m["context"]).time_s[0])
        row = {
            "batch": b,
            "context": m["context"],
            "decode_steps": m["steps"],
            "prefill_measured_s": m["prefill_s"],
            "prefill_predicted_s": pre,
            "prefill_ratio": pre / m["prefill_s"],
            "step_measured_s": m["step_s"],
            "step_predicted_s": step,
            "step_ratio": step / m["step_s"],
        }
        if touched is not None:
            pre_t = float(touched.prefill([b]).time_s[0])
            step_t = float(touched.decode([b], m["context"]).time_s[0])
            row.update(
                prefill_predicted_touched_s=pre_t,
                prefill_ratio_touched=pre_t / m["prefill_s"],
                step_predicted_touched_s=step_t,
                step_ratio_touched=step_t / m["step_s"],
            )
        rows.append(row)
    cfg = data.get("config", {})
    return {
        "file": str(path),
        "engine": "hf_eager (its forwards: the eager level, no generate loop)",
        "measured_by": dict(data.get("measured_by", {})),
        "measured": measured_field(data),
        "measured_on": {k: cfg.get(k) for k in ("model", "mode", "runtime", "device_name", "dtype", "host", "threads")},
        "predicted_by": label,
        "ratio": "predicted / measured",
        **(
            {
                "touched": "the *_touched fields: the same engine at the distinct experts per MoE layer each call of "
                "the curve touched (its routing log), not the expected experts of uniform or recorded routing",
                "experts": [{"tokens": t, "experts_per_layer": n} for t, n in sorted(logged_experts(data).items())],
            }
            if touched is not None
            else {}
        ),
        "rows": rows,
    }
