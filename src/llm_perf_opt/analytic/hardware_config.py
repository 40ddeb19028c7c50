"""The `hardware` section: a roof for predictions (conf/hardware/), datasheet figures with their sources or a
measured roof (`analytic.time.hardware` turns it into a `Hardware`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from omegaconf import MISSING

from llm_perf_opt.config.fields import _one_of
from llm_perf_opt.config.paths import user_path
from llm_perf_opt.errors import ConfigError

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
    # the kernel and eager time levels (analytic.time.levels): the shortest kernel's device time and the host's
    # launch call per kernel, in microseconds; a measured roof calibrates both
    min_kernel_us: Optional[HardwareFigure] = None
    launch_us: Optional[HardwareFigure] = None
    sync_us: Optional[HardwareFigure] = None
    notes: list[str] = field(default_factory=list)
    device_names: list[str] = field(default_factory=list)  # datasheet: regexes matching torch.cuda.get_device_name()
    recalibrate: bool = False  # measured: ignore the cached calibration of this device and measure again
    cache_dir: Optional[str] = None  # where calibrations are cached; None: config.paths.calibration_dir()
    quick: bool = False  # measured: tiny sizes (a smoke test, not a roof to trust)
    # measured: a calibration file to read instead of measuring this machine (a recorded run of another device and
    # its host: `measure.calibration_file`); never measured again nor written; None: this machine, cached
    calibration: Optional[str] = None

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
        if self.calibration is not None:
            if self.kind != "measured":
                raise ConfigError.field(
                    "hardware.calibration",
                    self.calibration,
                    f"a calibration file is read by hardware=measured only ({self.name} is a {self.kind} roof)",
                )
            if not str(self.calibration).strip():
                raise ConfigError.field("hardware.calibration", self.calibration, "must name a calibration file")
            self.calibration = str(user_path(self.calibration))  # relative to where the user ran the command
            if self.recalibrate:
                raise ConfigError.field(
                    "hardware.recalibrate", True, "a calibration file given by path is read, never measured again"
                )
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
