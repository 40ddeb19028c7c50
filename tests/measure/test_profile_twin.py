"""Measured time per module on the tiny twin in Gundam mode (CPU): every called module has a time, the
times are consistent with the call nesting, the parts cover the forward, the honesty figures exist.

Tolerances. Within one repeat the CPU times are spans of ranges that nest on one thread, read from one
clock with nanosecond resolution, so a parent's span contains its children's exactly; the only slack
allowed is `ROUNDING` (1 ns), the floating-point rounding of microsecond floats converted to seconds.
Across repeats, each figure is a median: a child's median cannot exceed its parent's (order statistics
keep a per-repeat ordering), but a *sum* of children's medians can exceed the parent's median when the
children vary out of step; that sum is therefore only checked per repeat.
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from llm_perf_opt.dsocr import parts
from llm_perf_opt.measure.module_times import module_time_table, path_inclusive_repeats

ROUNDING = 1e-9  # seconds


def _forwards_run(model, kwargs) -> Counter:
    """Module forwards of one plain forward, counted by wrapping every module class's `forward` at class
    level (a mechanism independent of the profiler's hooks and instance shims; it also sees modules run
    through `.forward()`)."""
    paths = {id(m): p for p, m in model.named_modules()}
    seen: Counter = Counter()
    originals = {}
    # the class that defines each module's forward (a twin class may inherit it from a shared base class)
    owners = {next(k for k in type(m).__mro__ if "forward" in k.__dict__) for m in model.modules()}
    for cls in owners:
        if cls is torch.nn.Module:
            continue
        originals[cls] = cls.__dict__["forward"]

        def counted(self, *args, _orig=originals[cls], **kwargs):
            if id(self) in paths:
                seen.update([paths[id(self)]])
            return _orig(self, *args, **kwargs)

        cls.forward = counted
    try:
        with torch.no_grad():
            model(**kwargs)
    finally:
        for cls, fn in originals.items():
            cls.forward = fn
    return seen


def test_every_called_module_has_a_time(profiled, tiny_twin, gundam_kwargs):
    times, _ = profiled
    expected = _forwards_run(tiny_twin, gundam_kwargs)
    got = Counter(c.path for c in times.calls)
    assert got == expected
    assert all(len(c.inclusive_s.repeats) == 3 for c in times.calls)
    assert times.problems == []
    # crop mode: SAM, CLIP and the projector run twice, each call with its own row
    for part in ("sam", "clip", "projector"):
        assert [c.call for c in times.calls_of(parts.path(part))] == [0, 1]
    # CLIP's blocks run self_attn and mlp through .forward(): timed all the same (the forward shim)
    layer = f"{parts.path('clip')}.transformer.layers.0"
    assert [c.call for c in times.calls_of(f"{layer}.self_attn")] == [0, 1]


def test_inclusive_at_least_self_at_least_zero(profiled):
    times, _ = profiled
    for c in times.calls:
        for inc, slf in zip(c.inclusive_s.repeats, c.self_s.repeats):
            assert inc >= slf >= 0, (c.path, c.call)
        assert c.inclusive_s.max >= c.inclusive_s.median >= c.inclusive_s.min > 0
        assert c.inclusive_s.median >= c.self_s.median >= 0


def test_children_fit_inside_their_parent(profiled):
    times, _ = profiled
    checked = 0
    for parent in times.calls:
        kids = times.children(parent)
        if not kids:
            continue
        for r, inc in enumerate(parent.inclusive_s.repeats):
            assert sum(k.inclusive_s.repeats[r] for k in kids) <= inc + ROUNDING, (parent.path, r)
            assert parent.self_s.repeats[r] == pytest.approx(
                inc - sum(k.inclusive_s.repeats[r] for k in kids), abs=ROUNDING
            )
        for k in kids:
            assert k.inclusive_s.median <= parent.inclusive_s.median + ROUNDING
        checked += 1
    assert checked > 50


def test_calls_nest_by_runtime_caller(profiled):
    times, _ = profiled
    sam = parts.path("sam")
    # each SAM block call belongs to the SAM call that ran it (crops first, then the global view)
    for i in (0, 1):
        assert times.call(f"{sam}.blocks.0", i).parent == (sam, i)
        assert times.call(sam, i).parent == ("model", 0)
    # CLIP's blocks run self_attn / mlp through .forward(): the shim's range, inside the block's call
    layer = f"{parts.path('clip')}.transformer.layers.0"
    for i in (0, 1):
        assert times.call(f"{layer}.self_attn", i).parent == (layer, i)
        assert times.call(f"{layer}.self_attn.qkv_proj", i).parent == (f"{layer}.self_attn", i)
        assert times.call(f"{layer}.mlp", i).parent == (layer, i)
    # containers have no range and no code: decoder = model.layers; nothing else lacks a range
    assert times.unhooked[parts.path("decoder")]["kind"] == "container"
    assert {u["kind"] for u in times.unhooked.values()} == {"container"}


def test_parts_cover_the_forward(profiled):
    times, _ = profiled
    cov = times.coverage
    assert set(cov["parts"]) == {p.alias for p in parts.PARTS}
    assert cov["absent_parts"] == []
    assert 0.9 <= cov["coverage"] <= 1.0 + 1e-6
    for r, wall in enumerate(cov["wall_s"]["repeats"]):
        covered = cov["covered_s"]["repeats"][r]
        assert cov["uncovered_s"]["repeats"][r] == pytest.approx(wall - covered, abs=ROUNDING)
        assert cov["outside_parts_s"]["repeats"][r] + cov["outside_root_s"]["repeats"][r] == pytest.approx(
            wall - covered, abs=ROUNDING
        )
        assert covered == pytest.approx(sum(p["inclusive_s"]["repeats"][r] for p in cov["parts"].values()))
    # the decoder part is a container: its time is its layers' calls
    layers = [f"{parts.DECODER_STACK}.{i}" for i in range(3)]
    per_repeat = [sum(times.call(p).inclusive_s.repeats[r] for p in layers) for r in range(3)]
    assert path_inclusive_repeats(times, parts.DECODER_STACK) == pytest.approx(per_repeat)


def test_plain_forwards_time_the_parts_without_the_profiler(profiled):
    """The CPU's plain forwards time each part with perf_counter hooks (`PartClock`): one time per plain repeat,
    the disjoint parts together within that forward's wall time, the container part (the decoder's layers)
    timed through its children."""
    times, _ = profiled
    cov = times.coverage
    plain_wall = times.wall["plain_s"]["repeats"]
    compared = 0
    for alias, part in cov["parts"].items():
        runs = part["plain_inclusive_s"]["repeats"]
        assert len(runs) == len(plain_wall) == 3 and all(t > 0 for t in runs), alias
        compared += 1
    assert compared == len(parts.PARTS)
    for r, wall in enumerate(plain_wall):
        assert sum(p["plain_inclusive_s"]["repeats"][r] for p in cov["parts"].values()) <= wall
    assert cov["parts"]["decoder"]["path"] == parts.DECODER_STACK  # a ModuleList: no forward of its own


def test_honesty_figures_and_method(profiled):
    times, _ = profiled
    wall = times.wall
    assert len(wall["plain_s"]["repeats"]) == len(wall["profiled_s"]["repeats"]) == 3
    assert wall["overhead_ratio"] == pytest.approx(wall["profiled_s"]["median"] / wall["plain_s"]["median"])
    assert wall["overhead_ratio_min"] == pytest.approx(wall["profiled_s"]["min"] / wall["plain_s"]["min"])
    paired = sorted(p / q for p, q in zip(wall["profiled_s"]["repeats"], wall["plain_s"]["repeats"]))
    assert wall["overhead_ratio_paired"] == pytest.approx(paired[1])
    assert len(wall["plain_cpu_s"]["repeats"]) == len(wall["profiled_cpu_s"]["repeats"]) == 3
    assert wall["overhead_ratio_cpu"] == pytest.approx(wall["profiled_cpu_s"]["median"] / wall["plain_cpu_s"]["median"])
    summary = times.summary()
    assert summary["overhead_ratio"] == wall["overhead_ratio"] and summary["coverage"] == times.coverage["coverage"]
    assert summary["module_calls"] == len(times.calls) and set(summary["parts_s"]) == set(times.coverage["parts"])
    m = times.method
    assert (m["warmup"], m["repeats"], m["activities"], m["device"]) == (1, 3, ["cpu"], "cpu")
    assert m["threads"] == torch.get_num_threads()
    assert "synchronisation" in m and m["time_base"].startswith("cpu")


def test_module_time_table(profiled, tiny_twin):
    times, _ = profiled
    table = module_time_table(times)
    names = {p for p, _ in tiny_twin.named_modules()}
    assert set(table) <= names and "" in table
    assert set(table) >= {c.path for c in times.calls}
    sam = table[parts.path("sam")]
    assert sam["calls"] == 2 and sam["source"] == "ranges"
    assert sam["min_s"] <= sam["inclusive_s"] <= sam["max_s"]
    per_repeat = [sum(c.inclusive_s.repeats[r] for c in times.calls_of(parts.path("sam"))) for r in range(3)]
    assert sam["inclusive_s"] == pytest.approx(sorted(per_repeat)[1])
    decoder = table[parts.DECODER_STACK]
    assert decoder["source"] == "members" and decoder["self_s"] == 0
    assert decoder["inclusive_s"] == pytest.approx(sorted(path_inclusive_repeats(times, parts.DECODER_STACK))[1])
    # modules run through .forward() have no row (their time is in the caller's)
    assert not any(u["kind"] == "forward" and p in table for p, u in times.unhooked.items())
