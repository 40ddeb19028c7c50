"""CLIP-L/14 of DeepSeek-OCR (`model.vision_model`): a ViT whose patch embeddings are SAM's features.

Kept as the vendor runs it, because each point shows up in a trace or in the FLOPs:

* the CLIP patch convolution exists (and holds weights) but is not called: `VitModel.forward(x,
  patch_embeds)` gets SAM's (B, C, h, w) output and only flattens it;
* a class token is prepended and a 257-entry position table (16×16 + 1) is added, resized bicubically
  (antialiased, float32) to the actual grid when it is not 16×16;
* one pre-LayerNorm (`pre_layrnorm`, sic) before the stack and none after it;
* attention is `scaled_dot_product_attention` without a mask;
* each block calls its attention and MLP through `.forward(...)` directly, as the vendor does, so module
  hooks on `self_attn` / `mlp` do not fire (a profiler sees those ops under the block);
* the MLP activation is `quick_gelu`, a TorchScript function looked up as a module global at call time,
  so a runtime patch can replace `llm_perf_opt.dsocr.twin.clip.quick_gelu` with a plain function.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from llm_perf_opt.dsocr.spec import ClipSpec


@torch.jit.script
def quick_gelu(x):
    """x·sigmoid(1.702·x), compiled with TorchScript like the vendor's (one opaque op for tracers)."""
    return x * torch.sigmoid(1.702 * x)


def resize_abs_pos_clip(table: torch.Tensor, n_tokens: int) -> torch.Tensor:
    """(1, 1 + G², C) class + grid position table, resized to 1 + g² rows with g = int(sqrt(n_tokens)).

    Returns the input tensor itself when the grid already matches (no op recorded).
    """
    dim = table.size(-1)
    rows = table.squeeze(0)
    cls_row, grid_rows = rows[:1], rows[1:]
    src = int(math.sqrt(rows.shape[0] - 1))
    dst = int(math.sqrt(n_tokens))
    if src == dst:
        return table
    out_dtype = table.dtype
    grid = grid_rows.view(1, src, src, dim).permute(0, 3, 1, 2).contiguous().to(torch.float32)
    grid = F.interpolate(grid, size=(dst, dst), mode="bicubic", antialias=True, align_corners=False).to(out_dtype)
    grid = grid.permute(0, 2, 3, 1).view(dst * dst, dim)
    return torch.cat([cls_row, grid], dim=0).view(1, dst * dst + 1, dim)


