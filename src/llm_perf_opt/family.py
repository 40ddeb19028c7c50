"""The model-family seam: what a model family (DeepSeek-OCR v1, DeepSeek-OCR 2, ...) supplies to the generic layers.

The generic layers (callgraph, analytic, measure, export, report, runs, trace, gate, jobs, config) never import
a family package: a job asks the family registry (`llm_perf_opt.families`, by the config's `model.family`) for
the family object and hands it, or data it produced, down. Everything model-specific sits behind this seam:

* `parts`: the vocabulary of parts (`PartVocabulary`: alias, module path, label, colour, stage; the decoder
  stack and its per-layer aliases), with the "parts, then each decoder layer after its stack" walk written once
  (`PartVocabulary.summary`);
* the spec (`spec_for(model config)`: a preset or the vendor's config.json), the workload schema (its knobs:
  `workload_schema`, a subclass of `config.schemas.WorkloadConfig`), the workload knobs and their
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

Every member is declared once, on `ModelFamily` (a base class: abstract where a family must supply it, a default
where it may omit it); the generic layers use no other (tests/floor/test_family_contract.py). Nothing here
imports torch or a family package. Like transformers' Auto* mappings, the family object is found by name; like
torch.utils.flop_counter's registry, the formulas are looked up by key.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, TypeVar

from llm_perf_opt.errors import ConfigError

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
    console: tuple[str, ...] = ()  # the parts the console's stage tables list, in order (empty: every part)
    by_alias: Mapping[str, Part] = field(init=False, repr=False, compare=False)
    by_path: Mapping[str, Part] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_alias", {p.alias: p for p in self.parts})
        object.__setattr__(self, "by_path", {p.path: p for p in self.parts})

    def __hash__(self) -> int:
        return hash((self.family, self.parts, self.decoder_stack))

    @property
    def console_parts(self) -> tuple[str, ...]:
        """The aliases the console's stage tables list: `console`, else every part in forward order."""
        return self.console or tuple(p.alias for p in self.parts)

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


