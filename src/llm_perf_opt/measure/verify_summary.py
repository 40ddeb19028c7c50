"""summary.json's `flops`, `parts` and `verification` sections: analytic against measured FLOPs (the verify stage,
`measure.agreement`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class FlopsCheck:
    """Analytic against measured FLOPs of one stage."""

    analytic: Optional[int]
    measured: Optional[int]
    rel_error: Optional[float]
    ok: Optional[bool]
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PartFlops:
    """Analytic against measured prefill FLOPs of one part."""

    flops_analytic: Optional[int]
    flops_measured: Optional[int]
    rel_error: Optional[float] = None
    ok: Optional[bool] = None
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class VerificationFigures:
    passed: bool
    rtol: float
    rows: int
    failures: int
    max_rel_error: Optional[float]
    ops_without_formula: dict
    extra: dict = field(default_factory=dict)