class CLIPVisionEmbeddings(nn.Module):
    """Class token + given patch embeddings + (resized) learned positions."""

    def __init__(
        self, hidden_size: int = 1024, image_size: int = 224, patch_size: int = 14, num_channels: int = 3
    ) -> None:
        super().__init__()
        self.embed_dim = hidden_size
        self.image_size = image_size
        self.patch_size = patch_size
        self.class_embedding = nn.Parameter(torch.zeros(hidden_size))
        self.patch_embedding = nn.Conv2d(
            num_channels, hidden_size, kernel_size=patch_size, stride=patch_size, bias=False
        )
        self.num_patches = (image_size // patch_size) ** 2
        self.num_positions = self.num_patches + 1
        self.position_embedding = nn.Embedding(self.num_positions, hidden_size)
        # Persistent, as in the vendor: it is a key of the released state dict.
        self.register_buffer("position_ids", torch.arange(self.num_positions).expand((1, -1)))

    def reset_buffers(self) -> None:
        """Refill `position_ids` (after `to_empty`, which leaves buffers uninitialised)."""
        dev = self.position_ids.device
        self.position_ids = torch.arange(self.num_positions, device=dev).expand((1, -1))

    def forward(self, pixel_values: torch.Tensor, patch_embeds: torch.Tensor | None) -> torch.Tensor:
        batch = pixel_values.shape[0]
        if patch_embeds is None:
            patch_embeds = self.patch_embedding(pixel_values)
        patch_embeds = patch_embeds.flatten(2).transpose(1, 2)
        cls = self.class_embedding.expand(batch, 1, -1)
        x = torch.cat([cls, patch_embeds], dim=1)
        return x + resize_abs_pos_clip(self.position_embedding(self.position_ids), x.size(1))


class NoTPFeedForward(nn.Module):
    """fc1 -> quick_gelu -> fc2 (both with bias)."""

    def __init__(self, dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden_dim, bias=True)
        self.fc2 = nn.Linear(hidden_dim, dim, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # `quick_gelu` is resolved in this module's globals on every call (patchable).
        return self.fc2(quick_gelu(self.fc1(x)))


class NoTPAttention(nn.Module):
    """Fused qkv projection, unmasked `scaled_dot_product_attention`, output projection."""

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        seq_length: int = 256,
        attention_dropout: float = 0.0,
        use_flash_attn: bool = False,
    ) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.n_local_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.max_seq_len = seq_length
        self.use_flash_attention = use_flash_attn  # both settings run the same SDPA call in the vendor
        self.qkv_proj = nn.Linear(hidden_size, hidden_size * 3, bias=True)
        self.out_proj = nn.Linear(hidden_size, hidden_size, bias=True)
        self.attn_drop = attention_dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        qkv = self.qkv_proj(x).view(b, s, 3, self.num_heads, self.head_dim)
        q, k, v = torch.split(qkv, 1, dim=2)
        q, k, v = q.squeeze(2), k.squeeze(2), v.squeeze(2)
        q, k, v = q.permute(0, 2, 1, 3), k.permute(0, 2, 1, 3), v.permute(0, 2, 1, 3)  # (B, heads, S, d)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=None)
        out = out.permute(0, 2, 1, 3).reshape(b, s, -1)
        return self.out_proj(out)


class NoTPTransformerBlock(nn.Module):
    """Pre-norm block. Calls `self_attn.forward` / `mlp.forward` directly (no module hooks), as the vendor."""

    def __init__(self, spec: ClipSpec, layer_id: int) -> None:
        super().__init__()
        self.n_heads = spec.heads
        self.dim = spec.width
        self.head_dim = spec.head_dim
        self.self_attn = NoTPAttention(spec.width, spec.heads)
        self.mlp = NoTPFeedForward(spec.width, spec.ffn_dim)
        self.layer_id = layer_id
        self.layer_norm1 = nn.LayerNorm(spec.width, eps=spec.layer_norm_eps)
        self.layer_norm2 = nn.LayerNorm(spec.width, eps=spec.layer_norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.self_attn.forward(self.layer_norm1(x))
        return h + self.mlp.forward(self.layer_norm2(h))


class NoTPTransformer(nn.Module):
    """The stack of `NoTPTransformerBlock`s (no final norm)."""

    def __init__(self, spec: ClipSpec) -> None:
        super().__init__()
        self.num_layers = spec.layers
        self.layers = nn.ModuleList(NoTPTransformerBlock(spec, i + 1) for i in range(spec.layers))

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        return hidden_states


class VitModel(nn.Module):
    """embeddings -> pre_layrnorm -> transformer; output (B, 1 + h·w, width), class token first."""

    def __init__(self, spec: ClipSpec) -> None:
        super().__init__()
        self.spec = spec
        self.embeddings = CLIPVisionEmbeddings(
            hidden_size=spec.width, image_size=spec.image_size, patch_size=spec.patch_size
        )
        self.transformer = NoTPTransformer(spec)
        self.pre_layrnorm = nn.LayerNorm(spec.width, eps=spec.layer_norm_eps)

    def forward(self, x: torch.Tensor, patch_embeds: torch.Tensor | None) -> torch.Tensor:
        hidden = self.pre_layrnorm(self.embeddings(x, patch_embeds))
        return self.transformer(hidden)
