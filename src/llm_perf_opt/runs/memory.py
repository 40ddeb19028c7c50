"""Each job's own peak memory, and everything a job built handed back before the next job starts.

Peak: `ru_maxrss` is the process's running maximum, so in a multirun (the basic launcher runs the jobs
one after another in one process) every job would report the largest job so far. On Linux, writing `5`
to `/proc/self/clear_refs` resets the process's high-water mark (VmHWM) to the current RSS, so
`start()` at job start and `peak()` at its end give the job's own peak; on CUDA the allocator's peak
statistics are reset the same way. Elsewhere `ru_maxrss` is reported, and the method says so.

Release: after a job, its model and tensors are unreferenced (a test holds weak references to them), but
glibc's malloc keeps the freed memory in its arenas, so the process's RSS stays near the last job's
peak and a sweep of full-size jobs runs out of memory. `release()` collects garbage, then hands free
arena memory back to the kernel (`malloc_trim(0)`, glibc only) and empties PyTorch's CUDA cache.

Collection during a job: a job builds large object graphs it keeps (TorchLens' capture makes tens of Python objects
per op, the call graph and its metadata more), so at Python's default threshold (a young collection every 700 new
objects) it runs thousands of collections over a heap that only grows. `fewer_collections()` raises the young
threshold for the job (`JOB_GC_YOUNG`); what a job drops is still collected, and `release()` collects at its end.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import resource
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

CLEAR_REFS = Path("/proc/self/clear_refs")
STATUS = Path("/proc/self/status")
HWM_METHOD = "VmHWM of /proc/self/status, reset at job start (write 5 to /proc/self/clear_refs)"
RUSAGE_METHOD = "ru_maxrss (the process's maximum since it started: not reset per job on this system)"
CUDA_METHOD = "torch.cuda.max_memory_allocated, peak statistics reset at job start"
# young collections every 100,000 new objects during a job: the default trace job (the tiny twin, Gundam, 1,141 ops)
# took 15.5 s at Python's 700 and 14.5 s here, its TorchLens capture 4.5 s and 3.6 s
JOB_GC_YOUNG = 100_000


@contextlib.contextmanager
def fewer_collections(young: int = JOB_GC_YOUNG):
    """Python's young-generation threshold at `young` inside the block (the older generations' ratios kept),
    restored on every path: the jobs of one process (a sweep, the tests) each set and restore it."""
    before = gc.get_threshold()
    gc.set_threshold(max(young, before[0]), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _status_kib(key: str) -> Optional[int]:
    try:
        for line in STATUS.read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def rss_bytes() -> Optional[int]:
    """The process's resident set size now (Linux), else None."""
    kib = _status_kib("VmRSS")
    return kib * 1024 if kib is not None else None


def _reset_hwm() -> bool:
    try:
        CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return _status_kib("VmHWM") is not None


def _cuda():
    """torch when it is imported and has CUDA initialised; never imports torch itself."""
    torch = sys.modules.get("torch")
    try:
        return torch if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized() else None
    except Exception:  # noqa: BLE001 - a broken CUDA setup must not fail the bookkeeping
        return None


@dataclass
class JobPeak:
    """Peak memory of one job, measured as `method` / `cuda_method` say."""

    peak_rss_bytes: int
    rss_start_bytes: Optional[int]  # RSS when the job started (what earlier jobs left behind)
    method: str
    peak_cuda_bytes: Optional[int] = None
    cuda_method: Optional[str] = None


class JobMemory:
    """`start()` at job start; `peak()` any time during the job; `release()` after it."""

    def __init__(self) -> None:
        self.per_job = False
        self.rss_start: Optional[int] = None

    def start(self) -> "JobMemory":
        self.per_job = _reset_hwm()
        self.rss_start = rss_bytes()
        cuda = _cuda()
        if cuda is not None:
            cuda.cuda.reset_peak_memory_stats()
        return self

    def peak_rss(self) -> int:
        if self.per_job:
            kib = _status_kib("VmHWM")
            if kib is not None:
                return kib * 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)

    def peak(self) -> JobPeak:
        cuda = _cuda()
        return JobPeak(
            peak_rss_bytes=self.peak_rss(),
            rss_start_bytes=self.rss_start,
            method=HWM_METHOD if self.per_job else RUSAGE_METHOD,
            peak_cuda_bytes=int(cuda.cuda.max_memory_allocated()) if cuda is not None else None,
            cuda_method=CUDA_METHOD if cuda is not None else None,
        )


@lru_cache(maxsize=1)
def _malloc_trim():
    """glibc's malloc_trim, or None (musl, macOS, Windows: nothing to call)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release() -> str:
    """Collect garbage, return free heap memory to the kernel, empty the CUDA cache; a short account."""
    before = rss_bytes()
    gc.collect()
    trim = _malloc_trim()
    trimmed = bool(trim is not None and trim(0))
    cuda = _cuda()
    if cuda is not None:
        cuda.cuda.empty_cache()
    after = rss_bytes()
    how = "gc + malloc_trim" if trim is not None else "gc (no glibc malloc_trim on this system)"
    if cuda is not None:
        how += " + CUDA empty_cache"
    if before is None or after is None:
        return how
    from llm_perf_opt.units import nbytes

    return f"{how}: RSS {nbytes(before)} -> {nbytes(after)}" + ("" if trimmed or trim is None else " (nothing to trim)")
