"""Dataclass schemas of the config groups (model, workload, runtime, trace, verify, render, profile).

Hydra composes YAML into these types (so a misspelt key or a wrong type is refused by OmegaConf), and
`to_typed_config` instantiates them, running each `__post_init__` on the final values. The schemas hold
plain values and check plain rules only (types, ranges, one-of choices, files that must exist); the
DeepSeek-OCR rules on top (sizes in multiples of 64, crop mode tiling at `image_size`, the `<image>`
placeholder) belong to the model family (`model.family`, default dsocr) and run in the pipeline's validation step
(`llm_perf_opt.trace.validate`), before any work. Nothing here imports torch or a family package.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from omegaconf import MISSING

from llm_perf_opt.config.paths import user_path
from llm_perf_opt.errors import ConfigError

MODEL_SOURCES = ("twin", "vendor")
DEVICES = ("cpu", "cuda")
DTYPES = ("float32", "bfloat16", "float16")
ATTN_IMPLEMENTATIONS = ("eager", "sdpa", "flash_attention_2")
WEIGHTS = ("auto", "random")
DEFAULT_PROMPT = "<image>\nFree OCR."  # the vendor's infer() default; dsocr.inputs knows its token ids


def _one_of(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError.field(name, value, f"must be one of {', '.join(allowed)}")


def _positive_int(name: str, value: object, what: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError.field(name, value, f"must be a positive integer {what}".rstrip())


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


@dataclass
class WorkloadConfig:
    """One vendor mode (`infer(base_size, image_size, crop_mode)`) applied to one page and prompt."""

    name: str = "gundam"
    base_size: int = 1024
    image_size: int = 640
    crop_mode: bool = True
    tile_size: int = 640  # dynamic_preprocess tile: 640 in HF infer(); image_size in the vLLM pipeline
    min_num: Optional[int] = None  # dynamic_preprocess's crop-count bounds; None: the family's (v1 2-9, v2 2-6)
    max_num: Optional[int] = None
    page: PageConfig = field(default_factory=PageConfig)
    prompt: str = DEFAULT_PROMPT
    batch: int = 1  # pages served together (analyze: serving figures at this batch; trace: one batched forward)
    # the batch's pages, one entry per sequence: "WxH" (a synthetic page) or a page preset of conf/page/
    # ("a4_portrait"); empty: `batch` copies of `page`. Given, the batch is its length (workload.batch 1 or equal).
    pages: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for name in ("base_size", "image_size", "tile_size"):
            _positive_int(f"workload.{name}", getattr(self, name), "(pixels)")
        _positive_int("workload.batch", self.batch, "(pages served together)")
        if self.pages:
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
        if not isinstance(self.crop_mode, bool):
            raise ConfigError.field("workload.crop_mode", self.crop_mode, "must be true or false")
        if not isinstance(self.prompt, str) or not self.prompt:
            raise ConfigError.field("workload.prompt", self.prompt, "must be a non-empty string")

    def page_sizes(self) -> list[tuple[int, int]]:
        """(width, height) of each sequence's page: `pages`, else `batch` copies of `page` (its config size)."""
        if self.pages:
            return [page_size_of(p) for p in self.pages]
        return [(self.page.width, self.page.height)] * self.batch


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
class TraceConfig:
    """The TorchLens capture and the stages after it."""

    enabled: bool = True  # false: session + inputs + one timed forward only
    capture: bool = True  # run the TorchLens capture (call graph)
    analytic: bool = True  # costs.json
    verify: bool = True  # verification.json (needs a forward under FlopCounterMode)
    decode_steps: int = 0  # decode steps to log/measure after the prefill (0: prefill only)
    export: bool = False  # torch.export of submodules (export/, see ExportConfig) after the other stages

    def __post_init__(self) -> None:
        if self.decode_steps < 0:
            raise ConfigError.field("trace.decode_steps", self.decode_steps, "must be >= 0")


