"""./dev size and ./dev analyze's serving figures end to end (the job command in this process, one in a subprocess of
bounded memory; real config, real files)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from job_scripts import run_job_in_process
from shared_runs import load_benchmark

from llm_perf_opt.analytic.serving_file import load_serving

CUSTOM = [
    "hardware=custom",
    "hardware.matmul_tflops.bfloat16.value=500",
    "hardware.vector_tflops.value=60",
    "hardware.memory_bandwidth_gbs.value=2000",
]


def run(job: str, out: Path, *args: str) -> subprocess.CompletedProcess:
    """`./dev JOB ARGS hydra.run.dir=OUT` in this process (`run_job_in_process`: the same exit code and printed
    text, without a Python start-up of torch, transformers and Hydra per test)."""
    return run_job_in_process(job, *args, f"hydra.run.dir={out}")


def test_size_prints_requirements_and_replicas(tmp_path):
    r = run("size", tmp_path, "tpot_s=0.02", "ttft_s=1", "pages_per_day=1000000", "hardware=h100_sxm")
    assert r.returncode == 0, r.stderr
    assert "replicas:" in r.stdout and "matmul TFLOP/s" in r.stdout and "bandwidth GB/s" in r.stdout
    s = load_serving(tmp_path)
    assert s.job == "size" and s.level == "ideal" and s.sizing["replicas"] >= 1
    assert len(s.sizing["requirements"]) == 3
    assert (tmp_path / "curve.csv").read_text().startswith("batch,")


def test_analyze_serving_at_batch(tmp_path):
    r = run(
        "analyze", tmp_path, "hardware=a100_80gb", "workload=gundam", "workload.batch=32", "serve.output_tokens=1000"
    )
    assert r.returncode == 0, r.stderr
    for text in ("TTFT", "TPOT", "tokens/s", "pages/day", "memory", "binding constraint"):
        assert text in r.stdout
    s = load_serving(tmp_path)
    assert s.batch == 32 and s.point["memory"]["fits"] is True


def run_here(capsys, job: str, *args: str) -> tuple[int, list[str]]:
    """`llm-perf-opt JOB ARGS` in this process (`jobs.cli.main`): (exit code, stderr lines without progress)."""
    from llm_perf_opt.jobs.cli import main

    try:
        code = main([job, *args])
    except SystemExit as exc:  # a refusal in a Hydra callback ends the process
        code = exc.code
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip() and not line.startswith("[")]
    return code, lines


TARGETS = ("tpot_s=0.02", "ttft_s=1", "pages_per_day=1e6", "hardware=h100_sxm")


@pytest.mark.parametrize(
    "job, args, field",
    [
        ("analyze", ["hardware=a100_80gb", "workload.batch=0"], "workload.batch"),
        ("analyze", ["hardware=a100_80gb", "workload.batch=-3"], "workload.batch"),
        ("analyze", ["hardware=a100_80gb", "workload.batch=5000"], "workload.batch"),
        ("analyze", ["hardware=a100_80gb", "serve.output_tokens=9000"], "serve.output_tokens"),
        ("size", ["tpot_s=0.00001", "ttft_s=1", "pages_per_day=10", "hardware=h100_sxm"], "size.tpot_s"),
        ("size", ["tpot_s=0.02", "ttft_s=1", "hardware=h100_sxm"], "size.pages_per_day"),
        ("size", ["tpot_s=0.02", "ttft_s=1", "pages_per_day=10", *CUSTOM], "hardware.memory_gb.value"),
        # issue 34, group 5: refused once the sizing or the serving figures were computed, which used to leave
        # .hydra/, .lock and an empty log behind; now checked before the run directory exists
        ("size", ["hardware=h100_sxm", "tpot_s=1e-9", "ttft_s=1", "pages_per_day=1e6"], "size.tpot_s"),
        ("size", ["hardware=h100_sxm", "tpot_s=0.02", "ttft_s=1e-9", "pages_per_day=1e6"], "size.ttft_s"),
        ("size", ["~hardware", "tpot_s=0.02", "ttft_s=1", "pages_per_day=1e6"], "hardware"),
        ("size", [*TARGETS, "serve.output_tokens=100000000"], "serve.output_tokens"),
        ("analyze", ["workload.batch=200", "hardware=h100_sxm"], "largest batch that fits is 84"),
        ("analyze", ["serve.output_tokens=7285", "hardware=h100_sxm"], "serve.output_tokens"),
        # group 1: a batch the work cannot respect, refused before any page is listed or priced (10^9: below, in a
        # process of bounded memory)
        ("size", [*TARGETS, "workload.batch=4"], "size chooses the batch itself"),
        ("analyze", ["hardware=h100_sxm", "workload.batch=100000"], "must be at most 4,096"),
        ("analyze", ["hardware=h100_sxm", "workload.batch=4000"], "largest batch that fits is 84"),
        ("trace", ["model=twin_tiny", "workload.batch=300"], "a job that runs the model takes at most 256"),
        # group 13: a target given twice (Hydra would keep the last silently)
        ("size", ["tpot_s=0.02", "size.tpot_s=0.5", "ttft_s=1", "pages_per_day=1e6"], "is given twice"),
        # issue 32: the serving engines
        ("analyze", ["hardware=h100_sxm", "serve.engine=trt"], "serve.engine"),
        ("size", [*TARGETS, "serve.engine=vllm,vllm"], "serve.engine"),
        ("analyze", ["hardware=h100_sxm", "serve.engine=vllm", "serve.concurrency=0"], "serve.concurrency"),
        ("analyze", ["hardware=h100_sxm", "serve.engine=vllm", "serve.concurrency=2.5"], "serve.concurrency"),
        ("analyze", ["hardware=h100_sxm", "serve.engine=vllm", "serve.concurrency=-4"], "serve.concurrency"),
        (
            "analyze",
            ["hardware=a100_40gb", "serve.engine=vllm", "serve.gpu_memory_utilization=0.1"],
            "serve.gpu_memory_utilization",
        ),
        ("analyze", ["hardware=a100_40gb", "serve.engine=cuda_graphs", "workload.batch=300"], "workload.batch"),
    ],
)
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, capsys, job, args, field):
    out = tmp_path / "run"
    code, lines = run_here(capsys, job, *args, f"hydra.run.dir={out}")
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and field in lines[0], (code, lines)
    assert not out.exists(), sorted(str(p.relative_to(out)) for p in out.rglob("*"))


def test_a_refusal_that_needs_the_measured_roof_takes_its_run_directory_back(tmp_path, capsys, calibration_dir):
    """`hardware=measured`: the targets are judged once the roof is calibrated, inside the job; the refused run's
    directory (.hydra/, .lock, the log) is removed, and an existing directory keeps only what it held before."""
    code, lines = run_here(capsys, "size", "hardware=measured", *TARGETS[:3], f"hydra.run.dir={tmp_path / 'new'}")
    assert code == 2 and len(lines) == 1 and "size.ttft_s" in lines[0], lines
    assert not (tmp_path / "new").exists()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("kept")
    code, lines = run_here(capsys, "size", "hardware=measured", *TARGETS[:3], f"hydra.run.dir={mine}")
    assert code == 2 and [p.name for p in mine.iterdir()] == ["notes.txt"], lines


@pytest.mark.parametrize("engine", ["cuda_graphs", "vllm"])
def test_cuda_graphs_on_the_cpu_are_refused(tmp_path, capsys, calibration_dir, engine):
    """An engine that needs a figure the device lacks: CUDA graphs on this CPU (hardware=measured), one line naming
    serve.engine, exit 2, the run directory taken back."""
    out = tmp_path / "run"
    code, lines = run_here(capsys, "analyze", "hardware=measured", f"serve.engine={engine}", f"hydra.run.dir={out}")
    assert code == 2 and len(lines) == 1 and "serve.engine" in lines[0] and "CUDA device" in lines[0], lines
    assert not out.exists()


BILLION = """
import sys
from llm_perf_opt.jobs.cli import main
out = sys.argv[1]
for job, *args in (
    ("analyze", "workload.batch=1000000000"),
    ("size", "tpot_s=0.02", "ttft_s=1", "pages_per_day=1e6", "workload.batch=1000000000"),
    ("trace", "model=twin_tiny", "workload.batch=1000000000"),
):
    try:
        code = main([job, *args, f"hydra.run.dir={out}/{job}"])
    except SystemExit as exc:
        code = exc.code
    print(job, code, flush=True)
