"""Serving in the reports: the report's columns of a job's `serving.json`, the latency-vs-throughput plot
of one run, and the design-space plots of a multirun over hardware figures.

* `SERVING_COLUMNS`: one row per job of `./dev analyze hardware=...` or `./dev size` (the figures at the
  job's batch, the knee, the largest batch that fits, and the sizing's requirements per target); every value
  is read from the job's `serving.json`, never recomputed; each names its time level in `serve_level`.
* `curve_plot`: TPOT and TTFT against pages/day per device as the batch grows (static and continuous
  batching), the batches written beside the points, the knee marked with its reason (`analytic.serving`).
* `design_space_plots`: for a sweep whose jobs differ in `hardware.<figure>` overrides (a Hydra multirun
  of `./dev size hardware=custom ... hardware.memory_bandwidth_gbs.value=1000,2000,4000`): the pages/day one
  device achieves and the replicas the volume needs against the swept figure, and the compute, bandwidth
  and memory each target requires against it, with the device's own figure drawn for comparison.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from llm_perf_opt.report.collect import JobRecord
from llm_perf_opt.report.table import Column, other_label, sweep_axes

TARGETS = ("ttft_s", "tpot_s", "pages_per_day")
RESOURCES = (
    ("required_matmul_tflops", "matmul TFLOP/s", "matmul_flops", 1e12),
    ("required_bandwidth_gbs", "bandwidth GB/s", "bandwidth_bytes_per_s", 1e9),
    ("required_memory_gb", "memory GB", "memory_bytes", 1e9),
)


def _serving(job: JobRecord) -> Any:
    return getattr(job, "serving", None)


def _point(*keys: str) -> Callable[[JobRecord], Any]:
    def get(job: JobRecord) -> Any:
        s = _serving(job)
        node: Any = s.point if s is not None else None
        for key in keys:
            node = node.get(key) if isinstance(node, Mapping) else None
        return node

    return get


def _hw(key: str, scale: float = 1.0) -> Callable[[JobRecord], Any]:
    def get(job: JobRecord) -> Any:
        s = _serving(job)
        value = s.hardware.get(key) if s is not None else None
        return value / scale if isinstance(value, (int, float)) else value

    return get


def _sizing(key: str) -> Callable[[JobRecord], Any]:
    def get(job: JobRecord) -> Any:
        s = _serving(job)
        return (s.sizing or {}).get(key) if s is not None else None

    return get


def requirement(job: JobRecord, target: str, key: str) -> Any:
    """A requirement's field (`analytic.sizing.Requirement.to_dict()`) of the job's sizing; None without one."""
    s = _serving(job)
    for req in ((s.sizing or {}).get("requirements") or []) if s is not None else []:
        if req.get("target") == target:
            return req.get(key)
    return None


def achieved_pages_per_day(job: JobRecord) -> Any:
    """Pages/day one device serves: the sizing's best batch meeting the latency targets (size), else the
    continuous-batching figure at the job's batch (analyze)."""
    s = _serving(job)
    if s is None:
        return None
    if s.sizing:
        return s.sizing.get("pages_per_day_per_device")
    return _point("continuous", "pages_per_day")(job)


def measured_ratio(key: str) -> Callable[[JobRecord], Any]:
    """hf_eager / measured (`serving.json`'s `measured`, serve.measured) at the job's batch, else the first measured
    batch; None without a measured curve."""

    def get(job: JobRecord) -> Any:
        s = _serving(job)
        rows = ((s.measured or {}).get("rows") or []) if s is not None else []
        if not rows:
            return None
        row = next((r for r in rows if r["batch"] == s.batch), rows[0])
        return row.get(key)

    return get


def _binds(job: JobRecord) -> Any:
    b = _sizing("binding")(job)
    return f"{b['target']}: {b['resource']} ({b['ratio']:.3g}x)" if b else None


def _knee(key: str) -> Callable[[JobRecord], Any]:
    def get(job: JobRecord) -> Any:
        s = _serving(job)
        return (s.knee or {}).get(key) if s is not None else None

    return get


def _fit(job: JobRecord) -> Any:
    s = _serving(job)
    fits = s.max_fit_batch if s is not None else None
    return None if not fits else (fits.get("continuous") if fits.get("continuous") is not None else fits.get("static"))


def _c(key: str, header: str, kind: str, doc: str, get: Callable[[JobRecord], Any], brief: bool = True) -> Column:
    return Column(key, header, kind, doc, get, brief, when_present=True)


