"""SAM ViT-B image encoder of DeepSeek-OCR (`model.sam_model`), written from its documented behaviour.

What a profiler sees here, and why it is kept exactly:

* a 16×16 patch convolution, then an absolute position table (pretrained for a 64×64 grid) that is
  resized bicubically (antialiased, in float32) whenever the grid differs;
* blocks that attend inside 14×14 windows on the grid padded up to a multiple of 14 (so a 32×32 grid
  costs as much as a 42×42 one), except the global blocks;
* decomposed relative positions (one table per axis) turned into an additive bias of shape
  (B, heads, HW, HW) and handed to `scaled_dot_product_attention` as `attn_mask`; global blocks resize
  their tables linearly when the grid is not the pretraining one;
* a neck (1×1 conv, LayerNorm2d, 3×3 conv, LayerNorm2d) and two stride-2 3×3 convs, `net_2` and `net_3`,
  the second fed a clone of the first's output.

Attribute names and class names are those of the vendor's module tree, so the vendor's state dict loads.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from llm_perf_opt.deepseek_ocr_shared.spec import SamSpec
from llm_perf_opt.errors import ConfigError


def resize_abs_pos_sam(pos: torch.Tensor, side: int) -> torch.Tensor:
    """The (1, G, G, C) position table at a side×side grid; unchanged (same tensor) when G == side."""
    if pos.size(1) == side:
        return pos
    out_dtype = pos.dtype
    grid = pos.permute(0, 3, 1, 2).to(torch.float32)  # channels first for interpolate
    grid = F.interpolate(grid, size=(side, side), mode="bicubic", antialias=True, align_corners=False)
    return grid.to(out_dtype).permute(0, 2, 3, 1)


def split_windows(x: torch.Tensor, size: int) -> tuple[torch.Tensor, tuple[int, int]]:
    """(B, H, W, C) -> (B·nWin, size, size, C), zero-padding H and W up to multiples of `size` first."""
    b, h, w, c = x.shape
    extra_h = (size - h % size) % size
    extra_w = (size - w % size) % size
    if extra_h or extra_w:
        x = F.pad(x, (0, 0, 0, extra_w, 0, extra_h))
    hp, wp = h + extra_h, w + extra_w
    x = x.view(b, hp // size, size, wp // size, size, c)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, size, size, c), (hp, wp)


def merge_windows(win: torch.Tensor, size: int, padded: tuple[int, int], orig: tuple[int, int]) -> torch.Tensor:
    """Inverse of `split_windows`: back to (B, H, W, C), dropping the padding rows and columns."""
    hp, wp = padded
    h, w = orig
    b = win.shape[0] // (hp * wp // size // size)
    x = win.view(b, hp // size, wp // size, size, size, -1)
    x = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(b, hp, wp, -1)
    if hp > h or wp > w:
        x = x[:, :h, :w, :].contiguous()
    return x


def relative_table(q_len: int, k_len: int, table: torch.Tensor) -> torch.Tensor:
    """Embeddings for every (query, key) offset along one axis: (q_len, k_len, C).

    The learned table has 2·L−1 rows for its pretraining length L; for another length it is resized
    linearly (float32) to 2·max(q_len, k_len)−1 rows first. Offsets are scaled when q and k differ in
    length (never the case here, but kept so the indexing is the same arithmetic).
    """
    rows = int(2 * max(q_len, k_len) - 1)
    if table.shape[0] != rows:
        out_dtype = table.dtype
        t = table.to(torch.float32).reshape(1, table.shape[0], -1).permute(0, 2, 1)  # (1, C, L) for 1-D resize
        t = F.interpolate(t, size=rows, mode="linear").to(out_dtype)
        table = t.reshape(-1, rows).permute(1, 0)
    q_scale = max(k_len / q_len, 1.0)
    k_scale = max(q_len / k_len, 1.0)
    q_pos = torch.arange(q_len, device=table.device)[:, None] * q_scale
    k_pos = torch.arange(k_len, device=table.device)[None, :] * k_scale
    offsets = (q_pos - k_pos) + (k_len - 1) * k_scale
    return table[offsets.long()]


def decomposed_rel_pos(
    q: torch.Tensor, table_h: torch.Tensor, table_w: torch.Tensor, q_hw: tuple[int, int], k_hw: tuple[int, int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Row and column terms of the relative-position bias (MViTv2 style).

    q: (B·heads, qh·qw, C). Returns (B·heads, qh·qw, kh, 1) and (B·heads, qh·qw, 1, kw), whose broadcast
    sum is the bias for every (query, key) pair.
    """
    qh, qw = q_hw
    kh, kw = k_hw
    emb_h = relative_table(qh, kh, table_h)
    emb_w = relative_table(qw, kw, table_w)
    n, _, c = q.shape
    q_grid = q.reshape(n, qh, qw, c)
    bias_h = torch.einsum("bhwc,hkc->bhwk", q_grid, emb_h)
    bias_w = torch.einsum("bhwc,wkc->bhwk", q_grid, emb_w)
    bias_h = bias_h.unsqueeze(-1)
    bias_w = bias_w.unsqueeze(-2)
    return bias_h.reshape(n, qh * qw, kh, 1), bias_w.reshape(n, qh * qw, 1, kw)


