"""The `serve` and `size` sections: serving figures (`analytic.serving`) and `./dev size` targets
(`analytic.sizing`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from omegaconf import MISSING

from llm_perf_opt.config.fields import _batch, _positive_int
from llm_perf_opt.config.paths import user_path
from llm_perf_opt.errors import ConfigError

# The largest daily volume `./dev size` takes: a trillion pages a day (about 11.6 million a second), far beyond
# any fleet; beyond it the replica count says nothing (`analytic.sizing`)
MAX_PAGES_PER_DAY_TARGET = 1e12
# vLLM's defaults (EngineArgs): block_size 16, gpu_memory_utilization 0.9, max_num_seqs 256; max_num_batched_tokens
# (the prefill chunk) is chosen by usage context, 2,048 to 8,192: 8,192 here (the larger chunk: the larger activation
# peak, the smaller KV pool, the conservative side)
ENGINE_NAMES = ("ideal", "hf_eager", "cuda_graphs", "vllm")  # analytic.serve_engines registers one engine per name
DEFAULT_BLOCK_SIZE = 16
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
DEFAULT_CONCURRENCY = 256
DEFAULT_CHUNK_TOKENS = 8192


def check_engines(value: Any, name: str = "serve.engine") -> list[str]:
    """One engine name or a list of them (`ENGINE_NAMES`), each known, none twice."""
    names = [value] if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else None
    if names is None or not names:
        raise ConfigError.field(name, value, f"must name an engine or a list of them: {', '.join(ENGINE_NAMES)}")
    for n in names:
        if n not in ENGINE_NAMES:
            raise ConfigError.field(name, n, f"must be one of {', '.join(ENGINE_NAMES)} (the serving engines)")
    if len(set(names)) != len(names):
        raise ConfigError.field(name, value, "names an engine twice")
    return names


@dataclass
class ServeConfig:
    """Serving figures (`analytic.serving`): tokens generated per page, the engine (or a list: one row each in
    `./dev size`; the engine decides the time level: `analytic.serve_engines`), the memory allowance, the batches of
    the latency-vs-throughput curve, optionally the routing a trace measured, and the paged engine's knobs."""

    output_tokens: int = 1000  # tokens generated per page (reasoning: analytic.serving.DEFAULT_OUTPUT_TOKENS)
    engine: Any = "ideal"  # ideal, hf_eager, cuda_graphs, vllm, or a list of them
    workspace_gb: float = 1.0  # fixed allowance: runtime context and library workspaces (analytic.memory_model)
    fragmentation: float = 0.10  # allowance per byte of KV cache and activations (allocator)
    batches: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
    routing: Optional[str] = None  # routing.json of a trace run: experts touched from its measured popularity
    concurrency: int = DEFAULT_CONCURRENCY  # vllm: max_num_seqs, the slots of continuous batching
    block_size: int = DEFAULT_BLOCK_SIZE  # vllm: KV cache block, tokens
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION  # vllm: the share of memory the engine takes
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS  # vllm: max_num_batched_tokens, the prefill chunk
    measured: Optional[str] = None  # a serving_curve.json (benchmarks/serving_curve.py) to set beside hf_eager

    def __post_init__(self) -> None:
        _positive_int("serve.output_tokens", self.output_tokens, "(tokens generated per page)")
        check_engines(self.engine)
        _batch("serve.concurrency", self.concurrency, "(max_num_seqs: pages a continuous engine serves at once)")
        _positive_int("serve.block_size", self.block_size, "(tokens per KV block)")
        _positive_int("serve.chunk_tokens", self.chunk_tokens, "(prefill tokens per scheduler step)")
        u = self.gpu_memory_utilization
        if isinstance(u, bool) or not isinstance(u, (int, float)) or not 0 < u <= 1:
            raise ConfigError.field("serve.gpu_memory_utilization", u, "must be a number in (0, 1]")
        for name in ("workspace_gb", "fragmentation"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ConfigError.field(f"serve.{name}", value, "must be a number >= 0")
        if self.fragmentation >= 1:
            raise ConfigError.field("serve.fragmentation", self.fragmentation, "must be below 1")
        if not self.batches:
            raise ConfigError.field("serve.batches", self.batches, "must list at least one batch")
        for b in self.batches:
            _batch("serve.batches[]", b, "(a batch of the latency curve)")
        if self.measured is not None:
            self.measured = str(user_path(self.measured))
            if not Path(self.measured).is_file():
                raise ConfigError.field("serve.measured", self.measured, "must be an existing serving_curve.json")
        if self.routing is not None:
            self.routing = str(user_path(self.routing))
            if not Path(self.routing).is_file():
                raise ConfigError.field("serve.routing", self.routing, "must be an existing routing.json")


@dataclass
class SizeConfig:
    """`./dev size` targets (`analytic.sizing`): tpot_s and pages_per_day required (`tpot_s=0.02` on the command
    line), ttft_s optional (none: no TTFT target)."""

    ttft_s: Optional[float] = None  # None: no TTFT target (the TPOT and volume targets alone)
    tpot_s: float = MISSING
    pages_per_day: float = MISSING
    max_scale: float = 10.0  # refuse latency targets no device within this factor of every figure meets

    def __post_init__(self) -> None:
        for name in ("ttft_s", "tpot_s", "pages_per_day", "max_scale"):
            value = getattr(self, name)
            if name == "ttft_s" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise ConfigError.field(f"size.{name}", value, "must be a positive number")
        if self.pages_per_day > MAX_PAGES_PER_DAY_TARGET:
            raise ConfigError.field(
                "size.pages_per_day",
                self.pages_per_day,
                f"must be at most {MAX_PAGES_PER_DAY_TARGET:.0e} pages a day (a trillion: far beyond any fleet)",
            )