@dataclass
class VerifyConfig:
    """Two readers. The trace job reads `rtol`, `fvcore` and `analytic_spec` (how it verifies its FLOPs).
    `./dev verify` reads the verification matrix chosen with `verify=NAME` (conf/verify/NAME.yaml: `name`,
    `overrides`, `sweep`) and its own knobs (`expected`, `update_expected`, `pins_only`, `out_dir`); the trace job
    ignores those. With no `verify=` choice (the trace job's default) there is no matrix."""

    rtol: float = 0.001  # analytic vs measured FLOPs, per stage, part and decode step (0.1%)
    fvcore: bool = False  # also count the prefill with fvcore (a second, jit-traced forward), reconciled
    # ModelSpec fields changed for the analytic model only (`+verify.analytic_spec.decoder.num_layers=11`):
    # the analytic model then describes another model than the one that ran, a real divergence the gate
    # must catch. Empty: the analytic model uses the running model's spec.
    analytic_spec: dict[str, Any] = field(default_factory=dict)
    name: Optional[str] = None  # the matrix (conf/verify/<name>.yaml); null: none chosen
    description: str = ""
    overrides: list[str] = field(default_factory=list)  # overrides every job of the matrix gets
    sweep: dict[str, list[str]] = field(default_factory=dict)  # key -> values: one job per combination
    expected: Optional[str] = None  # the pinned analytic totals; null: conf/verify/expected.yaml
    update_expected: bool = False  # rewrite `expected` from the analytic model instead of gating
    pins_only: bool = False  # judge the pinned analytic totals only: no job runs, no model is built (seconds)
    out_dir: Optional[str] = None  # where ./dev verify writes; null: tmp/verify/<date>/<time>

    def __post_init__(self) -> None:
        if isinstance(self.rtol, bool) or not isinstance(self.rtol, (int, float)) or not 0 <= self.rtol < 1:
            raise ConfigError.field("verify.rtol", self.rtol, "must be in [0, 1)")
        if not isinstance(self.analytic_spec, dict):
            raise ConfigError.field(
                "verify.analytic_spec",
                self.analytic_spec,
                "must be a mapping of ModelSpec fields, e.g. {decoder: {num_layers: 11}}",
            )
        for key, values in self.sweep.items():
            if not values:
                raise ConfigError.field(f"verify.sweep.{key}", values, "must list at least one value")
            for value in values:
                if "," in str(value):
                    raise ConfigError.field(
                        f"verify.sweep.{key}", value, "must list one value per entry (no commas: the list is the sweep)"
                    )
        for override in self.overrides:
            if "=" not in str(override):
                raise ConfigError.field("verify.overrides", override, "must be key=value overrides")


RENDER_COLOR_BY = ("flops", "time", "bytes", "params", "delta_time", "none")  # delta_time: ./dev compare


@dataclass
class RenderConfig:
    max_depth: Optional[int] = None  # collapse the grouped graph below this module depth
    formats: list[str] = field(default_factory=lambda: ["dot", "svg", "mmd"])
    color_by: str = "flops"  # heat map of the grouped graph: flops, time, bytes, params or none (node kinds)

    def __post_init__(self) -> None:
        _one_of("render.color_by", self.color_by, RENDER_COLOR_BY)
        if self.max_depth is not None and self.max_depth < 1:
            raise ConfigError.field("render.max_depth", self.max_depth, "must be >= 1 or null")
        for fmt in self.formats:
            _one_of("render.formats[]", fmt, ("dot", "svg", "mmd", "png"))


EXPORT_MOE_REMEDIES = ("fixed_routing", "none")


