"""The model-family seam: what a model family (DeepSeek-OCR v1, DeepSeek-OCR 2, ...) supplies to the generic layers.

The generic layers (callgraph, analytic, measure, export, report, runs, trace, gate, jobs, config) never import
a family package: a job asks the family registry (`llm_perf_opt.families`, by the config's `model.family`) for
the family object and hands it, or data it produced, down. Everything model-specific sits behind this seam:

* `parts`: the vocabulary of parts (`PartVocabulary`: alias, module path, label, colour, stage; the decoder
  stack and its per-layer aliases), with the "parts, then each decoder layer after its stack" walk written once
  (`PartVocabulary.summary`);
* the spec (`spec_for(model config)`: a preset or the vendor's config.json), the workload knobs and their
  validation (`workload_for(workload config)`: one `ConfigError` naming the field and the family), the view
  layout (`layout(workload, width, height)`), the modes (`modes()`);
* the analytic composition (`analytic_model(spec, layout, ...)`: an object with `stages()`, `prefill()`,
  `decode(ctx)`, `vision()`, `kv_cache_bytes()`, `to_dict()`, `vocabulary`), its cost formulas registered in
  `analytic.registry` under the family's own namespace (`cost_namespace`: "dsocr.Block");
* the runtime: the session loader (twin and vendor), the input builder, the runtime checks the grouping runs,
  the runtime patches, the measured forward (`measure`), the decode program;
* the export stage's targets (`export_submodules`: the names `export.submodules` may hold; optional
  `export_blocks`: `Part`s of a block inside a vision part, exported per view as `<alias>.crops` / `.global`;
  optional `onnx_block`: the vision block written as ONNX) and, optionally, report columns of its own
  (`report_columns`: `report.table.Column`-like objects reading a run's summary, appended by the report);
* the vendor code it recognises (`vendor_architectures`: the `auto_map.AutoModel` class names of its
  config.json), so a directory holding another family's code is refused by name.

Nothing here imports torch or a family package. Written as a Protocol (like transformers' Auto* mappings, the
family object is found by name; like torch.utils.flop_counter's registry, the formulas are looked up by key).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Protocol, TypeVar, runtime_checkable

V = TypeVar("V")


@dataclass(frozen=True)
class Part:
    """One part of a model: the unit summaries, tables and plots name."""

    alias: str  # short name used in summaries, tables and plots
    path: str  # the vendor's module path
    label: str  # human name
    color: str  # plot colour
    stage: str  # "vision" or "language": which stage's roots it belongs to


@dataclass(frozen=True)
class PartVocabulary:
    """The one vocabulary of a family's parts: aliases <-> module paths, the decoder stack and its layers."""

    family: str
    parts: tuple[Part, ...]  # forward order
    reported: tuple[str, ...]  # the parts that carry the work, reported per job
    decoder_stack: str  # the module path of the decoder layers ("model.layers")
    layer_alias_prefix: str = "decoder.layer."
    by_alias: Mapping[str, Part] = field(init=False, repr=False, compare=False)
    by_path: Mapping[str, Part] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_alias", {p.alias: p for p in self.parts})
        object.__setattr__(self, "by_path", {p.path: p for p in self.parts})

    def __hash__(self) -> int:
        return hash((self.family, self.parts, self.decoder_stack))

    @property
    def vision(self) -> tuple[str, ...]:
        return tuple(p.alias for p in self.parts if p.stage == "vision")

    @property
    def vision_paths(self) -> tuple[str, ...]:
        return tuple(p.path for p in self.parts if p.stage == "vision")

    def path(self, alias: str) -> str:
        """The module path of a part alias (`sam`), of `decoder.layer.<i>`, or a path given as it is;
        "" (the whole forward) for `total` / `all`."""
        if alias in self.by_alias:
            return self.by_alias[alias].path
        if alias.startswith(self.layer_alias_prefix):
            return self.decoder_layer_path(int(alias[len(self.layer_alias_prefix) :]))
        if alias in ("total", "all"):
            return ""
        return alias

    def alias(self, module_path: str) -> str:
        """The alias of a part path (`model.layers.3` -> `decoder.layer.3`), else the path itself."""
        if module_path in self.by_path:
            return self.by_path[module_path].alias
        index = self.decoder_layer_index(module_path)
        if index is not None:
            return f"{self.layer_alias_prefix}{index}"
        return module_path

    def decoder_layer_path(self, index: int) -> str:
        return f"{self.decoder_stack}.{index}"

    def decoder_layer_index(self, module_path: str) -> Optional[int]:
        """i for `<decoder stack>.<i>` exactly, else None."""
        head, _, tail = module_path.rpartition(".")
        return int(tail) if head == self.decoder_stack and tail.isdigit() else None

    def is_part(self, module_path: str) -> bool:
        """A part or one decoder layer: the rows a summary shows."""
        return module_path in self.by_path or self.decoder_layer_index(module_path) is not None

    def color(self, alias_or_path: str) -> Optional[str]:
        part = self.by_alias.get(alias_or_path) or self.by_path.get(alias_or_path)
        return part.color if part else None

    def rows(self, known: Iterable[str] | Mapping[str, Any]) -> list[tuple[str, str]]:
        """(alias, path) of every part in `known` (module paths), in forward order, each decoder layer right
        after the stack: the one walk every table, summary and check uses."""
        known = known if isinstance(known, (set, frozenset, Mapping)) else set(known)
        out: list[tuple[str, str]] = []
        for part in self.parts:
            if part.path in known:
                out.append((part.alias, part.path))
            if part.path == self.decoder_stack:
                i = 0
                while (layer := self.decoder_layer_path(i)) in known:
                    out.append((f"{self.layer_alias_prefix}{i}", layer))
                    i += 1
        return out

    def summary(self, flat: Mapping[str, V]) -> dict[str, V]:
        """{alias: value} of the parts (and decoder layers) `flat` (module path -> value) holds, forward order."""
        return {alias: flat[path] for alias, path in self.rows(flat)}


