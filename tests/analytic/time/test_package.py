"""The time model is one package (`analytic.time`): what it may import, its one ideal formula, its one `LevelTimes`,
the levels at batch B it offers, and the one calibration-directory rule every reader of the cache follows."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest

from llm_perf_opt.analytic.costs import LayerCost
from llm_perf_opt.analytic.time import convention
from llm_perf_opt.analytic.time.batch import BATCH_LEVELS, UnitTable, level_times
from llm_perf_opt.analytic.time.figures import HOST_FIGURES_SINCE, time_model_for
from llm_perf_opt.analytic.time.hardware import Roof
from llm_perf_opt.analytic.time.ideal import compute_seconds, estimate, memory_seconds
from llm_perf_opt.config.paths import CALIBRATION_DIR_ENV, DEFAULT_CALIBRATION_DIR, calibration_dir
from llm_perf_opt.errors import ConfigError

SRC = Path(__file__).resolve().parents[3] / "src" / "llm_perf_opt"
PACKAGE = SRC / "analytic" / "time"
# what the time model builds on: the cost layer of `analytic` (costs, cost nodes, MoE routing at batch B), the
# config schemas and paths, the artifacts reader (a cached calibration), errors and units
ALLOWED = (
    "llm_perf_opt.analytic.costs",
    "llm_perf_opt.analytic.hardware_config",  # the `hardware` config section (plain dataclasses)
    "llm_perf_opt.analytic.stage",
    "llm_perf_opt.analytic.moe_batch",
    "llm_perf_opt.analytic.time",
    "llm_perf_opt.config",
    "llm_perf_opt.artifacts",
    "llm_perf_opt.errors",
    "llm_perf_opt.units",
)
ROOF = Roof("test", "test device", "datasheet", "bfloat16", "bfloat16", 4e12, 1e12, 2e9)


def imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return out


def test_the_package_imports_no_torch_no_family_and_only_the_cost_layer():
    files = sorted(PACKAGE.glob("*.py"))
    assert {f.stem for f in files} >= {
        "convention",
        "hardware",
        "figures",
        "ideal",
        "kernel",
        "eager",
        "levels",
        "batch",
    }
    bad = [
        f"{f.name} imports {name}"
        for f in files
        for name in imports(f)
        if name.split(".")[0] == "torch"
        or (name.startswith("llm_perf_opt.") and not any(name == a or name.startswith(a + ".") for a in ALLOWED))
    ]
    assert bad == []


def seconds_on_a_roof(path: Path) -> list[str]:
    """Where work (FLOPs, bytes) is divided by a roof's peak or bandwidth: `path:line` of each such division."""
    text = path.read_text(encoding="utf-8")
    out = []
    for node in ast.walk(ast.parse(text)):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
            continue
        right = node.right
        if isinstance(right, ast.Attribute) and right.attr in ("matmul_flops", "vector_flops", "bandwidth"):
            if isinstance(right.value, ast.Name) and right.value.id == "roof":
                work = ast.get_source_segment(text, node.left) or ""
                # work, not a ratio of two rates (sizing's required peak / the reference's)
                if right.attr == "vector_flops" or any(w in work for w in ("flops", "bytes", "io")):
                    out.append(f"{path.relative_to(SRC)}:{node.lineno}")
    return out


def test_one_ideal_formula():
    """The peaks and the bandwidth turn work into seconds in one place: `ideal.compute_seconds` / `memory_seconds`."""
    sites = sorted(site for p in sorted(SRC.rglob("*.py")) for site in seconds_on_a_roof(p))
    lines = (PACKAGE / "ideal.py").read_text(encoding="utf-8").splitlines()
    at = [i for i, line in enumerate(lines, 1) if line.startswith("    return ") and "/ roof." in line]
    assert len(at) == 2 and sites == [f"analytic/time/ideal.py:{i}" for i in (at[0], at[0], at[1])]
    # numbers and arrays alike: the batch levels' arrays give, unit by unit, what one unit gives
    fm, fo, io = np.array([3e9, 0.0, 7e6]), np.array([1e6, 5e5, 0.0]), np.array([4e6, 1e9, 2e3])
    for i in range(3):
        assert compute_seconds(fm, fo, ROOF)[i] == compute_seconds(float(fm[i]), float(fo[i]), ROOF)
        assert memory_seconds(io, ROOF)[i] == memory_seconds(float(io[i]), ROOF)


