"""profile.json (schema llm_perf_opt.profile) round-trips through its loader, which refuses unknown versions
and missing fields by name; profile.trace.json is a Chrome trace holding one range per module call."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from llm_perf_opt.errors import ArtifactError
from llm_perf_opt.measure.module_ranges import ROOT_RANGE, range_name
from llm_perf_opt.measure.module_times import (
    PROFILE_FILE,
    PROFILE_SCHEMA,
    PROFILE_SCHEMA_VERSION,
    TRACE_FILE,
    load_module_times,
    module_time_table,
)


def test_round_trip(profiled, tmp_path):
    times, _ = profiled
    path = times.write(tmp_path / PROFILE_FILE)
    doc = json.loads(path.read_text())
    assert (doc["schema"], doc["schema_version"]) == (PROFILE_SCHEMA, PROFILE_SCHEMA_VERSION)
    assert doc["data"]["modules"] == json.loads(json.dumps(module_time_table(times)))
    loaded = load_module_times(path)
    assert loaded.calls == times.calls
    assert (loaded.method, loaded.wall, loaded.coverage) == (times.method, times.wall, times.coverage)
    assert loaded.unhooked == times.unhooked and loaded.containers == times.containers
    assert (loaded.trace_file, loaded.trace_repeat) == (TRACE_FILE, 2)
    assert module_time_table(loaded) == module_time_table(times)  # floats survive JSON exactly


def _rewrite(path, tmp_path, edit):
    doc = json.loads(path.read_text())
    edit(doc)
    out = tmp_path / "edited.json"
    out.write_text(json.dumps(doc))
    return out


def test_loader_refuses_unknown_version_and_missing_fields(profiled, tmp_path):
    times, _ = profiled
    path = times.write(tmp_path / PROFILE_FILE)
    with pytest.raises(ArtifactError, match="schema_version 99 is unknown"):
        load_module_times(_rewrite(path, tmp_path, lambda d: d.update(schema_version=99)))
    with pytest.raises(ArtifactError, match="lacks required field 'coverage'"):
        load_module_times(_rewrite(path, tmp_path, lambda d: d["data"].pop("coverage")))
    with pytest.raises(ArtifactError, match=r"calls\[0\]: missing field 'self_s'"):
        load_module_times(_rewrite(path, tmp_path, lambda d: d["data"]["calls"][0].pop("self_s")))
    with pytest.raises(ArtifactError, match=r"calls\[0\].inclusive_s: expected an object with 'repeats'"):
        load_module_times(_rewrite(path, tmp_path, lambda d: d["data"]["calls"][0].update(inclusive_s=1.5)))
    with pytest.raises(ArtifactError, match="field 'calls' must be a list"):
        load_module_times(_rewrite(path, tmp_path, lambda d: d["data"].update(calls={})))
    with pytest.raises(ArtifactError, match="schema is 'llm_perf_opt.callgraph'"):
        load_module_times(_rewrite(path, tmp_path, lambda d: d.update(schema="llm_perf_opt.callgraph")))


def test_chrome_trace_holds_the_module_ranges(profiled):
    times, out = profiled
    trace = json.loads((out / TRACE_FILE).read_text())
    events = trace["traceEvents"]
    ranges = Counter(e["name"] for e in events if e.get("cat") == "user_annotation" and e.get("ph") == "X")
    expected = Counter(range_name(c.path) for c in times.calls)
    assert ranges == expected
    assert ranges[ROOT_RANGE] == 1 and ranges["model.sam_model"] == 2
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    assert any(e["name"].startswith("aten::") for e in ops)
    # complete events with a start and a duration: what Perfetto and chrome://tracing draw
    root = next(e for e in events if e.get("name") == ROOT_RANGE)
    assert root["dur"] > 0 and isinstance(root["ts"], (int, float))