@runtime_checkable
class ModelFamily(Protocol):
    """What one model family supplies. One object per family, created once (`llm_perf_opt.families.family`)."""

    name: str  # the registry key and `model.family` value ("dsocr")
    label: str  # human name ("DeepSeek-OCR")
    parts: PartVocabulary
    cost_namespace: str  # the prefix of its classes in `analytic.registry` ("dsocr")
    stages: tuple[str, ...]  # the analytic stages ("vision", "prefill", "decode")
    twin_specs: tuple[str, ...]  # named specs of its twin (`model.spec`)
    export_submodules: tuple[str, ...]  # the names `export.submodules` may hold
    vendor_architectures: tuple[str, ...]  # config.json auto_map.AutoModel class names of its vendor code
    runtime_checks: Mapping[str, Callable[..., Any]]  # grouping checks (callgraph.checks)
    trace_patches: tuple[str, ...]  # the runtime patches the trace capture applies

    # ---- configuration: spec, workload, layout, modes
    def check_model(self, model_cfg: Any) -> None: ...
    def spec_for(self, model_cfg: Any) -> Any: ...
    def spec_named(self, name: str) -> Any: ...
    def spec_from_config_json(self, path: Any) -> Any: ...
    def workload_for(self, workload_cfg: Any) -> Any: ...
    def layout(self, workload: Any, width: int, height: int) -> Any: ...
    def modes(self, conf: Any = None) -> dict[str, Any]: ...

    # ---- the analytic model
    def analytic_model(self, spec: Any, layout: Any, seq_len: Optional[int] = None, **kwargs: Any) -> Any: ...

    # ---- the runtime
    def open_session(self, model_cfg: Any, runtime_cfg: Any) -> Any: ...
    def build_inputs(self, spec: Any, workload: Any, **kwargs: Any) -> Any: ...
    def prompt_tokens(self, prompt: str, model_dir: Optional[str]) -> Any: ...
    def check_run(self, cfg: Any, spec: Any, workload: Any, width: int, height: int) -> None: ...
    def check_vendor_code(self, path: Any) -> None: ...
    def runtime_patches(self, session: Any, names: Iterable[str]) -> Any: ...
    def measure(
        self, model: Any, forward_kwargs: Mapping[str, Any], decode_steps: Iterable[int] = (), **kwargs: Any
    ) -> Any: ...
