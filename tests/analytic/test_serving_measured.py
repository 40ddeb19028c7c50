"""`analytic.serving_measured`: which measured seconds a curve's rows give (wall, or the one thread's CPU time)."""

from __future__ import annotations

from llm_perf_opt.analytic.serving_measured import measured_field, measured_rows


def _rows(cpu: bool) -> list[dict]:
    out = []
    for b in (1, 2):
        for phase, step, ctx, wall in (("prefill", 0, 10, 0.5 * b), ("decode", 1, 10, 0.04), ("decode", 2, 11, 0.06)):
            out.append(
                {"batch": b, "phase": phase, "step": step, "context_len": ctx, "wall_s": wall}
                | ({"cpu_s": wall / 4} if cpu else {"cpu_s": None})
            )
    return out


def test_a_one_thread_cpu_curve_is_compared_on_its_cpu_time():
    rows = measured_rows({"rows": _rows(cpu=True)})
    assert measured_field({"rows": _rows(cpu=True)}) == "cpu_s" and sorted(rows) == [1, 2]
    assert rows[2]["prefill_s"] == 0.25 and rows[1]["step_s"] == (0.01 + 0.015) / 2 and rows[1]["context"] == 10.5


def test_a_curve_without_cpu_time_on_every_row_is_compared_on_the_wall():
    mixed = _rows(cpu=True)
    mixed[0]["cpu_s"] = None
    for data in ({"rows": _rows(cpu=False)}, {"rows": mixed}):
        rows = measured_rows(data)
        assert measured_field(data) == "wall_s" and len(rows) == 2
        assert rows[1]["prefill_s"] == 0.5 and rows[2]["step_s"] == (0.04 + 0.06) / 2 and rows[2]["steps"] == 2