@dataclass
class ExportConfig:
    """`./dev export` / `trace.export`: torch.export of submodules at the shapes of this workload and page."""

    submodules: Optional[list[str]] = None  # null: every one the workload produces (no crops: no *.crops)
    moe_layer: Optional[int] = None  # decoder layer exported as `moe_layer`; null: the first MoE layer
    decode_layer: int = 0  # decoder layer exported as `decode_layer` (one token over a KV cache)
    decode_context: Optional[int] = None  # KV-cache length for decode_layer; null: the prompt (first step)
    moe_remedy: str = "fixed_routing"  # when MoE routing refuses export: fixed_routing or none
    callgraph: bool = True  # TorchLens capture of each submodule alone, to reconcile op counts
    check_outputs: bool = True  # run each exported program on the recorded inputs against the real output
    onnx: bool = False  # ONNX files for a CLIP block and the dense decoder layer (needs the `onnx` extra)
    onnx_rtol: float = 1e-4  # ONNX Runtime (CPU) vs the eager module: |ort - eager| <= atol + rtol·|eager|
    onnx_atol: float = 1e-4

    def __post_init__(self) -> None:
        if self.submodules is not None:
            if len(self.submodules) == 0:
                raise ConfigError.field(
                    "export.submodules", self.submodules, "must name at least one submodule (or be null)"
                )
            # which names exist is the model family's rule (ModelFamily.check_export, at validation)
        if self.moe_layer is not None and self.moe_layer < 0:
            raise ConfigError.field("export.moe_layer", self.moe_layer, "must be >= 0 or null")
        if self.decode_layer < 0:
            raise ConfigError.field("export.decode_layer", self.decode_layer, "must be >= 0")
        if self.decode_context is not None and self.decode_context < 1:
            raise ConfigError.field("export.decode_context", self.decode_context, "must be >= 1 or null")
        _one_of("export.moe_remedy", self.moe_remedy, EXPORT_MOE_REMEDIES)
        for name in ("onnx_rtol", "onnx_atol"):
            value = getattr(self, name)
            if not 0 <= value < 1:
                raise ConfigError.field(f"export.{name}", value, "must be in [0, 1)")


