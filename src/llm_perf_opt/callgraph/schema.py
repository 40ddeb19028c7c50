"""`CallGraph`: the dynamic call graph of one forward, as one schema-versioned JSON file (`callgraph.json`).

Addresses are module names as `named_modules()` gives them (the root is ""). The keys are the ones
performance engineers already use:

* `call_counts`     address -> number of calls in the forward
* `edges`           parent address -> {child address -> calls made from inside the parent's calls}
* `op_call_counts`  address -> tensor ops executed directly in that module (innermost module owns the op)
* `module_children` address -> static child addresses (`named_children`), called or not
* `module_types`    address -> class name
* `constructor_params` address -> shape-relevant config (in/out features, heads, window, experts, ...)
* `input_metadata` / `output_metadata` address -> {"calls": n, "first": [tensor meta], "identical": k,
  "distinct": [[tensor meta], ...]}: the first call in full, how many later calls had identical
  metadata, and the metadata of the calls that differed
* `activation_bytes` address -> bytes of the tensors the module's calls output, summed over calls
* `param_counts`    address -> parameters held directly by the module
* `op_output_bytes` address -> {op name -> bytes of the tensors those ops produced directly in the module}
* `op_counts`       address -> {op name (keyed as in `op_output_bytes`) -> ops run directly in the module}
  (absent in files written before it: loads empty)
* `op_counts_by_pass` forward pass ("1" = the prefill, "k+1" = decode step k) -> the same, for that pass
* `runtime_log`     the RuntimeLog events of the patched forward
* `stats`           num_ops, module_calls, capture_seconds, forward_seconds, ...
* `module_times`    address -> measured time of the module in the forward, summed over its calls (seconds:
  `inclusive_s`, `self_s` medians over the repeats, `min_s`/`max_s` of the inclusive sum, `calls`,
  `source`: "ranges", or "members" for a container given its members' sum), as the profile stage's
  `module_time_table` gives it; empty when the job did not profile
* `module_times_method` how those times were measured (warm-up, repeats, device, time base,
  synchronisation, profile file), empty when the job did not profile

Version 1 files (no metadata keys, or a bare dict of the five graph keys, as earlier tools wrote) load
with empty metadata; version 2 files (no `op_output_bytes`, no `module_times`) with both empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from llm_perf_opt.artifacts import read_json, write_artifact
from llm_perf_opt.errors import ArtifactError

SCHEMA = "llm_perf_opt.callgraph"
SCHEMA_VERSION = 3
KNOWN_VERSIONS = (1, 2, 3)
GRAPH_KEYS = ("call_counts", "edges", "op_call_counts", "module_children", "module_types")
METADATA_KEYS = (
    "constructor_params",
    "input_metadata",
    "output_metadata",
    "activation_bytes",
    "param_counts",
    "op_output_bytes",
    "op_counts",
    "op_counts_by_pass",
)
TIMING_KEYS = ("module_times", "module_times_method")  # filled by the trace job's profile stage (version 3)
ROOT = ""


@dataclass
class CallGraph:
    call_counts: dict[str, int]
    edges: dict[str, dict[str, int]]
    op_call_counts: dict[str, int]
    module_children: dict[str, list[str]]
    module_types: dict[str, str]
    constructor_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    input_metadata: dict[str, dict[str, Any]] = field(default_factory=dict)
    output_metadata: dict[str, dict[str, Any]] = field(default_factory=dict)
    activation_bytes: dict[str, int] = field(default_factory=dict)
    param_counts: dict[str, int] = field(default_factory=dict)
    op_output_bytes: dict[str, dict[str, int]] = field(default_factory=dict)
    op_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    op_counts_by_pass: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    module_times: dict[str, dict[str, Any]] = field(default_factory=dict)  # measure.module_times.module_time_table
    module_times_method: dict[str, Any] = field(default_factory=dict)
    runtime_log: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    model_name: str = ""

    # ------------------------------------------------------------------ queries
    @property
    def called(self) -> list[str]:
        return [a for a, n in self.call_counts.items() if n > 0]

    def total_module_calls(self) -> int:
        return sum(n for a, n in self.call_counts.items() if a != ROOT)

    def total_ops(self) -> int:
        return sum(self.op_call_counts.values())

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path, config: Any = None) -> Path:
        return write_artifact(path, SCHEMA, SCHEMA_VERSION, self.to_dict(), config=config)


def callgraph_from_dict(data: dict[str, Any], source: str = "callgraph") -> CallGraph:
    missing = [k for k in GRAPH_KEYS if k not in data]
    if missing:
        raise ArtifactError(f"{source}: call graph lacks required field(s) {', '.join(missing)}")
    kwargs: dict[str, Any] = {k: data[k] for k in GRAPH_KEYS}
    for key in METADATA_KEYS + TIMING_KEYS + ("stats",):
        kwargs[key] = data.get(key) or {}
    kwargs["runtime_log"] = data.get("runtime_log") or []
    kwargs["model_name"] = data.get("model_name", "")
    for key in GRAPH_KEYS + METADATA_KEYS + TIMING_KEYS:
        if not isinstance(kwargs[key], dict):
            raise ArtifactError(f"{source}: field '{key}' must be an object, found {type(kwargs[key]).__name__}")
    _check_values(kwargs, source)
    return CallGraph(**kwargs)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_values(graph: dict[str, Any], source: str) -> None:
    """The graph keys' values have the types the grouping computes with: counts are non-negative integers,
    children lists of addresses, types strings. ArtifactError naming the first bad entry."""

    def bad(where: str, value: Any, what: str) -> ArtifactError:
        return ArtifactError(f"{source}: {where} must be {what}, found {value!r}")

    for key in ("call_counts", "op_call_counts", "activation_bytes", "param_counts"):
        for address, value in graph[key].items():
            if not _is_count(value):
                raise bad(f"{key}[{address!r}]", value, "a non-negative integer")
    for parent, children in graph["edges"].items():
        if not isinstance(children, dict):
            raise bad(f"edges[{parent!r}]", children, "an object {child address: calls}")
        for child, value in children.items():
            if not _is_count(value):
                raise bad(f"edges[{parent!r}][{child!r}]", value, "a non-negative integer")
    for address, children in graph["module_children"].items():
        if not isinstance(children, list) or not all(isinstance(c, str) for c in children):
            raise bad(f"module_children[{address!r}]", children, "a list of addresses")
    for address, value in graph["module_types"].items():
        if not isinstance(value, str):
            raise bad(f"module_types[{address!r}]", value, "a class name")


def load_callgraph_json(path: str | Path) -> CallGraph:
    """Load `callgraph.json` in any known version, or a bare dict of the graph keys (no envelope)."""
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise ArtifactError(f"{path}: expected a JSON object at top level")
    if "schema" not in doc:  # no envelope: the graph keys at top level
        return callgraph_from_dict(doc, str(path))
    if doc.get("schema") != SCHEMA:
        raise ArtifactError(f"{path}: schema is '{doc.get('schema')}', expected '{SCHEMA}'")
    if doc.get("schema_version") not in KNOWN_VERSIONS:
        raise ArtifactError(
            f"{path}: {SCHEMA} schema_version {doc.get('schema_version')!r} is unknown "
            f"(this reader knows {list(KNOWN_VERSIONS)})"
        )
    if not isinstance(doc.get("data"), dict):
        raise ArtifactError(f"{path}: missing field 'data'")
    return callgraph_from_dict(doc["data"], str(path))
