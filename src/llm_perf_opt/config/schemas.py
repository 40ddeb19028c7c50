"""Dataclass schemas of the config groups (model, workload, runtime, trace, verify, render).

Hydra composes YAML into these types (so a misspelt key or a wrong type is refused by OmegaConf), and
`to_typed_config` instantiates them, running each `__post_init__` on the final values, where the
domain rules live: every violation is a `ConfigError` naming the field, the value and what is allowed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from llm_perf_opt.dsocr.inputs import DEFAULT_PROMPT
from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.errors import ConfigError

MODEL_SOURCES = ("twin", "vendor")
TWIN_SPECS = ("deepseek_ocr", "tiny")
DEVICES = ("cpu", "cuda")
DTYPES = ("float32", "bfloat16", "float16")
ATTN_IMPLEMENTATIONS = ("eager", "sdpa", "flash_attention_2")
WEIGHTS = ("auto", "random")


def _one_of(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError.field(name, value, f"must be one of {', '.join(allowed)}")


@dataclass
class ModelConfig:
    """What the session loads: the twin (full or tiny) or the vendor code from a local directory."""

    name: str = "twin"
    source: str = "twin"
    spec: str = "deepseek_ocr"  # twin only: ModelSpec.deepseek_ocr() or ModelSpec.tiny()
    path: Optional[str] = None  # vendor only: directory with config.json and the vendor .py files
    weights: str = "auto"  # vendor: "auto" loads safetensors when present, "random" never does
    seed: int = 0

    def __post_init__(self) -> None:
        _one_of("model.source", self.source, MODEL_SOURCES)
        _one_of("model.weights", self.weights, WEIGHTS)
        if self.source == "twin":
            _one_of("model.spec", self.spec, TWIN_SPECS)
            return
        if not self.path:
            raise ConfigError("model.path is required for model=vendor: pass model.path=DIR or set DSOCR_MODEL_PATH")
        path = Path(self.path).expanduser()
        if not path.is_dir():
            raise ConfigError.field("model.path", self.path, "must be an existing directory (the vendor model directory)")
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
            if not Path(self.image).expanduser().is_file():
                raise ConfigError.field("workload.page.image", self.image, "must be an existing image file")
            return
        for name in ("width", "height"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError.field(f"workload.page.{name}", value, "must be a positive integer (pixels)")


@dataclass
class WorkloadConfig:
    """One vendor mode (`infer(base_size, image_size, crop_mode)`) applied to one page and prompt."""

    name: str = "gundam"
    base_size: int = 1024
    image_size: int = 640
    crop_mode: bool = True
    tile_size: int = 640  # dynamic_preprocess tile: 640 in HF infer(); image_size in the vLLM pipeline
    page: PageConfig = field(default_factory=PageConfig)
    prompt: str = DEFAULT_PROMPT

    def __post_init__(self) -> None:
        self.vision()  # raises ConfigError on a bad combination
        if self.prompt.count("<image>") != 1:
            raise ConfigError.field("workload.prompt", self.prompt, "must contain '<image>' exactly once")

    def vision(self) -> VisionWorkload:
        return VisionWorkload(
            base_size=self.base_size, image_size=self.image_size, crop_mode=self.crop_mode, tile_size=self.tile_size
        )


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
            raise ConfigError.field("runtime.attn_implementation", self.attn_implementation,
                                    "flash_attention_2 needs runtime=cuda; use eager or sdpa on CPU")
        if self.device == "cpu" and self.dtype == "float16":
            raise ConfigError.field("runtime.dtype", self.dtype, "float16 is not supported on CPU; use float32 or bfloat16")
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
    rtol: float = 0.001  # analytic vs measured FLOPs, per stage and part (0.1%)

    def __post_init__(self) -> None:
        if not 0 <= self.rtol < 1:
            raise ConfigError.field("verify.rtol", self.rtol, "must be in [0, 1)")


@dataclass
class RenderConfig:
    max_depth: Optional[int] = None  # collapse the grouped graph below this module depth
    formats: list[str] = field(default_factory=lambda: ["dot", "svg", "mmd"])

    def __post_init__(self) -> None:
        if self.max_depth is not None and self.max_depth < 1:
            raise ConfigError.field("render.max_depth", self.max_depth, "must be >= 1 or null")
        for fmt in self.formats:
            _one_of("render.formats[]", fmt, ("dot", "svg", "mmd", "png"))


# The submodules the export stage knows (llm_perf_opt.export.targets maps each to a module and a call).
EXPORT_SUBMODULES = ("sam.crops", "sam.global", "clip.crops", "clip.global", "projector.crops", "projector.global",
                     "dense_layer", "moe_layer", "decode_layer")
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
                raise ConfigError.field("export.submodules", self.submodules,
                                        f"must name at least one of {', '.join(EXPORT_SUBMODULES)} (or be null)")
            for name in self.submodules:
                _one_of("export.submodules", name, EXPORT_SUBMODULES)
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
class RootConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)
    trace: TraceConfig = field(default_factory=TraceConfig)
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    render: RenderConfig = field(default_factory=RenderConfig)
    export: ExportConfig = field(default_factory=ExportConfig)
    experiment: Optional[str] = None  # name of the ready sweep in use, for the report
