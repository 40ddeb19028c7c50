"""Every bad input the issue found is refused in one line (exit 2), writes nothing, and the same code
covers errors Hydra finds and errors the project finds."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest
from job_scripts import one_line_error, run_job, run_job_in_process

from llm_perf_opt.errors import ExitCode
from llm_perf_opt.prepare.validate import MAX_PAGE_PIXELS


def png_header_only(path: Path, width: int, height: int) -> Path:
    """A PNG file whose header claims width x height (a decompression bomb), with one tiny data chunk."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 4)) + chunk(b"IEND", b"")
    )
    return path


# The two page-size tests run the jobs in subprocesses: a regression would allocate 10^10 pixels (tens of GB), which
# must not take the test run's memory; the other tests run the job command in this process (`run_job_in_process`).
def test_a_bomb_image_is_one_line_for_jobs_that_build_pixels_and_fine_for_analyze(tmp_path):
    bomb = png_header_only(tmp_path / "bomb.png", 100_000, 100_000)
    run_dir = tmp_path / "run"
    line = one_line_error(run_job("trace", f"workload.page.image={bomb}", f"hydra.run.dir={run_dir}"))
    assert f"workload.page.image='{bomb}' is invalid" in line and "100000x100000" in line
    assert f"{MAX_PAGE_PIXELS:,}" in line and "./dev analyze" in line
    assert not (run_dir / "summary.json").exists()
    proc = run_job("analyze", f"workload.page.image={bomb}", f"hydra.run.dir={tmp_path / 'analyze'}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "page 100000x100000" in proc.stdout and (tmp_path / "analyze" / "costs.json").is_file()


def test_a_huge_synthetic_page_is_refused_before_allocating_and_analyze_takes_it(tmp_path):
    size = ("workload.page.width=100000", "workload.page.height=100000")
    line = one_line_error(run_job("trace", *size, f"hydra.run.dir={tmp_path / 'run'}"))
    assert "workload.page.width/height='100000x100000' is invalid" in line and "pixels, above the limit" in line
    proc = run_job("analyze", *size, f"hydra.run.dir={tmp_path / 'analyze'}")
    assert proc.returncode == 0 and "page 100000x100000" in proc.stdout, proc.stderr[-3000:]


# The keys of a vendor config.json the analytic model reads, with small made-up dimensions.
VENDOR_CONFIG = {
    "language_config": {
        "hidden_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "intermediate_size": 256,
        "moe_intermediate_size": 64,
        "n_routed_experts": 4,
        "n_shared_experts": 1,
        "num_experts_per_tok": 2,
        "first_k_dense_replace": 1,
        "vocab_size": 129280,
        "use_mla": False,
    },
    "vision_config": {"width": {"sam_vit_b": {"width": 768, "layers": 12, "heads": 12}}},
}


def vendor_dir_with(tmp_path: Path, change: dict) -> Path:
    config = json.loads(json.dumps(VENDOR_CONFIG))
    for dotted, value in change.items():
        node = config
        *parents, key = dotted.split(".")
        for p in parents:
            node = node[p]
        node[key] = value
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(config))
    return model


def test_the_made_up_vendor_config_itself_is_accepted(tmp_path):
    model = vendor_dir_with(tmp_path, {})
    proc = run_job_in_process("analyze", "model=vendor", f"model.path={model}", f"hydra.run.dir={tmp_path / 'run'}")
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.parametrize(
    "change, named",
    [
        ({"vision_config": "oops"}, "'vision_config' must be an object"),
        ({"language_config.num_key_value_heads": "ten"}, "'language_config.num_key_value_heads' must be an integer"),
        ({"language_config.rope_theta": "fast"}, "'language_config.rope_theta' must be a number"),
        ({"vision_config.width": [1, 2]}, "'vision_config.width' must be an object"),
    ],
)
def test_a_vendor_config_with_wrong_types_is_one_line(tmp_path, change, named):
    model = vendor_dir_with(tmp_path, change)
    line = one_line_error(
        run_job_in_process("analyze", "model=vendor", f"model.path={model}", f"hydra.run.dir={tmp_path / 'run'}")
    )
    assert named in line and str(model / "config.json") in line
    assert not (tmp_path / "run" / "costs.json").exists()


