"""A third model family the generic layers have never seen (tests/toy_family: a toy vision encoder and a two-layer
decoder) registers by one line, then traces, groups, verifies (FLOPs and kernel counts exact, against numbers
derived here from the spec's named dimensions) and reports with no edit outside its own files: the family
contract (`llm_perf_opt.family.ModelFamily`) is all a family needs."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
from shared_runs import run_job_script

from llm_perf_opt import families
from llm_perf_opt.family import ModelFamily

pytestmark = pytest.mark.slow
TESTS = Path(__file__).resolve().parents[1]
REGISTRY_LINE = {families.ENV_VAR: "toy=toy_family.family:FAMILY"}  # the one line that registers the family
SPECS = ("toy", "toy_wide")
FAST = ("model.family=toy", "model.name=toy_twin", "profile=off", "~hardware", "trace.decode_steps=1")


def _env() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    return {**REGISTRY_LINE, "PYTHONPATH": path}


@pytest.fixture
def toy_registered(monkeypatch):
    monkeypatch.setenv(families.ENV_VAR, REGISTRY_LINE[families.ENV_VAR])
    families.family.cache_clear()
    yield families.family("toy")
    families.family.cache_clear()


@pytest.fixture(scope="module")
def toy_sweep(tmp_path_factory):
    """One sweep over the toy's two specs (the trace job per spec), then the report over it."""
    out = tmp_path_factory.mktemp("toy_family") / "sweep"
    sweep = run_job_script("sweep", *FAST, f"model.spec={','.join(SPECS)}", f"hydra.sweep.dir={out}", env=_env())
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    report = run_job_script("report", out, "--no-plots", env=_env(), timeout=300)
    assert report.returncode == 0, report.stderr[-3000:]
    return out


def _data(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))["data"]


def _job_dir(sweep: Path, spec: str) -> Path:
    return sweep / str(SPECS.index(spec))


def test_the_toy_family_registers_by_one_line(toy_registered):
    from toy_family.spec import SPECS as TOY_SPECS
    from toy_family.twin import ToyOCRForCausalLM

    from llm_perf_opt.analytic import registry

    assert isinstance(toy_registered, ModelFamily) and "toy" in families.names()
    toy_registered.analytic_model(TOY_SPECS["toy"], toy_registered.layout(toy_registered.modes()["toy"], 100, 100))
    classes = {type(m).__name__ for m in ToyOCRForCausalLM(TOY_SPECS["toy"]).modules()}
    assert registry.unsupported(classes, toy_registered.cost_namespace) == {}  # every class has a formula
    assert any(k.startswith("toy.") for k in registry.entries())  # under its own namespace
    assert families.for_config({"model": {"family": "toy"}}) is toy_registered


@pytest.mark.parametrize("spec_name", SPECS)
def test_it_traces_groups_and_verifies_exactly(toy_sweep, spec_name):
    from toy_family.spec import SPECS as TOY_SPECS
    from toy_family.spec import ToyWorkload

    run = _job_dir(toy_sweep, spec_name)
    summary = _data(run / "summary.json")
    assert summary["status"] == "ok"
    # grouping: the two decoder layers fold into one `for 2` group, checked against the runtime log
    grouped = _data(run / "callgraph.grouped.json")
    (check,) = grouped["checks"]
    assert check["name"] == "decoder_layers" and check["status"] == "ok" and check["expected"] == 2
    assert any(n["pattern"] == "layers.[0-1]" and n["for_n"] == 2 for n in grouped["nodes"])
    # verification: every FLOP row and every kernel row agrees exactly, the KV cache too
    verification = _data(run / "verification.json")
    flop_rows = [r for stage in verification["stages"] for r in stage["rows"]]
    assert flop_rows and all(r["analytic"] == r["measured"] for r in flop_rows)
    assert {r["stage"] for r in flop_rows} == {"vision", "prefill", "decode"}
    kernel_rows = verification["kernel_counts"]["rows"]
    assert kernel_rows and all(r["analytic"] == r["measured"] for r in kernel_rows)
    assert {r["stage"] for r in kernel_rows} == {"vision", "prefill", "decode"}
    assert all(r["analytic"] == r["measured"] for r in verification["kv_cache"])
    assert summary["verification"]["passed"] and summary["verification"]["kernels_passed"]
    # ... and the verified numbers are the spec's: FLOPs as products of its named dimensions
    s, side = TOY_SPECS[spec_name], ToyWorkload().side
    patches = (side // s.patch) ** 2
    prompt = len("\nFree OCR.")  # the default prompt's characters, one token each
    seq = 1 + patches + prompt
    vision = 2 * patches * s.vision_dim * s.channels * s.patch**2 + 2 * patches * s.vision_dim * s.hidden
    attention = 4 * 2 * seq * s.hidden * s.hidden + 2 * 2 * s.heads * seq * seq * s.head_dim
    mlp = 2 * 2 * seq * s.hidden * s.intermediate
    lm_head = 2 * seq * s.hidden * s.vocab
    assert summary["flops"]["vision"]["measured"] == vision
    assert summary["flops"]["prefill"]["measured"] == vision + s.layers * (attention + mlp) + lm_head
    kv = summary["decode"]["rows"][0]
    assert kv["past_len"] == seq and kv["kv_bytes_measured"] == s.layers * 2 * (seq + 1) * s.hidden * 4


def test_it_reports(toy_sweep):
    with open(toy_sweep / "report.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert [r["flops_verified"] for r in rows] == ["3/3", "3/3"]
    assert all(r["grouping_checks"] == "1/1" and r["image_tokens"] == "16" for r in rows)
    assert (toy_sweep / "report.html").is_file()


def test_the_group_job_regroups_a_toy_run(toy_sweep):
    run = _job_dir(toy_sweep, "toy")
    proc = run_job_script("group", run, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "check decoder_layers: ok (expected 2, observed 2)" in proc.stdout
