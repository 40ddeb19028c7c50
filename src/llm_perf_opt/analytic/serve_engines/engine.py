"""`Engine`: one serving engine as a documented model (its time level, its batching, its memory model, what it
assumes), and the registry of engines by name (`ENGINES`, `engine_named`, `engines_named`).

An engine's times come from a `Timing` (`timing.py`): the prefill of one page at batch B (vision + the prompt) and a
decode step at batch B at a context. `ideal` is the roofline (no engine: the speed of light any engine approaches);
`hf_eager`, `cuda_graphs` and `vllm` are the engines of `hf_eager.py`, `cuda_graphs.py` and `vllm.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from llm_perf_opt.analytic.serve_config import ENGINE_NAMES, check_engines
from llm_perf_opt.errors import ConfigError

STATIC, CONTINUOUS = "static", "continuous"
PLAIN, PAGED = "static", "paged"


@dataclass(frozen=True)
class Engine:
    """One engine: `level` the time level its times are at (`convention.BATCH_LEVELS`), `kernels` whose kernel list
    it runs ("hf": the cost formulas' census of the model's own code; "vllm": the fused list of `vllm_kernels`),
    `batching` the scheme its headline figures use (static or continuous; both are computed), `memory` static
    (`memory_model`) or paged (`paged_memory`), `syncs` whether the MoE's per-layer host sync runs, and `assumes`
    the assumptions in words (printed and written into serving.json)."""

    name: str
    level: str
    kernels: str
    batching: str
    memory: str
    syncs: bool
    generate_host: bool  # the generate loop's per-step host work is charged (`generate_host.GenerateHost`)
    assumes: tuple[str, ...]
    summary: str

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "level": self.level,
            "kernels": self.kernels,
            "batching": self.batching,
            "memory": self.memory,
            "host_syncs": self.syncs,
            "generate_host": self.generate_host,
            "summary": self.summary,
            "assumes": list(self.assumes),
        }


def registry() -> Mapping[str, Engine]:
    from llm_perf_opt.analytic.serve_engines.cuda_graphs import CUDA_GRAPHS
    from llm_perf_opt.analytic.serve_engines.hf_eager import HF_EAGER
    from llm_perf_opt.analytic.serve_engines.ideal_engine import IDEAL_ENGINE
    from llm_perf_opt.analytic.serve_engines.vllm import VLLM

    return {e.name: e for e in (IDEAL_ENGINE, HF_EAGER, CUDA_GRAPHS, VLLM)}


def engine_named(name: Any, field: str = "serve.engine") -> Engine:
    engines = registry()
    if not isinstance(name, str) or name not in engines:
        raise ConfigError.field(field, name, f"must be one of {', '.join(ENGINE_NAMES)} (the serving engines)")
    return engines[name]


def engines_named(value: Any, field: str = "serve.engine") -> tuple[Engine, ...]:
    """One name, or a list of names (one row each in `./dev size`), each known, none twice."""
    return tuple(engine_named(n, field) for n in check_engines(value, field))
