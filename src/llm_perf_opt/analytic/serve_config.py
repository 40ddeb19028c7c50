"""The `serve` and `size` sections: serving figures (`analytic.serving`) and `./dev size` targets
(`analytic.sizing`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from omegaconf import MISSING

from llm_perf_opt.config.fields import _batch, _one_of, _positive_int
from llm_perf_opt.config.paths import user_path
from llm_perf_opt.errors import ConfigError

# The largest daily volume `./dev size` takes: a trillion pages a day (about 11.6 million a second), far beyond
# any fleet; beyond it the replica count says nothing (`analytic.sizing`)
MAX_PAGES_PER_DAY_TARGET = 1e12
SERVE_LEVELS = ("ideal",)  # time levels the serving math has here (the time model adds kernel, eager)


@dataclass
class ServeConfig:
    """Serving figures (`analytic.serving`): tokens generated per page, the time level, the memory allowance,
    the batches of the latency-vs-throughput curve, and optionally the routing a trace measured."""

    output_tokens: int = 1000  # tokens generated per page (reasoning: analytic.serving.DEFAULT_OUTPUT_TOKENS)
    level: str = "ideal"
    workspace_gb: float = 1.0  # fixed allowance: runtime context and library workspaces (analytic.memory_model)
    fragmentation: float = 0.10  # allowance per byte of KV cache and activations (allocator)
    batches: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
    routing: Optional[str] = None  # routing.json of a trace run: experts touched from its measured popularity

    def __post_init__(self) -> None:
        _positive_int("serve.output_tokens", self.output_tokens, "(tokens generated per page)")
        _one_of("serve.level", self.level, SERVE_LEVELS)
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
        if self.routing is not None:
            self.routing = str(user_path(self.routing))
            if not Path(self.routing).is_file():
                raise ConfigError.field("serve.routing", self.routing, "must be an existing routing.json")


@dataclass
class SizeConfig:
    """`./dev size` targets (`analytic.sizing`); every one is required (`tpot_s=0.02` on the command line)."""

    ttft_s: float = MISSING
    tpot_s: float = MISSING
    pages_per_day: float = MISSING
    max_scale: float = 10.0  # refuse latency targets no device within this factor of every figure meets

    def __post_init__(self) -> None:
        for name in ("ttft_s", "tpot_s", "pages_per_day", "max_scale"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise ConfigError.field(f"size.{name}", value, "must be a positive number")
        if self.pages_per_day > MAX_PAGES_PER_DAY_TARGET:
            raise ConfigError.field(
                "size.pages_per_day",
                self.pages_per_day,
                f"must be at most {MAX_PAGES_PER_DAY_TARGET:.0e} pages a day (a trillion: far beyond any fleet)",
            )
