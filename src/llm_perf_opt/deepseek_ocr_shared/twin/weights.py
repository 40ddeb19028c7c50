"""Seeded random weights for the twin, fast enough for the full 3.3 B parameters on a small CPU.

Rules (chosen so every forward stays finite and well scaled, not to imitate training):
norm weights 1 and biases 0; other biases 0; `image_newline` / `view_seperator` normal with std
1/sqrt(width) (the vendor's own initialisation); every other tensor (linear, conv, embedding, gate,
position tables, relative-position tables, class token) normal with std 0.02.

The normal draws follow the project's one seeding rule (`model_runtime.random_weights`): a generator per
tensor, seeded from (seed, parameter name), so the fill can spread over threads.
"""

from __future__ import annotations

import torch
from torch import nn

from llm_perf_opt.deepseek_ocr_shared.twin.decoder import DeepseekV2RMSNorm
from llm_perf_opt.deepseek_ocr_shared.twin.sam import LayerNorm2d
from llm_perf_opt.model_runtime.random_weights import fill_in_parallel, seeded_normal_

INIT_STD = 0.02
_NORMS = (nn.LayerNorm, LayerNorm2d, DeepseekV2RMSNorm)
_SEPARATORS = ("image_newline", "view_seperator")


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
        if how == "fill":
            tensor.fill_(value)
        else:
            seeded_normal_(tensor, value, seed, name)

    fill_in_parallel(
        jobs, run, lambda j: j[1].numel(), on_cpu=all(t.device.type == "cpu" for _, t, _, _ in jobs), threads=threads
    )