SERVING_COLUMNS: list[Column] = [
    _c(
        "serve_job",
        "serving job",
        "str",
        "the job that wrote serving.json (analyze or size)",
        lambda j: _serving(j).job if _serving(j) is not None else None,
        False,
    ),
    _c(
        "serve_engine",
        "engine",
        "str",
        "the serving engine the figures model (ideal = the roofline, no engine; hf_eager, cuda_graphs, vllm: "
        "analytic.serve_engines), the first of serve.engine",
        lambda j: _serving(j).engine.get("name") if _serving(j) is not None else None,
    ),
    _c(
        "serve_level",
        "time level",
        "str",
        "the time level every serving figure of the job uses (ideal = roofline)",
        lambda j: _serving(j).level if _serving(j) is not None else None,
    ),
    _c(
        "serve_measured_step_ratio",
        "decode step hf_eager/measured",
        "float",
        "hf_eager's decode step / the measured one (serve.measured: plain forwards) at the job's batch, else the "
        "first measured batch",
        measured_ratio("step_ratio"),
    ),
    _c(
        "serve_measured_prefill_ratio",
        "prefill hf_eager/measured",
        "float",
        "hf_eager's prefill / the measured one (serve.measured) at the job's batch, else the first measured batch",
        measured_ratio("prefill_ratio"),
    ),
    _c("serve_hardware", "device", "str", "the device of the serving figures (a datasheet, or custom)", _hw("name")),
    _c(
        "hw_matmul_tflops",
        "matmul TFLOP/s",
        "float",
        "the device's dense matmul peak in the serving dtype",
        _hw("matmul_flops", 1e12),
    ),
    _c("hw_vector_tflops", "vector TFLOP/s", "float", "the device's non-matmul peak", _hw("vector_flops", 1e12), False),
    _c(
        "hw_bandwidth_gbs",
        "bandwidth GB/s",
        "float",
        "the device's memory bandwidth",
        _hw("bandwidth_bytes_per_s", 1e9),
    ),
    _c("hw_memory_gb", "memory GB", "float", "the device's memory capacity", _hw("memory_bytes", 1e9)),
    _c(
        "serve_batch",
        "batch",
        "int",
        "workload.batch of ./dev analyze (pages served together)",
        lambda j: _serving(j).batch if _serving(j) is not None else None,
    ),
    _c(
        "serve_output_tokens",
        "output tokens",
        "int",
        "tokens generated per page (serve.output_tokens)",
        lambda j: _serving(j).output_tokens if _serving(j) is not None else None,
        False,
    ),
    _c(
        "serve_ttft_s",
        "TTFT",
        "seconds",
        "time to first token at the job's batch, static batching",
        _point("static", "ttft_s"),
    ),
    _c(
        "serve_tpot_s",
        "TPOT",
        "seconds",
        "time per output token at the job's batch, static batching",
        _point("static", "tpot_s"),
    ),
    _c(
        "serve_tokens_per_s",
        "tokens/s",
        "float",
        "output tokens per second per device at the job's batch, static",
        _point("static", "tokens_per_s"),
    ),
    _c(
        "serve_pages_per_day",
        "pages/day static",
        "float",
        "pages per day per device at the job's batch, static batching",
        _point("static", "pages_per_day"),
        False,
    ),
    _c(
        "serve_pages_per_day_continuous",
        "pages/day continuous",
        "float",
        "pages per day per device at the job's batch, continuous batching (steady state)",
        _point("continuous", "pages_per_day"),
        False,
    ),
    _c(
        "serve_memory_bytes",
        "memory use",
        "bytes",
        "weights + KV cache + peak activations + allowance at the job's batch (static batching)",
        _point("memory", "total_bytes"),
    ),
    _c(
        "serve_decode_bound",
        "decode bound",
        "str",
        "what bounds the decode step at the job's batch",
        _point("decode_bound"),
        False,
    ),
    _c(
        "pages_per_day_per_device",
        "pages/day per device",
        "float",
        "size: pages/day one device serves at the best batch meeting the latency targets; analyze: continuous "
        "batching at the job's batch",
        achieved_pages_per_day,
    ),
    _c(
        "serve_max_fit_batch",
        "largest batch",
        "int",
        "the largest batch that fits in the device's memory (continuous batching; static when only that is known)",
        _fit,
        False,
    ),
    _c(
        "knee_batch",
        "knee",
        "int",
        "the batch where the latency-vs-throughput curve turns (analytic.serving)",
        _knee("batch"),
    ),
    _c(
        "knee_reason",
        "knee reason",
        "str",
        "what makes the knee: compute, memory, bandwidth (none in range)",
        _knee("reason"),
    ),
    _c(
        "size_replicas",
        "replicas",
        "int",
        "devices (data-parallel replicas) the daily volume needs",
        _sizing("replicas"),
    ),
    _c(
        "size_batch",
        "sizing batch",
        "int",
        "the batch the sizing found best on the device (meets the latency targets, fits memory)",
        _sizing("batch"),
        False,
    ),
    _c(
        "size_binds",
        "binds",
        "str",
        "the target and resource whose requirement is largest against the device's figure, and that ratio",
        _binds,
    ),
    *[
        _c(
            f"{key}_{t}",
            f"{what} for {t}",
            "float",
            f"the {what} a device needs to meet {t} (analytic.sizing)",
            lambda j, t=t, k=key: requirement(j, t, k),
            False,
        )
        for t in TARGETS
        for key, what, _, _ in RESOURCES
    ],
]


