"""Helpers for the twin tests (a uniquely named module, so test files can import it)."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from pathlib import Path

import torch

from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.model_runtime.torchvision_stand_in import torchvision_stand_in

# Every named module of the vendor model (name, class, direct parameter count), measured on the vendor
# code with transformers 4.46.3.
MODULE_TREE = Path(__file__).with_name("module_tree.json")

WORKLOADS = {
    "tiny": VisionWorkload(512, 512, False),
    "small": VisionWorkload(640, 640, False),
    "base": VisionWorkload(1024, 1024, False),
    "large": VisionWorkload(1280, 1280, False),
    "gundam": VisionWorkload(1024, 640, True),
    "gundam_m": VisionWorkload(1280, 1024, True, tile_size=1024),
}


# ----------------------------------------------------------------------------- vendor code (opt-in)
VENDOR_PACKAGE = "_dsocr_vendor_under_test"


@contextlib.contextmanager
def vendor_modeling(path: Path, module: str = "modeling_deepseekocr"):
    """Import the vendor's `module` (v1's `modeling_deepseekocr` by default) from `path` as a throw-away package.

    The project's scoped torchvision stand-in covers the import (the vendor imports torchvision for
    transforms no forward uses); the package's modules leave `sys.modules` afterwards. Nothing is
    written to the Hugging Face cache.
    """
    import transformers  # noqa: F401 - imported before the stand-in exists, so it is never probed

    spec = importlib.util.spec_from_file_location(
        VENDOR_PACKAGE, path / "__init__.py", submodule_search_locations=[str(path)]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules[VENDOR_PACKAGE] = package
    try:
        with torchvision_stand_in():
            spec.loader.exec_module(package)
            modeling = importlib.import_module(f"{VENDOR_PACKAGE}.{module}")
        yield modeling
    finally:
        for k in [k for k in sys.modules if k == VENDOR_PACKAGE or k.startswith(VENDOR_PACKAGE + ".")]:
            sys.modules.pop(k, None)


def reduced_config_and_spec(
    config_class, spec_class, vendor_dir: Path, layers: int = 2, experts: int = 8, top_k: int = 2
):
    """(vendor config, twin spec) from one config.json with the decoder shrunk alike: `layers` decoder layers,
    `experts` routed experts, top-`top_k` (the vision stacks stay full size: the vendor code hard-codes them)."""
    import dataclasses

    config = config_class.from_pretrained(str(vendor_dir))
    config.num_hidden_layers, config.n_routed_experts, config.num_experts_per_tok = layers, experts, top_k
    spec = spec_class.from_config_json(vendor_dir)
    decoder = dataclasses.replace(spec.decoder, num_layers=layers, n_routed_experts=experts, num_experts_per_tok=top_k)
    return config, dataclasses.replace(spec, decoder=decoder)


@contextlib.contextmanager
def cuda_calls_are_noops():
    """The vendor's forward moves the scatter mask with `.cuda()`: make that the identity on CPU."""
    original = torch.Tensor.cuda
    torch.Tensor.cuda = lambda self, *args, **kwargs: self
    try:
        yield
    finally:
        torch.Tensor.cuda = original


def vendor_on_meta(modeling, config):
    """The vendor model built on the meta device (no memory, no initialisation), in eval mode."""
    with torch.device("meta"):
        model = modeling.DeepseekOCRForCausalLM(config)
    return model.eval()


def load_into_vendor(vendor, state_dict) -> None:
    """Strict load of a twin state dict (sharing its tensors), then the vendor's computed RoPE buffers."""
    vendor.load_state_dict(state_dict, strict=True, assign=True)
    for module in vendor.modules():
        if hasattr(module, "rope_init_fn") and module.inv_freq.is_meta:
            inv_freq, _ = module.rope_init_fn(module.config, torch.device("cpu"), **module.rope_kwargs)
            module.register_buffer("inv_freq", inv_freq, persistent=False)
            module.original_inv_freq = inv_freq
    leftovers = [n for n, b in vendor.named_buffers() if b.is_meta] + [
        n for n, p in vendor.named_parameters() if p.is_meta
    ]
    assert not leftovers, f"vendor tensors still on meta: {leftovers[:5]}"