class ModelFamily(abc.ABC):
    """What one model family supplies: every member the generic layers use, declared here and nowhere else.

    A family subclasses this class and creates one object (`llm_perf_opt.families.family`). Abstract members
    are required (a family that lacks one cannot be created: `TypeError` naming it); the others have the
    default a family may keep. The generic layers read a family only through these members: no `getattr` /
    `hasattr` probing (tests/floor/test_family_contract.py walks the generic packages and fails on a member
    this class does not declare).

    | group | members (* abstract; the default otherwise) |
    |---|---|
    | identity | `name`, `label`, `parts`, `cost_namespace`, `stages`, `twin_specs`, `vendor_architectures` |
    | workload | `workload_schema` (None: generic), `workload_knobs` (`()`), `workload_for`*, `layout`*, `modes`*, |
    | | `single_view_workload` |
    | configuration | `check_model`, `spec_for`, `spec_named`*, `spec_from_config_json` (no vendor code), |
    | | `check_export` |
    | console and report | `console_summary`, `report_columns` (`()`) |
    | analytic | `analytic_model`* |
    | runtime | `open_session`*, `resolve_device`*, `build_inputs`*, `batch_inputs` and `supports_batch` (batch 1), |
    | | `prompt_tokens`*, `check_run`*, `check_vendor_code` (no vendor code), `trace_patches`*, |
    | | `runtime_patches`*, `runtime_checks`*, `load_runtime_log`*, `runtime_log_file`, `measure`* |
    | decode and routing | `check_kv_cache_path`, `decode_program`, `greedy_decode` (no decode), `routing_record` |
    | | (None), `routing_file`, `unrouted_expert_kernels` (`{}`), `run_experts_by_load` (no MoE) |
    | export | `export_submodules` (`()`), `export_blocks` (`()`), `export_refused` (`{}`), `onnx_block` (None) |

    Nothing here imports torch or a family package.
    """

    # ---- identity
    name: str  # the registry key and `model.family` value ("dsocr")
    label: str  # human name ("DeepSeek-OCR")
    parts: PartVocabulary
    cost_namespace: str  # the prefix of its classes in `analytic.registry` ("dsocr")
    stages: tuple[str, ...] = ("vision", "prefill", "decode")  # the analytic stages
    twin_specs: tuple[str, ...] = ()  # named specs of its twin (`model.spec`)
    vendor_architectures: tuple[str, ...] = ()  # config.json auto_map.AutoModel class names of its vendor code

    # ---- the workload
    # its workload config section: a dataclass subclassing `config.schemas.WorkloadConfig` with its knobs, stored
    # in Hydra's ConfigStore as `workload_schema/<name>` (`families.register_configs`) and named first in the
    # defaults list of its workload files (`- /workload_schema/<name>@_here_`); None: the generic `WorkloadConfig`
    workload_schema: Optional[type] = None
    workload_knobs: tuple[str, ...] = ()  # its knobs in the workload config, recorded in summary.json's `workload`

    # ---- the export stage's targets
    export_submodules: tuple[str, ...] = ()  # the names `export.submodules` may hold
    export_blocks: tuple[Part, ...] = ()  # blocks inside a vision part exported per view (`<alias>.crops`)
    export_refused: Mapping[str, str] = MappingProxyType({})  # submodule -> why it cannot be exported
    onnx_block: Optional[Part] = None  # the vision block written as ONNX (None: export.targets' default)

    # ---- the run directory's files the family's runtime writes
    runtime_log_file: str = "runtime_log.json"
    routing_file: str = "routing.json"
    supports_batch: bool = False  # `batch_inputs` builds a batch of pages (workload.batch > 1)

    def __repr__(self) -> str:
        return f"<model family {self.name}: {self.label}>"

    # ------------------------------------------------------------------ configuration
    def check_model(self, model_cfg: Any) -> None:
        """The model config's family-specific rules: a twin's named spec is one of `twin_specs`."""
        if model_cfg.source == "twin" and model_cfg.spec not in self.twin_specs:
            raise ConfigError.field(
                "model.spec", model_cfg.spec, f"must be one of {', '.join(self.twin_specs)} (model.family={self.name})"
            )

    def spec_for(self, model_cfg: Any) -> Any:
        """The spec without building a model: the twin's named spec or the vendor's config.json."""
        self.check_model(model_cfg)
        if model_cfg.source == "vendor":
            try:
                return self.spec_from_config_json(model_cfg.path)
            except (TypeError, ValueError, AttributeError, KeyError) as exc:  # a value of the wrong type or shape
                if isinstance(exc, ConfigError):
                    raise
                raise ConfigError(
                    f"model.path={model_cfg.path!r}: config.json has a value of the wrong type or "
                    f"shape ({type(exc).__name__}: {exc})"
                ) from None
        return self.spec_named(model_cfg.spec)

    @abc.abstractmethod
    def spec_named(self, name: str) -> Any:
        """The twin's spec of this name (one of `twin_specs`)."""

    def spec_from_config_json(self, path: Any) -> Any:
        """The spec of a vendor directory's config.json (default: the family has no vendor code)."""
        raise ConfigError.field("model.source", "vendor", f"the {self.name} family has no vendor code")

    @abc.abstractmethod
    def workload_for(self, workload_cfg: Any) -> Any:
        """The workload's knobs as the family's type: one `ConfigError` naming the field and the family."""

    @abc.abstractmethod
    def layout(self, workload: Any, width: int, height: int) -> Any:
        """The view layout of a page (`as_dict()`: page_width, page_height, num_views, image_tokens, ...)."""

    @abc.abstractmethod
    def modes(self, conf: Any = None) -> dict[str, Any]:
        """{mode name: workload} of the family's workload presets."""

    def single_view_workload(self, side: int) -> Any:
        """A workload of one view of this side (the export stage's FLOP check of one vision call)."""
        raise ConfigError.field("export.submodules", "vision", f"the {self.name} family has no single-view workload")

    def check_export(self, submodules: Optional[Iterable[str]]) -> None:
        """Each name of `export.submodules` is one the family offers (`export_submodules`), not one it refuses."""
        for name in submodules or ():
            if name in self.export_refused:
                raise ConfigError.field(
                    "export.submodules", name, f"{self.export_refused[name]} (model.family={self.name})"
                )
            if name not in self.export_submodules:
                raise ConfigError.field(
                    "export.submodules",
                    name,
                    f"must be one of {', '.join(self.export_submodules)} (model.family={self.name})",
                )

    # ------------------------------------------------------------------ console and report
    def console_summary(self, summary: Any) -> str:
        """The console's lines about a run (`run_artifacts.Summary`): model, workload, page, layout, tokens."""
        lay, tok = summary.layout, summary.tokens
        return (
            f"{summary.model.name} | mode {summary.workload.mode} | page {lay.page_width}x{lay.page_height}\n"
            f"  {lay.num_views} view(s) | image tokens {tok.image} | sequence {tok.sequence}"
        )

    def report_columns(self) -> tuple[Any, ...]:
        """The sweep report's columns of this family beyond the generic ones (`report.table.Column`s)."""
        return ()

    # ------------------------------------------------------------------ the analytic model
    @abc.abstractmethod
    def analytic_model(self, spec: Any, layout: Any, seq_len: Optional[int] = None, **kwargs: Any) -> Any:
        """The analytic model of one page: `stages()`, `prefill()`, `decode(ctx)`, `vision()`, `to_dict()`, ..."""

    # ------------------------------------------------------------------ the runtime
    @abc.abstractmethod
    def open_session(self, model_cfg: Any, runtime_cfg: Any = None, **kwargs: Any) -> Any:
        """The loaded model (twin or vendor) as a session: a context manager with `model`, `forward_kwargs`, ..."""

    @abc.abstractmethod
    def resolve_device(self, runtime_cfg: Any) -> Any:
        """The torch device `runtime.device` names (ConfigError when it is not there)."""

    @abc.abstractmethod
    def build_inputs(self, spec: Any, workload: Any, **kwargs: Any) -> Any:
        """One page's model inputs (`layout`, `seq_len`, `prompt_token_ids`, `shapes()`, ...)."""

    def batch_inputs(self, samples: Any) -> Any:
        """Several pages' inputs as one batch (`supports_batch`; default: batch 1 only)."""
        raise ConfigError.field("workload.batch", len(list(samples)), f"the {self.name} family runs batch 1 only")

    @abc.abstractmethod
    def prompt_tokens(self, prompt: str, model_dir: Optional[str]) -> Any:
        """(tokens before the image, tokens after it, source) of the prompt."""

    @abc.abstractmethod
    def check_run(self, cfg: Any, spec: Any, workload: Any, width: int, height: int) -> int:
        """The prompt's text tokens, after checking the run fits the model (decode steps within its positions)."""

    def check_vendor_code(self, path: Any) -> None:
        """The vendor code at `path` imports with what the pipeline needs (default: the family has none)."""
        raise ConfigError.field("model.source", "vendor", f"the {self.name} family has no vendor code")

    @property
    @abc.abstractmethod
    def trace_patches(self) -> tuple[str, ...]:
        """The runtime patches the trace capture applies."""

    @property
    @abc.abstractmethod
    def runtime_checks(self) -> Sequence[Callable[..., Any]]:
        """The grouping's checks against the runtime log (`callgraph.checks.RuntimeCheck`s)."""

    @abc.abstractmethod
    def runtime_patches(self, session: Any, names: Iterable[str]) -> Any:
        """A context manager applying the named patches; it yields the runtime log (`events()`, `save()`)."""

    @abc.abstractmethod
    def load_runtime_log(self, path: Any) -> Any:
        """A saved runtime log (`runtime_log_file`, or the run directory holding it)."""

    @abc.abstractmethod
    def measure(
        self, model: Any, forward_kwargs: Mapping[str, Any], decode_steps: Iterable[int] = (), **kwargs: Any
    ) -> Any:
        """Measured FLOPs of the prefill and the given decode steps (`prefill`, `decode`, `kv_cache_bytes`)."""

    # ------------------------------------------------------------------ decode and routing
    def check_kv_cache_path(self, model: Any, steps: int) -> None:
        """Decode steps need a KV-cache path (default: the family decodes none)."""
        if steps > 0:
            raise ConfigError.field("trace.decode_steps", steps, f"the {self.name} family has no decode program")

    def decode_program(self, steps: int, on_step: Any = None) -> Any:
        """The prefill and `steps` greedy steps as one traced call (default: none)."""
        raise ConfigError.field("trace.decode_steps", steps, f"the {self.name} family has no decode program")

    def greedy_decode(self, run_step: Any, prefill: Any, steps: int, kwargs: Any, **more: Any) -> Any:
        """The greedy decode loop after a prefill (default: none)."""
        raise ConfigError.field("trace.decode_steps", steps, f"the {self.name} family has no decode program")

    def routing_record(self, events: Any, session: Any) -> Any:
        """The MoE routing of a capture's gate events, or None (default: no MoE)."""
        return None

    def unrouted_expert_kernels(self, analytic: Any, run_dir: Any) -> dict[int, dict[str, int]]:
        """{step: {experts path: kernels}} the analytic model lists for experts no token reached (default: none)."""
        return {}

    def run_experts_by_load(self, *args: Any, **kwargs: Any) -> Any:
        """The grouped expert loop the MoE export runs (default: the family has no MoE layer)."""
        raise ConfigError.field("export.submodules", "moe_layer", f"the {self.name} family has no MoE layer")
