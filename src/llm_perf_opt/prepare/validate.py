"""The jobs' first step: the whole configuration checked, plain rules and the model family's, before any work.

`to_typed_config` runs the schemas' plain rules (types, ranges, choices, files that must exist); this
step adds the model family's own (`model.family` picks it from `llm_perf_opt.families`; each family validates
its own knobs, and a knob or a vendor directory of another family is one line naming the field and the
family): the vision workload (v1: multiples of 64, crop mode tiling at `image_size`), the prompt's `<image>`
placeholder and its token ids, the page's size
(an image file's header), the model's dimensions (the twin's named spec or the vendor's config.json),
the decode steps (the prompt plus `trace.decode_steps` within the model's `max_position_embeddings`).
Jobs that run the model (`runs_model=True`: trace, sweep, export) are also checked for what would stop
them later: the page's pixel count (`MAX_PAGE_PIXELS`: the page is built in memory at full size), the
device (`runtime=cuda` needs a GPU), the vendor code (importable, with every class and function the
pipeline patches). `./dev analyze` builds no pixels and no model, so it takes any page size.
Every violation is one `ConfigError` (or `PatchError`) line naming the field; nothing is built or
written before it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any, Mapping, Optional

from llm_perf_opt import families
from llm_perf_opt.config import RootConfig, WorkloadConfig, to_typed_config
from llm_perf_opt.config.fields import MAX_BATCH
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.family import ModelFamily

# Largest page a job that runs the model accepts: PIL's decompression-bomb threshold (Image.MAX_IMAGE_PIXELS,
# 89,478,485 pixels, about 9459 x 9459; 268 MB as RGB before any copy). A synthetic page and an image
# file are both materialised at full size before they are resized and tiled.
MAX_PAGE_PIXELS = 89_478_485
# Largest batch a job that runs the model accepts (trace, sweep, export): every page's views are built in memory
# (a Gundam page: a 1024² global view and up to a few dozen 640² crops, tens of MB in float32) and run in one
# batched forward; vLLM's default max_num_seqs. The analytic jobs take up to `config.fields.MAX_BATCH`.
MAX_RUN_BATCH = 256
EXIF_ORIENTATION = 0x0112  # the EXIF tag ImageOps.exif_transpose reads


@dataclass(frozen=True)
class ValidJob:
    """A configuration that passed every check, with what the checks computed."""

    cfg: RootConfig
    spec: Any  # the family's spec (v1: dsocr.spec.ModelSpec)
    workload: Any  # the family's workload type (v1: dsocr.layout.VisionWorkload)
    page_width: int
    page_height: int
    prompt_tokens: int  # text tokens of the prompt (BOS and image tokens excluded)
    analytic_spec: Optional[Any] = None  # the analytic model's spec when verify.analytic_spec changes it
    family: Optional[ModelFamily] = None  # the model family `model.family` names
    page_sizes: tuple[tuple[int, int], ...] = ()  # each sequence's page (batch > 1: `workload.batch` / `pages`)
    notes: tuple[str, ...] = ()  # what the vendor's conversion does to the page image (`page_image_notes`)

    @property
    def page_size(self) -> tuple[int, int]:
        return self.page_width, self.page_height

    @property
    def analytic(self) -> Any:
        """The spec the analytic model is built from (the running model's unless verify.analytic_spec)."""
        return self.analytic_spec or self.spec


def vision_workload(cfg: RootConfig) -> Any:
    """The workload's knobs as the family's type, which checks the family's rules."""
    family = families.for_config(cfg)
    check_workload_schema(family, cfg.workload)
    return family.workload_for(cfg.workload)


def check_workload_schema(family: ModelFamily, workload: WorkloadConfig) -> None:
    """The workload config is of the family's schema (`ModelFamily.workload_schema`: its knobs), in one line
    naming the workload and the family: a workload file of another schema lacks the knobs the family reads."""
    schema = family.workload_schema or WorkloadConfig
    if not isinstance(workload, schema):
        raise ConfigError.field(
            "workload",
            workload.name,
            f"is a {type(workload).__name__}, without the knobs of model.family={family.name} ({schema.__name__}): "
            "choose one of that family's workloads",
        )


def model_spec_for(cfg: RootConfig) -> Any:
    """The family's spec without building a model: the twin's named spec or the vendor's config.json. A vendor
    directory holding another family's code is refused first, naming both families."""
    family = families.for_config(cfg)
    if cfg.model.source == "vendor":
        families.check_vendor_family(family, cfg.model.path)
    return family.spec_for(cfg.model)


def page_size(cfg: RootConfig) -> tuple[int, int]:
    """(width, height) of the page: the image file's size when one is given (header only), upright by its EXIF
    orientation (the stored size above MAX_PAGE_PIXELS, whose pixels are never decoded), else the config's.
    Any size is read here (PIL's decompression-bomb check is off for the header): `check_page_pixels` judges it."""
    from PIL import Image

    page = cfg.workload.page
    if page.image is None:
        return page.width, page.height
    limit = Image.MAX_IMAGE_PIXELS
    Image.MAX_IMAGE_PIXELS = None  # only the header is read; the size is judged by the caller
    try:
        with Image.open(page.image) as img:
            width, height = img.size
            if width * height > MAX_PAGE_PIXELS:
                # refused by its pixel count (a job that builds the page) or costed without pixels (analyze): its
                # EXIF orientation is not read, since a PNG's getexif() decodes the whole image when the header
                # holds no eXIf chunk (a header-only 100000 x 100000 PNG: tens of GB, all of it touched by an
                # allocator that hands out zeroed heap memory instead of fresh mappings)
                return width, height
            # EXIF orientation 5-8: the page is stored on its side; the vendor's load_image turns it upright
            # (ImageOps.exif_transpose), so the layout is the upright size
            try:
                orientation = img.getexif().get(EXIF_ORIENTATION)
            except (OSError, SyntaxError, ValueError):  # no readable EXIF block past the header: stored upright
                orientation = None
            return (height, width) if orientation in (5, 6, 7, 8) else (width, height)
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise ConfigError(f"workload.page.image={page.image!r} could not be read as an image: {exc}") from None
    finally:
        Image.MAX_IMAGE_PIXELS = limit


def check_page_pixels(cfg: RootConfig, width: int, height: int) -> None:
    """A job that builds the page in memory refuses one above MAX_PAGE_PIXELS."""
    if width * height <= MAX_PAGE_PIXELS:
        return
    image = cfg.workload.page.image
    field, value = ("workload.page.image", image) if image else ("workload.page.width/height", f"{width}x{height}")
    raise ConfigError.field(
        field,
        value,
        f"the page has {width}x{height} = {width * height:,} pixels, above the limit "
        f"of {MAX_PAGE_PIXELS:,} (the page is built in memory at full size); ./dev analyze "
        "computes the costs of any page size without pixels",
    )


# PIL modes of more than 8 bits per sample: the vendor's load_image converts them with `Image.convert("RGB")`,
# which clips every value above 255 (a 16-bit greyscale scan comes out mostly white)
WIDE_MODES = ("I;16", "I;16B", "I;16L", "I;16N", "I", "F")


def page_image_notes(cfg: RootConfig) -> tuple[str, ...]:
    """A job that builds the page decodes the whole image file now, so a file whose header reads but whose data
    is cut or corrupt is one line before any work (not a failure mid-run); and what the vendor's own conversion
    does to the page, which the run keeps as it is, said in notes: an animated image (its first frame only),
    more than 8 bits per sample (clipped to 255 by `convert("RGB")`, with the share of pixels that turn white)."""
    from PIL import Image

    path = cfg.workload.page.image
    if path is None:
        return ()
    notes = []
    try:
        with Image.open(path) as img:
            frames = getattr(img, "n_frames", 1)
            img.load()  # the first frame, whole: what the vendor's load_image reads
            if frames > 1:
                notes.append(
                    f"workload.page.image is an animated {img.format} of {frames} frames: the vendor's load_image "
                    "(PIL Image.open, then convert('RGB')) reads the first frame only; so does this run"
                )
            if img.mode in WIDE_MODES:
                import numpy as np

                clipped = float((np.asarray(img) > 255).mean())
                notes.append(
                    f"workload.page.image has {img.mode} pixels (more than 8 bits per sample): the vendor's "
                    f"load_image converts it with PIL's convert('RGB'), which clips values above 255, so "
                    f"{clipped:.1%} of its pixels turn white; so does this run (scale it to 8 bits to see the page)"
                )
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise ConfigError(f"workload.page.image={path!r} could not be read as an image: {exc}") from None
    return tuple(notes)


def check_run_batch(cfg: RootConfig) -> None:
    """A job that runs the model builds every page's views in memory (tens of MB a page) and runs one batched
    forward: at most MAX_RUN_BATCH pages."""
    if cfg.workload.batch > MAX_RUN_BATCH:
        raise ConfigError.field(
            "workload.batch",
            cfg.workload.batch,
            f"a job that runs the model takes at most {MAX_RUN_BATCH} pages in one batch (each page's views are "
            f"built in memory and run in one forward); ./dev analyze and ./dev size take up to {MAX_BATCH:,}",
        )


def check_device(cfg: RootConfig) -> None:
    """runtime.device=cuda needs a GPU this torch can use (torch is imported only for it)."""
    if cfg.runtime.device != "cuda":
        return
    import torch

    if not torch.cuda.is_available():
        raise ConfigError.field(
            "runtime.device",
            "cuda",
            "needs a CUDA GPU, but torch.cuda.is_available() is false "
            f"(this torch is {torch.__version__}); use runtime=cpu",
        )


def check_vendor_code(cfg: RootConfig) -> None:
    """model=vendor: the directory's config, the transformers version, and the vendor code imported (no model
    built) with every class and function the pipeline needs (PatchError naming what changed)."""
    if cfg.model.source != "vendor":
        return
    family = families.for_config(cfg)
    families.check_vendor_family(family, cfg.model.path)
    family.check_vendor_code(cfg.model.path)


def tokenizer_dir(cfg: RootConfig) -> str | None:
    """The vendor model directory (its tokenizer, when it has one, gives the prompt tokens)."""
    return cfg.model.path if cfg.model.source == "vendor" else None


def changed_spec(spec: Any, changes: Mapping[str, Any], where: str = "verify.analytic_spec") -> Any:
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
                    raise ConfigError.field(
                        f"{path}.{key}", value, f"must be a mapping of {type(current).__name__} fields"
                    )
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


def check_timing(cfg: RootConfig) -> None:
    """The profile and the roof: NVTX ranges only on CUDA; the hardware has a peak for the prediction
    dtype, and a measured roof's device exists (`measure.calibrate.check_hardware`; nothing measured)."""
    from llm_perf_opt.measure.calibrate import check_hardware

    cfg.profile.check_device(cfg.runtime.device.split(":")[0])
    check_hardware(cfg)


def validate(raw: Any, runs_model: bool = True) -> ValidJob:
    """Every rule, plain and the model family's, on a composed config; ConfigError on the first violation.
    `runs_model=False` (analyze) skips what only a job that builds the page and the model needs."""
    cfg = to_typed_config(raw)
    family = families.for_config(cfg)
    family.check_model(cfg.model)
    if cfg.model.source == "vendor":  # another family's code first: its knobs would be refused by the wrong family
        families.check_vendor_family(family, cfg.model.path)
    check_workload_schema(family, cfg.workload)
    workload = family.workload_for(cfg.workload)
    family.check_export(cfg.export.submodules)
    spec = model_spec_for(cfg)
    width, height = page_size(cfg)
    sizes = batch_page_sizes(cfg, width, height)
    distinct = list(dict.fromkeys(sizes))  # identical pages are checked (and later priced) once
    if runs_model:
        for w, h in distinct:
            check_page_pixels(cfg, w, h)
        check_run_batch(cfg)
        if cfg.workload.batch != 1 and not family.supports_batch:
            raise ConfigError.field(
                "workload.batch",
                cfg.workload.batch,
                f"the {family.name} family runs batch 1 only (no batched inputs); ./dev analyze "
                "and ./dev size take any batch",
            )
    prompt = family.check_run(cfg, spec, workload, width, height)
    for w, h in distinct:  # every page's prompt plus the decode steps within the model's positions
        if (w, h) != (width, height):
            family.check_run(cfg, spec, workload, w, h)
    analytic = changed_spec(spec, cfg.verify.analytic_spec) if cfg.verify.analytic_spec else None
    # Last, the checks that import torch (about a second) or the vendor code: the rules above refuse bad input
    # without it.
    if runs_model:
        check_device(cfg)  # the model runs there
    check_timing(cfg)  # a measured roof's device is checked there too
    notes: tuple[str, ...] = ()
    if runs_model:
        notes = page_image_notes(cfg)  # the pixels, decoded: after the pixel-count check above
        check_vendor_code(cfg)
    return ValidJob(cfg, spec, workload, width, height, prompt, analytic, family, tuple(sizes), notes)


def batch_page_sizes(cfg: RootConfig, width: int, height: int) -> list[tuple[int, int]]:
    """(width, height) of each sequence of the batch: `workload.pages`, else `workload.batch` copies of the
    page (`width`, `height`: its image file's size when it has one). An image file with a page list is
    refused (the list's pages are synthetic)."""
    w = cfg.workload
    if w.pages and w.page.image is not None:
        raise ConfigError.field(
            "workload.pages", list(w.pages), "lists synthetic pages; it cannot be combined with workload.page.image"
        )
    return w.page_sizes() if w.pages else [(width, height)] * w.batch
