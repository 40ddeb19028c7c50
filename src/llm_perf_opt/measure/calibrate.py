"""Calibrate the device a job runs on: the `measured` roof (attainable matmul FLOP/s per dtype, copy
bandwidth, elementwise FLOP/s), cached per device.

What is measured (every figure records its op, size, warm-up, repeats, timer and the spread):

* matmul, per dtype (CPU: float32, bfloat16; CUDA: bfloat16, float16, float32 with TF32 off, tf32 =
  float32 with `torch.backends.cuda.matmul.allow_tf32`): `torch.matmul(a, b, out=c)` on n×n matrices,
  2·n³ FLOPs. CUDA: n = 8192. CPU: n grows from 256 until one call takes about `gemm_target_s` (CPU
  rates differ 10× between dtypes: AMX bf16 vs AVX float32), capped at `gemm_max_n`.
* bandwidth: `dst.copy_(src)` of a large float32 buffer, 2 × its bytes moved (read + write) per copy.
* vector (float32, non-tensor): CUDA: a jiterator kernel computing y = y·a + b `FMA_CHAIN` times per
  element in registers (2·FMA_CHAIN FLOPs per 8 bytes moved: compute-bound, so the vector peak). CPU (and
  CUDA without jiterator): `torch.addcmul(x, y, z, out=o)` (o = x + y·z, 2 FLOPs per element) on buffers
  small enough to stay in cache, `vector_inner` calls per sample: an eager elementwise kernel is limited
  by cache bandwidth and call overhead, so this is a lower bound of the vector peak (the rate eager
  elementwise ops reach). Either way it is the roof of `flops_other`, whose bytes the memory roof covers.

Timing: `warmup` untimed calls, then `repeats` timed samples; the figure is work / the fastest sample
(`CalibrationPlan.statistic = "best"`): a roof is what the device attains, and on a shared machine other
processes only ever add time to a sample, so a median under load would put the roof too low and every
efficiency too high. The median, min and max samples are kept beside it. (Calibrations cached before
this rule say `statistic: median`; they are measured again rather than reused.)
CPU: `time.perf_counter` around each sample. CUDA: `torch.cuda.Event(enable_timing=True)` pairs around
each sample (GPU time), `torch.cuda.synchronize` after the warm-up and after the samples.

Cache: one JSON artifact (`llm_perf_opt.calibration`, schema version 1) per device name, torch version,
thread count and plan, under `hardware.cache_dir` (default `config.paths.calibration_dir()`:
`$LLM_PERF_OPT_CALIBRATION_DIR`, else `tmp/calibration/` relative to the working directory: the repository root
for `./dev`). It is reused unless `hardware.recalibrate=true`; a cache file of an unknown schema version is
measured again and replaced, and so is one whose kernel-level figures are of an older
`calibrate_levels.LEVELS_VERSION` (one log line names both versions). The kernel-level and host figures are per
dtype (`level_keys`): on the CPU a job measures those of its own dtype, and a cached file lacking a dtype a later job
needs gains it (measured then, written back; one log line). Writes are atomic; a process finding another
one calibrating the same file waits for it (a lock file beside it).

A file given by path (`hardware.calibration`, e.g. a recorded GPU run's) is not the cache: it is read as it is
(`measure.calibration_file`: any known version, older figures filled), never measured again nor written, and
its device and host stand for this machine's in every prediction (`recorded_calibration`).
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import re
import statistics
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence

from llm_perf_opt.analytic.hardware_config import HardwareConfig
from llm_perf_opt.analytic.time.hardware import Hardware, Roof
from llm_perf_opt.artifacts import read_artifact, write_artifact
from llm_perf_opt.config.paths import calibration_dir
from llm_perf_opt.config.schemas import RootConfig, RuntimeConfig
from llm_perf_opt.errors import ArtifactError, ConfigError
from llm_perf_opt.measure.allocator import allocator_regime, regime_label, regime_tag

if TYPE_CHECKING:
    import torch

CALIBRATION_SCHEMA = "llm_perf_opt.calibration"
CALIBRATION_SCHEMA_VERSION = 1
_REQUIRED = ("device", "device_name", "torch_version", "threads", "plan", "matmul", "bandwidth", "vector")

_DTYPE_NAMES = {"bfloat16": "bfloat16", "float16": "float16", "float32": "float32", "tf32": "float32"}


def _torch_dtype(key: str) -> "torch.dtype":
    """The torch dtype of a matmul key (tf32 is float32 with allow_tf32). torch is imported only where a
    figure is measured, so a datasheet job (`analyze hardware=h100_sxm`) never loads it."""
    import torch

    return getattr(torch, _DTYPE_NAMES[key])


CPU_MATMUL_KEYS = ("float32", "bfloat16")
LEVEL_DTYPES = ("float32", "bfloat16")  # dtypes whose kernel-level and host figures are calibrated
CUDA_MATMUL_KEYS = ("bfloat16", "float16", "float32", "tf32")


@dataclass(frozen=True)
class CalibrationPlan:
    """Sizes and repeats of one calibration (`default_plan` picks them per device)."""

    name: str
    warmup: int
    repeats: int
    gemm_n: Optional[int]  # fixed GEMM side, or None: grow from gemm_min_n to about gemm_target_s per call
    gemm_min_n: int
    gemm_max_n: int
    gemm_target_s: float
    copy_bytes: int
    vector_numel: int
    vector_inner: int
    statistic: str = "median"  # which sample gives the figure: "best" (fastest; every plan today) or "median"

    @classmethod
    def default(cls, device_type: str, quick: bool = False) -> "CalibrationPlan":
        if quick:  # a smoke test of the whole path, not a roof to trust
            return cls(
                "quick",
                warmup=1,
                repeats=3,
                gemm_n=None,
                gemm_min_n=64,
                gemm_max_n=256,
                gemm_target_s=0.002,
                copy_bytes=4 << 20,
                vector_numel=1 << 12,
                vector_inner=10,
                statistic="best",
            )
        if device_type == "cuda":
            return cls(
                "cuda",
                warmup=3,
                repeats=10,
                gemm_n=8192,
                gemm_min_n=8192,
                gemm_max_n=8192,
                gemm_target_s=0.0,
                copy_bytes=1 << 30,
                vector_numel=1 << 24,
                vector_inner=10,
                statistic="best",
            )
        # CPU: a few seconds in all on 2 cores (each timed sample about 50-100 ms or less)
        return cls(
            "cpu",
            warmup=2,
            repeats=5,
            gemm_n=None,
            gemm_min_n=256,
            gemm_max_n=4096,
            gemm_target_s=0.05,
            copy_bytes=256 << 20,
            vector_numel=1 << 16,
            vector_inner=200,
            statistic="best",
        )


@dataclass(frozen=True)
class Measurement:
    """One calibrated figure and how it was measured."""

    value: float  # work per second (FLOP/s or bytes/s), from the sample `statistic` picks
    unit: str  # "FLOP/s" or "B/s"
    op: str  # what ran, with sizes
    work: float  # FLOPs or bytes per timed sample
    samples_s: tuple[float, ...]
    warmup: int
    timer: str
    statistic: str = "median"  # "best": value = work / the fastest sample; "median": / the median sample

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples_s)

    @property
    def sample_s(self) -> float:
        """The sample the figure comes from."""
        return min(self.samples_s) if self.statistic == "best" else self.median_s

    def describe(self) -> str:
        from llm_perf_opt import units

        which = "the fastest" if self.statistic == "best" else "the median"
        return (
            f"measured: {self.op}; {self.warmup} warm-up + {len(self.samples_s)} timed samples, figure from "
            f"{which} ({units.seconds(self.sample_s)}; median {units.seconds(self.median_s)}, min "
            f"{units.seconds(min(self.samples_s))}, max {units.seconds(max(self.samples_s))}), {self.timer}: "
            f"{units.si(self.value, self.unit)}"
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["samples_s"] = list(self.samples_s)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Measurement":
        return cls(
            float(d["value"]),
            d["unit"],
            d["op"],
            float(d["work"]),
            tuple(float(x) for x in d["samples_s"]),
            int(d["warmup"]),
            d["timer"],
            d.get("statistic", "median"),
        )


@dataclass(frozen=True)
class Calibration:
    """The measured roof of one device (see the module docstring)."""

    device: str  # "cpu" or "cuda:<index>"
    device_name: str
    torch_version: str
    threads: int
    plan: CalibrationPlan
    matmul: dict[str, Measurement]  # dtype key -> measurement
    bandwidth: Measurement
    vector: Measurement
    memory_bytes: Optional[int] = None
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    seconds: float = 0.0  # wall time the calibration took
    # dtype -> the kernel-level and host figures (`measure.calibrate_levels`); empty in files written before them
    levels: dict[str, Any] = field(default_factory=dict)
    # the file it was read from when given by path (`hardware.calibration`: another machine's); "": this machine's
    recorded_from: str = ""
    # the machine's load while it measured (`machine_load`: os.getloadavg's 1-minute figure before and after, the CPUs
    # this process may use); {} in files written before it
    load: dict[str, Any] = field(default_factory=dict)
    # on the CPU the memory allocator regime it measured in (`measure.allocator`: its fresh-page figure holds for that
    # regime only); {} on CUDA and in files written before it
    allocator: dict[str, Any] = field(default_factory=dict)

    def loaded_note(self) -> str:
        """One line when the calibration was measured on an oversubscribed machine, else "": more runnable threads
        than CPUs make a small kernel's parallel region wait for a core (a 2-thread GEMM of 1x64x256 read 2 ms
        instead of 3 µs on this project's 2-CPU machine at a load of 6), and no "fastest consistent" sample is free
        of it when the load lasts the whole calibration."""
        if not self.load or self.device_type != "cpu":
            return ""
        worst, cpus = max(self.load.get("before", 0.0), self.load.get("after", 0.0)), int(self.load.get("cpus", 0))
        if not cpus or worst <= cpus:
            return ""
        return (
            f"calibrated on a loaded machine (load {worst:.1f} on {cpus} CPUs, {self.created}): its small-kernel and "
            "multi-thread figures may hold waits for a core; recalibrate on a quiet machine (./dev calibrate "
            "hardware.recalibrate=true)"
        )

    @property
    def device_type(self) -> str:
        return self.device.split(":")[0]

    def hardware(self, allow_tf32: bool = False) -> Hardware:
        """The calibration as a `Hardware` (kind "measured"), each figure with how it was measured."""
        sources = {f"matmul.{k}": m.describe() for k, m in self.matmul.items()}
        sources["vector"] = self.vector.describe()
        sources["bandwidth"] = self.bandwidth.describe()
        label = f"{self.device_name} (torch {self.torch_version}, {self.threads} threads)"
        notes = (f"calibrated {self.created} in {self.seconds:.1f} s, plan {self.plan.name}",)
        if self.loaded_note():
            notes += (self.loaded_note(),)
        if self.recorded_from:
            label = f"{self.device_name} (torch {self.torch_version}, {self.threads} threads; recorded {self.created})"
            notes += (f"recorded calibration {self.recorded_from}, read by path: nothing measured on this machine",)
        return Hardware(
            name="measured",
            label=label,
            kind="measured",
            matmul_flops={k: m.value for k, m in self.matmul.items()},
            vector_flops=self.vector.value,
            bandwidth=self.bandwidth.value,
            memory_bytes=float(self.memory_bytes) if self.memory_bytes else None,
            sources=sources,
            default_dtype=None,
            allow_tf32=allow_tf32,
            notes=notes,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "device_name": self.device_name,
            "torch_version": self.torch_version,
            "threads": self.threads,
            "plan": asdict(self.plan),
            "created": self.created,
            "seconds": self.seconds,
            "memory_bytes": self.memory_bytes,
            "matmul": {k: m.to_dict() for k, m in self.matmul.items()},
            "bandwidth": self.bandwidth.to_dict(),
            "vector": self.vector.to_dict(),
            "levels": self.levels,
            "load": self.load,
            "allocator": self.allocator,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Calibration":
        return cls(
            d["device"],
            d["device_name"],
            d["torch_version"],
            int(d["threads"]),
            CalibrationPlan(**d["plan"]),
            {k: Measurement.from_dict(m) for k, m in d["matmul"].items()},
            Measurement.from_dict(d["bandwidth"]),
            Measurement.from_dict(d["vector"]),
            d.get("memory_bytes"),
            d.get("created", ""),
            float(d.get("seconds", 0.0)),
            dict(d.get("levels") or {}),
            load=dict(d.get("load") or {}),
            allocator=dict(d.get("allocator") or {}),
        )


# ------------------------------------------------------------------------------------------------ timing
def _sample_times(fn: Callable[[], Any], device: torch.device, warmup: int, repeats: int) -> tuple[list[float], str]:
    """Seconds per call of `fn` after `warmup` calls; GPU time by CUDA events on CUDA."""
    import torch

    for _ in range(warmup):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
        for start, end in pairs:
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize(device)
        return [
            start.elapsed_time(end) / 1e3 for start, end in pairs
        ], "torch.cuda.Event pairs (GPU time), torch.cuda.synchronize after warm-up and samples"
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return samples, "time.perf_counter around each sample"


def _measure(
    fn: Callable[[], Any], work: float, unit: str, op: str, device: torch.device, plan: CalibrationPlan
) -> Measurement:
    samples, timer = _sample_times(fn, device, plan.warmup, plan.repeats)
    sample = min(samples) if plan.statistic == "best" else statistics.median(samples)
    if not sample > 0:
        raise RuntimeError(f"{op}: the {plan.statistic} sample took {sample} s (timer resolution?)")
    value = work / sample
    if not math.isfinite(value) or value <= 0:
        raise RuntimeError(f"{op}: measured a non-positive or non-finite rate ({value})")
    return Measurement(value, unit, op, work, tuple(samples), plan.warmup, timer, plan.statistic)


@contextlib.contextmanager
def _tf32(enabled: bool) -> Iterator[None]:
    import torch

    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def _sync(device: torch.device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _gemm_side(key: str, device: torch.device, plan: CalibrationPlan) -> int:
    """Fixed side, or grow n until one call takes about gemm_target_s (at most a few probes)."""
    import torch

    if plan.gemm_n is not None:
        return plan.gemm_n
    dtype = _torch_dtype(key)
    n = plan.gemm_min_n
    for _ in range(6):
        a = torch.randn(n, n, device=device).to(dtype)
        b = torch.randn(n, n, device=device).to(dtype)
        torch.matmul(a, b)  # first call: library initialisation, packing
        t = math.inf
        for _ in range(3):  # the fastest of three: one call slowed by other work must not stop the growth
            _sync(device)
            t0 = time.perf_counter()
            torch.matmul(a, b)
            _sync(device)
            t = min(t, time.perf_counter() - t0)
        if t >= plan.gemm_target_s / 2 or n >= plan.gemm_max_n:
            break
        grow = min(4.0, max(1.25, (plan.gemm_target_s / max(t, 1e-9)) ** (1 / 3)))
        n = min(plan.gemm_max_n, max(n + 64, int(n * grow) // 64 * 64))
    return n


def measure_matmul(key: str, device: torch.device, plan: CalibrationPlan) -> Measurement:
    import torch

    dtype = _torch_dtype(key)
    with _tf32(key == "tf32") if device.type == "cuda" else contextlib.nullcontext():
        n = _gemm_side(key, device, plan)
        a = torch.randn(n, n, device=device).to(dtype)
        b = torch.randn(n, n, device=device).to(dtype)
        c = torch.empty(n, n, device=device, dtype=dtype)
        op = f"torch.matmul ({n}x{n}) @ ({n}x{n}), {key}" + (" (allow_tf32)" if key == "tf32" else "")
        return _measure(lambda: torch.matmul(a, b, out=c), 2.0 * n**3, "FLOP/s", op, device, plan)


def measure_bandwidth(device: torch.device, plan: CalibrationPlan) -> Measurement:
    import torch

    numel = plan.copy_bytes // 4
    src = torch.ones(numel, device=device, dtype=torch.float32)
    dst = torch.empty_like(src)
    op = f"dst.copy_(src), float32, {plan.copy_bytes / 2**20:g} MiB each, 2 x {plan.copy_bytes} bytes moved per copy"
    return _measure(lambda: dst.copy_(src), 2.0 * plan.copy_bytes, "B/s", op, device, plan)


FMA_CHAIN = 256  # multiply-adds per element of the CUDA vector kernel, all in registers
_FMA_CHAIN_CODE = (
    "template <typename T> T fma_chain(T x, T a, T b) { T y = x; "
    f"for (int i = 0; i < {FMA_CHAIN}; ++i) {{ y = y * a + b; }} return y; }}"
)


def _fma_chain_kernel() -> Optional[Callable[[torch.Tensor], torch.Tensor]]:
    """A compute-bound elementwise CUDA kernel (y = y·a + b, FMA_CHAIN times per element) compiled by
    torch's jiterator (private API, torch >= 1.12, CUDA only): the one adapter for it. None when absent."""
    import torch

    jiterator = getattr(torch.cuda, "jiterator", None)
    create = getattr(jiterator, "_create_jit_fn", None)
    if create is None or torch.version.cuda is None:
        return None
    return create(_FMA_CHAIN_CODE, a=0.999, b=0.001)