# ------------------------------------------------------------------------------------------- plots
def write_curve_plot(points: Sequence[Any], knee: Any, out: Path, progress: Callable[[str], None], title: str) -> None:
    """curve.svg / curve.png beside curve.csv: the latency-vs-throughput curve of `analytic.serving`
    (ServingPoint list, Knee), its knee marked."""
    if not points:
        return
    from llm_perf_opt.analytic.serving import curve_rows

    paths = curve_plot(curve_rows(points), knee.to_dict() if knee is not None else None, Path(out), title)
    progress(f"wrote {paths['svg']}")


def curve_plot(
    rows: Sequence[Mapping[str, Any]], knee: Optional[Mapping[str, Any]], out_dir: Path, title: str, stem: str = "curve"
) -> dict[str, Path]:
    """`stem`.svg / .png: TPOT (left) and TTFT (right) against pages/day per device over the batch, static
    and continuous batching; every point labelled with its batch; the knee ringed, its reason in the title."""
    from llm_perf_opt.report import plots as plotting

    plt = plotting.plt
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.8))
    for ax, (what, label) in zip(axes, (("tpot", "time per output token"), ("ttft", "time to first token"))):
        for scheme, style in (
            ("continuous", {"color": "C0", "marker": "o"}),
            ("static", {"color": "C1", "marker": "s", "linestyle": "--"}),
        ):
            xs = [r[f"pages_per_day_{scheme}"] for r in rows]
            ys = [r[f"{what}_{scheme}_s"] for r in rows]
            ax.plot(xs, ys, markersize=3.5, linewidth=1.3, label=f"{scheme} batching", **style)
            if scheme == "continuous":
                for r, x, y in zip(rows, xs, ys):
                    ax.annotate(
                        str(r["batch"]), (x, y), textcoords="offset points", xytext=(3, 3), fontsize=6.5, color="0.3"
                    )
                if knee and knee.get("batch") is not None:
                    at = [(x, y) for r, x, y in zip(rows, xs, ys) if r["batch"] == knee["batch"]]
                    if at:
                        ax.plot(
                            *at[0],
                            marker="o",
                            markersize=11,
                            markerfacecolor="none",
                            markeredgecolor="C3",
                            markeredgewidth=1.5,
                            linestyle="none",
                            label=f"knee: batch {knee['batch']} ({knee['reason']})",
                        )
        ax.set_xscale("log")
        ax.set_yscale("log")
        plotting.log_axis(ax.yaxis, "seconds")
        plotting.log_axis(ax.xaxis, "count")
        ax.set_xlabel("pages/day per device")
        ax.set_ylabel(f"{label} (s)")
        ax.set_title(label)
        ax.legend(loc="upper left")
    reason = (
        f"knee: {knee['reason']}"
        + (f" at batch {knee['batch']}" if knee and knee.get("batch") is not None else " (none in range)")
        if knee
        else "no knee"
    )
    fig.suptitle(f"{title} | {reason}", fontsize=9)
    return plotting.save(fig, out_dir, stem)


def _number(text: str) -> Optional[float]:
    try:
        return float(text)
    except ValueError:
        return None


def hardware_axes(jobs: Sequence[JobRecord]) -> list[str]:
    """The swept `hardware.<figure>` overrides with numeric values (the design-space axes)."""
    out = []
    for axis in sweep_axes(list(jobs)):
        if not axis.startswith("hardware."):
            continue
        values = [dict(o.partition("=")[::2] for o in j.overrides).get(axis) for j in jobs]
        if all(v is not None and _number(v) is not None for v in values):
            out.append(axis)
    return out