"""


def test_a_billion_pages_is_refused_in_bounded_memory(tmp_path):
    """A batch of 10^9 used to build a list of 10^9 pages (8 GB: a MemoryError, or the machine's memory for minutes
    while Ctrl-C went unheard): in a process limited to 2 GB of address space, each job refuses it in one line
    before any page is listed (in its own process, so a regression cannot take the test run's memory)."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    r = subprocess.run(
        [sys.executable, "-c", BILLION, str(tmp_path)], capture_output=True, text=True, timeout=300, preexec_fn=limit
    )
    assert r.stdout.split() == ["analyze", "2", "size", "2", "trace", "2"], r.stderr[-2000:]
    errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
    assert (
        errors
        == [
            "error: workload.batch=1000000000 is invalid: must be at most 4,096 (the largest batch any job "
            "takes, the top of the serving math's search; ./dev size finds the best batch itself)"
        ]
        * 3
    )
    assert list(tmp_path.iterdir()) == []


def test_analyze_prices_a_batch_of_identical_pages_once(tmp_path, capsys):
    """4,000 identical pages: one distinct image beside the first, counted 3,999 times (group 1)."""
    code, lines = run_here(capsys, "analyze", "workload.batch=4000", f"hydra.run.dir={tmp_path}")
    assert code == 0, lines
    import json

    data = json.loads((tmp_path / "costs.json").read_text())["data"]
    assert data["batch"] == 4000 and len(data["layouts"]) == 4000
    (more,) = data["stages"]["vision"]["shapes"]["more_images"]
    assert more["count"] == 3999