def test_group_on_a_callgraph_with_string_counts_is_one_line(tmp_path):
    graph = {
        "call_counts": {"": 1, "a": "1"},
        "edges": {"": {"a": 1}},
        "op_call_counts": {"a": 2},
        "module_children": {"": ["a"], "a": []},
        "module_types": {"": "M", "a": "Linear"},
    }
    (tmp_path / "callgraph.json").write_text(json.dumps(graph))
    line = one_line_error(run_job_in_process("group", str(tmp_path)))
    assert "call_counts['a'] must be a non-negative integer, found '1'" in line
    assert not (tmp_path / "callgraph.grouped.json").exists()


def test_group_max_depth_follows_the_render_rule(tmp_path):
    line = one_line_error(run_job_in_process("group", str(tmp_path), "--max-depth", "0"))
    assert line == "error: --max-depth=0 is invalid: must be >= 1 or null"
    trace = one_line_error(run_job_in_process("trace", "render.max_depth=0", f"hydra.run.dir={tmp_path / 'run'}"))
    assert "render.max_depth=0 is invalid: must be >= 1 or null" in trace


def test_report_out_pointing_at_a_file_is_one_line(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "multirun.yaml").write_text("hydra: {}\n")
    line = one_line_error(run_job_in_process("report", str(tmp_path / "sweep"), "--out", str(target)))
    assert f"--out='{target}' is invalid: is an existing file" in line
    line = one_line_error(run_job_in_process("report", "--analytic", str(target)))
    assert "is an existing file" in line and target.read_text() == "x"


@pytest.mark.parametrize(
    "args", [["--modes", "huge"], ["--n", "1"], ["--min-side", "5000"], ["--model", "nope"], ["--dtype", "int3"]]
)
def test_refused_analytic_report_arguments_create_nothing(tmp_path, args):
    out = tmp_path / "analytic"
    one_line_error(run_job_in_process("report", "--analytic", str(out), *args))
    assert not out.exists()


def test_a_directory_of_single_runs_is_not_a_sweep(tmp_path):
    runs = tmp_path / "runs"
    for i in range(2):
        assert run_job_in_process("analyze", "workload=tiny", f"hydra.run.dir={runs / str(i)}").returncode == 0
    line = one_line_error(run_job_in_process("report", str(runs)))
    assert (
        line
        == f"error: {runs}: not a sweep (no multirun.yaml): pass the directory of one ./dev sweep (hydra.sweep.dir)"
    )
    assert not (runs / "report.html").exists()


@pytest.mark.parametrize(
    "override, fragment",
    [
        ("workload.base_size=abc", "Value 'abc' of type 'str' could not be converted to Integer"),  # Hydra finds it
        ("frobnicate=1", "Could not override 'frobnicate'"),  # Hydra
        ("workload.base_size=1000", "workload.base_size=1000 is invalid"),  # the project's validation
        ("hardware=h999", "hardware='h999' is invalid"),  # the project, before Hydra composes
    ],
)
def test_config_errors_have_one_exit_code_whoever_finds_them(tmp_path, override, fragment):
    line = one_line_error(
        run_job_in_process("trace", override, f"hydra.run.dir={tmp_path / 'run'}"), code=ExitCode.CONFIG
    )
    assert fragment in line


def test_a_bad_sweep_value_stops_the_sweep_in_one_line(tmp_path):
    """Hydra composes each job before launching it: the sweep stops at once (after its announcement)."""
    sweep = tmp_path / "sweep"
    proc = run_job_in_process("sweep", "workload.base_size=640,abc", f"hydra.sweep.dir={sweep}")
    assert proc.returncode == ExitCode.CONFIG and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Value 'abc' of type 'str' could not be converted to Integer" in errors[0]
    assert not list(sweep.glob("*/summary.json"))
