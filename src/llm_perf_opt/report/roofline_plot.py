"""A run's roofline plot (`roofline.svg` / `.png`): the device's roof and each part where it ran.

x: arithmetic intensity (analytic FLOPs / analytic I/O bytes of the part in the forward that ran); y:
FLOP/s. Each roof is drawn twice: its matmul roof min(matmul peak, intensity × bandwidth) solid, and its
vector roof min(vector peak, intensity × bandwidth) dotted: a part's own roof lies between the two,
by its share of matmul work (the convention of `analytic.time.ideal`). Each part is a point at its
intensity and achieved FLOP/s (analytic FLOPs / measured time; `measure.efficiency`), the whole forward
a star. Only roofs of the device the times were measured on are drawn with
measured points (the calibrated roof, and on CUDA the datasheet beside it); a run without measured times
shows the primary roof's predicted points (hollow), labelled as predictions.

Works from the summary's `roofline` section (plain dicts), so it can be redrawn from summary.json alone.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from llm_perf_opt import units
from llm_perf_opt.report import plots as plotting

_ROOF_STYLES = ({"color": "#222222"}, {"color": "#4c78a8"}, {"color": "#e45756"}, {"color": "#72b7b2"})
STAGE_MARKERS = {"forward": "*"}


def _points(
    rows: Sequence[Mapping[str, Any]], primary: str, vocabulary: Any = None
) -> tuple[list[tuple[str, float, float, str]], bool]:
    """[(label, intensity, FLOP/s, kind)] of the measured points, or of the primary roof's predictions
    when nothing was measured; and whether they are measured. The forward and the parts of the family's vocabulary
    only (the vision stage sits on SAM, the decoder layers on `decoder`); a part without FLOPs
    (the embedding lookup) has no place on a log axis and is left out."""
    aliases = frozenset(vocabulary.by_alias) if vocabulary is not None else frozenset()
    rows = [r for r in rows if r.get("name") == "forward" or r.get("name") in aliases]
    measured = [
        (r["name"], r["intensity"], r["achieved_flops"], r["kind"])
        for r in rows
        if r.get("achieved_flops") and r.get("intensity")
    ]
    if measured:
        return measured, True
    predicted = []
    for r in rows:
        pred = (r.get("predicted") or {}).get(primary)
        if pred and pred.get("attainable_flops") and r.get("intensity"):
            predicted.append((r["name"], r["intensity"], pred["attainable_flops"], r["kind"]))
    return predicted, False


def plot_roofline(
    rows: Sequence[Mapping[str, Any]],
    roofs: Mapping[str, Mapping[str, Any]],
    primary: str,
    out_dir: Path,
    *,
    title: str,
    note: str = "",
    stem: str = "roofline",
    vocabulary: Any = None,
) -> dict[str, Path]:
    """Draw `stem`.svg and `stem`.png into `out_dir` from the summary's roofline rows and roofs."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    points, measured = _points(rows, primary, vocabulary)
    drawn = (
        {name: entry for name, entry in roofs.items() if entry.get("same_device")}
        if measured
        else {primary: roofs[primary]}
    )
    if not drawn:  # measured points but no roof of their device (cannot happen in the trace job)
        drawn = {primary: roofs[primary]}
    xs = [p[1] for p in points if p[1] > 0 and math.isfinite(p[1])]
    ridges = [e["roof"]["ridge_intensity"] for e in drawn.values()]
    lo = 10 ** math.floor(math.log10(max(min(xs + ridges) / 4, 1e-3)))
    hi = 10 ** math.ceil(math.log10(max(xs + ridges) * 4))
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]

    fig, ax = plt.subplots(figsize=(7.6, 5.0))
    for (name, entry), style in zip(drawn.items(), _ROOF_STYLES):
        roof = entry["roof"]
        bw, mm, vec = roof["bandwidth_bytes_per_s"], roof["matmul_flops"], roof["vector_flops"]
        label = (
            f"{name} ({roof['kind']}, {roof['dtype']}): matmul {units.si(mm, 'FLOP/s')}, bandwidth "
            f"{units.si(bw, 'B/s')} — {roof['label']}"
        )
        ax.plot(grid, [min(mm, x * bw) for x in grid], linewidth=1.6, label=label, **style)
        ax.plot(
            grid,
            [min(vec, x * bw) for x in grid],
            linewidth=1.0,
            linestyle=":",
            label=f"{name}: vector peak {units.si(vec, 'FLOP/s')}",
            **style,
        )
    for label, x, y, kind in points:
        colour = (vocabulary.color(label) if vocabulary is not None else None) or (
            "#000000" if kind == "stage" else "#7f7f7f"
        )
        marker = STAGE_MARKERS.get(label, "o")
        size = 11 if marker == "*" else 6
        if measured:
            ax.plot(
                x,
                y,
                marker=marker,
                markersize=size,
                color=colour,
                markeredgecolor="black",
                markeredgewidth=0.5,
                linestyle="none",
            )
        else:
            ax.plot(
                x, y, marker=marker, markersize=size, markerfacecolor="none", markeredgecolor=colour, linestyle="none"
            )
        ax.annotate(label, (x, y), textcoords="offset points", xytext=(5, 3), fontsize=7, color="0.25")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP / byte of I/O, analytic)")
    ax.set_ylabel("FLOP/s")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: units.si(v, "FLOP/s")))
    what = (
        "achieved = analytic FLOPs / measured time"
        if measured
        else f"no measured times: predicted attainable FLOP/s on {primary} (hollow)"
    )
    ax.set_title(f"{title}\n{what}", fontsize=9)
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.13), fontsize=7)
    if note:
        ax.annotate(
            note,
            (0.0, -0.13 - 0.055 * (2 * len(drawn) + 0.6)),
            xycoords="axes fraction",
            fontsize=6.5,
            color="0.35",
            ha="left",
            va="top",
            wrap=True,
        )
    return plotting.save(fig, out_dir, stem)


def plot_from_summary(
    section: Mapping[str, Any], out_dir: Path, *, title: str, note: Optional[str] = None, vocabulary: Any = None
) -> dict[str, Path]:
    """The plot of a summary's `roofline` section (`RooflineFigures.raw`); `vocabulary`: the family's parts."""
    return plot_roofline(
        section["rows"],
        section["roofs"],
        section["primary"],
        out_dir,
        title=title,
        note=note if note is not None else section.get("measured_by", ""),
        vocabulary=vocabulary,
    )