class PatchEmbed(nn.Module):
    """Non-overlapping patch convolution; output channels-last (B, H/16, W/16, C) for the blocks."""

    def __init__(
        self, kernel_size=(16, 16), stride=(16, 16), padding=(0, 0), in_chans: int = 3, embed_dim: int = 768
    ) -> None:
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x).permute(0, 2, 3, 1)


class MLPBlock(nn.Module):
    """Two linears around an exact GELU (SAM's transformer MLP)."""

    def __init__(self, embedding_dim: int, mlp_dim: int, act: type[nn.Module] = nn.GELU) -> None:
        super().__init__()
        self.lin1 = nn.Linear(embedding_dim, mlp_dim)
        self.lin2 = nn.Linear(mlp_dim, embedding_dim)
        self.act = act()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin2(self.act(self.lin1(x)))


class LayerNorm2d(nn.Module):
    """LayerNorm over the channel axis of an NCHW map, spelled out as mean / variance / affine ops."""

    def __init__(self, num_channels: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(num_channels))
        self.bias = nn.Parameter(torch.zeros(num_channels))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(1, keepdim=True)
        var = (x - mean).pow(2).mean(1, keepdim=True)
        x = (x - mean) / torch.sqrt(var + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class Attention(nn.Module):
    """Multi-head attention over a (B, H, W, C) grid with a decomposed relative-position bias.

    The bias (B, heads, HW, HW) is materialised and passed to `scaled_dot_product_attention` as its
    `attn_mask` (default scale 1/sqrt(head_dim)); `rel_pos_h` / `rel_pos_w` have 2·L−1 rows for the
    pretraining length L (14 for windowed blocks, the 64-patch grid for global ones).
    """

    def __init__(
        self,
        dim: int,
        num_heads: int = 8,
        qkv_bias: bool = True,
        use_rel_pos: bool = True,
        input_size: tuple[int, int] | None = None,
    ) -> None:
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim**-0.5  # informational: SDPA applies the same default scale
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.use_rel_pos = use_rel_pos
        if use_rel_pos:
            if input_size is None:
                raise ValueError("relative positions need the pretraining input_size")
            self.rel_pos_h = nn.Parameter(torch.zeros(2 * input_size[0] - 1, head_dim))
            self.rel_pos_w = nn.Parameter(torch.zeros(2 * input_size[1] - 1, head_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, _ = x.shape
        n_tok, heads = h * w, self.num_heads
        qkv = self.qkv(x).reshape(b, n_tok, 3, heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.reshape(3, b * heads, n_tok, -1).unbind(0)

        if self.use_rel_pos:
            bias_h, bias_w = decomposed_rel_pos(q, self.rel_pos_h, self.rel_pos_w, (h, w), (h, w))

        q = q.view(b, heads, n_tok, -1)
        k = k.view(b, heads, n_tok, -1)
        v = v.view(b, heads, n_tok, -1)

        if self.use_rel_pos:
            bias_h = bias_h.view(b, heads, bias_h.size(1), bias_h.size(2), bias_h.size(3))
            bias_w = bias_w.view(b, heads, bias_w.size(1), bias_w.size(2), bias_w.size(3))
            bias = (bias_h + bias_w).view(b, heads, bias_h.size(2), bias_h.size(3) * bias_w.size(4))
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        else:
            out = F.scaled_dot_product_attention(q, k, v)

        out = out.view(b, heads, h, w, -1).permute(0, 2, 3, 1, 4).reshape(b, h, w, -1)
        return self.proj(out)


class Block(nn.Module):
    """Pre-norm transformer block; `window_size` > 0 attends inside padded windows, 0 attends globally."""

    def __init__(
        self,
        dim: int,
        num_heads: int,
        mlp_ratio: float = 4.0,
        qkv_bias: bool = True,
        norm_eps: float = 1e-6,
        act_layer: type[nn.Module] = nn.GELU,
        use_rel_pos: bool = True,
        window_size: int = 0,
        input_size: tuple[int, int] | None = None,
    ) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=norm_eps)
        self.attn = Attention(
            dim,
            num_heads=num_heads,
            qkv_bias=qkv_bias,
            use_rel_pos=use_rel_pos,
            input_size=input_size if window_size == 0 else (window_size, window_size),
        )
        self.norm2 = nn.LayerNorm(dim, eps=norm_eps)
        self.mlp = MLPBlock(embedding_dim=dim, mlp_dim=int(dim * mlp_ratio), act=act_layer)
        self.window_size = window_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        residual = x
        x = self.norm1(x)
        if self.window_size > 0:
            h, w = x.shape[1], x.shape[2]
            x, padded = split_windows(x, self.window_size)
        x = self.attn(x)
        if self.window_size > 0:
            x = merge_windows(x, self.window_size, padded, (h, w))
        x = residual + x
        return x + self.mlp(self.norm2(x))


class ImageEncoderViT(nn.Module):
    """SAM ViT encoder plus DeepSeek-OCR's two extra downsampling convs: pixels -> (B, C_out, S/64, S/64)."""

    def __init__(self, spec: SamSpec, in_chans: int = 3) -> None:
        super().__init__()
        self.spec = spec
        self.img_size = spec.img_size
        grid = spec.pos_grid
        self.patch_embed = PatchEmbed(
            kernel_size=(spec.patch_size, spec.patch_size),
            stride=(spec.patch_size, spec.patch_size),
            in_chans=in_chans,
            embed_dim=spec.width,
        )
        self.pos_embed = nn.Parameter(torch.zeros(1, grid, grid, spec.width))
        self.blocks = nn.ModuleList(
            Block(
                spec.width,
                spec.heads,
                mlp_ratio=spec.mlp_ratio,
                qkv_bias=True,
                norm_eps=spec.layer_norm_eps,
                use_rel_pos=True,
                window_size=0 if i in spec.global_attn_indexes else spec.window_size,
                input_size=(grid, grid),
            )
            for i in range(spec.depth)
        )
        c = spec.out_chans
        self.neck = nn.Sequential(
            nn.Conv2d(spec.width, c, kernel_size=1, bias=False),
            LayerNorm2d(c),
            nn.Conv2d(c, c, kernel_size=3, padding=1, bias=False),
            LayerNorm2d(c),
        )
        if len(spec.downsample_channels) != 2:
            raise ConfigError.field(
                "model spec sam.downsample_channels",
                spec.downsample_channels,
                "must have two entries (net_2 and net_3)",
            )
        c2, c3 = spec.downsample_channels
        self.net_2 = nn.Conv2d(c, c2, kernel_size=3, stride=2, padding=1, bias=False)
        self.net_3 = nn.Conv2d(c2, c3, kernel_size=3, stride=2, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x)
        if self.pos_embed is not None:
            x = x + resize_abs_pos_sam(self.pos_embed, x.size(1))
        for block in self.blocks:
            x = block(x)
        x = self.neck(x.permute(0, 3, 1, 2))
        x2 = self.net_2(x)
        return self.net_3(x2.clone())