def measure_vector(device: torch.device, plan: CalibrationPlan) -> Measurement:
    """CUDA: an FMA chain in registers (compute-bound, 2·FMA_CHAIN FLOPs per element read and written:
    the vector peak). CPU, or CUDA without jiterator: an eager multiply-add on cache-resident data."""
    import torch

    n, inner = plan.vector_numel, plan.vector_inner
    kernel = _fma_chain_kernel() if device.type == "cuda" else None
    if kernel is not None:
        x = torch.rand(n, device=device)

        def chain() -> None:
            for _ in range(inner):
                kernel(x)

        op = (
            f"jiterator kernel y = y*a + b repeated {FMA_CHAIN} times per element in registers "
            f"({2 * FMA_CHAIN} FLOPs per element, 8 bytes moved), float32, {n} elements, {inner} calls per sample"
        )
        return _measure(chain, 2.0 * FMA_CHAIN * n * inner, "FLOP/s", op, device, plan)
    x, y, z = (torch.rand(n, device=device) for _ in range(3))
    out = torch.empty_like(x)

    def run() -> None:
        for _ in range(inner):
            torch.addcmul(x, y, z, out=out)

    op = (
        f"torch.addcmul(x, y, z, out=o) (o = x + y*z, 2 FLOPs per element), float32, {n} elements "
        f"({4 * n / 2**10:g} KiB per tensor, cache-resident), {inner} calls per sample"
    )
    return _measure(run, 2.0 * n * inner, "FLOP/s", op, device, plan)


