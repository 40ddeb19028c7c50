"""The configuration's top level, `RootConfig`, composed of one section per config group, and the sections of
the job itself: what runs (`model`), on what (`workload`, `page`) and where (`runtime`).

Every other section is owned by its stage package, next to the code that reads it, in a module named
`<package>/<name>_config.py` that imports only the configuration's base helpers (`config.fields`, `config.paths`,
`errors`); `RootConfig` names each once:

| section | owner |
|---|---|
| `trace` | `trace/trace_config.py` (which of the trace job's stages run) |
| `verify` | `gate/verify_config.py` (the trace job's verification knobs and the gate's matrix) |
| `render` | `callgraph/render_config.py` |
| `hardware` | `analytic/hardware_config.py` (a roof for predictions) |
| `profile` | `measure/profile_config.py` |
| `export` | `export/export_config.py` |
| `run` | `runs/run_config.py` |
| `serve`, `size` | `analytic/serve_config.py` |

The names the sections define are re-exported here, so `config.schemas.ProfileConfig` is the profile stage's.
`RootConfig` composes them by name, statically (not from a registry filled at run time), so Hydra, OmegaConf and a
reader see every field and its type in one place; the section modules import nothing above the config layer, which
is what lets this low layer import them (the import-layer test checks it).

Hydra composes YAML into these types (so a misspelt key or a wrong type is refused by OmegaConf), and
`to_typed_config` instantiates them, running each `__post_init__` on the final values. The schemas hold
plain values and check plain rules only (types, ranges, one-of choices, files that must exist). The workload
section here is what every family has; a family's knobs are its own schema, a subclass of `WorkloadConfig` that
the family declares and its workload files name (Hydra types the `workload` node as it). The model's rules on
top (DeepSeek-OCR: sizes in multiples of 64, crop mode tiling, the `<image>` placeholder) belong to the model
family (`model.family`, default dsocr) and run in the pipeline's validation step (`llm_perf_opt.prepare.validate`),
before any work. Nothing here imports torch or a family package.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from llm_perf_opt.analytic.hardware_config import (  # noqa: F401 - re-exported
    HARDWARE_KINDS,
    MATMUL_PEAK_KEYS,
    PREDICTION_DTYPES,
    HardwareConfig,
    HardwareFigure,
)
from llm_perf_opt.analytic.serve_config import ENGINE_NAMES, ServeConfig, SizeConfig  # noqa: F401 - re-exported
from llm_perf_opt.callgraph.render_config import RENDER_COLOR_BY, RenderConfig  # noqa: F401 - re-exported
from llm_perf_opt.config.fields import MAX_BATCH, _batch, _one_of, _positive_int
from llm_perf_opt.config.paths import user_path
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.export.export_config import EXPORT_MOE_REMEDIES, ExportConfig  # noqa: F401 - re-exported
from llm_perf_opt.gate.verify_config import VerifyConfig
from llm_perf_opt.measure.profile_config import ProfileConfig
from llm_perf_opt.runs.run_config import RunConfig
from llm_perf_opt.trace.trace_config import TraceConfig

MODEL_SOURCES = ("twin", "vendor")
DEVICES = ("cpu", "cuda")
DTYPES = ("float32", "bfloat16", "float16")
ATTN_IMPLEMENTATIONS = ("eager", "sdpa", "flash_attention_2")
WEIGHTS = ("auto", "random")
DEFAULT_PROMPT = "<image>\nFree OCR."  # the vendor's infer() default; dsocr.inputs knows its token ids


@dataclass
class ModelConfig:
    """What the session loads: the twin (full or tiny) or the vendor code from a local directory."""

    name: str = "twin"
    family: str = "dsocr"  # the model family (llm_perf_opt.families): its spec, twin, session, analytic model
    source: str = "twin"
    spec: str = "deepseek_ocr"  # twin only: a named spec of the family's twin (dsocr: deepseek_ocr, tiny)
    path: Optional[str] = None  # vendor only: directory with config.json and the vendor .py files
    weights: str = "auto"  # vendor: "auto" loads safetensors when present, "random" never does
    seed: int = 0

    def __post_init__(self) -> None:
        _one_of("model.source", self.source, MODEL_SOURCES)
        _one_of("model.weights", self.weights, WEIGHTS)
        if not isinstance(self.family, str) or not self.family:
            raise ConfigError.field("model.family", self.family, "must name a model family (dsocr, ...)")
        if self.source == "twin":
            if not isinstance(self.spec, str) or not self.spec:
                raise ConfigError.field("model.spec", self.spec, "must name a spec of the family's twin")
            return  # which names the twin knows is the family's rule (checked at validation)
        if not self.path:
            raise ConfigError("model.path is required for model=vendor: pass model.path=DIR or set DSOCR_MODEL_PATH")
        path = user_path(self.path)  # relative to where the user ran the command, not the repository
        self.path = str(path)
        if not path.is_dir():
            raise ConfigError.field(
                "model.path", self.path, "must be an existing directory (the vendor model directory)"
            )
        if not (path / "config.json").is_file():
            raise ConfigError.field("model.path", self.path, "must contain config.json (the vendor model directory)")


@dataclass
class PageConfig:
    """The page: a synthetic width×height page, or a real image file (then width/height are ignored)."""

    width: int = 1700  # a US-letter page at 200 dpi
    height: int = 2200
    image: Optional[str] = None

    def __post_init__(self) -> None:
        if self.image is not None:
            self.image = str(user_path(self.image))  # relative to where the user ran the command
            if not Path(self.image).is_file():
                raise ConfigError.field("workload.page.image", self.image, "must be an existing image file")
            return
        for name in ("width", "height"):
            _positive_int(f"workload.page.{name}", getattr(self, name), "(pixels)")


PAGE_PRESETS_DIR = Path(__file__).resolve().parents[3] / "conf" / "page"


def page_size_of(entry: str) -> tuple[int, int]:
    """(width, height) of a `workload.pages` entry: "WxH" in pixels, or the name of a conf/page/ preset."""
    text = str(entry).strip()
    if "x" in text.lower():
        w, _, h = text.lower().partition("x")
        if w.isdigit() and h.isdigit() and int(w) > 0 and int(h) > 0:
            return int(w), int(h)
    else:
        for conf_dir in (PAGE_PRESETS_DIR, _packaged_page_dir()):
            path = conf_dir / f"{text}.yaml" if conf_dir is not None else None
            if path is not None and path.is_file():
                from omegaconf import OmegaConf

                preset = OmegaConf.load(path)
                return int(preset.width), int(preset.height)
    raise ConfigError.field(
        "workload.pages",
        entry,
        "each entry is WIDTHxHEIGHT in pixels (e.g. 1700x2200) or a page preset of conf/page/ (e.g. a4_portrait)",
    )


def _packaged_page_dir() -> Optional[Path]:
    try:
        import llm_perf_opt.conf as conf
    except ImportError:
        return None
    return Path(conf.__file__).parent / "page"


# The workload fields every model family has (`WorkloadConfig`'s); the others are one family's knobs, in its own
# schema (`ModelFamily.workload_schema`, `workload_knobs`).
COMMON_WORKLOAD_FIELDS = ("name", "page", "prompt", "batch", "pages")


@dataclass
class WorkloadConfig:
    """What every model family's workload has: a page (or a batch of pages) and a prompt, under a preset's name.

    A family's knobs (DeepSeek-OCR: `infer(base_size, image_size, crop_mode)`) live in its own schema, a subclass
    of this one that the family declares (`ModelFamily.workload_schema`) and each of its workload files names
    first in its defaults list; the family registry stores it in Hydra's ConfigStore
    (`llm_perf_opt.families.register_configs`), so Hydra types the `workload` node as that subclass."""

    name: str = "default"
    page: PageConfig = field(default_factory=PageConfig)
    prompt: str = DEFAULT_PROMPT
    batch: int = 1  # pages served together (analyze: serving figures at this batch; trace: one batched forward)
    # the batch's pages, one entry per sequence: "WxH" (a synthetic page) or a page preset of conf/page/
    # ("a4_portrait"); empty: `batch` copies of `page`. Given, the batch is its length (workload.batch 1 or equal).
    pages: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        _batch("workload.batch", self.batch)
        if self.pages:
            if len(self.pages) > MAX_BATCH:
                raise ConfigError.field(
                    "workload.pages", f"{len(self.pages):,} pages", f"must list at most {MAX_BATCH:,} pages"
                )
            self.pages = [str(p) for p in self.pages]
            for entry in self.pages:
                page_size_of(entry)  # one line naming workload.pages when an entry is neither WxH nor a preset
            if self.batch not in (1, len(self.pages)):
                raise ConfigError.field(
                    "workload.batch",
                    self.batch,
                    f"workload.pages lists {len(self.pages)} pages: "
                    "the batch is their number (leave workload.batch out or set it equal)",
                )
            self.batch = len(self.pages)
        if not isinstance(self.prompt, str) or not self.prompt:
            raise ConfigError.field("workload.prompt", self.prompt, "must be a non-empty string")

    def page_sizes(self) -> list[tuple[int, int]]:
        """(width, height) of each sequence's page: `pages`, else `batch` copies of `page` (its config size)."""
        if self.pages:
            return [page_size_of(p) for p in self.pages]
        return [(self.page.width, self.page.height)] * self.batch  # one tuple, `batch` references (bounded)


