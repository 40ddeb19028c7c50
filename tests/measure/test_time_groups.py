"""Times of a group's instances (a `for N` node's members): total, mean, spread and the slowest instance."""

from __future__ import annotations

import pytest

from llm_perf_opt.errors import ConfigError
from llm_perf_opt.measure.module_times import module_time_table
from llm_perf_opt.measure.time_groups import group_table, group_times

# SAM-like: blocks 2 and 5 use global attention and cost more than the windowed ones
TABLE = {f"sam.blocks.{i}": {"inclusive_s": 3.0 if i in (2, 5) else 1.0, "self_s": 0.5} for i in range(6)}
TABLE["sam.blocks.5"]["inclusive_s"] = 4.0


def test_aggregates_by_hand():
    members = [f"sam.blocks.{i}" for i in range(6)]
    g = group_times(TABLE, members)
    assert g.total_s == 1 + 1 + 3 + 1 + 1 + 4
    assert g.mean_s == pytest.approx(11 / 6)
    assert (g.min_s, g.max_s, g.spread) == (1.0, 4.0, 4.0)
    assert g.slowest == "sam.blocks.5" and g.fastest == "sam.blocks.0"
    assert g.missing == ()
    selfs = group_times(TABLE, members, field="self_s")
    assert (selfs.total_s, selfs.spread, selfs.slowest) == (3.0, 1.0, "sam.blocks.0")  # tie: first in order


def test_missing_members_reported_not_counted():
    g = group_times(TABLE, ["sam.blocks.0", "sam.blocks.9"])
    assert g.missing == ("sam.blocks.9",) and g.total_s == 1.0 and g.mean_s == 1.0
    empty = group_times(TABLE, ["nothing.here"])
    assert empty.total_s == 0 and empty.mean_s is None and empty.slowest is None and empty.spread is None


def test_bad_arguments():
    with pytest.raises(ConfigError, match="group time field"):
        group_times(TABLE, ["sam.blocks.0"], field="wall")
    with pytest.raises(ConfigError, match="group members"):
        group_times(TABLE, [])
    with pytest.raises(ConfigError, match="group members"):
        group_times(TABLE, "sam.blocks.0")


def test_on_measured_sam_blocks(profiled):
    times, _ = profiled
    table = module_time_table(times)
    blocks = [f"model.sam_model.blocks.{i}" for i in range(4)]  # tiny SAM: global attention in blocks 1 and 3
    groups = group_table(table, {"sam.blocks": blocks, "decoder": [f"model.layers.{i}" for i in range(3)]})
    g = groups["sam.blocks"]
    assert g.missing == () and g.slowest in blocks
    assert g.total_s == pytest.approx(sum(table[b]["inclusive_s"] for b in blocks))
    assert g.min_s <= g.mean_s <= g.max_s == table[g.slowest]["inclusive_s"]
    assert g.to_dict()["per_member_s"] == {b: table[b]["inclusive_s"] for b in blocks}
