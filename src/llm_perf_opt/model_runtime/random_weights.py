"""Seeded random weights, one rule for the twin and the vendor code alike.

The rule: each tensor gets its own generator, seeded from (`model.seed`, the parameter's full name)
through `param_seed` (crc32 of "seed:name"), and is filled with N(0, std). So the values do not
depend on the order of filling (the fill spreads over a few threads: the kernels release the GIL),
and every seed gives different weights. (The vendor fill once had a rule of its own,
`(seed << 31) ^ crc32(name)`: the CPU generator keeps only the low 32 bits of a seed, so it saw one
bit of `model.seed` and seeds 0, 2, 4, ... gave the same weights. It now follows the twin's rule.)
Values for a given seed are reproducible on one device type; CPU and CUDA generators differ. Which
std each tensor gets is the caller's: the twin's table is in `twin.weights`; the vendor's Linear and
Embedding weights get its `initializer_range`.

`linear_weights_on_meta` + `materialise_meta_parameters` build the vendor model's Linear and Embedding
weights (99.6 % of its parameters) on the meta device and fill them once here, instead of letting the
vendor's default path initialise every Linear twice (minutes at full size).
"""

from __future__ import annotations

import os
import zlib
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, Iterator, Optional, Sequence, TypeVar

import torch
from torch import nn

Job = TypeVar("Job")


def param_seed(seed: int, name: str) -> int:
    """The generator seed of parameter `name`. The CPU generator (mt19937) keeps only the low 32 bits of
    a seed, so both inputs go through the hash."""
    return zlib.crc32(f"{seed}:{name}".encode("utf-8"))


def seeded_normal_(tensor: torch.Tensor, std: float, seed: int, name: str) -> torch.Tensor:
    """Fill `tensor` in place with N(0, std) from its own generator, seeded by `param_seed(seed, name)`."""
    gen = torch.Generator(device=tensor.device)
    gen.manual_seed(param_seed(seed, name))
    return tensor.normal_(0.0, std, generator=gen)


def fill_in_parallel(
    jobs: Sequence[Job],
    fill: Callable[[Job], object],
    sizes: Callable[[Job], int],
    on_cpu: bool,
    threads: Optional[int] = None,
) -> list[object]:
    """`fill(job)` for every job, biggest first, over a few threads on CPU (serially elsewhere);
    returns the results in the order run."""
    ordered = sorted(jobs, key=lambda j: -sizes(j))  # biggest first keeps the workers evenly busy
    workers = threads or max(1, min(torch.get_num_threads(), os.cpu_count() or 1))
    if workers == 1 or len(ordered) < 2 or not on_cpu:
        return [fill(j) for j in ordered]

    def in_thread(job: Job) -> object:
        with torch.no_grad():  # grad mode is per thread
            return fill(job)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(in_thread, ordered))


@contextmanager
def linear_weights_on_meta() -> Iterator[None]:
    """While building, the `weight` of every nn.Linear / nn.Embedding goes to the meta device (no memory, no
    init cost); everything else (biases, norms, convs, buffers, learned vectors) is built for real."""
    original = nn.Module.register_parameter

    def register_parameter(self, name, param):
        if (
            param is not None
            and name == "weight"
            and isinstance(self, (nn.Linear, nn.Embedding))
            and param.device.type != "meta"
        ):
            param = nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
        return original(self, name, param)

    nn.Module.register_parameter = register_parameter
    try:
        yield
    finally:
        nn.Module.register_parameter = original


@torch.no_grad()
def materialise_meta_parameters(
    model: nn.Module, device: torch.device, seed: int, std: float, threads: Optional[int] = None
) -> int:
    """Allocate every meta parameter on `device` and fill it with N(0, std) (Embedding padding rows 0).
    Shared parameters are filled once and stay shared. Returns the number of elements filled."""
    jobs: list[tuple[str, nn.Module, str, nn.Parameter]] = []
    seen: dict[int, tuple[nn.Module, str]] = {}
    aliases: list[tuple[nn.Module, str, nn.Module, str]] = []
    for mod_name, module in model.named_modules(remove_duplicate=False):
        for p_name, p in list(module._parameters.items()):
            if p is None or p.device.type != "meta":
                continue
            if id(p) in seen:
                aliases.append((module, p_name, *seen[id(p)]))
                continue
            seen[id(p)] = (module, p_name)
            jobs.append((f"{mod_name}.{p_name}" if mod_name else p_name, module, p_name, p))

    def fill(job: tuple[str, nn.Module, str, nn.Parameter]) -> int:
        full, module, p_name, p = job
        t = seeded_normal_(torch.empty(p.shape, dtype=p.dtype, device=device), std, seed, full)
        padding_idx = getattr(module, "padding_idx", None)
        if isinstance(module, nn.Embedding) and padding_idx is not None:
            t[padding_idx].zero_()
        module._parameters[p_name] = nn.Parameter(t, requires_grad=p.requires_grad)
        return t.numel()

    filled = sum(
        fill_in_parallel(jobs, fill, lambda j: j[3].numel(), on_cpu=torch.device(device).type == "cpu", threads=threads)
    )
    for module, p_name, src_module, src_name in aliases:
        module._parameters[p_name] = src_module._parameters[src_name]
    return filled