@dataclass
class ProfileConfig:
    """Measured time per module (`llm_perf_opt.measure.profile`): after `warmup` plain forwards, `repeats`
    plain and `repeats` profiled forwards, interleaved; one torch.profiler range per module call."""

    enabled: bool = True  # false (profile=off): no profiled forwards, no profile.json
    warmup: int = 1  # plain forwards before anything is timed
    repeats: int = 3  # timed forwards of each kind (plain, profiled); medians and min/max over them
    # A costlier forward gets fewer rounds: at most budget_cpu_s / (2 x the warm-up forward's process CPU seconds),
    # at least 1 (measure.profile.planned_rounds); null: always `repeats`
    budget_cpu_s: Optional[float] = 60.0
    nvtx: bool = False  # also NVTX ranges named after module paths (Nsight Systems); needs runtime=cuda
    chrome_trace: bool = True  # write profile.trace.json (the last profiled repeat) for Perfetto

    def __post_init__(self) -> None:
        for name in ("enabled", "nvtx", "chrome_trace"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError.field(f"profile.{name}", getattr(self, name), "must be true or false")
        for name, low in (("warmup", 0), ("repeats", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError.field(f"profile.{name}", value, f"must be an integer >= {low}")
        budget = self.budget_cpu_s
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget <= 0):
            raise ConfigError.field("profile.budget_cpu_s", budget, "must be a number of seconds > 0, or null")

    def check_device(self, device: str) -> None:
        """NVTX ranges exist only for CUDA (Nsight Systems): refuse `profile.nvtx=true` anywhere else."""
        if self.enabled and self.nvtx and device != "cuda":
            raise ConfigError.field(
                "profile.nvtx",
                self.nvtx,
                f"NVTX ranges need runtime=cuda (the run is on {device}); set profile.nvtx=false",
            )


@dataclass
class RunConfig:
    """The run directory itself (Hydra's `hydra.run.dir` / `hydra.sweep.dir` say where it is)."""

    overwrite: bool = False  # reuse a directory that holds a finished run: its result files are removed first

    def __post_init__(self) -> None:
        if not isinstance(self.overwrite, bool):
            raise ConfigError.field("run.overwrite", self.overwrite, "must be true or false")


SERVE_LEVELS = ("ideal",)  # time levels the serving math has here (the time model adds kernel, eager)


@dataclass
class ServeConfig:
    """Serving figures (`analytic.serving`): tokens generated per page, the time level, the memory allowance,
    the batches of the latency-vs-throughput curve, and optionally the routing a trace measured."""

    output_tokens: int = 1000  # tokens generated per page (reasoning: analytic.serving.DEFAULT_OUTPUT_TOKENS)
    level: str = "ideal"
    workspace_gb: float = 1.0  # fixed allowance: runtime context and library workspaces (analytic.memory_model)
    fragmentation: float = 0.10  # allowance per byte of KV cache and activations (allocator)
    batches: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
    routing: Optional[str] = None  # routing.json of a trace run: experts touched from its measured popularity

    def __post_init__(self) -> None:
        _positive_int("serve.output_tokens", self.output_tokens, "(tokens generated per page)")
        _one_of("serve.level", self.level, SERVE_LEVELS)
        for name in ("workspace_gb", "fragmentation"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ConfigError.field(f"serve.{name}", value, "must be a number >= 0")
        if self.fragmentation >= 1:
            raise ConfigError.field("serve.fragmentation", self.fragmentation, "must be below 1")
        if not self.batches:
            raise ConfigError.field("serve.batches", self.batches, "must list at least one batch")
        for b in self.batches:
            _positive_int("serve.batches[]", b)
        if self.routing is not None:
            self.routing = str(user_path(self.routing))
            if not Path(self.routing).is_file():
                raise ConfigError.field("serve.routing", self.routing, "must be an existing routing.json")


@dataclass
class SizeConfig:
    """`./dev size` targets (`analytic.sizing`); every one is required (`tpot_s=0.02` on the command line)."""

    ttft_s: float = MISSING
    tpot_s: float = MISSING
    pages_per_day: float = MISSING
    max_scale: float = 10.0  # refuse latency targets no device within this factor of every figure meets

    def __post_init__(self) -> None:
        for name in ("ttft_s", "tpot_s", "pages_per_day", "max_scale"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise ConfigError.field(f"size.{name}", value, "must be a positive number")


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


# ----------------------------------------------------------------------------------------------- hardware
HARDWARE_KINDS = ("datasheet", "measured", "custom")  # custom: every figure from the command line
PREDICTION_DTYPES = ("bfloat16", "float16", "float32")  # storage dtypes a roofline prediction can use
MATMUL_PEAK_KEYS = ("bfloat16", "float16", "float32", "tf32")  # tf32: float32 matmuls with allow_tf32


@dataclass
class HardwareFigure:
    """One hardware number and where it comes from: `doc` names an entry of `HardwareConfig.documents`,
    `quote` is what that document says (so a reader can find it), `note` how it was turned into `value`."""

    value: float = MISSING
    doc: str = MISSING
    quote: str = MISSING
    note: Optional[str] = None


@dataclass
class HardwareConfig:
    """A roof for predictions: vendor datasheet figures (`kind: datasheet`, every number with its source)
    or `kind: measured`, calibrated on the device the job runs on (`measure.calibrate`; no figures here).

    Units are in the field names: dense peak matmul TFLOP/s per dtype key (bfloat16, float16, float32,
    tf32), vector (non-tensor) TFLOP/s, memory bandwidth in GB/s (10^9 bytes/s), memory size in GB.
    """

    name: str = MISSING
    label: str = ""
    kind: str = "datasheet"
    dtype: Optional[str] = None  # prediction dtype; null: runtime.dtype
    allow_tf32: bool = False  # float32 matmuls on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32)
    documents: dict[str, str] = field(default_factory=dict)
    matmul_tflops: dict[str, HardwareFigure] = field(default_factory=dict)
    vector_tflops: Optional[HardwareFigure] = None
    memory_bandwidth_gbs: Optional[HardwareFigure] = None
    memory_gb: Optional[HardwareFigure] = None
    # the kernel and eager time levels (analytic.time_levels): the shortest kernel's device time and the host's
    # launch call per kernel, in microseconds; a measured roof calibrates both
    min_kernel_us: Optional[HardwareFigure] = None
    launch_us: Optional[HardwareFigure] = None
    sync_us: Optional[HardwareFigure] = None
    notes: list[str] = field(default_factory=list)
    device_names: list[str] = field(default_factory=list)  # datasheet: regexes matching torch.cuda.get_device_name()
    recalibrate: bool = False  # measured: ignore the cached calibration of this device and measure again
    cache_dir: str = "tmp/calibration"  # measured: where calibrations are cached (relative to the working dir)
    quick: bool = False  # measured: tiny sizes (a smoke test, not a roof to trust)

    def __post_init__(self) -> None:
        _one_of("hardware.kind", self.kind, HARDWARE_KINDS)
        if self.dtype is not None:
            _one_of("hardware.dtype", self.dtype, PREDICTION_DTYPES)
        for pattern in self.device_names:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError.field(
                    "hardware.device_names", pattern, f"is not a regular expression ({exc})"
                ) from None
        figures = self.figures()
        if self.kind == "measured":
            if figures:
                raise ConfigError.field(
                    f"hardware.{next(iter(figures))}",
                    "…",
                    "a measured roof takes no figures (calibration measures them)",
                )
            return
        for key in self.matmul_tflops:
            _one_of(f"hardware.matmul_tflops.{key}", key, MATMUL_PEAK_KEYS)
        required_figures = ("vector_tflops", "memory_bandwidth_gbs") + (("memory_gb",) if self.kind == "custom" else ())
        for required in required_figures:
            if getattr(self, required) is None:
                raise ConfigError(f"hardware.{required} is required for a {self.kind} roof ({self.name})")
        if not self.matmul_tflops:
            raise ConfigError(
                f"hardware.matmul_tflops is required for a datasheet roof ({self.name}): "
                f"one dense peak per dtype ({', '.join(MATMUL_PEAK_KEYS)})"
            )
        for path, fig in figures.items():
            value = fig.value
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
                raise ConfigError.field(f"hardware.{path}.value", value, "must be a positive number")
            if fig.doc not in self.documents:
                raise ConfigError.field(
                    f"hardware.{path}.doc",
                    fig.doc,
                    f"must name one of hardware.documents ({', '.join(self.documents) or 'none'})",
                )
            if not str(fig.quote).strip():
                raise ConfigError(f"hardware.{path}.quote is empty: say what {fig.doc} states")
        if self.dtype is not None:
            self.matmul_key(self.dtype)

    def figures(self) -> dict[str, HardwareFigure]:
        """Every figure by its dotted path under `hardware.`."""
        out = {f"matmul_tflops.{k}": v for k, v in self.matmul_tflops.items()}
        for name in ("vector_tflops", "memory_bandwidth_gbs", "memory_gb"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    def matmul_key(self, dtype: str) -> str:
        """The matmul peak a `dtype` prediction uses (float32 with allow_tf32 -> tf32); a datasheet
        without it is refused, naming the field."""
        key = "tf32" if dtype == "float32" and self.allow_tf32 else dtype
        if self.kind != "measured" and key not in self.matmul_tflops:
            field_name = "hardware.allow_tf32" if key == "tf32" else "hardware.dtype"
            value = self.allow_tf32 if key == "tf32" else dtype
            raise ConfigError.field(
                field_name, value, f"{self.name} has no matmul peak for {key} (it has: {', '.join(self.matmul_tflops)})"
            )
        return key
