"""summary.json's `trace` and `grouping` sections: the capture's statistics and the grouped graph's summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from llm_perf_opt.errors import ArtifactError


@dataclass(frozen=True)
class TraceStats:
    """The capture's statistics (`CallGraph.stats`) plus the op and module-call counts."""

    num_ops: int
    module_calls: int
    capture_seconds: Optional[float] = None
    raw: dict = field(default_factory=dict)


@dataclass(frozen=True)
class GroupingSummary:
    """`GroupedGraph.summary()` plus the files written and the notes."""

    nodes: int
    checks: Any  # {status: count} (today) or [{name, status, ...}] (the report reads both)
    raw: dict = field(default_factory=dict)

    def check_counts(self) -> dict[str, int]:
        """{status: count} whichever form `checks` has."""
        if isinstance(self.checks, Mapping):
            return {str(k): int(v) for k, v in self.checks.items()}
        if isinstance(self.checks, list):
            counts: dict[str, int] = {}
            for i, c in enumerate(self.checks):
                if not isinstance(c, Mapping) or "status" not in c:
                    raise ArtifactError(f"grouping.checks[{i}] must be an object with a 'status'")
                counts[str(c["status"])] = counts.get(str(c["status"]), 0) + 1
            return counts
        raise ArtifactError(f"grouping.checks must be an object or a list, found {type(self.checks).__name__}")
