"""The trace job's section (`trace`): which of its stages run (`trace.stage.Stage.when` reads it)."""

from __future__ import annotations

from dataclasses import dataclass

from llm_perf_opt.errors import ConfigError


@dataclass
class TraceConfig:
    """The TorchLens capture and the stages after it."""

    enabled: bool = True  # false: session + inputs + one timed forward only
    capture: bool = True  # run the TorchLens capture (call graph)
    analytic: bool = True  # costs.json
    verify: bool = True  # verification.json (needs a forward under FlopCounterMode)
    decode_steps: int = 0  # decode steps to log/measure after the prefill (0: prefill only)
    export: bool = False  # torch.export of submodules (export/, see ExportConfig) after the other stages

    def __post_init__(self) -> None:
        if self.decode_steps < 0:
            raise ConfigError.field("trace.decode_steps", self.decode_steps, "must be >= 0")
