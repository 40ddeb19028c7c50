"""The toy family's runtime: the session around the twin, the inputs of one page, the runtime log (a forward
hook on the model records the decoder stack of every call, removed when the block exits) and the grouping's
check of the decoder layers against it. The log's `llm_stack` events carry what the trace job's decode stage reads
of any family's log: `step` (0 for the prefill), `past_len` and `new_tokens`."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional, Sequence

import torch

from llm_perf_opt.callgraph.checks import STATUS_MISMATCH, STATUS_NOT_CHECKED, STATUS_OK, check_result
from llm_perf_opt.errors import ConfigError, PatchError
from llm_perf_opt.model_runtime.runtime_log import RuntimeLog
from toy_family.spec import ToyLayout, ToySpec, ToyWorkload, compute_layout
from toy_family.twin import build_twin

TEXT_OFFSET = 3  # token ids below are BOS, the image token and padding
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
STACK_EVENT = "llm_stack"  # the event the trace job's decode stage reads (step, past_len, new_tokens)
PATCHES = ("toy.decoder_stack",)


# ------------------------------------------------------------------------------------------------ inputs
def prompt_tokens(prompt: str, spec_vocab: int) -> tuple[list[int], list[int], str]:
    """(before the image, after it, source): one token per character of the prompt without `<image>`."""
    text = prompt.replace("<image>", "")
    return [], [TEXT_OFFSET + ord(c) % (spec_vocab - TEXT_OFFSET) for c in text], "toy:characters"


@dataclass
class ToyInputs:
    input_ids: torch.Tensor
    images: torch.Tensor
    layout: ToyLayout
    prompt_token_ids: list[int]
    prompt_source: str
    batch: int = 1
    lengths: list[int] = field(default_factory=list)

    @property
    def seq_len(self) -> int:
        return int(self.input_ids.shape[1])

    def shapes(self) -> dict[str, list[int]]:
        return {"input_ids": list(self.input_ids.shape), "images": list(self.images.shape)}


def build_inputs(
    spec: ToySpec, workload: ToyWorkload, *, width: int, height: int, image: Any, prompt: str, seed: int = 0, **_: Any
) -> ToyInputs:
    """BOS, one image token per patch, the prompt's characters; a seeded synthetic page at the view's side."""
    if image is not None:
        raise ConfigError.field("workload.page.image", image, "the toy family takes synthetic pages only")
    layout = compute_layout(workload, width, height)
    _, text, source = prompt_tokens(prompt, spec.vocab)
    ids = [spec.bos_token_id] + [spec.image_token_id] * layout.image_tokens + text
    generator = torch.Generator().manual_seed(seed)
    images = torch.rand(1, spec.channels, layout.side, layout.side, generator=generator)
    return ToyInputs(torch.tensor([ids]), images, layout, text, source, lengths=[len(ids)])


# ------------------------------------------------------------------------------------------------ session
class ToySession:
    source = "twin"
    weights = "random"

    def __init__(self, spec: ToySpec, seed: int, device: torch.device, dtype: torch.dtype) -> None:
        self.spec, self.device, self.dtype = spec, device, dtype
        self.model: Optional[torch.nn.Module] = build_twin(spec, seed, device, dtype)

    def __enter__(self) -> "ToySession":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.release()

    def release(self) -> None:
        self.model = None

    def forward_kwargs(self, inputs: ToyInputs, **overrides: Any) -> dict[str, Any]:
        kwargs = {"input_ids": inputs.input_ids.to(self.device), "images": inputs.images.to(self.device, self.dtype)}
        return {**kwargs, **overrides}

    @contextmanager
    def forward_context(self) -> Iterator[None]:
        with torch.no_grad():
            yield

    def parameter_counts(self) -> dict[str, int]:
        counts = {name: sum(p.numel() for p in child.parameters()) for name, child in self.model.named_children()}
        return {**counts, "total": sum(counts.values())}

    def describe(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "spec": self.spec.name,
            "device": str(self.device),
            "dtype": str(self.dtype),
            "weights": self.weights,
        }


def resolve_device(runtime_cfg: Any) -> torch.device:
    if runtime_cfg.device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError.field("runtime.device", runtime_cfg.device, "needs a CUDA GPU")
    return torch.device(runtime_cfg.device)


def open_session(spec: ToySpec, model_cfg: Any, runtime_cfg: Any) -> ToySession:
    if model_cfg.source != "twin":
        raise ConfigError.field("model.source", model_cfg.source, "the toy family has a twin only")
    return ToySession(spec, model_cfg.seed, resolve_device(runtime_cfg), DTYPES[runtime_cfg.dtype])


# ------------------------------------------------------------------------------------------------ runtime log
@contextmanager
def runtime_patches(session: ToySession, names: Iterable[str]) -> Iterator[RuntimeLog]:
    """The log of the block: `toy.decoder_stack` records each forward's layers, step, tokens and cache length."""
    names = tuple(names)
    unknown = [n for n in names if n not in PATCHES]
    if unknown:
        raise PatchError(f"unknown runtime patch {', '.join(unknown)} (the toy family has {', '.join(PATCHES)})")
    log = RuntimeLog()
    handles = []
    if names:
        model = session.model

        def record(_layer: Any, args: tuple) -> None:  # the first layer's call: (hidden states, its cache)
            hidden, past = args[0], args[1] if len(args) > 1 else None
            past_len = int(past[0].shape[2]) if past is not None else 0
            step = log.count(STACK_EVENT) if past is not None else 0  # 0: the prefill; k: decode step k
            log.record(
                STACK_EVENT, num_layers=len(model.layers), step=step, past_len=past_len, new_tokens=int(hidden.shape[1])
            )

        # on the first layer, called through __call__ in the prefill and in every step of a traced decode program
        handles.append(model.layers[0].register_forward_pre_hook(record))
        log.note_patch(PATCHES[0], ["layers.0 (forward pre-hook)"])
    try:
        yield log
    finally:
        for handle in handles:
            handle.remove()


def decoder_layers(grouped: Any, events: Sequence[dict], module_types: Any) -> list[dict[str, Any]]:
    """`decoder_layers`: the distinct members of the `layers.*` groups against the logged stack length."""
    nodes = [n for n in grouped.nodes if n.members and all(_is_layer(m) for m in n.members)]
    observed = len({m for n in nodes for m in n.members}) if nodes else None
    lengths = sorted({e["num_layers"] for e in events if e.get("event") == STACK_EVENT})
    if not lengths:
        return [check_result("decoder_layers", STATUS_NOT_CHECKED, None, observed, "no llm_stack event")]
    ok = lengths == [observed] and len(nodes) == 1
    status = STATUS_OK if ok else STATUS_MISMATCH
    detail = "distinct members of the layers stack (one group expected) vs the logged number of layers"
    return [check_result("decoder_layers", status, lengths[0], observed, detail)]


def _is_layer(address: str) -> bool:
    head, _, index = address.rpartition(".")
    return head == "layers" and index.isdigit()


RUNTIME_CHECKS = (decoder_layers,)