def test_bench_sizing_arguments():
    sizing = load_benchmark("sizing")
    args = sizing.parse_args(["--pages", "4", "--batches", "3", "--devices", "h100_sxm"])
    assert (args.pages, args.batches, args.devices) == (4, 3, ["h100_sxm"])


@pytest.mark.parametrize("engine, level", [("vllm", "kernel"), ("cuda_graphs", "kernel")])
def test_analyze_names_the_engine_its_level_and_assumptions(tmp_path, engine, level):
    """Issue 32's done-when: a100_40gb, Gundam, vllm at concurrency 100 (the pool of a 40 GB GPU holds it)."""
    r = run(
        "analyze", tmp_path, "hardware=a100_40gb", "workload=gundam", f"serve.engine={engine}", "serve.concurrency=100"
    )
    assert r.returncode == 0, r.stderr
    for text in ("TTFT", "TPOT", "tokens/s", "pages/day", f"engine {engine}:", f"[{level} level", "assumes:"):
        assert text in r.stdout, text
    s = load_serving(tmp_path)
    assert s.engine["name"] == engine and s.level == level and len(s.engines) == 1
    assert s.engine["assumes"] and s.conventions["level"].startswith(f"the {level} level")
    if engine == "vllm":  # continuous batching at the concurrency, memory the paged pool's
        assert s.batch == 100 and s.max_fit_batch["continuous"] >= 100
        assert s.point["memory_continuous"]["phase"] == "paged" and s.engine["paged_memory"]["max_num_seqs"] == 100
        # the authors' published figure on this GPU ("200k+ pages per day", one A100-40G, vLLM; mode, pages and
        # output length not stated) is a measurement; a datasheet GPU runs every kernel at its peak rate and
        # bandwidth, an upper bound of what a real one measures: an upper bound below a measurement means time the
        # model has too much of (work counted twice, a kernel list too long); no constant was tuned to the figure
        assert s.point["continuous"]["pages_per_day"] >= 200_000, s.point["continuous"]
    else:
        assert s.batch == 1 and s.point["memory"]["phase"] in ("prefill", "decode")


