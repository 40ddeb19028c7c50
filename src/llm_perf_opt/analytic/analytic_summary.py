"""summary.json's `analytic` section: the analytic model's totals per stage and the prefill matmul FLOPs per part."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from llm_perf_opt.errors import ArtifactError
from llm_perf_opt.typecheck import _check, _data, typed


@dataclass(frozen=True)
class StageFigures:
    """Analytic totals of one stage (vision, prefill, decode)."""

    flops: int  # every op, elementwise / norm / softmax estimates included
    flops_matmul: int  # matmul-class ops, as torch's flop counter counts
    io_bytes: int
    weight_bytes: int
    activation_bytes: int
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class AnalyticFigures:
    """`{stage: StageFigures, ..., "parts": {part alias: prefill matmul FLOPs}}`."""

    stages: dict[str, StageFigures]
    parts: dict[str, int]

    @classmethod
    def from_data(cls, data: Any, where: str = "analytic") -> "AnalyticFigures":
        if not isinstance(data, Mapping):
            raise ArtifactError(f"{where} must be an object, found {type(data).__name__}")
        if "parts" not in data:
            raise ArtifactError(f"{where} lacks required field 'parts'")
        stages = {k: typed(StageFigures, v, f"{where}.{k}") for k, v in data.items() if k != "parts"}
        return cls(stages, _check(data["parts"], dict[str, int], f"{where}.parts"))

    def to_data(self) -> dict[str, Any]:
        return {**{k: _data(v) for k, v in self.stages.items()}, "parts": dict(self.parts)}