def test_one_class_per_name_in_the_time_model():
    """`LevelTimes` (three levels of one unit) and `BatchTimes` (one level at many batches) are different things:
    no class name of the time model is defined twice anywhere under src/."""
    defined: dict[str, list[str]] = {}
    for p in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                defined.setdefault(node.name, []).append(str(p.relative_to(SRC)))
    ours = {
        n
        for f in PACKAGE.glob("*.py")
        for n in (c.name for c in ast.walk(ast.parse(f.read_text())) if isinstance(c, ast.ClassDef))
    }
    assert {n: defined[n] for n in ours if len(defined[n]) > 1} == {}
    assert "LevelTimes" in ours and "BatchTimes" in ours


def test_the_batch_levels_at_batch_one_are_the_ideal_estimate():
    """One unit of 2 GFLOP matmul and 8 MB moved, at batch 1: `ideal_at_batch` and `estimate` give the same
    seconds; a level the package does not offer is refused by name, listing the ones it does."""
    cost = LayerCost(
        flops_matmul=2 * 10**9, flops_other=10**6, weight_bytes=6 * 10**6, input_bytes=10**6, output_bytes=10**6
    )
    table = UnitTable(
        "prefill",
        1,
        np.array([1.0]),
        np.array([0]),
        np.array([float(cost.flops_matmul)]),
        np.array([float(cost.flops_other)]),
        np.array([float(cost.weight_bytes)]),
        np.array([float(cost.input_bytes + cost.output_bytes)]),
        np.array([0.0]),
    )
    one = estimate(cost, ROOF)
    at = level_times(table, [1.0, 4.0], ROOF)
    assert at.time_s[0] == pytest.approx(one.time_s, rel=1e-15) and at.bound(0) == one.bound
    # batch 4: the weights are read once, FLOPs and activations four times
    assert at.compute_s[1] == pytest.approx(4 * one.compute_s)
    assert at.memory_s[1] == pytest.approx((6e6 + 4 * 2e6) / ROOF.bandwidth)
    # the unit-table levels: the roofline alone; the kernel and eager levels at batch B are the serving engines'
    # (analytic.serve_engines.timing), their texts beside ideal's
    assert set(BATCH_LEVELS) == {"ideal"} and set(convention.BATCH_LEVELS) == {"ideal", "kernel", "eager"}
    with pytest.raises(ConfigError, match="serve.level.*one of ideal"):
        level_times(table, [1.0], ROOF, level="kernel")


def test_calibration_dir_rule(monkeypatch, tmp_path):
    monkeypatch.delenv(CALIBRATION_DIR_ENV, raising=False)
    assert calibration_dir() == DEFAULT_CALIBRATION_DIR == "tmp/calibration"
    monkeypatch.setenv(CALIBRATION_DIR_ENV, str(tmp_path / "env"))
    assert calibration_dir() == calibration_dir(None) == str(tmp_path / "env")
    assert calibration_dir(tmp_path / "given") == str(tmp_path / "given")  # hardware.cache_dir wins


def test_a_datasheet_reads_this_hosts_figures_from_the_calibration_dir(monkeypatch, tmp_path):
    """The eager level on a datasheet takes this host's cost per kernel from the cached CPU calibration: under
    $LLM_PERF_OPT_CALIBRATION_DIR when no cache_dir is given (the rule `measure.calibrate` writes by)."""

    class Figure:
        def __init__(self, value: float) -> None:
            self.value = value

    class Sheet:
        min_kernel_us, launch_us, sync_us = Figure(2.0), Figure(3.0), Figure(10.0)

    host = {"name": "test cpu", "torch": "x", "threads": 1, "op_s": 7e-6, "op_module": "nn.Linear forward"}
    doc = {"data": {"device": "cpu", "levels": {"float32": {"version": HOST_FIGURES_SINCE, "host": host}}}}
    (tmp_path / "cpu.json").write_text(json.dumps(doc))
    monkeypatch.setenv(CALIBRATION_DIR_ENV, str(tmp_path))
    model = time_model_for(ROOF, Sheet(), None)
    assert model.host is not None and model.host.dispatch_s == 7e-6 and "eager" not in model.missing
    monkeypatch.setenv(CALIBRATION_DIR_ENV, str(tmp_path / "empty"))
    model = time_model_for(ROOF, Sheet(), None)
    assert model.host is None and str(tmp_path / "empty") in model.missing["eager"]
