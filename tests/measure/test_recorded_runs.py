"""The recorded runs kept as test data (`tests/data/gpu/`): every recording and every run folder found without naming
them, each run's configuration read from its own summary.json (never from its folder's name), its files read plain or
gzipped, bad input refused in one line. Data missing from the repository fails these tests: nothing skips."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from llm_perf_opt.errors import ArtifactError
from llm_perf_opt.measure.recorded_runs import load_recording, recorded_runs, recordings
from llm_perf_opt.measure.verification_file import load_verification

GPU_DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"
H200 = GPU_DATA / "h200-2026-11-26"

# what the H200 recording's summaries say (README.md of the recording): run folder -> (model, mode, batch, status)
H200_RUNS = {
    "twin_tiny-tiny": ("twin_tiny", "tiny", 1, "ok"),
    "twin-tiny": ("twin", "tiny", 1, "ok"),
    "twin-tiny-b8": ("twin", "tiny", 8, "interrupted"),
    "sweep-twin_tiny/0": ("twin_tiny", "tiny", 1, "ok"),
    "sweep-twin_tiny/1": ("twin_tiny", "base", 1, "ok"),
    "sweep-twin_tiny/2": ("twin_tiny", "gundam", 1, "ok"),
}


def test_every_recording_and_run_is_found_and_read_from_its_summary():
    recs = recordings(GPU_DATA)
    assert "h200-2026-11-26" in [r.name for r in recs]
    for rec in recs:  # a recording without a README or a run is not kept data
        assert (rec.path / "README.md").is_file(), rec.path
        assert rec.runs
    h200 = load_recording(H200)
    assert {r.name: (r.model, r.mode, r.batch, r.status) for r in h200.runs} == H200_RUNS
    steps = {r.name: r.decode_steps for r in h200.runs}
    assert steps == {
        "twin_tiny-tiny": 2,
        "twin-tiny": 8,
        "twin-tiny-b8": 0,  # killed in TorchLens' post-processing: no capture in its summary
        "sweep-twin_tiny/0": 2,
        "sweep-twin_tiny/1": 2,
        "sweep-twin_tiny/2": 2,
    }
    for run in h200.runs:
        assert run.summary.runtime.device == "cuda" and run.summary.runtime.autocast is True
        assert (
            run.attn_implementation == "sdpa"
        )  # flash_attention_2 asked for; flash-attn absent: the session fell back
    finished = [r for r in h200.runs if r.status == "ok"]
    assert len(finished) == 5
    for run in finished:  # the GPU from the measured roof's label (sessions before cuda_capability), its capability
        assert run.device_name == "NVIDIA H200" and run.cuda_capability == (9, 0)
    assert [p.name for p in h200.calibrations] == ["NVIDIA_H200-torch2.11.0+cu130-threads16-cuda.json"]
    assert len(recorded_runs(GPU_DATA)) >= len(H200_RUNS)


def test_a_run_is_known_by_its_summary_not_its_folder_name(tmp_path):
    """A Gundam run copied into a folder named `tiny`, beside a second recording: found without code changes, read
    as what its summary says."""
    root = tmp_path / "gpu"
    (root / "other-gpu-2027-01-01" / "tiny").mkdir(parents=True)
    for name in ("summary.json", "verification.json.gz"):
        shutil.copy(H200 / "sweep-twin_tiny" / "2" / name, root / "other-gpu-2027-01-01" / "tiny" / name)
    shutil.copytree(H200, root / "h200-2026-11-26")
    recs = recordings(root)
    assert [r.name for r in recs] == ["h200-2026-11-26", "other-gpu-2027-01-01"]
    (run,) = recs[1].runs
    assert (run.name, run.model, run.mode, run.batch) == ("tiny", "twin_tiny", "gundam", 1)
    assert "workload=gundam" in run.overrides() and "model=twin_tiny" in run.overrides()
    assert run.file("verification.json") == run.path / "verification.json.gz" and run.file("costs.json") is None
    v = run.verification()
    assert len(v.kernels) == 317 and len(v.activation) == 10


def test_gzipped_verification_keeps_its_kernel_rows():
    v = load_verification(H200 / "twin-tiny" / "verification.json.gz")
    assert len(v.rows) == 2574 and len(v.kernels) == 2574 and len(v.activation) == 19
    assert sum(1 for r in v.kernels if not r.ok) == 238  # as recorded at commit 4cd2452
    assert sum(1 for r in v.kernels if r.unrouted) > 0  # the routing the gates chose, taken off as recorded


def test_bad_input_is_one_line_naming_the_path(tmp_path):
    def refused(call, *words):
        with pytest.raises(ArtifactError) as err:
            call()
        text = str(err.value)
        assert "\n" not in text and all(w in text for w in words), text

    refused(lambda: recordings(tmp_path / "nowhere"), "nowhere", "no such folder")
    (tmp_path / "empty").mkdir()
    refused(lambda: recordings(tmp_path / "empty"), "empty", "no recording")
    (tmp_path / "root" / "rec" / "notes").mkdir(parents=True)
    refused(lambda: recordings(tmp_path / "root"), "rec", "no run folder")
    bad = tmp_path / "bad" / "rec" / "run"
    bad.mkdir(parents=True)
    (bad / "summary.json").write_text("{not json")
    refused(lambda: recordings(tmp_path / "bad"), "summary.json", "not valid JSON")
    run = load_recording(H200).run("twin-tiny-b8")
    refused(lambda: run.require("verification.json"), "twin-tiny-b8", "verification.json")
    refused(lambda: load_recording(H200).run("no-such-run"), "no-such-run")
    # a verification whose kernel rows disagree with its stored verdict
    doc = json.loads(gzip.open(H200 / "twin_tiny-tiny" / "verification.json.gz").read())
    doc["data"]["kernel_counts"]["n_failures"] = 0
    (tmp_path / "v.json").write_text(json.dumps(doc))
    refused(lambda: load_verification(tmp_path / "v.json"), "kernel_counts.n_failures")
    (tmp_path / "cut.json.gz").write_bytes(gzip.compress(b'{"schema": 1}')[:12])
    refused(lambda: load_verification(tmp_path / "cut.json.gz"), "cut.json.gz")
