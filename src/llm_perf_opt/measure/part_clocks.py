"""A clock on each of a family's summary parts of a plain forward: forward pre/post hooks on the part modules only (no
profiler, no other hook), the seconds each part spent summed per alias, and the first call's arguments of each part
kept (to run the part alone afterwards). A stack of members (a ModuleList: the decoder layers) is never called itself:
each member is clocked into its alias. `depth` says whether a part is running (an op outside every part sees 0).

    clocks = PartClocks({"sam": model.sam_model, "decoder": model.layers}, time.thread_time)
    with clocks:                       # hooks on; removed on exit
        clocks.reset(); forward()      # clocks.spent: {"sam": s, "decoder": s}
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Mapping, Optional

import torch


class PartClocks:
    """Per-part seconds of the forwards run inside `with` (see the module docstring)."""

    def __init__(self, parts: Mapping[str, torch.nn.Module], clock: Callable[[], float]) -> None:
        self.parts = dict(parts)
        self.clock = clock
        self.spent: dict[str, float] = defaultdict(float)
        self.captured: dict[str, tuple[torch.nn.Module, tuple, dict]] = {}
        self.depth = 0
        self._started: dict[str, float] = {}
        self._handles: list[Any] = []

    def reset(self) -> None:
        self.spent.clear()

    def _pre(self, alias: str) -> Callable:
        def hook(module: Any, args: tuple, kwargs: dict) -> None:
            self.depth += 1
            self.captured.setdefault(alias, (module, args, kwargs))
            self._started[alias] = self.clock()

        return hook

    def _post(self, alias: str) -> Callable:
        def hook(_m: Any, _a: tuple, _k: dict, _o: Any) -> None:
            self.spent[alias] += self.clock() - self._started[alias]
            self.depth -= 1

        return hook

    def __enter__(self) -> "PartClocks":
        for alias, module in self.parts.items():
            for member in list(module) if isinstance(module, torch.nn.ModuleList) else [module]:
                self._handles.append(member.register_forward_pre_hook(self._pre(alias), with_kwargs=True))
                self._handles.append(member.register_forward_hook(self._post(alias), with_kwargs=True))
        return self

    def __exit__(self, *exc: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


def fastest(fn: Callable[[], Any], repeats: int, clock: Callable[[], float], before: Callable[[], Any] = lambda: None):
    """The fastest of `repeats` calls of `fn` on `clock` (`before` run untimed ahead of each)."""
    best = float("inf")
    for _ in range(repeats):
        before()
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def part_lines(by_part: Mapping[str, float], eager: Mapping[str, Any], digits: int = 2) -> list[str]:
    """Console rows `part, measured ms, eager ms, eager / measured` of `by_part` (seconds per alias, the slowest
    first) beside `eager` ({alias: LevelTimes} of the stage), a header first; nan where a part has no eager level."""
    lines = [f"  {'part':<12} {'measured ms':>12} {'eager ms':>10} {'eager/m':>8}"]
    for alias in sorted(by_part, key=lambda a: -by_part[a]):
        lt = eager.get(alias)
        e: Optional[float] = lt.eager_s if lt is not None and lt.eager_s is not None else None
        lines.append(
            f"  {alias:<12} {by_part[alias] * 1e3:12.{digits}f} {e * 1e3 if e else float('nan'):10.{digits}f}"
            f" {e / by_part[alias] if e else float('nan'):8.2f}"
        )
    return lines