# --------------------------------------------------------------------------------------------- devices
def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} logical CPUs)"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()} ({os.cpu_count()} logical CPUs)"


def resolve_device(device: str) -> torch.device:
    """`cpu` or `cuda[:i]`; CUDA without a GPU is an error naming runtime.device."""
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(
                f"runtime.device={device!r}: CUDA is not available (torch {torch.__version__}, "
                f"torch.cuda.is_available() is False)"
            )
        dev = torch.device("cuda", dev.index if dev.index is not None else torch.cuda.current_device())
    elif dev.type != "cpu":
        raise ConfigError.field("runtime.device", device, "calibration runs on cpu or cuda")
    return dev


def device_name(dev: torch.device) -> str:
    import torch

    return torch.cuda.get_device_name(dev) if dev.type == "cuda" else _cpu_name()


@contextlib.contextmanager
def _threads(threads: Optional[int]) -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def calibrate(
    device: str = "cpu",
    plan: Optional[CalibrationPlan] = None,
    threads: Optional[int] = None,
    matmul_keys: Optional[tuple[str, ...]] = None,
    level_dtypes: Optional[Sequence[str]] = None,
) -> Calibration:
    """Measure the roof of `device` now (no cache; see `load_or_calibrate`): the matmul peaks of every key, and the
    kernel-level and host figures of `level_dtypes` (`level_keys`: all of LEVEL_DTYPES on CUDA or when None)."""
    import torch

    dev = resolve_device(device)
    plan = plan or CalibrationPlan.default(dev.type)
    keys = matmul_keys or (CUDA_MATMUL_KEYS if dev.type == "cuda" else CPU_MATMUL_KEYS)
    t0 = time.perf_counter()
    load_before = machine_load()
    with _threads(threads), torch.no_grad():
        matmul = {key: measure_matmul(key, dev, plan) for key in keys}
        bandwidth = measure_bandwidth(dev, plan)
        vector = measure_vector(dev, plan)
        memory = torch.cuda.get_device_properties(dev).total_memory if dev.type == "cuda" else None
        n_threads = torch.get_num_threads()
        levels = _measure_levels(dev, plan, level_keys(dev.type, plan, level_dtypes))
    return Calibration(
        str(dev),
        device_name(dev),
        torch.__version__,
        n_threads,
        plan,
        matmul,
        bandwidth,
        vector,
        memory,
        seconds=time.perf_counter() - t0,
        levels=levels,
        load={"before": load_before, "after": machine_load(), "cpus": _usable_cpus()},
        allocator=allocator_regime() if dev.type == "cpu" else {},
    )


