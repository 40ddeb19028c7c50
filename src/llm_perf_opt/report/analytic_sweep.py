"""Analytic-only report over thousands of page sizes: no model is built, nothing runs in torch.

For every mode (conf/workload/*.yaml) and every page on an n × n grid of widths and heights, the view
layout (`compute_view_layout`) and the analytic model (`DeepseekOCRAnalyticModel`) give image tokens,
sequence length and vision / prefill / decode FLOPs and bytes. The result is for looking at:

* heatmaps (width × height) of image tokens and prefill FLOPs, one panel per mode, the page presets
  of conf/page/ marked as dots;
* line plots at a fixed page area over the aspect ratio (1:4 … 4:1), and over the page size at a
  fixed aspect (US letter), one line per mode;
* a table of the page presets × modes;

plus `analytic.csv` with every point. The analytic model caches identical blocks, so a few thousand
pages per mode take well under a second each.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from omegaconf import OmegaConf

from llm_perf_opt.artifacts import atomic_write_text
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.report import render
from llm_perf_opt.report.table import MODE_ORDER, PAGE_ORDER, Column

CONF_DIR = Path(__file__).resolve().parents[3] / "conf"
PLOTS_DIR = "analytic_plots"

POINT_FIELDS = ("mode", "width", "height", "aspect", "megapixels", "grid", "views", "image_tokens", "seq_len",
                "vision_flops", "prefill_flops", "decode_flops", "prefill_flops_total",
                "prefill_activation_bytes", "prefill_weight_bytes", "decode_io_bytes")
POINT_COLUMNS = [
    Column("mode", "mode", "str", "workload preset (conf/workload/)", lambda p: p["mode"]),
    Column("width", "width", "int", "page width in pixels", lambda p: p["width"]),
    Column("height", "height", "int", "page height in pixels", lambda p: p["height"]),
    Column("aspect", "aspect", "float", "width / height", lambda p: p["aspect"]),
    Column("megapixels", "MP", "float", "width × height / 1e6", lambda p: p["megapixels"]),
    Column("grid", "grid", "str", "crop grid, tiles across × down", lambda p: p["grid"]),
    Column("views", "views", "int", "1 global view + crops", lambda p: p["views"]),
    Column("image_tokens", "image tokens", "count", "image-token positions in the sequence", lambda p: p["image_tokens"]),
    Column("seq_len", "sequence", "count", "BOS + image tokens + prompt tokens", lambda p: p["seq_len"]),
    Column("vision_flops", "vision FLOPs", "flops", "SAM + CLIP + projector, matmul-class ops", lambda p: p["vision_flops"]),
    Column("prefill_flops", "prefill FLOPs", "flops", "vision + language over the prompt, matmul-class ops",
           lambda p: p["prefill_flops"]),
    Column("decode_flops", "decode FLOPs/token", "flops", "one generated token after the prompt, matmul-class ops",
           lambda p: p["decode_flops"]),
    Column("prefill_flops_total", "prefill FLOPs total", "flops",
           "prefill including the elementwise / norm / softmax estimate", lambda p: p["prefill_flops_total"]),
    Column("prefill_activation_bytes", "prefill activations", "bytes", "bytes of every tensor the prefill produces",
           lambda p: p["prefill_activation_bytes"]),
    Column("prefill_weight_bytes", "prefill weights read", "bytes", "parameter bytes the prefill reads",
           lambda p: p["prefill_weight_bytes"]),
    Column("decode_io_bytes", "decode I/O/token", "bytes", "weights + KV cache + activations moved per decoded token",
           lambda p: p["decode_io_bytes"]),
]


def load_modes(names: Optional[Sequence[str]] = None, conf_dir: Path = CONF_DIR) -> dict[str, Any]:
    """{mode name: VisionWorkload} from conf/workload/<name>.yaml, in the canonical order."""
    from llm_perf_opt.dsocr.layout import VisionWorkload

    folder = conf_dir / "workload"
    available = sorted((p.stem for p in folder.glob("*.yaml")), key=lambda n: (MODE_ORDER.index(n)
                       if n in MODE_ORDER else len(MODE_ORDER), n)) if folder.is_dir() else []
    wanted = list(names) if names else available
    out = {}
    for name in wanted:
        if name not in available:
            raise ConfigError.field("--modes", name, f"one of {', '.join(available) or '(no conf/workload/*.yaml)'}")
        cfg = OmegaConf.to_container(OmegaConf.load(folder / f"{name}.yaml"))
        out[name] = VisionWorkload(base_size=cfg["base_size"], image_size=cfg["image_size"],
                                   crop_mode=cfg["crop_mode"], tile_size=cfg.get("tile_size", 640))
    return out


def load_pages(conf_dir: Path = CONF_DIR) -> dict[str, tuple[int, int]]:
    folder = conf_dir / "page"
    pages = {}
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        cfg = OmegaConf.to_container(OmegaConf.load(path))
        pages[path.stem] = (int(cfg["width"]), int(cfg["height"]))
    return dict(sorted(pages.items(), key=lambda kv: (PAGE_ORDER.index(kv[0]) if kv[0] in PAGE_ORDER
                                                      else len(PAGE_ORDER), kv[0])))


@dataclass
class Evaluator:
    spec: Any
    prompt_tokens: int = 4
    dtype: str = "bfloat16"

    def point(self, mode: str, workload: Any, width: int, height: int) -> dict[str, Any]:
        from llm_perf_opt.analytic import DeepseekOCRAnalyticModel
        from llm_perf_opt.dsocr.layout import compute_view_layout

        layout = compute_view_layout(workload, width, height)
        model = DeepseekOCRAnalyticModel(self.spec, layout, prompt_tokens=self.prompt_tokens, dtype=self.dtype)
        vision, prefill, decode = model.vision(), model.prefill(), model.decode()
        return {
            "mode": mode, "width": width, "height": height, "aspect": round(width / height, 4),
            "megapixels": round(width * height / 1e6, 4), "grid": f"{layout.w_crop}x{layout.h_crop}",
            "views": layout.num_views, "image_tokens": layout.image_tokens, "seq_len": model.seq_len,
            "vision_flops": vision.flops_matmul, "prefill_flops": prefill.flops_matmul,
            "decode_flops": decode.flops_matmul, "prefill_flops_total": prefill.flops,
            "prefill_activation_bytes": prefill.activation_bytes, "prefill_weight_bytes": prefill.weight_bytes,
            "decode_io_bytes": decode.io_bytes,
        }


def side_grid(lo: int, hi: int, n: int) -> list[int]:
    """n page sides from lo to hi, evenly spaced, distinct integers."""
    if n < 2:
        raise ConfigError.field("--n", n, "must be >= 2")
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


def build_analytic_report(out_dir: str | Path, modes: Optional[Sequence[str]] = None, n: int = 48,
                          min_side: int = 256, max_side: int = 4096, model: str = "deepseek_ocr",
                          dtype: str = "bfloat16", plots: bool = True) -> AnalyticReport:
    from llm_perf_opt.dsocr.spec import ModelSpec

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    workloads = load_modes(modes)
    pages = load_pages()
    spec = ModelSpec.from_config_json(model) if Path(model).exists() else ModelSpec.named(model)
    ev = Evaluator(spec, dtype=dtype)
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
    by_aspect = {name: [ev.point(name, wl, max(1, round(math.sqrt(area * a))), max(1, round(math.sqrt(area / a))))
                        for a in aspects] for name, wl in workloads.items()}
    long_sides = side_grid(200, max_side, 4 * n)
    by_size = {name: [ev.point(name, wl, max(1, round(s * 17 / 22)), s) for s in long_sides]
               for name, wl in workloads.items()}
    preset_points = {(page, name): ev.point(name, wl, w, h) for page, (w, h) in pages.items()
                     for name, wl in workloads.items()}
    seconds = time.perf_counter() - t0
    n_points = len(points) + sum(map(len, by_aspect.values())) + sum(map(len, by_size.values())) + len(preset_points)

    csv_path = render.write_csv(out / "analytic.csv", POINT_COLUMNS, points)
    plot_files: list[tuple[Path, str]] = []
    if plots:
        plot_files = _plots(out / PLOTS_DIR, sides, grids, pages, aspects, by_aspect, long_sides, by_size, spec.name)

    # preset tables: one row per page, one column per mode (image tokens; prefill FLOPs)
    mode_names = list(workloads)
    tables = []
    for field_name, kind, what in (("image_tokens", "count", "Image tokens"), ("prefill_flops", "flops", "Prefill FLOPs")):
        cols = [Column("page", "page", "str", "page preset (conf/page/)", lambda r: r["page"]),
                Column("size", "size", "str", "width × height", lambda r: r["size"])]
        cols += [Column(m, m, kind, f"{what} in mode {m}", lambda r, m=m: r[m]) for m in mode_names]
        rows = [{"page": page, "size": f"{w}×{h}", **{m: preset_points[(page, m)][field_name] for m in mode_names}}
                for page, (w, h) in pages.items()]
        tables.append((what, cols, rows))

    title = f"Analytic page sweep: {spec.name}"
    intro = (f"{len(points):,} pages ({len(sides)}×{len(sides)} sides from {sides[0]} to {sides[-1]} px) × "
             f"{len(mode_names)} modes, plus {n_points - len(points):,} points on the line plots; "
             f"{n_points:,} layouts and cost models evaluated in {seconds:.2f} s (no model built). "
             f"FLOPs count matmul-class ops (as torch's flop counter does); dtype {dtype} for bytes.")
    md = [f"# {title}", "", intro, ""]
    for what, cols, rows in tables:
        md += [f"## {what} of the page presets (conf/page/)", "", render.markdown_table(cols, rows)]
    md += ["## Plots", ""]
    md += [f"![{cap}]({PLOTS_DIR}/{p.stem}.png)\n\n{cap}\n" for p, cap in plot_files]
    md += ["Every point: `analytic.csv`.", "", "## Columns of analytic.csv", "", render.glossary_md(POINT_COLUMNS)]
    md_path = atomic_write_text(out / "analytic.md", "\n".join(md))

    from llm_perf_opt.report.plots import svg_inline

    body = [f"<h1>{render.esc(title)}</h1>", f'<p class="sub">{render.esc(intro)}</p>']
    if plot_files:
        body.append('<h2>Plots</h2><div class="plots">' + "".join(
            render.html_figure(svg_inline(p), cap, f"{PLOTS_DIR}/{p.stem}.png", f"{PLOTS_DIR}/{p.name}",
                               wide=p.stem.startswith("heatmap")) for p, cap in plot_files) + "</div>")
    for what, cols, rows in tables:
        body += [f"<h2>{what} of the page presets (conf/page/)</h2>", render.html_table(cols, rows)]
    body.append('<p>Every point: <a href="analytic.csv">analytic.csv</a> · <a href="analytic.md">analytic.md</a></p>')
    body.append("<h2>Columns of analytic.csv</h2>" + render.glossary_html(POINT_COLUMNS))
    html_path = atomic_write_text(out / "analytic.html", render.html_page(title, "\n".join(body)))
    return AnalyticReport(out, csv_path, md_path, html_path, n_points, seconds, [p for p, _ in plot_files])


def _plots(out: Path, sides, grids, pages, aspects, by_aspect, long_sides, by_size, spec_name) -> list[tuple[Path, str]]:
    from llm_perf_opt.report import plots as P

    files: list[tuple[Path, str]] = []
    marks = {name: (w, h) for name, (w, h) in pages.items()}
    fig = P.heatmaps(grids["image_tokens"], xs=sides, ys=sides, title="Image tokens by page size",
                     cbar_label="image tokens", kind="count", points=marks)
    files.append((P.save(fig, out, "heatmap_tokens")["svg"],
                  "Image tokens over page width × height, one panel per mode (dots: the page presets). Crop "
                  "modes jump where the crop grid changes; no-crop modes are flat."))
    fig = P.heatmaps(grids["prefill_flops"], xs=sides, ys=sides, title=f"Prefill FLOPs by page size ({spec_name})",
                     cbar_label="prefill FLOPs (log scale)", kind="flops", log=True, points=marks)
    files.append((P.save(fig, out, "heatmap_prefill_flops")["svg"],
                  "Prefill FLOPs (log colour scale) over page width × height, one panel per mode."))
    ticks = {0.25: "1:4", 1 / 3: "1:3", 0.5: "1:2", 1.0: "1:1", 2.0: "2:1", 3.0: "3:1", 4.0: "4:1"}
    aspect_marks = {name: w / h for name, (w, h) in pages.items() if name in ("letter_portrait", "slide", "receipt")}
    fig = P.line_plot(aspects, {m: [p["image_tokens"] for p in pts] for m, pts in by_aspect.items()},
                      title="Image tokens over the aspect ratio (page area 3.74 MP)", xlabel="aspect (width : height)",
                      ylabel="image tokens", logx=True, xticks=ticks, marks=aspect_marks, step=True)
    files.append((P.save(fig, out, "tokens_by_aspect")["svg"],
                  "Image tokens over the aspect ratio at the area of a US-letter page at 200 dpi (1700×2200)."))
    fig = P.line_plot(aspects, {m: [p["prefill_flops"] for p in pts] for m, pts in by_aspect.items()},
                      title="Prefill FLOPs over the aspect ratio (page area 3.74 MP)", xlabel="aspect (width : height)",
                      ylabel="prefill FLOPs", kind="flops", logx=True, logy=True, xticks=ticks, marks=aspect_marks,
                      step=True)
    files.append((P.save(fig, out, "prefill_flops_by_aspect")["svg"],
                  "Prefill FLOPs (log scale) over the aspect ratio at a fixed page area."))
    fig = P.line_plot(long_sides, {m: [p["image_tokens"] for p in pts] for m, pts in by_size.items()},
                      title="Image tokens over the page size (US-letter aspect 17:22)", xlabel="page height (px)",
                      ylabel="image tokens", step=True, marks={"crop threshold 640": 640})
    files.append((P.save(fig, out, "tokens_by_size")["svg"],
                  "Image tokens as a letter-shaped page grows: crop modes tile only above 640 px."))
    return files
