"""`ModelSpec` of DeepSeek-OCR 2: every dimension the pipeline needs, in one frozen dataclass.

Read in the vendor code (`sen-ye/DeepSeek-OCR2-query-ablation` at d397ea1, the Hugging Face files):

* `sam_model`: SAM ViT-B exactly as in v1 (`build_sam_vit_b`), except `net_3`, which ends at 896
  channels (the encoder width) instead of 1024; the config's `downsample_channels` [512, 1024] is not
  read by the code, so it is ignored here too;
* `qwen2_model` (`build_qwen2_decoder_as_encoder`): a transformers `Qwen2Model` of 24 layers, hidden 896,
  14 heads, 2 KV heads, intermediate 4864, RMSNorm eps 1e-6, rope theta 1e6, max positions 131072,
  vocabulary 151936 (its token embedding is deleted); query banks `query_768` (144 vectors) and
  `query_1024` (256 vectors), picked by the number of SAM tokens of the view. None of this is in
  `config.json` except the width (`vision_config.width.qwen2-0-5b.dim`);
* `projector`: linear 896 -> 1280 (`projector_config`); the decoder: `language_config`, as in v1
  (the same DeepSeek-V2 code, `use_mla: false`).

`ModelSpec.tiny()` is the narrow, few-layer copy with the same structure (windowed and global SAM
blocks, a GQA encoder with both query banks, a dense decoder layer then MoE layers).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Mapping

from llm_perf_opt.deepseek_ocr_shared.spec import (
    DecoderSpec,
    ProjectorSpec,
    SamSpec,
    SpecReading,
    language_checks,
    language_from_config,
    name_from_config,
    projector_from_config,
    raise_failed,
    sam_from_widths,
    vision_widths,
)
from llm_perf_opt.errors import ConfigError

FAMILY = "DeepSeek-OCR 2"
ENCODER_MODEL_NAME = "deepencoderv2"  # config.json vision_config.model_name of DeepSeek-OCR 2
ENCODER_WIDTH_KEY = "qwen2-0-5b"  # config.json vision_config.width key of the encoder


@dataclass(frozen=True)
class EncoderSpec:
    """DeepEncoder V2: Qwen2 decoder layers run over [SAM tokens ‖ learned queries] (`Qwen2Decoder2Encoder`)."""

    hidden_size: int = 896
    num_layers: int = 24
    num_heads: int = 14
    num_kv_heads: int = 2
    intermediate_size: int = 4864
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1_000_000.0
    max_position_embeddings: int = 131072  # CustomQwen2Decoder's default
    vocab_size: int = 151936  # Qwen2's token embedding, deleted after construction (no parameters)
    # (bank attribute, queries): query_768 = Embedding(144, hidden), query_1024 = Embedding(256, hidden);
    # the forward picks the bank whose size equals the view's SAM token count
    query_banks: tuple[tuple[str, int], ...] = (("query_768", 144), ("query_1024", 256))

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def bank_sizes(self) -> tuple[int, ...]:
        return tuple(n for _, n in self.query_banks)

    def bank_for(self, tokens: int) -> str:
        """The query bank used for a view of `tokens` SAM tokens (one query per token)."""
        for name, n in self.query_banks:
            if n == tokens:
                return name
        raise ConfigError.field(
            "workload.image_size",
            tokens,
            f"{FAMILY} has query banks only for {list(self.bank_sizes)} SAM tokens (768- and 1024-pixel views)",
        )


@dataclass(frozen=True)
class ModelSpec(SpecReading):
    name: str = "deepseek-ocr-2"
    sam: SamSpec = field(default_factory=lambda: SamSpec(downsample_channels=(512, 896)))
    encoder: EncoderSpec = field(default_factory=EncoderSpec)
    projector: ProjectorSpec = field(default_factory=lambda: ProjectorSpec(input_dim=896, n_embed=1280))
    decoder: DecoderSpec = field(default_factory=DecoderSpec)
    image_token_id: int = 128815
    bos_token_id: int = 0
    eos_token_id: int = 1
    family: str = "dsocr2"

    # model.spec -> the classmethod that builds it
    builders: ClassVar[Mapping[str, str]] = {"deepseek_ocr2": "deepseek_ocr2", "ocr2_tiny": "tiny"}
    named_note: ClassVar[str] = f" for {FAMILY}"

    def __post_init__(self) -> None:
        s, e, p = self.sam, self.encoder, self.projector
        raise_failed(
            [
                (s.width % s.heads == 0, "sam.width", s.width, f"a multiple of sam.heads={s.heads}"),
                (
                    e.hidden_size % e.num_heads == 0,
                    "encoder.hidden_size",
                    e.hidden_size,
                    f"a multiple of encoder.num_heads={e.num_heads}",
                ),
                (
                    e.num_heads % max(e.num_kv_heads, 1) == 0,
                    "encoder.num_kv_heads",
                    e.num_kv_heads,
                    f"a divisor of encoder.num_heads={e.num_heads}",
                ),
                (
                    s.out_dim == e.hidden_size,
                    "sam.downsample_channels",
                    s.downsample_channels,
                    f"last entry equal to encoder.hidden_size={e.hidden_size} (SAM features are the encoder's tokens)",
                ),
                (
                    p.input_dim == e.hidden_size,
                    "projector.input_dim",
                    p.input_dim,
                    f"encoder.hidden_size={e.hidden_size}",
                ),
                *language_checks(self),
            ],
            f"model spec ({FAMILY}) ",
        )

    # ---------------------------------------------------------------- constructors
    @classmethod
    def deepseek_ocr2(cls) -> "ModelSpec":
        """The released model: the vendor's values (config.json plus the constants of deepencoderv2.py)."""
        return cls()

    @classmethod
    def tiny(cls) -> "ModelSpec":
        """Narrow, few-layer copy with every structural feature of the full model.

        Windowed and global SAM blocks, a GQA encoder (4 heads, 2 KV heads) with both query banks (144
        and 256: the banks are sized by SAM's token grid, which the width does not change), a dense
        decoder layer followed by MoE layers with routed and shared experts, and the real vocabulary.
        """
        return cls(
            name="deepseek-ocr-2-tiny",
            sam=SamSpec.tiny(out_dim=48),
            encoder=EncoderSpec(hidden_size=48, num_layers=2, num_heads=4, num_kv_heads=2, intermediate_size=96),
            projector=ProjectorSpec(input_dim=48, n_embed=64),
            decoder=DecoderSpec.tiny(),
        )

    @classmethod
    def from_config_dict(cls, raw: Mapping[str, Any], source: str = "config") -> "ModelSpec":
        widths = vision_widths(raw, source)
        vision = raw.get("vision_config") or {}
        if vision.get("model_name") != ENCODER_MODEL_NAME or ENCODER_WIDTH_KEY not in widths:
            raise ConfigError(
                f"model.path: {source} is not a {FAMILY} config (vision_config.model_name="
                f"{vision.get('model_name')!r}, encoders {sorted(widths)}; {FAMILY} has model_name "
                f"{ENCODER_MODEL_NAME!r} and a {ENCODER_WIDTH_KEY!r} encoder): use the other family's model"
            )
        # the decoder as v1 reads it (the same DeepSeek-V2 code and keys)
        decoder, bos_token_id, eos_token_id = language_from_config(
            {"language_config": raw.get("language_config", raw)}, source
        )
        encoder = EncoderSpec()
        enc_raw = widths[ENCODER_WIDTH_KEY]
        if isinstance(enc_raw, Mapping) and enc_raw.get("dim") is not None:
            dim = enc_raw["dim"]
            if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
                raise ConfigError(
                    f"{source}: key 'vision_config.width.{ENCODER_WIDTH_KEY}.dim' must be a positive "
                    f"integer, found {dim!r}"
                )
            encoder = replace(encoder, hidden_size=dim)
        # net_3 ends at the encoder width; the config's downsample_channels is not read by the vendor code
        sam = sam_from_widths(
            SamSpec(downsample_channels=(512, encoder.hidden_size)), widths, downsample_channels=False
        )
        projector = projector_from_config(
            raw, source, input_dim=encoder.hidden_size, n_embed=decoder.hidden_size, released=f" in {FAMILY}"
        )
        return cls(
            name=name_from_config(raw, "deepseek-ocr-2"),
            sam=sam,
            encoder=encoder,
            projector=projector,
            decoder=decoder,
            bos_token_id=bos_token_id,
            eos_token_id=eos_token_id,
        )
