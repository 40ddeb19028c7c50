"""The run-directory registry and the jobs' own typed artifacts (summary.json, error.json): round trips,
refusals by name, older versions, and every registered loader on the files a real trace job writes."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from llm_perf_opt.artifacts import write_artifact
from llm_perf_opt.errors import ArtifactError, ConfigError
from llm_perf_opt.run_artifacts import (
    ERROR_SCHEMA,
    RUN_FILES,
    SUMMARY_SCHEMA,
    ErrorRecord,
    Summary,
    load,
    load_error,
    load_summary,
    run_file,
)

# the typed artifacts the default trace job writes (profile on, hardware=measured, no export; the calibration
# stays in its cache)
DEFAULT_RUN_ARTIFACTS = {
    "summary",
    "costs",
    "verification",
    "roofline",
    "profile",
    "callgraph",
    "runtime_log",
    "routing",
    "grouped",
    "module_costs",
}


@pytest.fixture(scope="module")
def run_dir(default_run) -> Path:
    """The default trace job (tiny twin, gundam, letter page) run as ./dev runs it: the session's `default_run`."""
    return default_run[0]


def test_registry_names_each_file_and_role_once():
    assert len({f.role for f in RUN_FILES}) == len({f.file for f in RUN_FILES}) == len(RUN_FILES)
    artifacts = 0
    for entry in RUN_FILES:
        if entry.is_artifact:
            assert entry.version in entry.versions, entry
            artifacts += 1
    assert artifacts >= 10  # at least the ten of test_registry_agrees_with_the_owning_stage
    with pytest.raises(KeyError, match="no run file with role 'nope'"):
        run_file("nope")


@pytest.mark.parametrize(
    "role, module, schema, version",
    [
        ("costs", "llm_perf_opt.analytic.costs_file", "COSTS_SCHEMA", "COSTS_SCHEMA_VERSION"),
        (
            "verification",
            "llm_perf_opt.measure.verification_file",
            "VERIFICATION_SCHEMA",
            "VERIFICATION_SCHEMA_VERSION",
        ),
        ("roofline", "llm_perf_opt.analytic.roofline_artifact", "ROOFLINE_SCHEMA", "ROOFLINE_SCHEMA_VERSION"),
        ("serving", "llm_perf_opt.analytic.serving_file", "SERVING_SCHEMA", "SERVING_VERSION"),
        ("calibration", "llm_perf_opt.measure.calibrate", "CALIBRATION_SCHEMA", "CALIBRATION_SCHEMA_VERSION"),
        ("profile", "llm_perf_opt.measure.module_times", "PROFILE_SCHEMA", "PROFILE_SCHEMA_VERSION"),
        ("export", "llm_perf_opt.export.summary", "EXPORT_SCHEMA", "EXPORT_SCHEMA_VERSION"),
        ("callgraph", "llm_perf_opt.callgraph.schema", "SCHEMA", "SCHEMA_VERSION"),
        ("grouped", "llm_perf_opt.callgraph.grouped", "GROUPED_SCHEMA", "GROUPED_VERSION"),
        ("module_costs", "llm_perf_opt.callgraph.node_costs", "MODULE_COSTS_SCHEMA", "MODULE_COSTS_VERSION"),
        ("runtime_log", "llm_perf_opt.model_runtime.runtime_log", "RUNTIME_LOG_SCHEMA", "RUNTIME_LOG_VERSION"),
    ],
)
def test_registry_agrees_with_the_owning_stage(role, module, schema, version):
    """The registry repeats the stages' schema names and versions; this catches a stage that moves on."""
    owner = importlib.import_module(module)
    entry = run_file(role)
    assert (entry.schema, entry.version) == (getattr(owner, schema), getattr(owner, version))