def level_keys(device_type: str, plan: CalibrationPlan, wanted: Optional[Sequence[str]] = None) -> tuple[str, ...]:
    """The dtypes whose kernel-level and host figures a calibration measures: every LEVEL_DTYPES (float32 alone for
    the quick plan, a smoke test) on CUDA, where a recording should hold them all and they take seconds, and when
    `wanted` is None (`./dev calibrate`); on the CPU otherwise those of LEVEL_DTYPES the job predicts in (`wanted`),
    since each dtype's figures take about 8 s on two cores (12 s on one): another dtype is added to the cached file
    when a job first needs it (`load_or_calibrate`)."""
    every = ("float32",) if plan.name == "quick" else LEVEL_DTYPES
    if device_type == "cuda" or wanted is None:
        return every
    return tuple(key for key in LEVEL_DTYPES if key in set(wanted)) or every


def _measure_levels(dev: "torch.device", plan: CalibrationPlan, keys: Sequence[str]) -> dict[str, Any]:
    """{dtype: kernel-level and host figures} of `keys` (`measure.calibrate_levels`), each naming this host's CPU."""
    from llm_perf_opt.measure.calibrate_levels import measure_levels

    levels = {key: measure_levels(dev, _torch_dtype(key), quick=plan.name == "quick") for key in keys}
    for figures in levels.values():
        figures["host"]["name"] = _cpu_name()
    return levels


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def machine_load() -> float:
    """The machine's 1-minute load average (runnable threads, os.getloadavg); 0.0 where the OS has none."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):  # pragma: no cover - Windows
        return 0.0


# ----------------------------------------------------------------------------------------------- cache
def cache_path(
    cache_dir: str | os.PathLike, device_name_: str, threads: int, plan: CalibrationPlan, tag: str = ""
) -> Path:
    """The cache file of a device's calibration; `tag`: the CPU's allocator regime when not glibc's defaults
    (`measure.allocator.regime_tag`), so that processes of two regimes keep one file each."""
    import torch

    slug = re.sub(
        r"[^A-Za-z0-9.+-]+", "_", f"{device_name_}-torch{torch.__version__}-threads{threads}-{plan.name}{tag}"
    )
    return Path(cache_dir) / f"{slug.strip('_')}.json"


def load_calibration(path: str | os.PathLike) -> Calibration:
    _, data = read_artifact(path, CALIBRATION_SCHEMA, (CALIBRATION_SCHEMA_VERSION,), _REQUIRED)
    try:
        return Calibration.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ArtifactError(f"{path}: {CALIBRATION_SCHEMA} data is incomplete ({type(exc).__name__}: {exc})") from None


def write_calibration(path: str | os.PathLike, calibration: Calibration) -> Path:
    return write_artifact(path, CALIBRATION_SCHEMA, CALIBRATION_SCHEMA_VERSION, calibration.to_dict())


def _levels_current(cal: Calibration) -> bool:
    """The calibration holds kernel-level figures of the current `calibrate_levels.LEVELS_VERSION` (on the CPU with
    the figures added within it, `calibrate_levels.CPU_MARKS`; on CUDA `CUDA_MARKS`)."""
    from llm_perf_opt.measure.calibrate_levels import CPU_MARKS, CUDA_MARKS, LEVELS_VERSION  # torch: read here

    marks = CPU_MARKS if cal.device.startswith("cpu") else CUDA_MARKS

    def current(v: dict) -> bool:
        version = int(v.get("version", 1))
        if version == LEVELS_VERSION:
            return all(mark in v for mark in marks)
        return version >= LEVELS_VERSION

    return bool(cal.levels) and all(current(v) for v in cal.levels.values())


def load_or_calibrate(
    device: str = "cpu",
    cache_dir: str | os.PathLike | None = None,
    *,
    threads: Optional[int] = None,
    recalibrate: bool = False,
    plan: Optional[CalibrationPlan] = None,
    level_dtypes: Optional[Sequence[str]] = None,
    log: Callable[[str], None] = lambda _: None,
) -> tuple[Calibration, Path, bool]:
    """(calibration, its cache file, reused?) for `device`: the cached one unless `recalibrate`; `cache_dir` None:
    `config.paths.calibration_dir()`. `level_dtypes`: the dtypes whose kernel-level and host figures the caller
    needs (`level_keys`; None: all); a cached file lacking one of them gains it, measured now and written back
    (still "reused": its roof and its other dtypes' figures are the cached ones)."""
    import torch

    from llm_perf_opt.measure.calibrate_levels import LEVELS_VERSION

    dev = resolve_device(device)
    plan = plan or CalibrationPlan.default(dev.type)
    with _threads(threads):
        n_threads = torch.get_num_threads()
    regime = allocator_regime() if dev.type == "cpu" else {}
    path = cache_path(calibration_dir(cache_dir), device_name(dev), n_threads, plan, regime_tag(regime))
    with _cache_lock(path, log):  # jobs started together (a sweep's, a test session's) calibrate once
        if path.exists() and not recalibrate:
            try:
                cal = load_calibration(path)
                same_allocator = cal.allocator == regime
                if (
                    (cal.device_name, cal.torch_version, cal.threads, cal.plan)
                    == (device_name(dev), torch.__version__, n_threads, plan)
                    and _levels_current(cal)
                    and same_allocator
                ):
                    if cal.loaded_note():
                        log(f"{path}: {cal.loaded_note()}")
                    missing = [key for key in level_keys(dev.type, plan, level_dtypes) if key not in cal.levels]
                    if missing:
                        log(f"{path} has no kernel-level figures for {', '.join(missing)}: measuring them now")
                        with _threads(threads), torch.no_grad():
                            cal = replace(cal, levels={**cal.levels, **_measure_levels(dev, plan, missing)})
                        write_calibration(path, cal)
                    return cal, path, True
                if not _levels_current(cal):
                    found = sorted({int(v.get("version", 1)) for v in cal.levels.values()}) or "none"
                    log(
                        f"{path} holds kernel-level and host figures of version {found}, this code measures "
                        f"version {LEVELS_VERSION}"
                        + (
                            f" with the {'CPU' if dev.type == 'cpu' else 'CUDA'} figures added within it"
                            if found == [LEVELS_VERSION]
                            else ""
                        )
                        + ": calibrating again"
                    )
                elif not same_allocator:
                    log(
                        f"{path} was measured under {regime_label(cal.allocator)}, this process runs "
                        f"{regime_label(regime)} (its fresh-page figure is the allocator's): calibrating again"
                    )
                else:
                    log(f"{path} was made for another device, torch, thread count or plan: calibrating again")
            except ArtifactError as exc:
                log(f"cached calibration not usable ({exc}): calibrating again")
        log(f"calibrating {dev} ({device_name(dev)}, {n_threads} threads, plan {plan.name})")
        cal = calibrate(str(dev), plan, threads, level_dtypes=level_dtypes)
        if cal.loaded_note():
            log(cal.loaded_note())
        return cal, write_calibration(path, cal), False


@contextlib.contextmanager
def _cache_lock(path: Path, log: Callable[[str], None]) -> Iterator[None]:
    """An exclusive `flock` on `<cache file>.lock` while the cache is read, measured and written: a second
    process wanting the same calibration waits for the first and reuses its file (its measurements are not
    disturbed by a second calibration either). Without fcntl (not POSIX), no lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for another process calibrating into {path}")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# ------------------------------------------------------------------------------------- config entry points
# `hardware.recalibrate=true` measures once per process: a job reads its calibration more than once (the roof, then
# the levels' figures), and a multirun's jobs share a process; every later read of the same key is the calibration
# this process made, never a second measurement (which would give the roof and the levels two different ones)
_RECALIBRATED: dict[tuple, tuple[Calibration, Path]] = {}


def measured_hardware(
    hardware: HardwareConfig,
    runtime: RuntimeConfig,
    log: Callable[[str], None] = lambda _: None,
    level_dtypes: Optional[Sequence[str]] = None,
) -> tuple[Hardware, Calibration, Path, bool]:
    """`hardware=measured`: the calibrated roof of runtime.device (cached), or the calibration file
    `hardware.calibration` names (read, never measured nor written: `measure.calibration_file`); any failure is
    one ConfigError. The kernel-level and host figures measured are those of `level_dtypes`, by default the job's
    prediction dtype and its runtime's (`level_keys`)."""
    if hardware.calibration is not None:
        cal, path = recorded_calibration(hardware.calibration, runtime, log)
        return cal.hardware(allow_tf32=hardware.allow_tf32), cal, path, True
    plan = None
    dtypes = tuple(level_dtypes or (hardware.dtype or runtime.dtype, runtime.dtype))
    key = (runtime.device, str(hardware.cache_dir), runtime.threads, dtypes, hardware.quick)
    if hardware.recalibrate and key in _RECALIBRATED:
        cal, path = _RECALIBRATED[key]
        return cal.hardware(allow_tf32=hardware.allow_tf32), cal, path, False
    try:
        dev = resolve_device(runtime.device)
        plan = CalibrationPlan.default(dev.type, quick=hardware.quick)
        cal, path, reused = load_or_calibrate(
            runtime.device,
            hardware.cache_dir,
            threads=runtime.threads,
            recalibrate=hardware.recalibrate,
            plan=plan,
            level_dtypes=dtypes,
            log=log,
        )
        if hardware.recalibrate:
            _RECALIBRATED[key] = (cal, path)
        return cal.hardware(allow_tf32=hardware.allow_tf32), cal, path, reused
    except Exception as exc:  # noqa: BLE001 - every calibration failure is the user's one line
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, ConfigError):
            raise ConfigError(f"hardware=measured: {first}") from None
        raise ConfigError(
            f"hardware=measured: calibrating runtime.device={runtime.device!r} failed: {type(exc).__name__}: {first}"
        ) from None


