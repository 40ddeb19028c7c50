"""The host's cost per kernel, measured on a workload that stands for an eager LLM decoder's real code path.

The eager level (`analytic.time.eager`) charges the host a fixed cost per launched kernel: Python, `nn.Module`
calls, the dispatcher (with autocast on CUDA), the caching allocator and, on an asynchronous device, the launch
call itself. That cost depends on how much Python and how many view and metadata ops the code runs around each
kernel, so it is measured on code shaped like the models this project studies (a DeepSeek-V2-style MoE decoder
run by a generate loop), not on a bare `torch.add`:

* `DecoderLayer`: RMSNorm computed in float32 (upcast, pow, mean, rsqrt, cast back), q / k / v / o projections,
  rotary embedding on a slice of the head (slices, neg, cat, mul, add), the KV-cache update (`torch.cat` onto the
  past keys and values), fused attention (SDPA), the residual adds; the MoE: router Linear, softmax, top-k,
  renormalisation, the routed tokens sorted by expert (argsort, gather), the count of tokens per expert copied to
  the host (`.cpu()`, one sync per layer, as an eager MoE does to size its groups), a Python loop over the experts
  that received tokens (slice, gate / up / down Linear, SiLU, mul), the results put back in token order and mixed
  by the routing weights, and a shared expert MLP.
* `DecodeStep`: embedding, `LAYERS` layers, the final norm, lm_head, then the generate loop's own ops: the last
  position's logits, argmax, the new id appended to the sequence, and the stopping check read on the host
  (`.item()`, one sync per step).

Every tensor is tiny (width 64, one token), so the device finishes each kernel long before the host launches the
next: the step is host-bound, and its wall time is the host's. The figure:
`op_s = (step wall - syncs x sync_s) / kernels`, where kernels are the step's aten ops that are not views (what the
cost formulas list as kernels, counted with a TorchDispatchMode) and `sync_s` the round trip of one host sync
measured beside it. On CUDA it runs under `torch.autocast` in the calibrated dtype, as the jobs' `runtime=cuda`
does, with its weights in that dtype as the jobs hold them (so the autocast dispatch is in the cost and autocast
casts nothing; until 2026-11-27 the weights were float32 and each Linear launched two casts inside it: on the H200
of 16:48, in a fresh process, 21.8 us per op with float32 weights and 18.2 with bfloat16 ones,
`benchmarks/host_workload.py`, where the full twin's own traced prefill took 21.5-22.0 us of host per op). The CUDA
calibration divides by the ops the step
calls that launch a kernel instead (`calibrate_levels.count_ops`; `op_unit: "op"`): the host pays Python, the
module and the dispatcher once per op, and an op's inner kernels (autocast's cast of an input) are launched inside
it; the eager level then charges the figure per op (`Kernels.op_count`).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

import torch
from torch import nn

WIDTH, HEADS, EXPERTS, TOP_K, LAYERS, CONTEXT, VOCAB = 64, 4, 8, 2, 4, 16, 256


class RMSNorm(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.weight * h.to(dtype)


class MLP(nn.Module):
    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.gate, self.up = nn.Linear(width, hidden, False), nn.Linear(width, hidden, False)
        self.down = nn.Linear(hidden, width, False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(nn.functional.silu(self.gate(x)) * self.up(x))


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    turned = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + turned * sin


class DecoderLayer(nn.Module):
    """One MoE decoder layer at decode (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(WIDTH), RMSNorm(WIDTH)
        self.q, self.k, self.v = (nn.Linear(WIDTH, WIDTH, False) for _ in range(3))
        self.o = nn.Linear(WIDTH, WIDTH, False)
        self.router = nn.Linear(WIDTH, EXPERTS, False)
        self.experts = nn.ModuleList(MLP(WIDTH, WIDTH) for _ in range(EXPERTS))
        self.shared = MLP(WIDTH, 2 * WIDTH)

    def attention(
        self, x: torch.Tensor, cache: list[torch.Tensor], cos: torch.Tensor, sin: torch.Tensor
    ) -> torch.Tensor:
        b, t, _ = x.shape
        d = WIDTH // HEADS
        q, k, v = (proj(x).view(b, t, HEADS, d).transpose(1, 2) for proj in (self.q, self.k, self.v))
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        cache[0], cache[1] = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        a = nn.functional.scaled_dot_product_attention(q, cache[0], cache[1])
        return self.o(a.transpose(1, 2).reshape(b, t, WIDTH))

    def moe(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.view(-1, WIDTH)
        scores = self.router(flat).softmax(dim=-1, dtype=torch.float32)
        weight, index = torch.topk(scores, TOP_K, dim=-1)
        weight = weight / weight.sum(dim=-1, keepdim=True)
        order = index.view(-1).argsort()
        tokens = flat[order // TOP_K]  # the routed copies of the tokens, grouped by expert
        counts = torch.zeros(flat.shape[0], EXPERTS, device=x.device).scatter_(1, index, 1).sum(0)
        per_expert = counts.cpu().tolist()  # the host sync of an eager MoE: the group sizes the loop needs
        outs, start = [], 0
        for e, n in enumerate(per_expert):
            if n == 0:
                continue
            outs.append(self.experts[e](tokens[start : start + int(n)]))
            start += int(n)
        routed = torch.cat(outs)
        back = torch.empty_like(routed)
        back[order] = routed
        mixed = (back.view(-1, TOP_K, WIDTH) * weight[..., None].to(back.dtype)).sum(dim=1)
        return (mixed + self.shared(flat)).view(shape)

    def forward(self, x, cache: list[torch.Tensor], cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x), cache, cos, sin)
        return x + self.moe(self.norm2(x))


class DecodeStep(nn.Module):
    """One greedy decode step of a small MoE decoder and its generate loop (see the module docstring)."""

    SYNCS = LAYERS + 1  # one per MoE layer, one for the stopping check

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.layers = nn.ModuleList(DecoderLayer() for _ in range(LAYERS))
        self.norm = RMSNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB, False)

    def forward(self, ids: torch.Tensor, caches: list[list[torch.Tensor]], cos, sin) -> torch.Tensor:
        x = self.embed(ids[:, -1:])
        for layer, cache in zip(self.layers, caches):
            x = layer(x, cache, cos, sin)
        logits = self.head(self.norm(x))
        nxt = logits[:, -1, :].argmax(dim=-1)
        ids = torch.cat([ids, nxt[:, None]], dim=-1)
        bool((nxt == VOCAB).all().item())  # the stopping check the generate loop reads on the host
        return ids


def weights_dtype(device: torch.device, dtype: torch.dtype, weights: Optional[torch.dtype] = None) -> torch.dtype:
    """The dtype the workload holds its weights in: `weights` when given, else `dtype` on CUDA, float32 on the CPU."""
    return weights or (dtype if device.type == "cuda" else torch.float32)


def step_runner(device: torch.device, dtype: torch.dtype, weights: Optional[torch.dtype] = None) -> Callable[[], Any]:
    """A no-argument callable running one decode step from a fresh KV cache of `CONTEXT` positions. On CUDA the
    weights, the cache and the rotary tables are in `dtype` (the jobs' `runtime=cuda`: bfloat16 weights under
    autocast, so autocast casts nothing); `weights` another dtype for them (float32: autocast casts each Linear's
    weight and input, two more kernels inside the op)."""
    cuda = device.type == "cuda"
    held = weights_dtype(device, dtype, weights)
    model = DecodeStep().to(device=device, dtype=held).eval()
    d = WIDTH // HEADS
    ids = torch.zeros(1, CONTEXT, dtype=torch.long, device=device)
    past = [torch.randn(1, HEADS, CONTEXT, d, device=device, dtype=held) for _ in range(2)]
    cos = torch.ones(1, 1, 1, d, device=device, dtype=held)
    sin = torch.zeros(1, 1, 1, d, device=device, dtype=held)

    def run() -> None:
        caches = [[past[0], past[1]] for _ in range(LAYERS)]
        with torch.no_grad(), torch.autocast(device.type, dtype=dtype, enabled=cuda and dtype != torch.float32):
            model(ids, caches, cos, sin)

    return run


def measure_host_workload(
    device: torch.device,
    dtype: torch.dtype,
    sync_s: float,
    count_kernels: Callable[[Callable[[], Any]], int],
    rounds: int,
    warmup: int,
    pick: Callable[[list[float]], float],
    steps_per_sample: Optional[int] = None,
    count_ops: Optional[Callable[[Callable[[], Any]], int]] = None,
    weights: Optional[torch.dtype] = None,
) -> dict[str, Any]:
    """The host's cost per kernel on `device` (see the module docstring): {op_s, op_kernels, op_syncs,
    op_forward_s, op_samples, op_module}; with `count_ops` (`calibrate_levels.count_ops`) per op the step calls
    that launches a kernel instead: op_s over `op_ops`, `op_unit: "op"`. `weights`: as `step_runner`."""
    run = step_runner(device, dtype, weights)
    held = weights_dtype(device, dtype, weights)
    for _ in range(warmup):
        run()
    kernels = count_kernels(run)
    ops = count_ops(run) if count_ops is not None else None
    inner = steps_per_sample or 20
    samples = []
    for _ in range(rounds):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        for _ in range(inner):
            run()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        samples.append((time.perf_counter() - t0) / inner)
    step = pick(samples)
    syncs = DecodeStep.SYNCS if device.type == "cuda" else 0
    per = (
        f"its {ops} ops that launch a kernel ({kernels} non-view aten ops; `calibrate_levels.count_ops`)"
        if ops
        else (f"its {kernels} non-view aten ops (TorchDispatchMode)")
    )
    return {
        "op_s": max(step - syncs * sync_s, 0.0) / (ops or kernels),
        **({"op_ops": ops, "op_unit": "op"} if ops else {}),
        "op_kernels": kernels,
        "op_syncs": syncs,
        "op_forward_s": step,
        "op_samples": samples,
        "op_module": (
            f"one greedy decode step of a {LAYERS}-layer MoE decoder (width {WIDTH}, {EXPERTS} experts, top-{TOP_K}, "
            f"KV cache of {CONTEXT}; RMSNorm in float32, rotary, cache cat, SDPA, router top-k with its host sync, "
            f"a Python loop over the routed experts, the generate loop's argmax / cat / stopping check) on "
            f"{device.type}{' under autocast ' + str(dtype).removeprefix('torch.') if device.type == 'cuda' else ''}"
            f" with {str(held).removeprefix('torch.')} weights"
            f", host-bound (tiny tensors): (wall per step - {syncs} syncs x sync_s) / {per}; {inner} steps per "
            "sample, time.perf_counter" + (" with torch.cuda.synchronize" if device.type == "cuda" else "")
        ),
    }
