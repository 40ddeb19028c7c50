"""The dimensions both DeepSeek-OCR generations share, as frozen dataclasses, and the readers of a vendor
`config.json` each family's `ModelSpec` is built with: SAM ViT-B (`SamSpec`), the linear projector
(`ProjectorSpec`), the DeepSeek-V2 decoder (`DecoderSpec`, `language_from_config`), the checks every spec runs
(`language_checks`, `raise_failed`) and `SpecReading` (a `ModelSpec`'s `from_config_json`, `named` and `to_dict`).
Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, Mapping

from llm_perf_opt.artifacts import file_in
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.model_runtime.config_json import read_config_json


def load_config_json(path: str | Path) -> tuple[dict[str, Any], str]:
    """A vendor `config.json` (or a model directory holding one) and its path, the source errors name."""
    path = file_in(path, "config.json")
    return read_config_json(path), str(path)


def vision_widths(raw: Mapping[str, Any], source: str) -> Mapping[str, Any]:
    """`vision_config.width` of a vendor config (per vision tower, by its key); {} when absent."""
    vision = raw.get("vision_config") or {}
    if not isinstance(vision, Mapping):
        raise ConfigError(f"{source}: 'vision_config' must be an object, found {vision!r}")
    widths = vision.get("width") or {}
    if not isinstance(widths, Mapping):
        raise ConfigError(f"{source}: 'vision_config.width' must be an object, found {widths!r}")
    return widths


def sam_from_widths(sam: "SamSpec", widths: Mapping[str, Any], *, downsample_channels: bool) -> "SamSpec":
    """`sam` with the values `vision_config.width.sam_vit_b` names (width, layers, heads, global blocks, and
    when `downsample_channels`, net_2/net_3's channels); `sam` itself when the config names none."""
    sam_raw = widths.get("sam_vit_b")
    if not isinstance(sam_raw, Mapping):
        return sam
    more = {}
    if downsample_channels:
        more["downsample_channels"] = tuple(sam_raw.get("downsample_channels", sam.downsample_channels))
    return replace(
        sam,
        width=sam_raw.get("width", sam.width),
        depth=sam_raw.get("layers", sam.depth),
        heads=sam_raw.get("heads", sam.heads),
        global_attn_indexes=tuple(sam_raw.get("global_attn_indexes", sam.global_attn_indexes)),
        **more,
    )


def projector_from_config(
    raw: Mapping[str, Any], source: str, *, input_dim: int, n_embed: int, released: str
) -> "ProjectorSpec":
    """`projector_config` of a vendor config (defaults `input_dim`, `n_embed`, type linear); only the
    linear projector is modelled (`released` names the model in the error)."""
    proj_raw = raw.get("projector_config", {})
    if not isinstance(proj_raw, Mapping):
        raise ConfigError(f"{source}: 'projector_config' must be an object")
    projector = ProjectorSpec(
        input_dim=proj_raw.get("input_dim", input_dim),
        n_embed=proj_raw.get("n_embed", n_embed),
        projector_type=proj_raw.get("projector_type", "linear"),
    )
    if projector.projector_type != "linear":
        raise ConfigError(
            f"{source}: projector_config.projector_type={projector.projector_type!r} "
            f"is not modelled (only 'linear', as released{released})"
        )
    return projector


def name_from_config(raw: Mapping[str, Any], default: str) -> str:
    """The model's name in a vendor config: the last part of `_name_or_path`; `default` when absent or empty."""
    return str(raw.get("_name_or_path", default)).split("/")[-1] or default


def raise_failed(checks: list[tuple[bool, str, Any, str]], label: str) -> None:
    """The first failed check of a spec's `(ok, field, value, allowed)` list, as one ConfigError."""
    for ok, name, value, allowed in checks:
        if not ok:
            raise ConfigError.field(f"{label}{name}", value, f"must be {allowed}")


def language_checks(spec: Any) -> list[tuple[bool, str, Any, str]]:
    """The checks every DeepSeek-OCR spec shares: projector -> decoder width, SAM's global blocks, the
    DeepSeek-V2 decoder's heads and experts, and the token ids (as `raise_failed` takes them)."""
    s, p, d = spec.sam, spec.projector, spec.decoder
    return [
        (p.n_embed == d.hidden_size, "projector.n_embed", p.n_embed, f"decoder.hidden_size={d.hidden_size}"),
        (
            all(0 <= i < s.depth for i in s.global_attn_indexes),
            "sam.global_attn_indexes",
            s.global_attn_indexes,
            f"indices in [0, {s.depth})",
        ),
        (
            d.hidden_size % d.num_heads == 0,
            "decoder.hidden_size",
            d.hidden_size,
            f"a multiple of decoder.num_heads={d.num_heads}",
        ),
        (
            d.num_experts_per_tok <= max(d.n_routed_experts, 1),
            "decoder.num_experts_per_tok",
            d.num_experts_per_tok,
            f"at most n_routed_experts={d.n_routed_experts}",
        ),
        (
            d.num_heads % max(d.num_kv_heads, 1) == 0,
            "decoder.num_kv_heads",
            d.num_kv_heads,
            f"a divisor of num_heads={d.num_heads}",
        ),
        (
            max(spec.image_token_id, spec.bos_token_id, spec.eos_token_id) < d.vocab_size,
            "image_token_id",
            spec.image_token_id,
            f"token ids below vocab_size={d.vocab_size}",
        ),
    ]


def language_from_config(raw: Mapping[str, Any], source: str) -> tuple["DecoderSpec", int, int]:
    """The DeepSeek-V2 decoder of a vendor config (`language_config`, or the top level when absent) and its
    BOS and EOS token ids: every key checked, one ConfigError naming it."""
    lang = raw.get("language_config", raw)
    if not isinstance(lang, Mapping):
        raise ConfigError(f"{source}: 'language_config' must be an object")

    def need(mapping: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
        if key not in mapping:
            raise ConfigError(f"{source}: missing key '{where}{key}'")
        value = mapping[key]
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise ConfigError(f"{source}: key '{where}{key}' must be an integer, found {value!r}")
        if kind is float and not isinstance(value, (int, float)):
            raise ConfigError(f"{source}: key '{where}{key}' must be a number, found {value!r}")
        return value

    def opt(mapping: Mapping[str, Any], key: str, kind: type, default: Any, where: str) -> Any:
        """An optional key: `default` when absent or null, else checked like `need`."""
        return default if mapping.get(key) is None else need(mapping, key, kind, where)

    where = "language_config." if "language_config" in raw else ""
    if lang.get("use_mla", False):
        raise ConfigError(
            f"{source}: '{where}use_mla' is true; only the plain-attention decoder (use_mla: false) "
            "of DeepSeek-OCR is modelled"
        )
    dec_defaults = DecoderSpec()
    n_heads = need(lang, "num_attention_heads", int, where)
    decoder = DecoderSpec(
        hidden_size=need(lang, "hidden_size", int, where),
        num_layers=need(lang, "num_hidden_layers", int, where),
        num_heads=n_heads,
        num_kv_heads=opt(lang, "num_key_value_heads", int, n_heads, where) or n_heads,
        intermediate_size=need(lang, "intermediate_size", int, where),
        moe_intermediate_size=need(lang, "moe_intermediate_size", int, where),
        n_routed_experts=opt(lang, "n_routed_experts", int, 0, where),
        n_shared_experts=opt(lang, "n_shared_experts", int, 0, where),
        num_experts_per_tok=opt(lang, "num_experts_per_tok", int, 0, where),
        first_k_dense_replace=opt(lang, "first_k_dense_replace", int, 0, where),
        moe_layer_freq=opt(lang, "moe_layer_freq", int, 1, where),
        topk_method=lang.get("topk_method", dec_defaults.topk_method),
        norm_topk_prob=bool(lang.get("norm_topk_prob", False)),
        routed_scaling_factor=float(opt(lang, "routed_scaling_factor", float, 1.0, where)),
        vocab_size=need(lang, "vocab_size", int, where),
        rope_theta=float(opt(lang, "rope_theta", float, dec_defaults.rope_theta, where)),
        rms_norm_eps=float(opt(lang, "rms_norm_eps", float, dec_defaults.rms_norm_eps, where)),
        max_position_embeddings=opt(lang, "max_position_embeddings", int, dec_defaults.max_position_embeddings, where),
        tie_word_embeddings=bool(lang.get("tie_word_embeddings", False)),
    )
    return (
        decoder,
        lang.get("bos_token_id", raw.get("bos_token_id", 0)),
        lang.get("eos_token_id", raw.get("eos_token_id", 1)),
    )


@dataclass(frozen=True)
class SamSpec:
    """SAM ViT-B image encoder (`ImageEncoderViT`)."""

    img_size: int = 1024  # pretraining size: the absolute position table is (img_size/patch)²
    patch_size: int = 16
    width: int = 768
    depth: int = 12
    heads: int = 12
    mlp_ratio: float = 4.0
    window_size: int = 14
    global_attn_indexes: tuple[int, ...] = (2, 5, 8, 11)
    out_chans: int = 256  # neck width
    downsample_channels: tuple[int, ...] = (512, 1024)  # net_2, net_3 (each a 3x3 stride-2 conv)
    layer_norm_eps: float = 1e-6

    @property
    def head_dim(self) -> int:
        return self.width // self.heads

    @property
    def mlp_dim(self) -> int:
        return int(self.width * self.mlp_ratio)

    @property
    def pos_grid(self) -> int:
        return self.img_size // self.patch_size

    @property
    def out_dim(self) -> int:
        return self.downsample_channels[-1]

    @classmethod
    def tiny(cls, out_dim: int) -> "SamSpec":
        """The tiny twins' SAM (both families): width 32, 4 blocks (1 and 3 global), 2 heads, a 16-channel neck,
        net_2 of 32 channels and net_3 ending at `out_dim` (the next module's width)."""
        return cls(
            width=32, depth=4, heads=2, global_attn_indexes=(1, 3), out_chans=16, downsample_channels=(32, out_dim)
        )


@dataclass(frozen=True)
class ProjectorSpec:
    """`MlpProjector` of type linear: concat(CLIP without class token, SAM) -> decoder width."""

    input_dim: int = 2048
    n_embed: int = 1280
    projector_type: str = "linear"


@dataclass(frozen=True)
class DecoderSpec:
    """DeepSeek-V2-style decoder with `use_mla: false` (plain multi-head attention, `LlamaAttention`)."""

    hidden_size: int = 1280
    num_layers: int = 12
    num_heads: int = 10
    num_kv_heads: int = 10
    intermediate_size: int = 6848  # dense MLP (layers < first_k_dense_replace)
    moe_intermediate_size: int = 896
    n_routed_experts: int = 64
    n_shared_experts: int = 2
    num_experts_per_tok: int = 6
    first_k_dense_replace: int = 1
    moe_layer_freq: int = 1
    topk_method: str = "greedy"
    norm_topk_prob: bool = False
    routed_scaling_factor: float = 1.0
    vocab_size: int = 129280
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-6
    max_position_embeddings: int = 8192
    tie_word_embeddings: bool = False

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def shared_intermediate_size(self) -> int:
        return self.moe_intermediate_size * self.n_shared_experts

    @classmethod
    def tiny(cls) -> "DecoderSpec":
        """The tiny twins' decoder (both families): 3 layers of width 64, a dense layer then MoE layers with
        8 routed experts (top 2) and 2 shared ones, the real vocabulary."""
        return cls(
            hidden_size=64,
            num_layers=3,
            num_heads=4,
            num_kv_heads=4,
            intermediate_size=128,
            moe_intermediate_size=32,
            n_routed_experts=8,
            n_shared_experts=2,
            num_experts_per_tok=2,
        )

    def is_moe_layer(self, index: int) -> bool:
        return self.n_routed_experts > 0 and index >= self.first_k_dense_replace and index % self.moe_layer_freq == 0


class SpecReading:
    """What every family's `ModelSpec` (a frozen dataclass with a `from_config_dict`) shares. A family names its
    `builders` (a `model.spec` name -> the classmethod that builds it) and `named_note` (said after the allowed
    names when `model.spec` is none of them)."""

    builders: ClassVar[Mapping[str, str]] = {}
    named_note: ClassVar[str] = ""

    @classmethod
    def named(cls, name: str) -> Any:
        """The spec `model.spec` names (one of `builders`)."""
        if name not in cls.builders:
            raise ConfigError.field("model.spec", name, f"one of {sorted(cls.builders)}{cls.named_note}")
        return getattr(cls, cls.builders[name])()

    @classmethod
    def from_config_json(cls, path: str | Path) -> Any:
        """Read a vendor `config.json` (or a model directory holding one) with the family's `from_config_dict`."""
        raw, source = load_config_json(path)
        return cls.from_config_dict(raw, source=source)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