def recorded_calibration(
    path: str, runtime: Optional[RuntimeConfig] = None, log: Callable[[str], None] = lambda _: None
) -> tuple[Calibration, Path]:
    """(the calibration in the file at `path`, its path): checked, older figures filled
    (`measure.calibration_file`); ConfigError naming the file and the field. One log line says what was read and
    what was filled from where."""
    from llm_perf_opt.measure.calibration_file import read_calibration_file

    got = read_calibration_file(path)
    try:
        cal = replace(Calibration.from_dict(got.data), recorded_from=str(got.path))
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"hardware.calibration={str(got.path)!r}: not a complete calibration ({exc})") from None
    hosts = sorted({str((lv.get("host") or {}).get("name") or "") for lv in cal.levels.values()} - {""})
    filled = got.describe_filled()
    log(
        f"hardware.calibration: {got.path} ({cal.device_name}, torch {cal.torch_version}, host "
        f"{', '.join(hosts) or 'unnamed'}; levels version {sorted(set(got.levels_versions.values())) or 'none'}), read "
        f"by path, nothing measured"
        + (f"; filled: {filled}" if filled else "")
        + (f"; recordings: {', '.join(str(t) for t in got.recordings)}" if got.recordings else "")
        + (f"; left out: {'; '.join(got.left_out)}" if got.left_out else "")
    )
    if runtime is not None and runtime.device.split(":")[0] != got.device_type:
        log(
            f"hardware.calibration: the recorded device is {got.device_type}, this job's runtime is "
            f"{runtime.device} ({runtime.dtype}, autocast {runtime.autocast}): the costs are those of this runtime's "
            f"forward (runtime={got.device_type} predicts the forward as the recorded device ran it)"
        )
    return cal, got.path


