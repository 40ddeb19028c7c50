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
from typing import Mapping, Optional

from llm_perf_opt.deepseek_ocr_shared.parts import DECODER_STACK, LAYER_ALIAS_PREFIX, parts_with
from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.family import Part, PartVocabulary

CLIP = Part("clip", "model.vision_model", "CLIP-L", "#f58518", "vision")
PARTS: tuple[Part, ...] = parts_with(CLIP)  # forward order: the shared parts with CLIP-L after SAM
# The parts that carry the work, reported per job (summaries, report columns, stacked plots).
REPORTED: tuple[str, ...] = ("sam", "clip", "projector", "decoder", "lm_head")
# The same vocabulary as the object the generic layers receive (`llm_perf_opt.family.PartVocabulary`);
# the names below are its lookups, so the alias <-> path rules are written once (in `family.py`).
# The parts the console's stage tables list (`./dev analyze`'s roofline table), the vision parts first.
CONSOLE: tuple[str, ...] = ("sam", "clip", "projector", "embedding", "decoder", "norm", "lm_head")
VOCABULARY = PartVocabulary("dsocr", PARTS, REPORTED, DECODER_STACK, LAYER_ALIAS_PREFIX, CONSOLE)
BY_ALIAS: Mapping[str, Part] = VOCABULARY.by_alias
BY_PATH: Mapping[str, Part] = VOCABULARY.by_path
VISION: tuple[str, ...] = VOCABULARY.vision
VISION_PATHS: tuple[str, ...] = VOCABULARY.vision_paths
path = VOCABULARY.path  # alias (`sam`, `decoder.layer.<i>`) -> module path; "" for total / all
alias = VOCABULARY.alias  # module path -> alias, else the path itself
decoder_layer_path = VOCABULARY.decoder_layer_path
decoder_layer_index = VOCABULARY.decoder_layer_index  # i for `model.layers.<i>` exactly, else None
color = VOCABULARY.color


def module_attributes() -> tuple[str, ...]:
    """The attributes of `model` (`DeepseekOCRModel`) that hold the parts: sam_model, ..., norm."""
    return tuple(p.path.removeprefix("model.") for p in PARTS if p.path.startswith("model."))


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
            workload = VisionWorkload(
                base_size=raw["base_size"],
                image_size=raw["image_size"],
                crop_mode=raw["crop_mode"],
                tile_size=raw.get("tile_size", 640),
            )
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