def test_size_answers_per_engine(tmp_path, default_run):
    """Issue 32's done-when: one row per engine (`serve.engine=hf_eager,vllm`; the host figures are this host's
    calibration, made by the session's default trace run)."""
    r = run("size", tmp_path, "tpot_s=0.05", "pages_per_day=1000000", "hardware=h100_sxm", "serve.engine=hf_eager,vllm")
    assert r.returncode == 0, r.stderr
    assert "per engine:" in r.stdout
    rows = [line.split() for line in r.stdout.splitlines() if line.startswith(("  hf_eager ", "  vllm "))]
    assert sorted(row[0] for row in rows) == ["hf_eager", "vllm"], r.stdout
    s = load_serving(tmp_path)
    assert [e["engine"]["name"] for e in s.engines] in (["hf_eager", "vllm"], ["vllm", "hf_eager"])
    vllm = next(e for e in s.engines if e["engine"]["name"] == "vllm")
    assert vllm["sizing"]["replicas"] >= 1 and vllm["sizing"]["engine"] == "vllm"


def measured_block(capsys, run_dir: Path, curve_dir: Path, *hardware: str) -> dict:
    """serving.json's `measured` block of `./dev analyze` on the tiny twin, Tiny, `hardware=measured` with
    `hardware` overrides, hf_eager beside the curve in `curve_dir` (serving_curve.json)."""
    code, lines = run_here(
        capsys,
        "analyze",
        "model=twin_tiny",
        "workload=tiny",
        "hardware=measured",
        *hardware,
        "serve.engine=hf_eager",
        f"serve.measured={curve_dir / 'serving_curve.json'}",
        f"hydra.run.dir={run_dir}",
    )
    assert code == 0, lines
    return load_serving(run_dir).measured