@dataclass
class RuntimeConfig:
    """Where and how the forward runs."""

    device: str = "cpu"
    dtype: str = "float32"  # weight dtype; bfloat16 runs under autocast like the vendor's infer()
    attn_implementation: str = "eager"  # the vendor decoder has only eager and flash_attention_2
    autocast: bool = False  # torch.autocast(device, dtype) around the forward (the vendor's infer() does)
    threads: Optional[int] = None  # torch.set_num_threads on CPU; None keeps torch's default

    def __post_init__(self) -> None:
        _one_of("runtime.device", self.device, DEVICES)
        _one_of("runtime.dtype", self.dtype, DTYPES)
        _one_of("runtime.attn_implementation", self.attn_implementation, ATTN_IMPLEMENTATIONS)
        if self.device == "cpu" and self.attn_implementation == "flash_attention_2":
            raise ConfigError.field(
                "runtime.attn_implementation",
                self.attn_implementation,
                "flash_attention_2 needs runtime=cuda; use eager or sdpa on CPU",
            )
        if self.device == "cpu" and self.dtype == "float16":
            raise ConfigError.field(
                "runtime.dtype", self.dtype, "float16 is not supported on CPU; use float32 or bfloat16"
            )
        if self.threads is not None and self.threads <= 0:
            raise ConfigError.field("runtime.threads", self.threads, "must be a positive integer or null")


@dataclass
class RootConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)
    trace: TraceConfig = field(default_factory=TraceConfig)
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    render: RenderConfig = field(default_factory=RenderConfig)
    hardware: Optional[HardwareConfig] = None  # roof for predictions (conf/hardware/); null: none
    profile: ProfileConfig = field(default_factory=ProfileConfig)
    export: ExportConfig = field(default_factory=ExportConfig)
    experiment: Optional[str] = None  # name of the ready sweep in use, for the report
    run: RunConfig = field(default_factory=RunConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)
    size: Optional[SizeConfig] = None  # ./dev size only (conf/size.yaml)