def hardware_for(cfg: RootConfig, log: Callable[[str], None] = lambda _: None) -> Optional[Hardware]:
    """The job's hardware: None without `hardware=`, the datasheet, or the calibrated device."""
    if cfg.hardware is None:
        return None
    if cfg.hardware.kind in ("datasheet", "custom"):
        return Hardware.from_config(cfg.hardware)
    return measured_hardware(cfg.hardware, cfg.runtime, log)[0]


def check_hardware(cfg: RootConfig) -> None:
    """Before any work (the jobs' validation step): the job's roof will exist for its prediction dtype.

    A datasheet must have a matmul peak for the dtype (ConfigError naming hardware.dtype or
    hardware.allow_tf32); `measured` needs a device that can be calibrated (CUDA present for
    runtime=cuda) and a dtype its calibration measures (CPU: float32, bfloat16; CUDA: bfloat16, float16,
    float32, tf32); a calibration file given by path (`hardware.calibration`) is read and checked here, before
    the run directory exists (ConfigError naming the file and the field), and needs no device. Nothing is
    measured here."""
    hw = cfg.hardware
    if hw is None:
        return
    dtype = prediction_dtype(cfg)
    if hw.kind in ("datasheet", "custom"):
        Hardware.from_config(hw).roof(dtype, hw.allow_tf32)
        return
    if hw.calibration is not None:  # a file given by path: its figures, whatever this machine has
        cal, _ = recorded_calibration(hw.calibration)
        cal.hardware(allow_tf32=hw.allow_tf32).roof(dtype, hw.allow_tf32)
        return
    device_type = cfg.runtime.device.split(":")[0]
    if device_type != "cpu":  # CUDA must be present (torch is imported only for that)
        try:
            device_type = resolve_device(cfg.runtime.device).type
        except ConfigError as exc:
            raise ConfigError(f"hardware=measured: {exc}") from None
    keys = CUDA_MATMUL_KEYS if device_type == "cuda" else CPU_MATMUL_KEYS
    key = "tf32" if dtype == "float32" and hw.allow_tf32 else dtype
    if key not in keys:
        field_name, value = ("hardware.allow_tf32", True) if key == "tf32" else ("hardware.dtype", dtype)
        raise ConfigError.field(
            field_name,
            value,
            f"measured has no matmul peak for {key} on {device_type} (its calibration measures {', '.join(keys)})",
        )


def prediction_dtype(cfg: RootConfig) -> str:
    """hardware.dtype when set, else runtime.dtype."""
    return (cfg.hardware.dtype if cfg.hardware is not None and cfg.hardware.dtype else None) or cfg.runtime.dtype


def roof_for(cfg: RootConfig, hardware: Hardware) -> Roof:
    """The roof of the job's predictions: its dtype's matmul peak (ConfigError naming hardware.dtype or
    hardware.allow_tf32 when the hardware has none)."""
    allow_tf32 = cfg.hardware.allow_tf32 if cfg.hardware is not None else False
    return hardware.roof(prediction_dtype(cfg), allow_tf32)
