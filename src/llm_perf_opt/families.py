"""The registry of model families: `model.family` -> the family object (like transformers' Auto* mappings).

Built-in families are named by an import string ("module:attribute"), so nothing is imported until a job asks
for one; a family that is not installed is named the same way by the environment (`LLM_PERF_OPT_FAMILIES`:
"name=module:attribute", one line, read by every job process); third-party families register through the
entry-point group `llm_perf_opt.families` (name -> "module:attribute" of the family object) in their package
metadata. Each family object is created once.

The registry sits above the family packages and below the trace job, the gate and the entry points; the
generic layers below it never import a family package (tests/system/test_import_layers.py).
"""

from __future__ import annotations

import importlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from llm_perf_opt.errors import ConfigError
from llm_perf_opt.family import ModelFamily

ENTRY_POINT_GROUP = "llm_perf_opt.families"
# Families named by the environment, for a family that is not installed (a test's, a work in progress):
# "name=module:attribute[,name=module:attribute...]", the module importable from sys.path (PYTHONPATH).
ENV_VAR = "LLM_PERF_OPT_FAMILIES"
DEFAULT_FAMILY = "dsocr"

BUILTIN: dict[str, str] = {
    "dsocr": "llm_perf_opt.dsocr.family:FAMILY",
    "dsocr2": "llm_perf_opt.dsocr2.family:FAMILY",
}


@lru_cache(maxsize=1)
def _entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def from_environment() -> dict[str, str]:
    """{name: "module:attribute"} of the families `LLM_PERF_OPT_FAMILIES` names (ConfigError for a bad entry)."""
    out: dict[str, str] = {}
    for entry in filter(None, (e.strip() for e in os.environ.get(ENV_VAR, "").split(","))):
        name, _, target = entry.partition("=")
        if not name or ":" not in target:
            raise ConfigError.field(ENV_VAR, entry, "each entry must be name=module:attribute")
        out[name.strip()] = target.strip()
    return out


def names() -> tuple[str, ...]:
    """Every family name: the built-in ones, then those the environment names, then those of installed plug-ins."""
    return tuple(dict.fromkeys([*BUILTIN, *from_environment(), *sorted(_entry_points())]))


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


@lru_cache(maxsize=None)
def family(name: str = DEFAULT_FAMILY) -> ModelFamily:
    """The family object of `name` (ConfigError naming `model.family` for an unknown one)."""
    named = from_environment()
    if name in BUILTIN:
        found = _load(BUILTIN[name])
    elif name in named:
        found = _load(named[name])
    elif name in _entry_points():
        found = _entry_points()[name].load()
    else:
        raise ConfigError.field("model.family", name, f"must be one of {', '.join(names())}")
    if not isinstance(found, ModelFamily):
        raise ConfigError.field(
            "model.family",
            name,
            f"{BUILTIN.get(name, 'the entry point')} is a {type(found).__name__}, "
            "not a llm_perf_opt.family.ModelFamily",
        )
    return found


def workload_schemas() -> dict[str, type]:
    """{family name: its workload schema} of every family (`names()`): its `workload_schema`, else the generic
    `config.schemas.WorkloadConfig`."""
    from llm_perf_opt.config.schemas import WorkloadConfig

    return {name: family(name).workload_schema or WorkloadConfig for name in names()}


def register_configs() -> None:
    """The configuration's schemas in Hydra's ConfigStore, the families' workload schemas with them
    (`workload_schema/<family>`, which the families' workload files name): what every job, test or script that
    composes `conf/` calls first. The config layer below cannot ask the families, so this layer hands them in."""
    from llm_perf_opt.config.registry import register_configs as register

    register(workload_schemas())


def for_config(cfg: Any) -> ModelFamily:
    """The family a (typed or raw) root config selects: `model.family`, default `dsocr`."""
    model = getattr(cfg, "model", None)
    if model is None and isinstance(cfg, Mapping):
        model = cfg.get("model")
    name = getattr(model, "family", None) if not isinstance(model, Mapping) else model.get("family")
    return family(name or DEFAULT_FAMILY)


def for_run_dir(run_dir: str | Path) -> ModelFamily:
    """The family a run directory was made with: `model.family` of its Hydra config (`.hydra/config.yaml`),
    the default family for a run that predates the seam or has no saved config."""
    saved = Path(run_dir) / ".hydra" / "config.yaml"
    if saved.is_file():
        from omegaconf import OmegaConf

        try:
            name = OmegaConf.select(OmegaConf.load(saved), "model.family", default=None)
        except Exception:  # noqa: BLE001 - an unreadable saved config: the run's own files say the rest
            name = None
        if name:
            return family(str(name))
    return family(DEFAULT_FAMILY)


def vendor_architecture(path: str | Path) -> str | None:
    """The `auto_map.AutoModel` class of a vendor directory's config.json (None when it names none)."""
    try:
        raw = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    auto = raw.get("auto_map") if isinstance(raw, dict) else None
    model = auto.get("AutoModel") if isinstance(auto, dict) else None
    return str(model).split("--")[-1].rpartition(".")[2] if model else None


def check_vendor_family(selected: ModelFamily, path: str | Path) -> None:
    """A vendor directory holding another family's code is refused in one line naming the field and both
    families (the families say which `auto_map.AutoModel` classes are theirs)."""
    arch = vendor_architecture(path)
    if arch is None or arch in selected.vendor_architectures:
        return
    owner = next((n for n in names() if arch in family(n).vendor_architectures), None)
    what = f"the {owner} family's code" if owner else "code of no known family"
    raise ConfigError.field(
        "model.path",
        str(path),
        f"holds {what} (config.json auto_map.AutoModel {arch}), "
        f"not model.family={selected.name} ({', '.join(selected.vendor_architectures)})",
    )
