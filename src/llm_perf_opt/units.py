"""Human-readable numbers, one way everywhere: SI prefixes for FLOPs, bytes, counts and rates; times.

Every table, label and log line of the project formats through here, so `2.93 TFLOP` reads the same in
the console, the grouped graph, the run page and the report. Raw numbers (CSV, JSON) are never
formatted.
"""

from __future__ import annotations

import math
from typing import Optional

_PREFIXES = ("", "k", "M", "G", "T", "P", "E")


def si(value: Optional[float], unit: str = "", digits: int = 3, sep: str = " ", missing: str = "—") -> str:
    """`value` with an SI prefix and `digits` significant digits: 2930000000000 -> '2.93 TFLOP'.

    Integers below 1000 print exactly ('903 tokens'); None and NaN print `missing`.
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    if isinstance(value, float) and math.isinf(value):
        return f"{'-' if value < 0 else ''}inf{sep}{unit}".rstrip()
    v, i = float(value), 0
    while abs(v) >= 999.5 and i < len(_PREFIXES) - 1:
        v /= 1000.0
        i += 1
    if i == 0 and float(value).is_integer():
        text = f"{int(value)}"
    else:
        text = f"{v:.{digits}g}"
    return f"{text}{sep}{_PREFIXES[i]}{unit}".rstrip()


def flops(value: Optional[float], digits: int = 3) -> str:
    return si(value, "FLOP", digits)


def nbytes(value: Optional[float], digits: int = 3) -> str:
    return si(value, "B", digits)


def count(value: Optional[float]) -> str:
    """Exact with thousands separators below ten million, SI above: '1,132', '12.3 M'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{int(value):,}" if abs(value) < 1e7 else si(value)


def seconds(value: Optional[float]) -> str:
    """'812 µs', '41.8 ms', '3.25 s', '4:05' (minutes past 100 s)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if value < 1e-3:
        return f"{value * 1e6:.3g} µs"
    if value < 1:
        return f"{value * 1e3:.3g} ms"
    if value < 100:
        return f"{value:.3g} s"
    return clock(value)


def clock(value: float) -> str:
    """Seconds as m:ss or h:mm:ss."""
    total = int(round(value))
    h, rest = divmod(total, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def percent(ratio: Optional[float], digits: int = 3) -> str:
    if ratio is None or (isinstance(ratio, float) and math.isnan(ratio)):
        return "—"
    return f"{100 * ratio:.{digits}g}%"
