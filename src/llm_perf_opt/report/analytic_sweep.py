"""Analytic-only report over thousands of page sizes: no model is built, nothing runs in torch.

For every mode (conf/workload/*.yaml) and every page on an n × n grid of widths and heights, the view
layout and the analytic model of the model family (`ModelFamily.layout`, `.analytic_model`) give image tokens,
sequence length and vision / prefill / decode FLOPs and bytes. The result is for looking at:

* heatmaps (width × height) of image tokens and prefill FLOPs, one panel per mode, the page presets
  of conf/page/ marked as dots;
* line plots at a fixed page area over the aspect ratio (1:4 … 4:1), and over the page size at a
  fixed aspect (US letter), one line per mode;
* a table of the page presets × modes;
* predicted times on one or more roofs (`hardware`, default `DEFAULT_HARDWARE`: datasheets of
  conf/hardware/, in the sweep's dtype): time to first token (= the prefill) and decode time per token
  for every point (`ttft_<hw>_s`, `decode_<hw>_s` in the CSV), a table of the page presets × modes per
  roof, bars per page preset and mode, and a line over the page size, one line per mode and roof;
* predicted pages/day per GPU for every point (`pages_per_day_<hw>`, with its batch `serve_batch_<hw>`:
  `SERVE_CONVENTION`) and a table of the page presets × modes per roof;

plus `analytic.csv` with every point. The analytic model caches identical blocks, so a few thousand
pages per mode take well under a second each.

The modes and page presets are the `workload` and `page` config groups, composed through Hydra's compose
API exactly as a job composes them (schema defaults, validation); the modes' order is the family's.

Side by side (`build_family_comparison`, `./dev report --analytic OUT --compare LABEL=FAMILY:MODEL:MODE ...`):
several (family, model, mode) entries at the same page presets and sizes, per stage: image tokens, FLOPs,
bytes and predicted times, in `compare.csv` / `compare.md` (e.g. DeepSeek-OCR v1 Gundam vs OCR-2 default).
Data first (`evaluate` -> `page_data`), then rendering (the CSV writer and one template per format).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from llm_perf_opt.config.compose import compose_each, group_options
from llm_perf_opt.config.registry import to_typed_config
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.report import render
from llm_perf_opt.report.render import PlotView, TableView
from llm_perf_opt.report.table import PAGE_ORDER, Column

PLOTS_DIR = "analytic_plots"

POINT_COLUMNS = [
    Column("mode", "mode", "str", "workload preset (conf/workload/)", lambda p: p["mode"]),
    Column("width", "width", "int", "page width in pixels", lambda p: p["width"]),
    Column("height", "height", "int", "page height in pixels", lambda p: p["height"]),
    Column("aspect", "aspect", "float", "width / height", lambda p: p["aspect"]),
    Column("megapixels", "MP", "float", "width × height / 1e6", lambda p: p["megapixels"]),
    Column("grid", "grid", "str", "crop grid, tiles across × down", lambda p: p["grid"]),
    Column("views", "views", "int", "1 global view + crops", lambda p: p["views"]),
    Column(
        "image_tokens", "image tokens", "count", "image-token positions in the sequence", lambda p: p["image_tokens"]
    ),
    Column("seq_len", "sequence", "count", "BOS + image tokens + prompt tokens", lambda p: p["seq_len"]),
    Column(
        "vision_flops", "vision FLOPs", "flops", "SAM + CLIP + projector, matmul-class ops", lambda p: p["vision_flops"]
    ),
    Column(
        "prefill_flops",
        "prefill FLOPs",
        "flops",
        "vision + language over the prompt, matmul-class ops",
        lambda p: p["prefill_flops"],
    ),
    Column(
        "decode_flops",
        "decode FLOPs/token",
        "flops",
        "one generated token after the prompt, matmul-class ops",
        lambda p: p["decode_flops"],
    ),
    Column(
        "prefill_flops_total",
        "prefill FLOPs total",
        "flops",
        "prefill including the elementwise / norm / softmax estimate",
        lambda p: p["prefill_flops_total"],
    ),
    Column(
        "prefill_activation_bytes",
        "prefill activations",
        "bytes",
        "bytes of every tensor the prefill produces",
        lambda p: p["prefill_activation_bytes"],
    ),
    Column(
        "prefill_weight_bytes",
        "prefill weights read",
        "bytes",
        "parameter bytes the prefill reads",
        lambda p: p["prefill_weight_bytes"],
    ),
    Column(
        "decode_io_bytes",
        "decode I/O/token",
        "bytes",
        "weights + KV cache + activations moved per decoded token",
        lambda p: p["decode_io_bytes"],
    ),
]


def load_modes(family: Any, names: Optional[Sequence[str]] = None) -> dict[str, Any]:
    """{mode name: the family's workload} of the family's modes (all, or `names`), in the family's order: the
    family reads its own presets (`conf/workload/` for v1, `conf/workload/ocr2/` for DeepSeek-OCR 2) by its own
    rules."""
    available = family.modes()
    wanted = list(names) if names else list(available)
    for name in wanted:
        if name not in available:
            raise ConfigError.field("--modes", name, f"one of {', '.join(available) or '(none)'} ({family.label})")
    return {name: available[name] for name in wanted}


def load_pages() -> dict[str, tuple[int, int]]:
    """{page preset: (width, height)} of the `page` config group, in reading order (PAGE_ORDER first)."""
    names = sorted(
        group_options("page"), key=lambda n: (PAGE_ORDER.index(n) if n in PAGE_ORDER else len(PAGE_ORDER), n)
    )
    pages = {}
    for name, raw in zip(names, compose_each([[f"page={name}"] for name in names])):
        page = to_typed_config(raw).workload.page
        pages[name] = (page.width, page.height)
    return pages


DEFAULT_HARDWARE = ("h100_sxm",)


def load_roofs(names: Sequence[str], dtype: str) -> dict[str, Any]:
    """{name: Roof} of the datasheets `names` in `dtype` (ConfigError naming --hardware: an unknown
    name, `measured` (a report calibrates nothing), or a dtype the device has no peak for)."""
    from llm_perf_opt.analytic.time.hardware import datasheet_names, load_hardware

    sheets = datasheet_names()
    roofs = {}
    for name in names:
        if name not in sheets:
            raise ConfigError.field(
                "--hardware", name, f"one of {', '.join(sheets)} (datasheets; a report calibrates nothing)"
            )
        try:
            roofs[name] = load_hardware(name).roof(dtype)
        except ConfigError as exc:
            raise ConfigError(f"--hardware={name} with --dtype={dtype}: {exc}") from None
    return roofs


SERVE_OUTPUT_TOKENS = 1000  # analytic.serving.DEFAULT_OUTPUT_TOKENS (its reasoning there)
SERVE_MAX_BATCH = 4096  # analytic.sizing.MAX_SEARCH_BATCH
SERVE_CONVENTION = (
    f"continuous batching, steady state (analytic.serving), at the largest batch that fits the "
    f"device's memory (at most {SERVE_MAX_BATCH}; default allowance of analytic.memory_model), "
    f"{SERVE_OUTPUT_TOKENS} output tokens per page, ideal level (roofline)"
)


def load_capacities(names: Sequence[str]) -> dict[str, float]:
    """{name: memory bytes} of the datasheets `names` (for pages/day: the batch that fits)."""
    from llm_perf_opt.analytic.time.hardware import load_hardware

    return {name: load_hardware(name).memory_bytes for name in names}


def hardware_columns(roofs: dict[str, Any]) -> list[Column]:
    """The predicted-time columns of `analytic.csv` per roof: TTFT, decode per token, pages/day per GPU and
    the batch of that figure."""
    cols = []
    for name, roof in roofs.items():
        cols += [
            Column(
                f"pages_per_day_{name}",
                f"pages/day {name}",
                "count",
                f"predicted pages per day on one {roof.label}, {roof.dtype}: {SERVE_CONVENTION}",
                lambda p, n=name: p.get(f"pages_per_day_{n}"),
            ),
            Column(
                f"serve_batch_{name}",
                f"batch {name}",
                "int",
                f"the batch of pages/day {name}: the largest that fits its memory (at most {SERVE_MAX_BATCH})",
                lambda p, n=name: p.get(f"serve_batch_{n}"),
            ),
        ]
        cols += [
            Column(
                f"ttft_{name}_s",
                f"TTFT {name}",
                "seconds",
                f"predicted time to first token (the prefill) on {roof.label}, {roof.dtype}, roofline convention "
                "of analytic.time.ideal",
                lambda p, n=name: p[f"ttft_{n}_s"],
            ),
            Column(
                f"decode_{name}_s",
                f"decode/token {name}",
                "seconds",
                f"predicted decode time per token after the prompt on {roof.label}, {roof.dtype}",
                lambda p, n=name: p[f"decode_{n}_s"],
            ),
        ]
    return cols


@dataclass
class Evaluator:
    spec: Any
    family: Any
    prompt_tokens: int = 4
    dtype: str = "bfloat16"
    roofs: dict[str, Any] = field(default_factory=dict)  # name -> Roof: predicted times per point
    capacities: dict[str, float] = field(default_factory=dict)  # name -> memory bytes: pages/day per point
    _serve: dict = field(default_factory=dict, repr=False)  # (mode, grid, sequence) -> pages/day figures

    def serving(self, mode: str, model: Any) -> dict[str, Any]:
        """pages/day and its batch per roof with a capacity (SERVE_CONVENTION); the serving model depends on
        the page only through the crop grid and the sequence, so it is cached on those."""
        lay = model.layout
        key = (mode, lay.w_crop, lay.h_crop, model.seq_len)
        if key not in self._serve:
            from llm_perf_opt.analytic.memory_model import max_batch
            from llm_perf_opt.analytic.serving import pages_per_day

            sm = model.serving_model(None, self.dtype)  # the family's serving model
            out: dict[str, Any] = {}
            for name, roof in self.roofs.items():
                cap = self.capacities.get(name)
                if not cap:
                    continue
                b = min(max_batch(sm, SERVE_OUTPUT_TOKENS, cap, continuous=True), SERVE_MAX_BATCH)
                out[f"serve_batch_{name}"] = b
                out[f"pages_per_day_{name}"] = (
                    float(pages_per_day(sm, roof, [b], SERVE_OUTPUT_TOKENS)[1][0]) if b else 0.0
                )
            self._serve[key] = out
        return self._serve[key]

    def point(self, mode: str, workload: Any, width: int, height: int) -> dict[str, Any]:
        from llm_perf_opt.analytic.time.ideal import predict

        layout = self.family.layout(workload, width, height)
        model = self.family.analytic_model(self.spec, layout, prompt_tokens=self.prompt_tokens, dtype=self.dtype)
        vision, prefill, decode = model.vision(), model.prefill(), model.decode()
        times = {}
        for name, roof in self.roofs.items():
            times[f"ttft_{name}_s"] = predict(prefill, roof).time_s
            times[f"decode_{name}_s"] = predict(decode, roof).time_s
        return {
            "mode": mode,
            "width": width,
            "height": height,
            "aspect": round(width / height, 4),
            "megapixels": round(width * height / 1e6, 4),
            "grid": f"{layout.w_crop}x{layout.h_crop}",
            "views": layout.num_views,
            "image_tokens": layout.image_tokens,
            "seq_len": model.seq_len,
            "vision_flops": vision.flops_matmul,
            "prefill_flops": prefill.flops_matmul,
            "decode_flops": decode.flops_matmul,
            "prefill_flops_total": prefill.flops,
            "prefill_activation_bytes": prefill.activation_bytes,
            "prefill_weight_bytes": prefill.weight_bytes,
            "decode_io_bytes": decode.io_bytes,
            **times,
            **(self.serving(mode, model) if self.capacities else {}),
        }


# The largest --n: every point of the n × n grid per mode is held in memory, written to the CSV and drawn
# (n = 96, six modes: 59,952 points, 112 MB peak RSS, 1.3 s on a 2-core CPU; the points grow as n²).
MAX_GRID_N = 256


def side_grid(lo: int, hi: int, n: int) -> list[int]:
    """n page sides from lo to hi, evenly spaced, distinct integers; 2 <= n <= MAX_GRID_N."""
    if n < 2:
        raise ConfigError.field("--n", n, "must be >= 2")
    if n > MAX_GRID_N:
        raise ConfigError.field(
            "--n",
            n,
            f"must be at most {MAX_GRID_N} (n × n pages per mode are held in memory "
            f"and drawn; {MAX_GRID_N} is {MAX_GRID_N**2:,} pages per mode)",
        )
    if not 0 < lo < hi:
        raise ConfigError(f"--min-side={lo} and --max-side={hi} must satisfy 0 < min < max")
    return sorted({round(lo + (hi - lo) * i / (n - 1)) for i in range(n)})


@dataclass
class AnalyticReport:
    out_dir: Path
    csv: Path
    markdown: Path
    html: Path
    points: int
    seconds: float  # time spent evaluating layouts and costs (not plotting)
    plots: list[Path]


@dataclass
class AnalyticSweep:
    """Every evaluated point: the n × n grid per mode, the line plots' points and the page presets."""

    spec_name: str
    dtype: str
    modes: list[str]
    sides: list[int]
    points: list[dict[str, Any]]  # the grid, mode by mode, row (height) by row
    grids: dict[str, dict[str, list[list[float]]]]  # field -> mode -> [height][width]
    pages: dict[str, tuple[int, int]]
    aspects: list[float]
    by_aspect: dict[str, list[dict[str, Any]]]  # mode -> points over the aspect ratio at a fixed area
    long_sides: list[int]
    by_size: dict[str, list[dict[str, Any]]]  # mode -> points over the page size at the letter aspect
    presets: dict[tuple[str, str], dict[str, Any]]  # (page, mode) -> point
    seconds: float
    roofs: dict[str, Any] = field(default_factory=dict)  # name -> Roof of the predicted times

    @property
    def n_points(self) -> int:
        return (
            len(self.points)
            + sum(map(len, self.by_aspect.values()))
            + sum(map(len, self.by_size.values()))
            + len(self.presets)
        )


def evaluate(
    family: Any,
    workloads: dict[str, Any],
    pages: dict[str, tuple[int, int]],
    spec: Any,
    n: int,
    min_side: int,
    max_side: int,
    dtype: str,
    roofs: Optional[dict[str, Any]] = None,
    capacities: Optional[dict[str, float]] = None,
) -> AnalyticSweep:
    """Layouts and cost models over the page grid, the aspect and size lines, and the presets; predicted
    times on `roofs` for every point, and pages/day per GPU on those with a memory capacity in `capacities`."""
    ev = Evaluator(spec, family, dtype=dtype, roofs=dict(roofs or {}), capacities=dict(capacities or {}))
    sides = side_grid(min_side, max_side, n)
    t0 = time.perf_counter()
    points: list[dict[str, Any]] = []
    grids: dict[str, dict[str, list[list[float]]]] = {"image_tokens": {}, "prefill_flops": {}}
    for name, wl in workloads.items():
        tok_rows, flop_rows = [], []
        for h in sides:
            tok_row, flop_row = [], []
            for w in sides:
                p = ev.point(name, wl, w, h)
                points.append(p)
                tok_row.append(p["image_tokens"])
                flop_row.append(p["prefill_flops"])
            tok_rows.append(tok_row)
            flop_rows.append(flop_row)
        grids["image_tokens"][name] = tok_rows
        grids["prefill_flops"][name] = flop_rows
    # fixed area over aspect ratio (area of a US-letter page at 200 dpi), and fixed aspect over size
    area = 1700 * 2200
    aspects = [4 ** (-1 + 2 * i / (4 * n - 1)) for i in range(4 * n)]
    by_aspect = {
        name: [
            ev.point(name, wl, max(1, round(math.sqrt(area * a))), max(1, round(math.sqrt(area / a)))) for a in aspects
        ]
        for name, wl in workloads.items()
    }
    long_sides = side_grid(200, max_side, 4 * n)
    by_size = {
        name: [ev.point(name, wl, max(1, round(s * 17 / 22)), s) for s in long_sides] for name, wl in workloads.items()
    }
    presets = {
        (page, name): ev.point(name, wl, w, h) for page, (w, h) in pages.items() for name, wl in workloads.items()
    }
    return AnalyticSweep(
        spec.name,
        dtype,
        list(workloads),
        sides,
        points,
        grids,
        pages,
        aspects,
        by_aspect,
        long_sides,
        by_size,
        presets,
        time.perf_counter() - t0,
        dict(ev.roofs),
    )


def preset_tables(sweep: AnalyticSweep) -> list[TableView]:
    """One row per page preset, one column per mode: image tokens; prefill FLOPs; predicted time to first
    token on each roof."""
    tables = []
    fields_ = [("image_tokens", "count", "Image tokens"), ("prefill_flops", "flops", "Prefill FLOPs")]
    fields_ += [
        (f"ttft_{name}_s", "seconds", f"Predicted time to first token on {roof.label} ({roof.dtype})")
        for name, roof in sweep.roofs.items()
    ]
    fields_ += [
        (
            f"pages_per_day_{name}",
            "count",
            f"Predicted pages/day on one {roof.label} ({roof.dtype}; {SERVE_CONVENTION})",
        )
        for name, roof in sweep.roofs.items()
        if any(f"pages_per_day_{name}" in p for p in sweep.presets.values())
    ]
    for field_name, kind, what in fields_:
        cols = [
            Column("page", "page", "str", "page preset (conf/page/)", lambda r: r["page"]),
            Column("size", "size", "str", "width × height", lambda r: r["size"]),
        ]
        cols += [Column(m, m, kind, f"{what} in mode {m}", lambda r, m=m: r[m]) for m in sweep.modes]
        rows = [
            {"page": page, "size": f"{w}×{h}", **{m: sweep.presets[(page, m)][field_name] for m in sweep.modes}}
            for page, (w, h) in sweep.pages.items()
        ]
        tables.append(TableView(cols, rows, title=what))
    return tables


def page_data(sweep: AnalyticSweep, plots: list[tuple[Path, str]]) -> dict[str, Any]:
    """Everything analytic.md and analytic.html show."""
    sides = sweep.sides
    intro = (
        f"{len(sweep.points):,} pages ({len(sides)}×{len(sides)} sides from {sides[0]} to {sides[-1]} px) × "
        f"{len(sweep.modes)} modes, plus {sweep.n_points - len(sweep.points):,} points on the line plots; "
        f"{sweep.n_points:,} layouts and cost models evaluated in {sweep.seconds:.2f} s (no model built). "
        f"FLOPs count matmul-class ops (as torch's flop counter does); dtype {sweep.dtype} for bytes."
        + (
            f" Predicted times on {', '.join(r.label for r in sweep.roofs.values())}: per unit of the cost "
            "model max(compute time, memory time) on the datasheet's dense peak and bandwidth, units summed "
            "(analytic.time.ideal; time to first token = the prefill)."
            if sweep.roofs
            else ""
        )
    )
    return {
        "title": f"Analytic page sweep: {sweep.spec_name}",
        "intro": intro,
        "tables": preset_tables(sweep),
        "plots": [
            PlotView(p, cap, f"{PLOTS_DIR}/{p.name}", f"{PLOTS_DIR}/{p.stem}.png", wide=p.stem.startswith("heatmap"))
            for p, cap in plots
        ],
        "columns": POINT_COLUMNS + hardware_columns(sweep.roofs),
    }


ANALYTIC_OUTPUTS = ("analytic.csv", "analytic.md", "analytic.html", PLOTS_DIR)  # what build_analytic_report writes
COMPARE_OUTPUTS = ("compare.csv", "compare.md")  # what build_family_comparison writes


def _make_dir(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    return out


def build_analytic_report(
    out_dir: str | Path,
    modes: Optional[Sequence[str]] = None,
    n: int = 48,
    min_side: int = 256,
    max_side: int = 4096,
    model: str = "deepseek_ocr",
    dtype: str = "bfloat16",
    plots: bool = True,
    hardware: Optional[Sequence[str]] = DEFAULT_HARDWARE,
    *,
    family: Any,
    make_dir: Callable[[Path], Path] = _make_dir,
) -> AnalyticReport:
    """`hardware`: datasheets to predict times on (default `DEFAULT_HARDWARE`; empty: none); `family`: the
    model family (`llm_perf_opt.families`), whose spec `model` names (a preset or a vendor config.json);
    `make_dir(out)`: the output directory made ready once everything is evaluated, before the first write
    (`report.output_dirs.claim_output`: refused or cleared of an earlier report)."""
    out = Path(out_dir)
    spec = model_spec(family, model)
    side_grid(min_side, max_side, n)  # refuse bad sides before anything is composed or written
    roofs = load_roofs(list(hardware or ()), dtype)
    sweep = evaluate(
        family,
        load_modes(family, modes),
        load_pages(),
        spec,
        n,
        min_side,
        max_side,
        dtype,
        roofs,
        load_capacities(list(roofs)),
    )
    out = make_dir(out)
    csv_path = render.write_csv(out / "analytic.csv", POINT_COLUMNS + hardware_columns(roofs), sweep.points)
    plot_files = _plots(out / PLOTS_DIR, sweep) if plots else []
    data = page_data(sweep, plot_files)
    md_path = render.write_page(out / "analytic.md", "analytic.md.j2", **data)
    html_path = render.write_page(out / "analytic.html", "analytic.html.j2", **data)
    return AnalyticReport(out, csv_path, md_path, html_path, sweep.n_points, sweep.seconds, [p for p, _ in plot_files])


def _plots(out: Path, sweep: AnalyticSweep) -> list[tuple[Path, str]]:
    from llm_perf_opt.report import plots as plotting

    sides, grids, pages, aspects = sweep.sides, sweep.grids, sweep.pages, sweep.aspects
    by_aspect, long_sides, by_size, spec_name = sweep.by_aspect, sweep.long_sides, sweep.by_size, sweep.spec_name
    files: list[tuple[Path, str]] = []
    marks = {name: (w, h) for name, (w, h) in pages.items()}
    fig = plotting.heatmaps(
        grids["image_tokens"],
        xs=sides,
        ys=sides,
        title="Image tokens by page size",
        cbar_label="image tokens",
        kind="count",
        points=marks,
    )
    files.append(
        (
            plotting.save(fig, out, "heatmap_tokens")["svg"],
            "Image tokens over page width × height, one panel per mode (dots: the page presets). Crop "
            "modes jump where the crop grid changes; no-crop modes are flat.",
        )
    )
    fig = plotting.heatmaps(
        grids["prefill_flops"],
        xs=sides,
        ys=sides,
        title=f"Prefill FLOPs by page size ({spec_name})",
        cbar_label="prefill FLOPs (log scale)",
        kind="flops",
        log=True,
        points=marks,
    )
    files.append(
        (
            plotting.save(fig, out, "heatmap_prefill_flops")["svg"],
            "Prefill FLOPs (log colour scale) over page width × height, one panel per mode.",
        )
    )
    ticks = {0.25: "1:4", 1 / 3: "1:3", 0.5: "1:2", 1.0: "1:1", 2.0: "2:1", 3.0: "3:1", 4.0: "4:1"}
    aspect_marks = {name: w / h for name, (w, h) in pages.items() if name in ("letter_portrait", "slide", "receipt")}
    fig = plotting.line_plot(
        aspects,
        {m: [p["image_tokens"] for p in pts] for m, pts in by_aspect.items()},
        title="Image tokens over the aspect ratio (page area 3.74 MP)",
        xlabel="aspect (width : height)",
        ylabel="image tokens",
        logx=True,
        xticks=ticks,
        marks=aspect_marks,
        step=True,
    )
    files.append(
        (
            plotting.save(fig, out, "tokens_by_aspect")["svg"],
            "Image tokens over the aspect ratio at the area of a US-letter page at 200 dpi (1700×2200).",
        )
    )
    fig = plotting.line_plot(
        aspects,
        {m: [p["prefill_flops"] for p in pts] for m, pts in by_aspect.items()},
        title="Prefill FLOPs over the aspect ratio (page area 3.74 MP)",
        xlabel="aspect (width : height)",
        ylabel="prefill FLOPs",
        kind="flops",
        logx=True,
        logy=True,
        xticks=ticks,
        marks=aspect_marks,
        step=True,
    )
    files.append(
        (
            plotting.save(fig, out, "prefill_flops_by_aspect")["svg"],
            "Prefill FLOPs (log scale) over the aspect ratio at a fixed page area.",
        )
    )
    fig = plotting.line_plot(
        long_sides,
        {m: [p["image_tokens"] for p in pts] for m, pts in by_size.items()},
        title="Image tokens over the page size (US-letter aspect 17:22)",
        xlabel="page height (px)",
        ylabel="image tokens",
        step=True,
        marks={"crop threshold 640": 640},
    )
    files.append(
        (
            plotting.save(fig, out, "tokens_by_size")["svg"],
            "Image tokens as a letter-shaped page grows: crop modes tile only above 640 px.",
        )
    )
    files.extend(_time_plots(out, sweep))
    return files


def _time_plots(out: Path, sweep: AnalyticSweep) -> list[tuple[Path, str]]:
    """Predicted time to first token: bars per page preset and mode, one plot per roof; and over the page
    size at the letter aspect, one line per mode and roof."""
    from llm_perf_opt.report import plots as plotting

    files: list[tuple[Path, str]] = []
    if not sweep.roofs:
        return files
    pages = list(sweep.pages)
    for name, roof in sweep.roofs.items():
        key = f"ttft_{name}_s"
        series = {m: [sweep.presets[(page, m)][key] for page in pages] for m in sweep.modes}
        fig = plotting.grouped_bars(
            pages,
            series,
            title=f"Predicted time to first token on {roof.label} ({roof.dtype})",
            ylabel="time to first token (s)",
            kind="seconds",
            xlabel="page preset",
            logy=True,
        )
        files.append(
            (
                plotting.save(fig, out, f"ttft_by_page_{name}")["svg"],
                f"Predicted time to first token (the prefill: vision + the whole prompt) per page preset and "
                f"mode on {roof.label}, {roof.dtype}, roofline convention (log scale).",
            )
        )
    lines, styles = {}, {}
    dashes = ("-", "--", ":", "-.")
    for r, name in enumerate(sweep.roofs):
        for i, m in enumerate(sweep.modes):  # colour: the mode; line style: the roof
            lines[f"{m} · {name}"] = [p[f"ttft_{name}_s"] for p in sweep.by_size[m]]
            styles[f"{m} · {name}"] = {"color": f"C{i % 10}", "linestyle": dashes[r % len(dashes)]}
    fig = plotting.line_plot(
        sweep.long_sides,
        lines,
        title="Predicted time to first token over the page size (letter aspect)",
        xlabel="page height (px)",
        ylabel="time to first token (s)",
        kind="seconds",
        logy=True,
        step=True,
        styles=styles,
    )
    files.append(
        (
            plotting.save(fig, out, "ttft_by_size")["svg"],
            "Predicted time to first token as a letter-shaped page grows, one line per mode and roof.",
        )
    )
    return files


# ------------------------------------------------------------------------------------- families side by side
def model_spec(family: Any, model: str) -> Any:
    """The family's spec named `model`: a preset of its twin, or a vendor directory / config.json."""
    return family.spec_from_config_json(model) if Path(model).exists() else family.spec_named(model)


@dataclass(frozen=True)
class CompareEntry:
    """One column group of the side-by-side table: a family, one of its models and one of its modes."""

    label: str
    family: Any
    model: str
    mode: str


COMPARE_STAGES = ("vision", "prefill", "decode")
COMPARE_FIGURES = ("flops_matmul", "flops", "io_bytes", "weight_bytes", "activation_bytes")


def compare_rows(
    entries: Sequence[CompareEntry],
    pages: dict[str, tuple[int, int]],
    roofs: dict[str, Any],
    dtype: str = "bfloat16",
    prompt_tokens: int = 4,
) -> list[dict[str, Any]]:
    """One row per (page, entry), pages first: image tokens, sequence, and per stage FLOPs, bytes and the
    predicted time on each roof (roofline: max(FLOPs / peak, bytes / bandwidth) in `dtype`)."""
    from llm_perf_opt.analytic.time.ideal import predict

    rows = []
    prepared = []
    for e in entries:
        workload = load_modes(e.family, [e.mode])[e.mode]
        prepared.append((e, workload, model_spec(e.family, e.model)))
    for page, (width, height) in pages.items():
        for e, workload, spec in prepared:
            layout = e.family.layout(workload, width, height)
            model = e.family.analytic_model(spec, layout, prompt_tokens=prompt_tokens, dtype=dtype)
            row: dict[str, Any] = {
                "page": page,
                "width": width,
                "height": height,
                "model": e.label,
                "family": e.family.name,
                "spec": spec.name,
                "mode": e.mode,
                "image_tokens": layout.image_tokens,
                "seq_len": model.seq_len,
            }
            for stage_name in COMPARE_STAGES:
                stage = model.stage(stage_name)
                for fig in COMPARE_FIGURES:
                    row[f"{stage_name}_{fig}"] = getattr(stage.total, fig)
                for name, roof in roofs.items():
                    row[f"{stage_name}_{name}_s"] = predict(stage, roof).time_s
            rows.append(row)
    return rows


def compare_columns(roofs: dict[str, Any]) -> list[Column]:
    cols = [
        Column("page", "page", "str", "page preset (conf/page/) or size", lambda r: r["page"]),
        Column("width", "width", "int", "page width in pixels", lambda r: r["width"]),
        Column("height", "height", "int", "page height in pixels", lambda r: r["height"]),
        Column("model", "model", "str", "the entry's label (family:model:mode)", lambda r: r["model"]),
        Column("family", "family", "str", "model family (llm_perf_opt.families)", lambda r: r["family"]),
        Column("mode", "mode", "str", "workload preset", lambda r: r["mode"]),
        Column(
            "image_tokens",
            "image tokens",
            "count",
            "image-token positions in the sequence",
            lambda r: r["image_tokens"],
        ),
        Column("seq_len", "sequence", "count", "BOS + image tokens + prompt tokens", lambda r: r["seq_len"]),
    ]
    kinds = {
        "flops_matmul": "flops",
        "flops": "flops",
        "io_bytes": "bytes",
        "weight_bytes": "bytes",
        "activation_bytes": "bytes",
    }
    for stage in COMPARE_STAGES:
        for fig in COMPARE_FIGURES:
            key = f"{stage}_{fig}"
            cols.append(
                Column(
                    key,
                    f"{stage} {fig.replace('_', ' ')}",
                    kinds[fig],
                    f"analytic {fig} of the {stage} stage",
                    lambda r, k=key: r[k],
                    fig == "flops_matmul",
                )
            )
        for name, roof in roofs.items():
            key = f"{stage}_{name}_s"
            cols.append(
                Column(
                    key,
                    f"{stage} on {name}",
                    "seconds",
                    f"predicted {stage} time on {roof.label}, {roof.dtype} (roofline)",
                    lambda r, k=key: r[k],
                )
            )
    return cols


def build_family_comparison(
    out_dir: str | Path,
    entries: Sequence[CompareEntry],
    *,
    pages: Optional[dict[str, tuple[int, int]]] = None,
    dtype: str = "bfloat16",
    hardware: Optional[Sequence[str]] = DEFAULT_HARDWARE,
    make_dir: Callable[[Path], Path] = _make_dir,
) -> tuple[Path, Path, int]:
    """compare.csv and compare.md in `out_dir`: every entry at the same pages (default: the page presets).
    Returns (csv, markdown, rows). `make_dir` as `build_analytic_report`'s."""
    if len(entries) < 2:
        raise ConfigError.field("--compare", [e.label for e in entries], "needs at least two entries to compare")
    roofs = load_roofs(list(hardware or ()), dtype)
    rows = compare_rows(entries, pages if pages is not None else load_pages(), roofs, dtype)
    out = make_dir(Path(out_dir))
    columns = compare_columns(roofs)
    csv_path = render.write_csv(out / "compare.csv", columns, rows)
    brief = [c for c in columns if c.brief]
    lines = [
        f"# Side by side: {', '.join(e.label for e in entries)}",
        "",
        f"Analytic costs per page ({dtype}; matmul-class FLOPs as torch's flop counter counts them; predicted "
        f"times: roofline on {', '.join(r.label for r in roofs.values()) or 'no roof'}).",
        "",
        "| " + " | ".join(c.header for c in brief) + " |",
        "|" + "---|" * len(brief),
    ]
    from llm_perf_opt.report.table import fmt

    for r in rows:
        lines.append("| " + " | ".join(fmt(c.get(r), c.kind) for c in brief) + " |")
    md_path = out / "compare.md"
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return csv_path, md_path, len(rows)
