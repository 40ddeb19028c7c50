"""Matplotlib plots (Agg backend, no display needed), each saved as SVG (inlined in the HTML) and PNG.

SVG text stays text (`svg.fonttype = none`) so the page is searchable and small, and the files are
reproducible (fixed hash salt, no date in the metadata).

Matplotlib keeps its configuration and font cache under the home directory (`~/.config/matplotlib`,
`~/.cache/matplotlib`) and makes them, with every missing parent, on import: a home directory that does not
exist or cannot be written (a batch system's placeholder `HOME`) would be created or warned about. Then its
directory is a temporary one of this process instead (`MPLCONFIGDIR`), removed at exit (`_matplotlib_dir`).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence


def _matplotlib_dir() -> None:
    """MPLCONFIGDIR for a home directory that is missing or read-only (an explicit MPLCONFIGDIR is kept)."""
    home = os.path.expanduser("~")
    if os.environ.get("MPLCONFIGDIR") or (os.path.isdir(home) and os.access(home, os.W_OK)):
        return
    import atexit
    import shutil
    import tempfile

    path = tempfile.mkdtemp(prefix="llm-perf-opt-matplotlib-")
    os.environ["MPLCONFIGDIR"] = path
    atexit.register(shutil.rmtree, path, True)


_matplotlib_dir()

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from llm_perf_opt import units  # noqa: E402

plt.rcParams.update(
    {
        "svg.fonttype": "none",
        "svg.hashsalt": "llm-perf-opt",
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "legend.fontsize": 8,
        "legend.frameon": False,
    }
)


def formatter(kind: str) -> Any:
    """Axis tick labels in the project's units (`llm_perf_opt.units`)."""
    if kind == "flops":
        return FuncFormatter(lambda v, _: units.flops(v))
    if kind == "bytes":
        return FuncFormatter(lambda v, _: units.nbytes(v))
    if kind == "seconds":
        return FuncFormatter(lambda v, _: units.seconds(v))
    return FuncFormatter(lambda v, _: f"{v:,.0f}" if abs(v) >= 1 or v == 0 else f"{v:.2g}")


def log_axis(axis: Any, kind: str) -> None:
    """A log-scaled axis labelled in the project's units at 1, 2 and 5 of each decade (minor ticks unlabelled)."""
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(formatter(kind))
    axis.set_minor_formatter(NullFormatter())


