"""Hardware descriptions for rooflines: the figures of one device and the roof a prediction uses.

`Hardware` holds a device's figures in SI units (FLOP/s, bytes/s, bytes), each with its source: a vendor
document and what it says (`kind="datasheet"`, from `conf/hardware/<name>.yaml`), or how it was measured
(`kind="measured"`, built by `llm_perf_opt.measure.calibrate`). `Hardware.roof(dtype)` picks the figures a
prediction in that dtype uses — one matmul peak, the vector peak, the bandwidth — as a `Roof`, which
every prediction carries. Pure Python: no torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Optional

from llm_perf_opt.analytic.hardware_config import MATMUL_PEAK_KEYS, PREDICTION_DTYPES, HardwareConfig, HardwareFigure
from llm_perf_opt.config.registry import omegaconf_errors_as_config_error
from llm_perf_opt.errors import ConfigError

TERA = 1e12
GIGA = 1e9


@dataclass(frozen=True)
class Roof:
    """The hardware figures one prediction uses: which device, which dtype, which peaks, and why.

    `sources` maps "matmul", "vector" and "bandwidth" to where the figure comes from (document and
    quote, or the measurement). Hashable, so predictors can be cached per roof.
    """

    hardware: str
    label: str
    kind: str  # "datasheet" or "measured"
    dtype: str  # storage dtype of the prediction (bytes per element follow it)
    matmul_key: str  # which matmul peak: the dtype, or "tf32" for float32 with allow_tf32
    matmul_flops: float  # FLOP/s
    vector_flops: float  # FLOP/s
    bandwidth: float  # bytes/s
    sources: tuple[tuple[str, str], ...] = ()

    def scaled(self, matmul: float = 1.0, vector: float = 1.0, bandwidth: float = 1.0) -> "Roof":
        """This roof with its peaks times these factors (a device that much faster: sizing's requirements)."""
        return replace(
            self,
            matmul_flops=self.matmul_flops * matmul,
            vector_flops=self.vector_flops * vector,
            bandwidth=self.bandwidth * bandwidth,
        )

    @property
    def ridge_intensity(self) -> float:
        """FLOPs per byte where the matmul roof meets the bandwidth roof."""
        return self.matmul_flops / self.bandwidth

    def to_dict(self) -> dict[str, Any]:
        return {
            "hardware": self.hardware,
            "label": self.label,
            "kind": self.kind,
            "dtype": self.dtype,
            "matmul_peak": self.matmul_key,
            "matmul_flops": self.matmul_flops,
            "vector_flops": self.vector_flops,
            "bandwidth_bytes_per_s": self.bandwidth,
            "ridge_intensity": self.ridge_intensity,
            "sources": dict(self.sources),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Roof":
        return cls(
            data["hardware"],
            data["label"],
            data["kind"],
            data["dtype"],
            data["matmul_peak"],
            float(data["matmul_flops"]),
            float(data["vector_flops"]),
            float(data["bandwidth_bytes_per_s"]),
            tuple(dict(data.get("sources", {})).items()),
        )


@dataclass(frozen=True)
class Hardware:
    """A device's figures in SI units, each with its source."""

    name: str
    label: str
    kind: str
    matmul_flops: Mapping[str, float]  # dtype key (bfloat16, float16, float32, tf32) -> FLOP/s
    vector_flops: float
    bandwidth: float  # bytes/s
    memory_bytes: Optional[float] = None
    sources: Mapping[str, str] = field(default_factory=dict)  # "matmul.<key>", "vector", "bandwidth", "memory"
    default_dtype: Optional[str] = None  # the config's hardware.dtype (None: the runtime's)
    allow_tf32: bool = False
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        figures = {f"matmul_flops.{k}": v for k, v in self.matmul_flops.items()}
        figures |= {"vector_flops": self.vector_flops, "bandwidth": self.bandwidth}
        for name, value in figures.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise ConfigError.field(f"hardware.{name}", value, f"must be a positive number ({self.name})")
        for key in self.matmul_flops:
            if key not in MATMUL_PEAK_KEYS:
                raise ConfigError.field("hardware.matmul_flops", key, f"one of {', '.join(MATMUL_PEAK_KEYS)}")

    # ------------------------------------------------------------------ roofs
    def matmul_key(self, dtype: str, allow_tf32: Optional[bool] = None) -> str:
        if dtype not in PREDICTION_DTYPES:
            raise ConfigError.field("hardware.dtype", dtype, f"one of {', '.join(PREDICTION_DTYPES)}")
        tf32 = self.allow_tf32 if allow_tf32 is None else allow_tf32
        key = "tf32" if dtype == "float32" and tf32 else dtype
        if key not in self.matmul_flops:
            field_name, value = ("hardware.allow_tf32", tf32) if key == "tf32" else ("hardware.dtype", dtype)
            raise ConfigError.field(
                field_name, value, f"{self.name} has no matmul peak for {key} (it has: {', '.join(self.matmul_flops)})"
            )
        return key

    def roof(self, dtype: Optional[str] = None, allow_tf32: Optional[bool] = None) -> Roof:
        """The roof of a prediction in `dtype` (default: the hardware's own default dtype)."""
        dtype = dtype or self.default_dtype
        if dtype is None:
            raise ConfigError(
                f"hardware.dtype is not set for {self.name}: name the prediction dtype ({', '.join(PREDICTION_DTYPES)})"
            )
        key = self.matmul_key(dtype, allow_tf32)
        sources = (
            ("matmul", self.sources.get(f"matmul.{key}", "")),
            ("vector", self.sources.get("vector", "")),
            ("bandwidth", self.sources.get("bandwidth", "")),
        )
        return Roof(
            self.name,
            self.label,
            self.kind,
            dtype,
            key,
            float(self.matmul_flops[key]),
            float(self.vector_flops),
            float(self.bandwidth),
            sources,
        )

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_config(cls, cfg: HardwareConfig) -> "Hardware":
        """A datasheet `HardwareConfig` (already validated) in SI units, each figure with its source."""
        if cfg.kind == "measured":
            raise ConfigError(
                f"hardware={cfg.name} is a measured roof: it comes from calibration "
                "(llm_perf_opt.measure.calibrate), not from figures"
            )

        def src(fig: HardwareFigure) -> str:
            text = f'{cfg.documents[fig.doc]}: "{fig.quote}"'
            return f"{text} ({fig.note})" if fig.note else text

        sources = {f"matmul.{k}": src(v) for k, v in cfg.matmul_tflops.items()}
        sources["vector"] = src(cfg.vector_tflops)
        sources["bandwidth"] = src(cfg.memory_bandwidth_gbs)
        if cfg.memory_gb is not None:
            sources["memory"] = src(cfg.memory_gb)
        return cls(
            name=cfg.name,
            label=cfg.label or cfg.name,
            kind=cfg.kind,
            matmul_flops={k: v.value * TERA for k, v in cfg.matmul_tflops.items()},
            vector_flops=cfg.vector_tflops.value * TERA,
            bandwidth=cfg.memory_bandwidth_gbs.value * GIGA,
            memory_bytes=cfg.memory_gb.value * GIGA if cfg.memory_gb is not None else None,
            sources=sources,
            default_dtype=cfg.dtype,
            allow_tf32=cfg.allow_tf32,
            notes=tuple(cfg.notes),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "kind": self.kind,
            "matmul_flops": dict(self.matmul_flops),
            "vector_flops": self.vector_flops,
            "bandwidth_bytes_per_s": self.bandwidth,
            "memory_bytes": self.memory_bytes,
            "sources": dict(self.sources),
            "default_dtype": self.default_dtype,
            "allow_tf32": self.allow_tf32,
            "notes": list(self.notes),
        }


# ------------------------------------------------------------------------------------ conf/hardware/*.yaml
def hardware_dir(conf: Optional[Path] = None) -> Path:
    if conf is None:
        from llm_perf_opt.config.paths import conf_dir

        conf = conf_dir()
    return Path(conf) / "hardware"


def hardware_names(conf: Optional[Path] = None) -> tuple[str, ...]:
    """Every option of the `hardware` config group (datasheets and `measured`)."""
    return tuple(sorted(p.stem for p in hardware_dir(conf).glob("*.yaml")))


def load_hardware_config(name: str, conf: Optional[Path] = None) -> HardwareConfig:
    """`conf/hardware/<name>.yaml`, typed and validated as Hydra composes it (ConfigError on any problem)."""
    names = hardware_names(conf)
    if name not in names:
        raise ConfigError.field("hardware", name, f"one of {', '.join(names)}")
    return _load(hardware_dir(conf) / f"{name}.yaml")


@lru_cache(maxsize=64)
def _load(path: Path) -> HardwareConfig:
    from omegaconf import OmegaConf

    with omegaconf_errors_as_config_error(str(path)):
        node = OmegaConf.merge(OmegaConf.structured(HardwareConfig), OmegaConf.load(path))
        cfg = OmegaConf.to_object(node)
    assert isinstance(cfg, HardwareConfig)
    return cfg


def load_hardware(name: str, conf: Optional[Path] = None) -> Hardware:
    """A datasheet device by name (`h100_sxm`); `measured` needs a calibration (measure.calibrate)."""
    return Hardware.from_config(load_hardware_config(name, conf))


def datasheet_names(conf: Optional[Path] = None) -> tuple[str, ...]:
    return tuple(n for n in hardware_names(conf) if n != "custom" and load_hardware_config(n, conf).kind == "datasheet")


def datasheet_for_device(device_name: str, conf: Optional[Path] = None) -> Optional[str]:
    """The datasheet describing a GPU by its `torch.cuda.get_device_name()` ("NVIDIA H100 80GB HBM3" ->
    h100_sxm): the one whose `device_names` patterns match (regular expressions, case-insensitive); None when
    none does. Two datasheets matching one name is an error naming both files: a loose pattern must not
    silently drop the datasheet (or pick one by file order)."""
    import re

    found = [
        name
        for name in datasheet_names(conf)
        if any(re.search(p, device_name, re.IGNORECASE) for p in load_hardware_config(name, conf).device_names)
    ]
    if len(found) > 1:
        files = " and ".join(str(hardware_dir(conf) / f"{name}.yaml") for name in found)
        raise ConfigError(
            f"device {device_name!r} matches the device_names of {len(found)} datasheets ({files}): "
            "make the patterns specific enough that one datasheet matches"
        )
    return found[0] if found else None