def test_the_measured_curve_sits_beside_hf_eager(tmp_path, capsys, tiny_curve):
    """Issue 32, item 4, on this CPU: the tiny twin's serving curve measured with plain forwards at batches 1, 2, 4,
    8 (benchmarks/serving_curve.py) beside hf_eager's forwards (`serve.measured`) in serving.json, per batch, with
    the ratio. On one thread (`runtime.threads=1`) both sides are load-robust: the calibration's samples and the
    forwards are the thread's CPU time (`time.thread_time`: the wall of an idle host, without the time other
    processes held a core of this shared 2-core host), each region the fastest of 5 (a burst of other processes'
    memory traffic slows a sample without taking the core: the fastest of several is the uncontended one).

    Both sides are priced on the quick calibration plan (`--quick-calibration`, `hardware.quick=true`: a smoke test
    of the roof, about a tenth of the full plan's time; on a quiet host it put these ratios at 1.03-1.55 where the
    full plan put them at 0.80-1.04).
    The bands are what holds on this shared 2-core host under the suite's own load; the issue's 25% is held on
    recorded curves (`test_hf_eager_is_within_25_percent_of_the_recorded_cpu_curves`), and `./dev bench serving_curve
    --threads 1 --batches 1,2,4,8 --recalibrate` prints it for a curve measured now ("within 25% at k of n rows").
    Under load the measured side grows while the calibration's fastest samples do not: other processes' traffic in
    the shared cache and memory slows a forward's working set without taking its core, which no CPU-time clock
    removes. The decode step reads the lm_head's 33 MB of weights each step: on a quiet host they stay in the
    last-level cache between steps, which the kernel level takes from the calibration (`gemv_cached`, `llc`), and
    beside the other worker they do not (the step 1.5-2x slower). So the prefill is held to [2/3, 3/2] (it fails a
    prefill level off by a third, such as one without the lm_head's work, more than half of it at batch 1) and the
    decode step to [2/5, 5/2] (it fails a step off by 2.5x)."""
    out = tiny_curve  # the session's curve (conftest.py): batches 1, 2, 4, 8 on one thread, fastest of 5, quick plan
    # priced on the calibration the curve was priced on (conftest.py `tiny_curve`)
    m = measured_block(capsys, tmp_path / "run", out, "runtime.threads=1", "hardware.quick=true")
    assert m["measured_on"]["model"] == "twin_tiny" and m["ratio"] == "predicted / measured"
    assert m["measured"] == "cpu_s" and m["measured_on"]["threads"] == 1 and "thread_time" in m["measured_by"]["cpu"]
    assert [r["batch"] for r in m["rows"]] == [1, 2, 4, 8]
    for r in m["rows"]:
        assert r["decode_steps"] == 2 and r["prefill_measured_s"] > 0 and r["step_measured_s"] > 0
        assert r["prefill_ratio"] == pytest.approx(r["prefill_predicted_s"] / r["prefill_measured_s"])
        assert 2 / 3 <= r["prefill_ratio"] <= 3 / 2, r
        assert 2 / 5 < r["step_ratio"] < 5 / 2, r
        # priced again at the experts the curve's calls touched (its routing log): at batch 1 a step's token touches
        # exactly top_k experts, the expectation itself
        assert r["step_ratio_touched"] == pytest.approx(r["step_predicted_touched_s"] / r["step_measured_s"])
        if r["batch"] == 1:
            assert r["step_predicted_touched_s"] == pytest.approx(r["step_predicted_s"])
    assert "routing log" in m["touched"] and {e["tokens"] for e in m["experts"]} >= {1.0, 2.0, 4.0, 8.0}
    # the experts each region touched (the routing patch on one more call): one token's step touches exactly top_k
    # experts per MoE layer, a batch of B tokens at most min(E, B x top_k), a prefill at most E
    curve = json.loads((out / "serving_curve.json").read_text())["data"]["rows"]
    assert len(curve) == 4 * 3
    for row in curve:
        e, b = row["experts"], row["batch"]
        layers = len(e["per_layer"])
        assert layers >= 1 and e["mean"] == pytest.approx(sum(e["per_layer"]) / layers)
        assert 0 < row["predicted"]["experts_per_layer"] <= e["n_experts"]
        if row["phase"] == "decode":
            assert e["tokens"] == b and max(e["per_layer"]) <= min(e["n_experts"], b * e["top_k"])
            if b == 1:
                assert e["per_layer"] == [e["top_k"]] * layers
        else:
            assert e["tokens"] == b * row["seq_len"] and max(e["per_layer"]) <= e["n_experts"]


CPU_DATA = Path(__file__).resolve().parents[1] / "data" / "cpu"
CPU_CURVE = CPU_DATA / "twin-tiny-2026-11-27" / "serving_curve.json"
# the recorded CPU curves of the tiny twin with the calibration that priced them (tests/data/cpu/README.md)
QUIET = sorted(p.parent for p in CPU_DATA.glob("twin_tiny-tiny-*/calibration.json"))


def test_hf_eager_is_within_25_percent_of_the_recorded_cpu_curves(tmp_path, capsys):
    """Issue 32's CPU check, replayed: the tiny twin's serving curves recorded on this project's 2-core VM at batches 1,
    2, 4 and 8 (`./dev bench serving_curve --threads 1 --batches 1,2,4,8 --repeats 5 --recalibrate` on a quiet host,
    the suite's MALLOC_* tunables; each folder holds the curve and the calibration made in the same minute that
    priced it), through `./dev analyze hardware=measured hardware.calibration=<rec>/calibration.json
    serve.measured=<rec>/serving_curve.json`: hf_eager's prefill and mean decode step within 25% of the measured
    ones at every batch of every recording. Offline, so the suite's own load moves nothing; a change of the cost
    formulas or the time levels moves the ratios (`test_the_measured_curve_sits_beside_hf_eager` runs the curve
    live under the suite's load, with wider bands)."""
    assert len(QUIET) >= 3, QUIET
    compared = 0
    for rec in QUIET:
        m = measured_block(capsys, tmp_path / rec.name, rec, f"hardware.calibration={rec / 'calibration.json'}")
        assert m["measured"] == "cpu_s" and m["measured_on"]["threads"] == 1
        assert [r["batch"] for r in m["rows"]] == [1, 2, 4, 8], rec.name
        for r in m["rows"]:
            assert r["decode_steps"] == 2
            assert 0.75 <= r["prefill_ratio"] <= 1.25, (rec.name, r)
            assert 0.75 <= r["step_ratio"] <= 1.25, (rec.name, r)
            compared += 1
    assert compared == 4 * len(QUIET)