def test_every_registered_file_of_a_real_run_loads(run_dir):
    written = {p.name for p in run_dir.iterdir() if p.is_file()}
    registered = {f.file for f in RUN_FILES}
    assert written <= registered, f"files the trace job writes but the registry does not know: {written - registered}"
    loaded = set()
    for entry in RUN_FILES:
        if entry.is_artifact and entry.file in written:
            assert load(entry.role, run_dir) is not None, entry.role
            loaded.add(entry.role)
    assert loaded >= DEFAULT_RUN_ARTIFACTS, DEFAULT_RUN_ARTIFACTS - loaded


def test_summary_round_trips_exactly(run_dir):
    data = json.loads((run_dir / "summary.json").read_text())["data"]
    summary = load_summary(run_dir / "summary.json")
    assert summary.to_data() == data
    assert json.dumps(summary.to_data()) == json.dumps(data)  # the same key order too
    assert summary.status == "ok" and summary.layout.grid == "2x3" and summary.tokens.image == 903
    assert summary.trace.num_ops > 0 and summary.grouping.check_counts()["ok"] > 0
    assert set(summary.parts) == {"sam", "clip", "projector", "decoder", "lm_head"}
    assert summary.verification.passed


def _summary_data(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())["data"]


def test_missing_sections(run_dir, tmp_path):
    data = _summary_data(run_dir)
    for key in ("trace", "grouping", "flops", "parts", "verification", "forward", "params", "session", "analytic"):
        del data[key]
    path = write_artifact(tmp_path / "summary.json", SUMMARY_SCHEMA, 1, data)
    summary = load_summary(path)
    assert summary.trace is None and summary.flops is None and summary.analytic is None
    assert summary.to_data() == data
    del data["layout"]
    write_artifact(path, SUMMARY_SCHEMA, 1, data)
    with pytest.raises(ArtifactError, match="lacks required field 'layout'"):
        load_summary(path)


@pytest.mark.parametrize(
    "section, key, value, message",
    [
        ("trace", "num_ops", None, r"summary.json: trace lacks required field 'num_ops'"),
        ("tokens", "image", "903", r"summary.json: tokens.image must be int, found '903'"),
        ("flops", "prefill", {"analytic": 1}, r"summary.json: flops.prefill lacks required field 'measured'"),
        ("analytic", "prefill", [], r"summary.json: analytic.prefill must be an object, found list"),
        ("forward", "logits_finite", 1, r"summary.json: forward.logits_finite must be bool, found 1"),
        (None, "status", None, r"summary.json: status must be str, found None"),
    ],
)
def test_malformed_section_is_an_error_naming_the_field(run_dir, tmp_path, section, key, value, message):
    data = _summary_data(run_dir)
    if section is None:
        data[key] = value
    elif value is None:
        del data[section][key]
    else:
        data[section][key] = value
    path = write_artifact(tmp_path / "summary.json", SUMMARY_SCHEMA, 1, data)
    with pytest.raises(ArtifactError, match=message):
        load_summary(path)


def test_unknown_summary_version_is_refused(run_dir, tmp_path):
    path = write_artifact(tmp_path / "summary.json", SUMMARY_SCHEMA, 7, _summary_data(run_dir))
    with pytest.raises(ArtifactError, match=r"schema_version 7 is unknown \(this reader knows \[1\]\)"):
        load_summary(path)


def test_additions_are_kept(run_dir, tmp_path):
    data = _summary_data(run_dir)
    data["future_stage"] = {"module_times": {"sam": 0.1}}
    data["trace"]["new_stat"] = 3
    data["tokens"]["decode"] = 0
    path = write_artifact(tmp_path / "summary.json", SUMMARY_SCHEMA, 1, data)
    summary = load_summary(path)
    assert summary.extra == {"future_stage": {"module_times": {"sam": 0.1}}}
    assert summary.to_data() == data