def _axis_name(axis: str) -> str:
    return axis.removeprefix("hardware.").removesuffix(".value")


def design_space_plots(jobs: Sequence[JobRecord], out_dir: Path) -> list[tuple[str, str, dict[str, Path]]]:
    """[(stem, caption, paths)] per swept hardware figure: achieved pages/day and replicas, and each target's
    required compute, bandwidth and memory, against the swept figure (jobs with serving.json only)."""
    from llm_perf_opt.report import plots as plotting

    plt = plotting.plt
    jobs = [j for j in jobs if j.ok and _serving(j) is not None]
    out = []
    axes_all = sweep_axes(list(jobs))
    for axis in hardware_axes(jobs):
        rest = [a for a in axes_all if a != axis]
        groups: dict[str, list[tuple[float, JobRecord]]] = {}
        for j in jobs:
            x = _number(dict(o.partition("=")[::2] for o in j.overrides)[axis])
            groups.setdefault(other_label(j, rest) or "", []).append((x, j))
        for pts in groups.values():
            pts.sort(key=lambda p: p[0])
        name = _axis_name(axis)
        level = sorted({_serving(j).level for j in jobs})
        stem = f"design_{name.replace('.', '_')}"
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10.5, 3.6))
        sized = any(_serving(j).sizing for j in jobs)
        for i, (label, pts) in enumerate(groups.items()):
            xs = [x for x, _ in pts]
            a1.plot(
                xs,
                [achieved_pages_per_day(j) for _, j in pts],
                marker="o",
                color=f"C{i % 10}",
                label=label or "pages/day per device",
            )
            if sized:
                a2.plot(
                    xs,
                    [_sizing("replicas")(j) for _, j in pts],
                    marker="o",
                    color=f"C{i % 10}",
                    drawstyle="steps-post",
                    label=label or "replicas",
                )
            else:
                a2.plot(
                    xs, [_knee("batch")(j) for _, j in pts], marker="o", color=f"C{i % 10}", label=label or "knee batch"
                )
        a1.set_ylabel("pages/day per device")
        a1.yaxis.set_major_formatter(plotting.formatter("count"))
        a2.set_ylabel("replicas for the volume" if sized else "knee batch")
        for ax in (a1, a2):
            ax.set_xlabel(name)
            ax.legend(loc="upper left")
        fig.suptitle(f"Achieved against {name} ({', '.join(level)} level)", fontsize=9)
        paths = plotting.save(fig, out_dir, stem)
        out.append(
            (
                stem,
                "Pages/day one device achieves ("
                + ("the best batch meeting the latency targets" if sized else "continuous batching at the job batch")
                + ") and "
                f"{'the replicas the daily volume needs' if sized else 'the knee of the latency curve'} against the "
                f"swept {name}; time level {', '.join(level)}.",
                paths,
            )
        )
        if not sized:
            continue
        fig, panels = plt.subplots(1, 3, figsize=(12, 3.6))
        for ax, (key, what, hw_key, scale) in zip(panels, RESOURCES):
            for t_i, target in enumerate(TARGETS):
                for label, pts in groups.items():
                    ys = [requirement(j, target, key) for _, j in pts]
                    if all(v is None for v in ys):
                        continue
                    ax.plot(
                        [x for x, _ in pts],
                        ys,
                        marker="o",
                        color=f"C{t_i}",
                        label=" · ".join(p for p in (target, label) if p),
                    )
            for label, pts in groups.items():
                own = [(_serving(j).hardware.get(hw_key) or 0) / scale for _, j in pts]
                ax.plot([x for x, _ in pts], own, color="0.4", linestyle=":", label="the device's own")
                break
            ax.set_yscale("log")
            ax.set_xlabel(name)
            ax.set_ylabel(f"required {what}")
            ax.legend(loc="best", fontsize=6.5)
        fig.suptitle(
            f"What each target requires, against {name} ({', '.join(level)} level; the other figures "
            "held at the device's)",
            fontsize=9,
        )
        stem_r = f"{stem}_required"
        out.append(
            (
                stem_r,
                f"The matmul TFLOP/s, bandwidth and memory each target needs (analytic.sizing: a latency "
                f"target holds the device's other figures; pages/day scales every figure) against the swept "
                f"{name}; dotted: the device's own figure.",
                plotting.save(fig, out_dir, stem_r),
            )
        )
    return out
