"""The GitHub workflows are valid YAML and name the jobs and steps the README promises: ci.yml runs the
README's test command (.ci/run -> ./dev test) on a CPU runner; gpu-verify.yml runs the gate with pixi on a
self-hosted GPU runner and keeps the JUnit XML and the report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO_ROOT / ".github" / "workflows"


def load(name: str) -> dict:
    doc = yaml.safe_load((WORKFLOWS / name).read_text())
    assert isinstance(doc, dict) and "jobs" in doc, name
    doc["on"] = doc.pop("on", doc.pop(True, None))  # YAML 1.1 reads the key `on` as true
    return doc


def steps(doc: dict, job: str) -> list[dict]:
    return doc["jobs"][job]["steps"]


def uses(step_list: list[dict], action: str) -> list[dict]:
    return [s for s in step_list if str(s.get("uses", "")).split("@")[0] == action]


def runs(step_list: list[dict]) -> str:
    return "\n".join(str(s.get("run", "")) for s in step_list)


@pytest.mark.parametrize("name", ["ci.yml", "gpu-verify.yml"])
def test_every_step_uses_a_pinned_action_or_runs_a_command(name):
    doc = load(name)
    actions = 0
    for job, spec in doc["jobs"].items():
        assert spec["steps"], job
        for step in spec["steps"]:
            assert ("uses" in step) != ("run" in step), step
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@v[\d.]+", step["uses"]), step["uses"]
                actions += 1
    assert actions >= 1  # actions/checkout at least


def test_ci_runs_the_test_suite_on_a_cpu_runner():
    doc = load("ci.yml")
    assert {"push", "pull_request"} <= set(doc["on"])
    job = doc["jobs"]["test"]
    assert str(job["runs-on"]).startswith("ubuntu")
    step_list = steps(doc, "test")
    assert uses(step_list, "actions/checkout")
    assert uses(step_list, "actions/setup-python")[0]["with"]["python-version"] == "3.11"
    assert re.search(r"(^|\s)(bash )?\.ci/run(\s|$)", runs(step_list), re.M)
    assert (REPO_ROOT / ".ci" / "run").read_text().strip().endswith("exec ./dev test")
    test_step = next(s for s in step_list if ".ci/run" in str(s.get("run", "")))
    # the browser and Mermaid tests run there: CI set (a missing browser fails them), the runner's Chrome named
    assert test_step["env"]["CI"] == "true" and test_step["env"]["CHROMIUM"] == "google-chrome"


def test_gpu_verify_runs_the_gate_with_pixi_on_a_self_hosted_gpu_runner():
    doc = load("gpu-verify.yml")
    assert {"workflow_dispatch", "schedule"} <= set(doc["on"])
    inputs = doc["on"]["workflow_dispatch"]["inputs"]["matrix"]
    assert set(inputs["options"]) == {p.stem for p in (REPO_ROOT / "conf" / "verify").glob("*.yaml")} - {"expected"}
    job = doc["jobs"]["verify"]
    default = re.search(r"'(\[.*?\])'", job["runs-on"]).group(1)  # the labels when GPU_RUNNER_LABELS is unset
    assert json.loads(default) == ["self-hosted", "linux", "gpu"] and "vars.GPU_RUNNER_LABELS" in job["runs-on"]
    step_list = steps(doc, "verify")
    pixi = uses(step_list, "prefix-dev/setup-pixi")
    assert pixi and "rtx5090" in str(pixi[0]["with"]["environments"]).split()
    commands = runs(step_list)
    assert "pixi run -e rtx5090 verify" in commands and "runtime=cuda" in commands
    assert "verify=vendor" in commands and "DSOCR_MODEL_PATH" in json.dumps(job)
    uploads = uses(step_list, "actions/upload-artifact")
    assert uploads and "!cancelled()" in uploads[0]["if"]
    paths = uploads[0]["with"]["path"]
    for wanted in ("junit.xml", "report.*", "report_plots/"):
        assert wanted in paths, wanted


def test_the_upload_paths_are_where_the_gate_writes():
    """The workflow passes verify.out_dir=$OUT/<matrix>; the gate writes junit.xml and report.* there."""
    from llm_perf_opt.gate.run import JUNIT_FILE

    doc = load("gpu-verify.yml")
    commands = runs(steps(doc, "verify"))
    assert '"verify.out_dir=$OUT/$MATRIX"' in commands
    assert (
        f"${{{{ env.OUT }}}}/*/{JUNIT_FILE}" in uses(steps(doc, "verify"), "actions/upload-artifact")[0]["with"]["path"]
    )
