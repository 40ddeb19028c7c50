"""The one vocabulary of DeepSeek-OCR: its parts (alias, module path, label, colour) and its modes.

Every stage that names a part of the model (the analytic model, the verification, the session's
parameter counts, summaries, reports, plots, the grouping checks) takes it from here, so a part is
declared once. Module paths are the vendor's (`model.sam_model`, `model.layers.3`, `lm_head`); the
twin uses the same tree.

Modes are the workload presets of `conf/workload/`, read from there (not copied): `modes()` gives
{name: VisionWorkload} in the canonical order (no-crop modes by view size, then crop modes by tile).
Nothing here imports torch.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Optional

from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.family import Part, PartVocabulary


PARTS: tuple[Part, ...] = (  # forward order
    Part("embedding", "model.embed_tokens", "token embedding", "#9d755d", "language"),
    Part("sam", "model.sam_model", "SAM ViT-B", "#4c78a8", "vision"),
    Part("clip", "model.vision_model", "CLIP-L", "#f58518", "vision"),
    Part("projector", "model.projector", "projector", "#54a24b", "vision"),
    Part("decoder", "model.layers", "decoder layers", "#b279a2", "language"),
    Part("norm", "model.norm", "final RMSNorm", "#bab0ac", "language"),
    Part("lm_head", "lm_head", "lm_head", "#e45756", "language"),
)
BY_ALIAS: dict[str, Part] = {p.alias: p for p in PARTS}
BY_PATH: dict[str, Part] = {p.path: p for p in PARTS}

# The parts that carry the work, reported per job (summaries, report columns, stacked plots).
REPORTED: tuple[str, ...] = ("sam", "clip", "projector", "decoder", "lm_head")
VISION: tuple[str, ...] = tuple(p.alias for p in PARTS if p.stage == "vision")
VISION_PATHS: tuple[str, ...] = tuple(BY_ALIAS[a].path for a in VISION)
DECODER_STACK = BY_ALIAS["decoder"].path  # "model.layers"
LAYER_ALIAS_PREFIX = "decoder.layer."
# The same vocabulary as the object the generic layers receive (`llm_perf_opt.family.PartVocabulary`).
VOCABULARY = PartVocabulary("dsocr", PARTS, REPORTED, DECODER_STACK, LAYER_ALIAS_PREFIX)


def path(alias: str) -> str:
    """The module path of a part alias (`sam`), of `decoder.layer.<i>`, or a path given as it is;
    "" (the whole forward) for `total` / `all`."""
    if alias in BY_ALIAS:
        return BY_ALIAS[alias].path
    if alias.startswith(LAYER_ALIAS_PREFIX):
        return decoder_layer_path(int(alias[len(LAYER_ALIAS_PREFIX):]))
    if alias in ("total", "all"):
        return ""
    return alias


def alias(module_path: str) -> str:
    """The alias of a part path (`model.layers.3` -> `decoder.layer.3`), else the path itself."""
    if module_path in BY_PATH:
        return BY_PATH[module_path].alias
    index = decoder_layer_index(module_path)
    if index is not None:
        return f"{LAYER_ALIAS_PREFIX}{index}"
    return module_path


def decoder_layer_path(index: int) -> str:
    return f"{DECODER_STACK}.{index}"


def decoder_layer_index(module_path: str) -> Optional[int]:
    """i for `model.layers.<i>` exactly, else None."""
    head, _, tail = module_path.rpartition(".")
    return int(tail) if head == DECODER_STACK and tail.isdigit() else None


def module_attributes() -> tuple[str, ...]:
    """The attributes of `model` (`DeepseekOCRModel`) that hold the parts: sam_model, ..., norm."""
    return tuple(p.path.removeprefix("model.") for p in PARTS if p.path.startswith("model."))


def color(alias_or_path: str) -> Optional[str]:
    part = BY_ALIAS.get(alias_or_path) or BY_PATH.get(alias_or_path)
    return part.color if part else None


# --------------------------------------------------------------------------------------------- modes
def _mode_key(item: tuple[str, VisionWorkload]) -> tuple:
    name, w = item
    return (w.crop_mode, w.image_size, w.base_size, name)


@lru_cache(maxsize=8)
def _modes(conf: Path) -> tuple[tuple[str, VisionWorkload], ...]:
    from omegaconf import OmegaConf

    folder = conf / "workload"
    found = []
    for file in sorted(folder.glob("*.yaml")):
        raw = OmegaConf.to_container(OmegaConf.load(file), resolve=True)
        if not isinstance(raw, dict):
            raise ConfigError(f"{file}: expected a mapping of workload knobs")
        try:
            workload = VisionWorkload(base_size=raw["base_size"], image_size=raw["image_size"],
                                      crop_mode=raw["crop_mode"], tile_size=raw.get("tile_size", 640))
        except KeyError as exc:
            raise ConfigError(f"{file}: missing key {exc}") from None
        found.append((str(raw.get("name", file.stem)), workload))
    return tuple(sorted(found, key=_mode_key))


def modes(conf: Optional[Path] = None) -> dict[str, VisionWorkload]:
    """{mode name: VisionWorkload} of every `conf/workload/*.yaml`, in canonical order."""
    if conf is None:
        from llm_perf_opt.config.paths import conf_dir

        conf = conf_dir()
    return dict(_modes(Path(conf)))


def mode_names(conf: Optional[Path] = None) -> tuple[str, ...]:
    return tuple(modes(conf))