def save(fig: Any, out_dir: Path, stem: str) -> dict[str, Path]:
    """Write `stem`.svg and `stem`.png into out_dir; return their paths. Both are cropped to the figure's
    tight bounding box, computed once (`bbox_inches="tight"` would lay the figure out again per file)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"svg": out_dir / f"{stem}.svg", "png": out_dir / f"{stem}.png"}
    bbox = fig.get_tightbbox().padded(plt.rcParams["savefig.pad_inches"])
    fig.savefig(paths["svg"], format="svg", bbox_inches=bbox, metadata={"Date": None})
    fig.savefig(paths["png"], format="png", dpi=110, bbox_inches=bbox)
    plt.close(fig)
    return paths


def grouped_bars(
    categories: Sequence[str],
    series: dict[str, Sequence[Optional[float]]],
    *,
    title: str,
    ylabel: str,
    kind: str = "count",
    xlabel: str = "",
    logy: bool = False,
) -> Any:
    """Bars per category, one colour per series (a missing value leaves a gap)."""
    n_series = max(len(series), 1)
    width = 0.8 / n_series
    fig_w = min(max(4.5, 0.5 + len(categories) * (0.35 + 0.18 * n_series)), 14)
    fig, ax = plt.subplots(figsize=(fig_w, 3.4))
    for i, (label, values) in enumerate(series.items()):
        xs = [c + (i - (n_series - 1) / 2) * width for c in range(len(categories))]
        pairs = [(x, v) for x, v in zip(xs, values) if v is not None]
        if pairs:
            ax.bar([p[0] for p in pairs], [p[1] for p in pairs], width=width * 0.95, label=label or None)
    ax.set_xticks(range(len(categories)))
    ax.set_xticklabels(
        categories,
        rotation=30 if max((len(c) for c in categories), default=0) > 8 else 0,
        ha="right" if max((len(c) for c in categories), default=0) > 8 else "center",
    )
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    if xlabel:
        ax.set_xlabel(xlabel)
    if logy:
        ax.set_yscale("log")
        log_axis(ax.yaxis, kind)
    else:
        ax.yaxis.set_major_formatter(formatter(kind))
    ax.grid(axis="x", visible=False)
    if len(series) > 1 or any(series):
        handles, labels = ax.get_legend_handles_labels()
        if any(labels):
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def stacked_bars(
    labels: Sequence[str],
    stacks: dict[str, Sequence[Optional[float]]],
    *,
    title: str,
    ylabel: str,
    kind: str = "flops",
    colors: Optional[Mapping[str, str]] = None,
) -> Any:
    fig_w = min(max(4.5, 1.0 + 0.45 * len(labels)), 14)
    fig, ax = plt.subplots(figsize=(fig_w, 3.6))
    bottom = [0.0] * len(labels)
    for part, values in stacks.items():
        vals = [v or 0.0 for v in values]
        ax.bar(range(len(labels)), vals, bottom=bottom, label=part, color=(colors or {}).get(part), width=0.7)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=35, ha="right")
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.yaxis.set_major_formatter(formatter(kind))
    ax.grid(axis="x", visible=False)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def line_plot(
    xs: Sequence[float],
    series: dict[str, Sequence[Optional[float]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    kind: str = "count",
    logx: bool = False,
    logy: bool = False,
    xticks: Optional[dict[float, str]] = None,
    marks: Optional[dict[str, float]] = None,
    step: bool = False,
    styles: Optional[dict[str, dict[str, Any]]] = None,
) -> Any:
    """One line per series; `styles` gives a series its matplotlib line keywords (color, linestyle)."""
    fig, ax = plt.subplots(figsize=(7.2, 3.6))
    for label, values in series.items():
        pts = [(x, v) for x, v in zip(xs, values) if v is not None]
        if not pts:
            continue
        style = {"linewidth": 1.4, **((styles or {}).get(label) or {})}
        if step:
            ax.step([p[0] for p in pts], [p[1] for p in pts], where="mid", label=label, **style)
        else:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, **style)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    if xticks:
        ax.set_xticks(list(xticks))
        ax.set_xticklabels(list(xticks.values()))
        ax.minorticks_off()
    for name, x in (marks or {}).items():
        ax.axvline(x, color="0.6", linewidth=0.7, linestyle=":")
        ax.annotate(
            name,
            (x, 1.0),
            xycoords=("data", "axes fraction"),
            rotation=90,
            fontsize=7,
            color="0.35",
            ha="right",
            va="top",
        )
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logy:
        log_axis(ax.yaxis, kind)
    else:
        ax.yaxis.set_major_formatter(formatter(kind))
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def heatmaps(
    panels: dict[str, Any],
    *,
    xs: Sequence[float],
    ys: Sequence[float],
    title: str,
    cbar_label: str,
    kind: str = "count",
    log: bool = False,
    points: Optional[dict[str, tuple[float, float]]] = None,
    ncols: int = 3,
) -> Any:
    """Small multiples: one heatmap per panel (2-D arrays indexed [y][x]) on one shared colour scale."""
    import numpy as np
    from matplotlib.colors import LogNorm, Normalize

    names = list(panels)
    nrows = max(1, math.ceil(len(names) / ncols))
    ncols = min(ncols, max(len(names), 1))
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(3.3 * ncols + 1.2, 3.0 * nrows + 0.5),
        squeeze=False,
        sharex=True,
        sharey=True,
        constrained_layout=True,
    )
    arrays = {n: np.asarray(panels[n], dtype=float) for n in names}
    finite = np.concatenate([a[np.isfinite(a)].ravel() for a in arrays.values()]) if arrays else np.array([1.0])
    vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    norm = LogNorm(vmin=max(vmin, 1e-12), vmax=max(vmax, vmin * 1.0001, 1e-12)) if log else Normalize(vmin, vmax)
    extent = (xs[0], xs[-1], ys[0], ys[-1])
    image = None
    for idx, name in enumerate(names):
        ax = axes[idx // ncols][idx % ncols]
        image = ax.imshow(
            arrays[name],
            origin="lower",
            extent=extent,
            aspect="auto",
            norm=norm,
            cmap="viridis",
            interpolation="nearest",
        )
        ax.set_title(name)
        ax.grid(False)
        for label, (px, py) in (points or {}).items():
            if xs[0] <= px <= xs[-1] and ys[0] <= py <= ys[-1]:
                ax.plot(px, py, marker="o", markersize=3, color="white", markeredgecolor="black", markeredgewidth=0.5)
        if idx % ncols == 0:
            ax.set_ylabel("page height (px)")
        if idx // ncols == nrows - 1:
            ax.set_xlabel("page width (px)")
    for idx in range(len(names), nrows * ncols):
        axes[idx // ncols][idx % ncols].axis("off")
    if image is not None:
        bar = fig.colorbar(image, ax=axes, shrink=0.85)
        bar.set_label(cbar_label)
        if not log:
            bar.ax.yaxis.set_major_formatter(formatter(kind))
    fig.suptitle(title)
    return fig
