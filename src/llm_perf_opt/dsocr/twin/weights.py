"""Seeded random weights for the twin, fast enough for the full 3.3 B parameters on a small CPU.

Rules (chosen so every forward stays finite and well scaled, not to imitate training):
norm weights 1 and biases 0; other biases 0; `image_newline` / `view_seperator` normal with std
1/sqrt(width) (the vendor's own initialisation); every other tensor (linear, conv, embedding, gate,
position tables, relative-position tables, class token) normal with std 0.02.

Each tensor gets its own generator, seeded from (seed, parameter name), so the values do not depend on
the order of filling; that lets the work spread over a few threads (the fill kernels release the GIL).
Values for a given seed are reproducible on one device type; CPU and CUDA generators differ.
"""
from __future__ import annotations

import os
import zlib
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn

from llm_perf_opt.dsocr.twin.decoder import DeepseekV2RMSNorm
from llm_perf_opt.dsocr.twin.sam import LayerNorm2d

INIT_STD = 0.02
_NORMS = (nn.LayerNorm, LayerNorm2d, DeepseekV2RMSNorm)
_SEPARATORS = ("image_newline", "view_seperator")


def _param_seed(seed: int, name: str) -> int:
    # The CPU generator (mt19937) keeps only the low 32 bits of a seed, so both inputs go through the hash.
    return zlib.crc32(f"{seed}:{name}".encode("utf-8"))


def _plan(model: nn.Module) -> list[tuple[str, torch.Tensor, str, float]]:
    """(name, tensor, how, value) for every distinct parameter; how is 'fill' or 'normal'."""
    seen: set[int] = set()
    jobs = []
    for mod_name, module in model.named_modules():
        for p_name, param in module.named_parameters(recurse=False):
            if id(param) in seen:
                continue
            seen.add(id(param))
            full = f"{mod_name}.{p_name}" if mod_name else p_name
            if isinstance(module, _NORMS):
                jobs.append((full, param, "fill", 1.0 if p_name == "weight" else 0.0))
            elif p_name == "bias":
                jobs.append((full, param, "fill", 0.0))
            elif p_name in _SEPARATORS:
                jobs.append((full, param, "normal", param.shape[-1] ** -0.5))
            else:
                jobs.append((full, param, "normal", INIT_STD))
    return jobs


@torch.no_grad()
def initialise_weights(model: nn.Module, seed: int = 0, threads: int | None = None) -> None:
    """Fill every parameter of `model` in place (it must be materialised, not on the meta device)."""
    jobs = _plan(model)
    if any(t.device.type == "meta" for _, t, _, _ in jobs):
        raise ValueError("initialise_weights needs materialised tensors (call to_empty first)")

    def run(job) -> None:
        name, tensor, how, value = job
        with torch.no_grad():  # grad mode is per thread
            if how == "fill":
                tensor.fill_(value)
                return
            gen = torch.Generator(device=tensor.device)
            gen.manual_seed(_param_seed(seed, name))
            tensor.normal_(0.0, value, generator=gen)

    jobs.sort(key=lambda j: -j[1].numel())  # biggest first, for an even spread over threads
    workers = threads or max(1, min(torch.get_num_threads(), os.cpu_count() or 1))
    on_cpu = all(t.device.type == "cpu" for _, t, _, _ in jobs)
    if workers == 1 or not on_cpu:
        for job in jobs:
            run(job)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(run, jobs))