def test_error_record_round_trip_and_the_older_bare_form(tmp_path):
    try:
        raise ConfigError("workload.base_size=1000 is invalid: must be ...\nsecond line")
    except ConfigError as exc:
        record = ErrorRecord.from_exception(exc, {"workload": {"base_size": 1000}})
    path = record.save(tmp_path / "error.json")
    doc = json.loads(path.read_text())
    assert doc["schema"] == ERROR_SCHEMA and doc["schema_version"] == 1 and "producer" in doc
    back = load_error(path)
    assert back == record
    assert back.expected and back.first_line == "workload.base_size=1000 is invalid: must be ..."
    # version 0: the bare object jobs wrote before error.json had the envelope
    (tmp_path / "old.json").write_text(json.dumps({"type": "ValueError", "message": "boom", "traceback": []}))
    old = load_error(tmp_path / "old.json")
    assert (old.type, old.message, old.expected) == ("ValueError", "boom", False)
    (tmp_path / "bad.json").write_text(json.dumps({"schema": ERROR_SCHEMA, "schema_version": 1, "data": {"type": "X"}}))
    with pytest.raises(ArtifactError, match="lacks required field 'message'"):
        load_error(tmp_path / "bad.json")


def test_summary_built_in_code_serialises_like_the_file(run_dir):
    summary = load_summary(run_dir / "summary.json")
    rebuilt = Summary.from_data(summary.to_data())
    assert rebuilt == summary


def test_each_package_declares_its_own_run_files():
    """No central list: the job's own files are the registry's, every other entry is declared by the package
    whose module loads it (`<package>/run_files.py`), so a stage's files change with the stage."""
    from llm_perf_opt.run_files import BASE_FILES, declaring_modules

    assert [f.role for f in BASE_FILES] == ["summary", "error", "log", "lock"]
    declared = {f.role for f in BASE_FILES}
    for module in declaring_modules():
        package = module.rpartition(".")[0]
        for entry in importlib.import_module(module).RUN_FILES:
            assert entry.loader is None or entry.loader.startswith(package + "."), (module, entry.loader)
            declared.add(entry.role)
    assert declared == {f.role for f in RUN_FILES}
    assert {"llm_perf_opt.analytic.run_files", "llm_perf_opt.callgraph.run_files"} <= set(declaring_modules())


def test_a_file_declared_twice_is_refused(monkeypatch):
    import sys
    import types

    from llm_perf_opt import run_files

    fake = types.ModuleType("llm_perf_opt_fake_run_files")
    fake.RUN_FILES = (run_files.RunFile("costs_again", "costs.json", "nowhere", "a second costs.json"),)
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    monkeypatch.setattr(run_files, "declaring_modules", lambda: ["llm_perf_opt.analytic.run_files", fake.__name__])
    run_files.registered.cache_clear()
    try:
        with pytest.raises(
            ArtifactError, match="run file file 'costs.json' is declared twice: in llm_perf_opt.analytic"
        ):
            run_files.registered()
    finally:
        monkeypatch.undo()
        run_files.registered.cache_clear()
    assert run_file("costs").file == "costs.json"


def test_a_package_outside_the_tree_registers_its_run_files(monkeypatch):
    """A family plugged in from elsewhere names its declaring module; its files then load like any other."""
    import sys
    import types

    from llm_perf_opt import run_files

    fake = types.ModuleType("plugged_in_family_run_files")
    fake.RUN_FILES = (run_files.RunFile("toy_notes", "toy_notes.txt", "a plugged-in family", "its own notes"),)
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    monkeypatch.setattr(run_files, "_PLUGGED_IN", [])
    run_files.registered.cache_clear()
    try:
        assert "toy_notes" not in {f.role for f in run_files.registered()}
        run_files.register(fake.__name__)
        assert run_file("toy_notes").file == "toy_notes.txt"
        assert [f.role for f in run_files.registered()][-1] == "toy_notes"
    finally:
        monkeypatch.undo()
        run_files.registered.cache_clear()
    with pytest.raises(KeyError, match="no run file with role 'toy_notes'"):
        run_file("toy_notes")
