"""Runtime checks: what a model package plugs into the generic grouping to compare the groups with the
runtime log of the same forward.

The grouping knows nothing of any model; a model package (for DeepSeek-OCR, `dsocr.checks`) hands
`group_callgraph(..., checks=...)` a sequence of `RuntimeCheck`s. Each one gets the grouped graph, the
runtime-log events (dicts with an `"event"` kind) and the call graph's module classes by address, and
returns its results, one dict per check (`check_result`), which the grouped JSON keeps under `checks`.
A check whose events are missing says "not checked", never "ok".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Protocol, Sequence

if TYPE_CHECKING:  # the grouping imports this module
    from llm_perf_opt.callgraph.grouped import GroupedGraph

STATUS_OK, STATUS_MISMATCH, STATUS_NOT_CHECKED = "ok", "mismatch", "not checked"
STATUSES = (STATUS_OK, STATUS_MISMATCH, STATUS_NOT_CHECKED)

Event = Mapping[str, Any]


class RuntimeCheck(Protocol):
    """Compare a grouped graph with the runtime log; return one `check_result` per check."""

    def __call__(
        self, grouped: "GroupedGraph", events: Sequence[Event], module_types: Mapping[str, str]
    ) -> list[dict[str, Any]]: ...


def check_result(name: str, status: str, expected: Any, observed: Any, detail: str, **extra: Any) -> dict[str, Any]:
    """One check's entry: name, status (ok | mismatch | not checked), expected (from the log), observed
    (from the graph), detail, and whatever else the check reports (patterns, groups, ...)."""
    if status not in STATUSES:
        raise ValueError(f"check {name!r}: status {status!r} is not one of {STATUSES}")
    out = {"name": name, "status": status, "expected": expected, "observed": observed, "detail": detail}
    out.update(extra)
    return out


def events_of(events: Sequence[Event], kind: str) -> list[Event]:
    """The events of one kind, in order."""
    return [e for e in events if e.get("event") == kind]


def run_checks(
    grouped: "GroupedGraph",
    events: Iterable[Any],
    checks: Sequence[RuntimeCheck],
    module_types: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Every check's results, in the order of `checks` (non-dict events are ignored)."""
    usable = [e for e in events if isinstance(e, Mapping)]
    results: list[dict[str, Any]] = []
    for check in checks:
        results.extend(check(grouped, usable, module_types or {}))
    return results
