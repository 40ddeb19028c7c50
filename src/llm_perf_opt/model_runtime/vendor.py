"""A model's vendor code (Hugging Face remote code), from a local directory: validated, imported and built.

Everything is checked before anything heavy runs, and each problem is one line: the directory and its
`config.json` (`read_vendor_config`), the transformers version the code needs (`check_transformers`),
the classes and patch points the pipeline relies on (a family's required names, `check_vendor_modules`).
The vendor imports `torchvision` for `infer()`'s transforms; PyPI's wheels are CUDA builds that fail
next to a CPU torch, so a minimal stand-in is in `sys.modules` only while the code is imported and the
model built (`patches.torchvision_stand_in`).

Without a checkpoint (`*.safetensors`) or with `model.weights=random`, Linear and Embedding weights
(99.6 % of DeepSeek-OCR's 3.3 B parameters) are built on the meta device and filled once with N(0,
initializer_range), the distribution the vendor's `_init_weights` gives them (`random_weights`); every
other parameter and buffer comes from the vendor's own constructors under a seeded, forked RNG.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping

import torch

from llm_perf_opt.config.schemas import ModelConfig
from llm_perf_opt.errors import ConfigError, PatchError
from llm_perf_opt.model_runtime.config_json import read_config_json
from llm_perf_opt.model_runtime.loading import LoadedModel
from llm_perf_opt.model_runtime.random_weights import linear_weights_on_meta, materialise_meta_parameters

SUPPORTED_TRANSFORMERS = "4.46"

_MISSING = object()


# ---------------------------------------------------------------------------------------------- checks
def read_vendor_config(path: Path) -> dict[str, Any]:
    """Validate a vendor model directory and return its parsed config.json (ConfigError on any problem)."""
    if not path.exists():
        raise ConfigError.field("model.path", str(path), "does not exist (expected the vendor model directory)")
    if not path.is_dir():
        raise ConfigError.field("model.path", str(path), "is not a directory (expected the vendor model directory)")
    cfg_file = path / "config.json"
    if not cfg_file.is_file():
        raise ConfigError.field("model.path", str(path), "has no config.json (expected the vendor model directory)")
    raw = read_config_json(cfg_file)
    auto_map = raw.get("auto_map")
    if not isinstance(auto_map, dict) or "AutoConfig" not in auto_map or "AutoModel" not in auto_map:
        raise ConfigError(
            f"{cfg_file}: no auto_map with AutoConfig and AutoModel entries: not a vendor model "
            "directory (its config.json maps them to the vendor's modeling module, e.g. modeling_deepseekocr)"
        )
    for key in ("AutoConfig", "AutoModel"):
        module_name = str(auto_map[key]).split("--")[-1].rpartition(".")[0]
        if not (path / f"{module_name}.py").is_file():
            raise ConfigError(
                f"{cfg_file}: auto_map.{key} names {auto_map[key]!r}, but {path / (module_name + '.py')} "
                "does not exist (the vendor .py files must sit beside config.json)"
            )
    return raw


def check_transformers() -> str:
    """The installed transformers version when the vendor code can import with it; ConfigError otherwise."""
    import transformers

    version = getattr(transformers, "__version__", "unknown")
    if not (version == SUPPORTED_TRANSFORMERS or version.startswith(SUPPORTED_TRANSFORMERS + ".")):
        raise ConfigError(
            f"the vendor model code needs transformers {SUPPORTED_TRANSFORMERS}.x, found "
            f"{version} (5.x cannot import it: LlamaFlashAttention2, is_torch_fx_available); "
            f"install transformers=={SUPPORTED_TRANSFORMERS}.3 or use model=twin"
        )
    return version


def _has(module: ModuleType, qualname: str) -> bool:
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part, _MISSING)
        if obj is _MISSING:
            return False
    return True


def check_vendor_modules(
    modules: Mapping[str, ModuleType],
    where: str,
    required: Mapping[str, tuple[str, ...]],
    family: str,
) -> None:
    """PatchError naming every class/function the pipeline needs that the vendor code no longer has
    (`required`: the family's names by module; `family`: its label, for the message)."""
    problems = []
    for key, names in required.items():
        module = modules.get(key)
        if module is None:
            problems.append(f"module {key}.py was not loaded (needs {', '.join(names)})")
            continue
        missing = [n for n in names if not _has(module, n)]
        if missing:
            problems.append(f"{key} has no {', '.join(missing)}")
    if problems:
        raise PatchError(
            f"vendor code at {where} is not the {family} code this pipeline knows: "
            + "; ".join(problems)
            + " (the vendor code changed?)"
        )


def package_modules(package: str) -> dict[str, ModuleType]:
    """The imported modules directly inside `package`, by short name (`transformers_modules.x.deepencoder`
    -> "deepencoder"); the vendor's code is loaded dynamically, so they are found in `sys.modules`."""
    prefix = package + "."
    return {
        name[len(prefix) :]: mod
        for name, mod in list(sys.modules.items())
        if name.startswith(prefix) and "." not in name[len(prefix) :] and isinstance(mod, ModuleType)
    }


# ---------------------------------------------------------------------------------------------- loading
def load_vendor(
    model_cfg: ModelConfig,
    device: torch.device,
    dtype: torch.dtype,
    attn: str,
    *,
    required: Mapping[str, tuple[str, ...]],
    model_module: str,
    model_class: str,
    spec_from: Any,
    family: str,
) -> LoadedModel:
    """Build `model_class` (of the vendor module `model_module`) from the vendor code at `model.path` (checkpoint or
    random weights). The family passes its `required` names, its model's module and class, its `spec_from`
    (raw config, source) -> spec, and its label."""
    if not model_cfg.path:
        raise ConfigError("model.path is required for model=vendor: pass model.path=DIR or set DSOCR_MODEL_PATH")
    path = Path(model_cfg.path).expanduser().resolve()
    raw = read_vendor_config(path)
    check_transformers()
    spec = spec_from(raw, source=str(path / "config.json"))
    from llm_perf_opt.model_runtime.torchvision_stand_in import torchvision_stand_in

    loaded = LoadedModel(
        model=None,
        spec=spec,
        source="vendor",
        device=device,
        dtype=dtype,  # type: ignore[arg-type]
        attn_implementation=attn,
    )
    with torchvision_stand_in() as stand_in:
        if stand_in:
            loaded.measures.append(
                "torchvision stand-in (ToTensor, Normalize, Compose, InterpolationMode) in "
                "sys.modules while the vendor code was imported, removed afterwards"
            )
        config = _vendor_config(path)
        loaded.vendor_modules = package_modules(type(config).__module__.rpartition(".")[0])
        check_vendor_modules(loaded.vendor_modules, str(path), required, family)
        model_cls = getattr(loaded.vendor_modules[model_module], model_class)
        if attn == "sdpa" and not getattr(model_cls, "_supports_sdpa", False):
            loaded.warnings.append(
                "runtime.attn_implementation=sdpa: the vendor decoder has no SDPA attention "
                "(its ATTENTION_CLASSES hold eager and flash_attention_2 only); using eager. "
                "SAM and CLIP call scaled_dot_product_attention either way"
            )
            loaded.measures.append("decoder attention sdpa -> eager (vendor has no SDPA path)")
            loaded.attn_implementation = "eager"
        checkpoint = bool(sorted(path.glob("*.safetensors"))) and model_cfg.weights == "auto"
        try:
            model = _build(path, config, model_cfg.seed, loaded, checkpoint)
        except (ImportError, AttributeError, KeyError, ValueError, TypeError, RuntimeError) as exc:
            raise ConfigError(f"vendor model at {path} could not be built: {type(exc).__name__}: {exc}") from None
    if not isinstance(model, model_cls):
        raise PatchError(
            f"vendor model at {path} is a {type(model).__qualname__}, expected "
            f"{model_class} (config.json auto_map.AutoModel)"
        )
    loaded.model = model.to(device).eval()
    return loaded


def _vendor_config(path: Path) -> Any:
    """The vendor's config object (`AutoConfig` with the vendor code): importing the code happens here."""
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(str(path), trust_remote_code=True)
    except ImportError as exc:
        raise ConfigError(f"vendor code at {path} cannot be imported: {exc}") from None
    except AttributeError as exc:
        raise PatchError(f"vendor code at {path} lacks a class config.json's auto_map names: {exc}") from None
    except (OSError, ValueError, TypeError, KeyError, SyntaxError) as exc:
        raise ConfigError(f"vendor config at {path} cannot be loaded: {type(exc).__name__}: {exc}") from None


def _build(path: Path, config: Any, seed: int, loaded: LoadedModel, checkpoint: bool) -> Any:
    """The model from the checkpoint, or with seeded random weights (meta Linear/Embedding weights, filled once)."""
    from transformers import AutoModel

    attn, dtype = loaded.attn_implementation, loaded.dtype
    if checkpoint:
        loaded.weights = "checkpoint"
        return AutoModel.from_pretrained(
            str(path),
            config=config,
            trust_remote_code=True,
            torch_dtype=dtype,
            attn_implementation=attn,
            low_cpu_mem_usage=True,
        )
    std = float(getattr(config, "initializer_range", 0.02))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        with linear_weights_on_meta():
            model = AutoModel.from_config(config, trust_remote_code=True, torch_dtype=dtype, attn_implementation=attn)
        materialise_meta_parameters(model, loaded.device, seed, std)
    loaded.measures.append(
        f"random weights: Linear/Embedding weights built on meta, filled with N(0, {std}) seeded from model.seed={seed}"
    )
    loaded.weights = "random"
    return model


def check_vendor_code(path: str | Path, required: Mapping[str, tuple[str, ...]] | None, family: str) -> None:
    """The directory's config, the transformers version, and the vendor code imported (no model built) with
    every class and function the pipeline needs (`required`: a family's names by module; PatchError naming
    what changed). What `ModelFamily.check_vendor_code` of the DeepSeek-OCR families runs."""
    from transformers.utils import logging as hf_logging

    from llm_perf_opt.model_runtime.torchvision_stand_in import torchvision_stand_in

    path = Path(path)
    read_vendor_config(path)
    check_transformers()
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # a check prints nothing but its verdict (the session shows the warnings)
    try:
        with torchvision_stand_in():
            config = _vendor_config(path)  # the vendor code's import, no model built
            modules = package_modules(type(config).__module__.rpartition(".")[0])
    finally:
        hf_logging.set_verbosity(verbosity)
    check_vendor_modules(modules, str(path), required, family)
