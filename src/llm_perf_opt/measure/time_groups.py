"""Times of a group of module instances (the members of a `for N` / `parfor N` node): total, mean per
instance, and the spread across instances, with which instance is slowest.

The spread is the point: SAM's 12 blocks are one `for 12` node, but its 4 global-attention blocks cost
more than the 8 windowed ones, and only the per-instance min / max / slowest shows it. Works on the
table `module_time_table` returns (per path: `inclusive_s`, `self_s`, ...), so it also works on that
table once it is merged into the call graph metadata.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from llm_perf_opt.errors import ConfigError

FIELDS = ("inclusive_s", "self_s")


@dataclass(frozen=True)
class GroupTimes:
    members: tuple[str, ...]  # the instances' module paths, in the group's order
    per_member_s: dict[str, float]  # each instance's time (members with a time only)
    missing: tuple[str, ...]  # members without a time (never called, or its class forward called explicitly)
    field: str  # which time: "inclusive_s" or "self_s"

    @property
    def total_s(self) -> float:
        return sum(self.per_member_s.values())

    @property
    def mean_s(self) -> Optional[float]:
        return self.total_s / len(self.per_member_s) if self.per_member_s else None

    @property
    def min_s(self) -> Optional[float]:
        return min(self.per_member_s.values()) if self.per_member_s else None

    @property
    def max_s(self) -> Optional[float]:
        return max(self.per_member_s.values()) if self.per_member_s else None

    @property
    def slowest(self) -> Optional[str]:
        """The instance with the largest time (the first one in group order on a tie)."""
        if not self.per_member_s:
            return None
        return max(self.per_member_s, key=lambda m: (self.per_member_s[m], -self.members.index(m)))

    @property
    def fastest(self) -> Optional[str]:
        if not self.per_member_s:
            return None
        return min(self.per_member_s, key=lambda m: (self.per_member_s[m], self.members.index(m)))

    @property
    def spread(self) -> Optional[float]:
        """max / min over the instances (1.0: all equal); None without a positive minimum."""
        low = self.min_s
        return self.max_s / low if low else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "members": list(self.members),
            "total_s": self.total_s,
            "mean_s": self.mean_s,
            "min_s": self.min_s,
            "max_s": self.max_s,
            "slowest": self.slowest,
            "fastest": self.fastest,
            "spread": self.spread,
            "per_member_s": dict(self.per_member_s),
            "missing": list(self.missing),
        }


def group_times(
    table: Mapping[str, Mapping[str, Any]], members: Sequence[str], field: str = "inclusive_s"
) -> GroupTimes:
    """Aggregate the instances `members` (module paths) of one group over `table` (`module_time_table`)."""
    if field not in FIELDS:
        raise ConfigError.field("group time field", field, f"must be one of {', '.join(FIELDS)}")
    if isinstance(members, str) or not members:
        raise ConfigError.field("group members", members, "must be a non-empty list of module paths")
    per: dict[str, float] = {}
    missing: list[str] = []
    for path in members:
        row = table.get(path)
        value = row.get(field) if row is not None else None
        if value is None:
            missing.append(path)
        else:
            per[path] = float(value)
    return GroupTimes(members=tuple(members), per_member_s=per, missing=tuple(missing), field=field)


def group_table(
    table: Mapping[str, Mapping[str, Any]], groups: Mapping[str, Sequence[str]], field: str = "inclusive_s"
) -> dict[str, GroupTimes]:
    """`group_times` for every group {group name: member paths}."""
    return {name: group_times(table, members, field) for name, members in groups.items()}
