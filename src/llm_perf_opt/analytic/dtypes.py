"""Element sizes of the dtypes the analytic models count bytes in (every family's)."""

from __future__ import annotations

from typing import Any

from llm_perf_opt.errors import ConfigError

_DTYPE_BYTES = {
    "bfloat16": 2,
    "bf16": 2,
    "float16": 2,
    "fp16": 2,
    "half": 2,
    "float32": 4,
    "fp32": 4,
    "float": 4,
    "float64": 8,
    "double": 8,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "fp8": 1,
}


def dtype_bytes(dtype: Any) -> int:
    """Element size of a dtype given as a name ('bfloat16', 'torch.float32'), a torch dtype or an int."""
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        if dtype in (1, 2, 4, 8):
            return dtype
        raise ConfigError.field("analytic.dtype", dtype, "an element size must be 1, 2, 4 or 8 bytes")
    itemsize = getattr(dtype, "itemsize", None)
    if isinstance(itemsize, int):
        return itemsize
    name = str(dtype).removeprefix("torch.").lower()
    if name not in _DTYPE_BYTES:
        raise ConfigError.field("analytic.dtype", dtype, f"one of {sorted(_DTYPE_BYTES)}")
    return _DTYPE_BYTES[name]
