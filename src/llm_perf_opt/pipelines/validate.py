"""The jobs' first step: the whole configuration checked, plain rules and DeepSeek-OCR rules, before any work.

`to_typed_config` runs the schemas' plain rules (types, ranges, choices, files that must exist); this
step adds the model's own: the vision workload (`dsocr.layout.VisionWorkload`: multiples of 64, crop
mode tiling at `image_size`), the prompt's `<image>` placeholder and its token ids, the page's size
(an image file's header), the model's dimensions (the twin's named spec or the vendor's config.json).
Every violation is one `ConfigError` line naming the field; nothing is built or written before it.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any, Mapping, Optional

from llm_perf_opt.config import RootConfig, to_typed_config
from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ConfigError


@dataclass(frozen=True)
class ValidJob:
    """A configuration that passed every check, with what the checks computed."""

    cfg: RootConfig
    spec: ModelSpec
    workload: VisionWorkload
    page_width: int
    page_height: int
    prompt_tokens: int  # text tokens of the prompt (BOS and image tokens excluded)
    analytic_spec: Optional[ModelSpec] = None  # the analytic model's spec when verify.analytic_spec changes it

    @property
    def page_size(self) -> tuple[int, int]:
        return self.page_width, self.page_height

    @property
    def analytic(self) -> ModelSpec:
        """The spec the analytic model is built from (the running model's unless verify.analytic_spec)."""
        return self.analytic_spec or self.spec


def vision_workload(cfg: RootConfig) -> VisionWorkload:
    """The workload's vendor knobs as the DeepSeek-OCR type, which checks the model's rules."""
    w = cfg.workload
    return VisionWorkload(base_size=w.base_size, image_size=w.image_size, crop_mode=w.crop_mode,
                          tile_size=w.tile_size)


def model_spec_for(cfg: RootConfig) -> ModelSpec:
    """The ModelSpec without building a model: the twin's named spec or the vendor's config.json."""
    if cfg.model.source == "vendor":
        return ModelSpec.from_config_json(cfg.model.path)
    return ModelSpec.named(cfg.model.spec)


def page_size(cfg: RootConfig) -> tuple[int, int]:
    """(width, height) of the page: the image file's size when one is given (header only), else the config's."""
    from PIL import Image

    page = cfg.workload.page
    if page.image is None:
        return page.width, page.height
    try:
        with Image.open(page.image) as img:
            return img.size
    except (OSError, ValueError) as exc:
        raise ConfigError(f"workload.page.image={page.image!r} could not be read as an image: {exc}") from None


def tokenizer_dir(cfg: RootConfig) -> str | None:
    """The vendor model directory (its tokenizer, when it has one, gives the prompt tokens)."""
    return cfg.model.path if cfg.model.source == "vendor" else None


def changed_spec(spec: ModelSpec, changes: Mapping[str, Any], where: str = "verify.analytic_spec") -> ModelSpec:
    """`spec` with nested field changes (`{"decoder": {"num_layers": 11}}`), checked by ModelSpec's own
    rules; an unknown field or a value of the wrong kind is one ConfigError naming it. The name records the
    change, so costs.json says which spec the analytic model described."""

    def apply(obj: Any, delta: Mapping[str, Any], path: str) -> Any:
        names = {f.name: f for f in fields(obj)}
        updates: dict[str, Any] = {}
        for key, value in delta.items():
            if key not in names or key == "name":
                allowed = ", ".join(n for n in names if n != "name")
                raise ConfigError.field(f"{path}.{key}", value, f"not a field of {type(obj).__name__} ({allowed})")
            current = getattr(obj, key)
            if is_dataclass(current):
                if not isinstance(value, Mapping):
                    raise ConfigError.field(f"{path}.{key}", value, f"must be a mapping of {type(current).__name__} fields")
                updates[key] = apply(current, value, f"{path}.{key}")
            elif isinstance(current, tuple):
                updates[key] = tuple(value) if isinstance(value, (list, tuple)) else (value,)
            elif type(value) is not type(current) and not (isinstance(current, float) and isinstance(value, int)):
                raise ConfigError.field(f"{path}.{key}", value, f"must be a {type(current).__name__} like {current!r}")
            else:
                updates[key] = value
        return replace(obj, **updates)

    def flat(delta: Mapping[str, Any], prefix: str = "") -> list[str]:
        out = []
        for key, value in delta.items():
            out += flat(value, f"{prefix}{key}.") if isinstance(value, Mapping) else [f"{prefix}{key}={value}"]
        return out

    changed = apply(spec, changes, where)
    return replace(changed, name=f"{spec.name}+{'+'.join(flat(changes))}")


def validate(raw: Any) -> ValidJob:
    """Every rule, plain and DeepSeek-OCR's, on a composed config; ConfigError on the first violation."""
    from llm_perf_opt.dsocr.inputs import prompt_tokens

    cfg = to_typed_config(raw)
    workload = vision_workload(cfg)
    spec = model_spec_for(cfg)
    width, height = page_size(cfg)
    before, after, _ = prompt_tokens(cfg.workload.prompt, tokenizer_dir(cfg))
    analytic = changed_spec(spec, cfg.verify.analytic_spec) if cfg.verify.analytic_spec else None
    return ValidJob(cfg, spec, workload, width, height, len(before) + len(after), analytic)
