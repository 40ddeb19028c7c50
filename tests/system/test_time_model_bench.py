"""benchmarks/time_model.py: its arguments (no arguments: the tiny-twin matrix; --quick: one smoke run) and the
trace-job overrides it runs, checked without running a job."""

from __future__ import annotations

from pathlib import Path

from shared_runs import load_benchmark

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    return load_benchmark("time_model")


def test_defaults_and_quick():
    tm = _bench()
    args = tm.parse_args([])
    assert (args.model, args.runtime, args.modes, args.pages, args.threads) == (
        "twin_tiny",
        "cpu",
        "tiny,base,gundam",
        "default,slide",
        1,
    )
    quick = tm.parse_args(["--quick"])
    assert (quick.modes, quick.pages, quick.repeats) == ("tiny", "default", 2)


def test_overrides_name_the_page_and_threads(tmp_path):
    tm = _bench()
    args = tm.parse_args(["--model", "twin", "--runtime", "cpu_bf16", "--threads", "0"])
    ov = tm.overrides(args, "gundam", "slide", tmp_path)
    assert "model=twin" in ov and "runtime=cpu_bf16" in ov and "workload=gundam" in ov and "page=slide" in ov
    assert not any(o.startswith("runtime.threads=") for o in ov) and f"hydra.run.dir={tmp_path}" in ov
    assert "page=default" not in tm.overrides(args, "tiny", "default", tmp_path)


def test_render_summarises_ratios():
    tm = _bench()
    facts = {"mode": "tiny", "page": "1x1"}
    rows = [
        ({"stage": "prefill", "unit": "(stage)", "measured_s": 1.0, "eager_s": 1.1, "ratio": 1.1}, facts),
        ({"stage": "prefill", "unit": "sam", "measured_s": 0.5, "eager_s": 0.25, "ratio": 0.5}, facts),
    ]
    text = tm.render(rows)
    assert "1/1" in text.split("prefill      ", 1)[1].splitlines()[0]  # the stage within 25 %
    assert "0/1" in text.split("part         ", 1)[1].splitlines()[0]  # the part off by 50 %
    assert "all            2                  0.30    0.50     1/2" in text