def test_a_cpu_curve_of_other_conditions_is_refused(tmp_path, capsys):
    """`serve.measured` with this process's CPU calibration: a curve measured on another thread count, or under
    another allocator regime, is one line naming serve.measured and both values, exit 2, nothing written (the
    committed full-twin curve: 2 threads, glibc's defaults; the second case a copy of it with another regime); with a
    recorded CPU calibration (`hardware.calibration`) the file's conditions are the ones compared (a recording's:
    one thread)."""
    from llm_perf_opt.measure.allocator import allocator_regime, regime_label

    out = tmp_path / "run"
    common = ("analyze", "model=twin", "workload=tiny", "hardware=measured", f"hydra.run.dir={out}")
    code, lines = run_here(capsys, *common, "runtime.threads=1", f"serve.measured={CPU_CURVE}")
    assert code == 2 and len(lines) == 1 and "serve.measured" in lines[0], lines
    assert "measured on 2 thread(s)" in lines[0] and "predicts on 1 (runtime.threads)" in lines[0], lines
    assert not out.exists()
    ours = regime_label(allocator_regime())
    doc = json.loads(CPU_CURVE.read_text())
    assert doc["data"]["config"]["threads"] == 2
    doc["data"]["config"]["allocator"] = "jemalloc" if ours != "jemalloc" else "glibc malloc, defaults"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    code, lines = run_here(capsys, *common, "runtime.threads=2", f"serve.measured={other}")
    assert code == 2 and len(lines) == 1 and "serve.measured" in lines[0], lines
    theirs = doc["data"]["config"]["allocator"]
    assert f"measured under {theirs}; this job calibrates and predicts under {ours} (" in lines[0], lines
    assert not out.exists()
    # a recorded CPU calibration prices the curve: the file's thread count and regime, not this process's
    recorded = next(iter(QUIET)) / "calibration.json"
    code, lines = run_here(
        capsys, *common, f"hardware.calibration={recorded}", "runtime.threads=2", f"serve.measured={CPU_CURVE}"
    )
    assert code == 2 and len(lines) == 1 and "serve.measured" in lines[0], lines
    assert "the calibration file was measured on 1 (hardware.calibration=" in lines[0], lines
    assert not out.exists()


def test_analyze_takes_a_list_of_engines(tmp_path, capsys):
    """`serve.engine=cuda_graphs,vllm` (no --multirun): one block per engine, every engine in serving.json, the first
    in its top-level fields."""
    out = tmp_path / "run"
    code, lines = run_here(
        capsys,
        "analyze",
        "hardware=h100_sxm",
        "serve.engine=cuda_graphs,vllm",
        "serve.batches=[1,8]",
        f"hydra.run.dir={out}",
    )
    assert code == 0, lines
    s = load_serving(out)
    assert [e["engine"]["name"] for e in s.engines] == ["cuda_graphs", "vllm"] and s.engine["name"] == "cuda_graphs"
    assert s.point == s.engines[0]["point"] and s.engines[1]["engine"]["memory"] == "paged"
    assert [row["batch"] for row in s.engines[0]["curve"]] == [
        1,
        8,
        s.max_fit_batch["static"],
    ]  # + the largest that fits
