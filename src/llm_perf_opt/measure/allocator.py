"""The memory allocator regime of this process: which allocator serves torch's CPU tensors, and the glibc malloc
tunables the process started with.

A CPU forward's time depends on it. glibc's malloc maps an allocation above its mmap threshold (128 KiB, rising with
the sizes freed, at most 32 MiB) fresh from the kernel and unmaps it when freed, so such a result's pages fault in on
every call; with the threshold raised and trimming off (`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`), or under
jemalloc / tcmalloc / mimalloc, freed memory is kept and reused. On this project's 2-CPU machine, one thread, the tiny
twin's prefill at batch 1 took 57-58 ms under glibc's defaults and 40 ms with the threshold at 4 GiB, trimming off and
a 512 MiB top pad (the test suite's setting). The calibration's fresh-page figure (`measure.calibrate_levels`:
`fresh`) is measured in the regime its process ran in, so a CPU calibration holds for that regime only
(`measure.calibrate.load_or_calibrate` keys its cache on it), and every measured CPU time names it.

The tunables are read from the environment the process was started with (`/proc/self/environ` on Linux: what glibc
read at start-up; a later `os.environ` change does not reach this process's malloc), the allocator from the shared
libraries mapped into the process (`/proc/self/maps`).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

# glibc's malloc tunables read from the environment at start-up (mallopt(3) lists the MALLOC_*_ names)
MALLOC_VARS = (
    "MALLOC_ARENA_MAX",
    "MALLOC_MMAP_MAX_",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_TRIM_THRESHOLD_",
    "GLIBC_TUNABLES",
)
ALLOCATORS = ("jemalloc", "tcmalloc", "mimalloc")  # a library of one of these names mapped in: it serves malloc
DEFAULT = {"allocator": "glibc malloc", "malloc": {}}


def startup_environment() -> dict[str, str]:
    """The environment this process started with (`/proc/self/environ`), else `os.environ` (not Linux)."""
    try:
        raw = Path("/proc/self/environ").read_bytes()
    except OSError:
        return dict(os.environ)
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out


def mapped_allocator() -> str:
    """The replacement allocator mapped into this process (`ALLOCATORS`), else "glibc malloc"."""
    try:
        maps = Path("/proc/self/maps").read_text(errors="replace")
    except OSError:
        return DEFAULT["allocator"]
    for name in ALLOCATORS:
        if f"lib{name}" in maps:
            return name
    return DEFAULT["allocator"]


def allocator_regime() -> dict[str, Any]:
    """{"allocator": its name, "malloc": {tunable: value} of the `MALLOC_VARS` set at start-up}."""
    env = startup_environment()
    return {"allocator": mapped_allocator(), "malloc": {k: env[k] for k in MALLOC_VARS if k in env}}


def regime_label(regime: Mapping[str, Any]) -> str:
    """One line: "glibc malloc, defaults", "glibc malloc, MALLOC_MMAP_THRESHOLD_=4294967296 ...", "jemalloc"."""
    if not regime:
        return "allocator not recorded"
    name = str(regime.get("allocator") or DEFAULT["allocator"])
    tunables = " ".join(f"{k}={v}" for k, v in sorted((regime.get("malloc") or {}).items()))
    if name != DEFAULT["allocator"]:
        return name + (f" (glibc tunables {tunables})" if tunables else "")
    return f"{name}, {tunables or 'defaults'}"


def regime_tag(regime: Mapping[str, Any]) -> str:
    """A file-name tag of a regime other than glibc's defaults ("" for those, and for none: a CUDA calibration's):
    "-alloc-" + 8 hex digits."""
    if not regime or dict(regime) == DEFAULT:
        return ""
    digest = hashlib.sha256(json.dumps(regime, sort_keys=True).encode()).hexdigest()[:8]
    return f"-alloc-{digest}"
