"""The `profile` section: how the profile stage measures time per module (`measure.profile`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from llm_perf_opt.errors import ConfigError


@dataclass
class ProfileConfig:
    """Measured time per module (`llm_perf_opt.measure.profile`): after `warmup` plain forwards, `repeats`
    plain and `repeats` profiled forwards, interleaved; one torch.profiler range per module call."""

    enabled: bool = True  # false (profile=off): no profiled forwards, no profile.json
    warmup: int = 1  # plain forwards before anything is timed
    repeats: int = 3  # timed forwards of each kind (plain, profiled); medians and min/max over them
    # A costlier forward gets fewer rounds: at most budget_cpu_s / (2 x the warm-up forward's process CPU seconds),
    # at least 1 (measure.profile.planned_rounds); null: always `repeats`
    budget_cpu_s: Optional[float] = 60.0
    nvtx: bool = False  # also NVTX ranges named after module paths (Nsight Systems); needs runtime=cuda
    chrome_trace: bool = True  # write profile.trace.json (the last profiled repeat) for Perfetto

    def __post_init__(self) -> None:
        for name in ("enabled", "nvtx", "chrome_trace"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError.field(f"profile.{name}", getattr(self, name), "must be true or false")
        for name, low in (("warmup", 0), ("repeats", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError.field(f"profile.{name}", value, f"must be an integer >= {low}")
        budget = self.budget_cpu_s
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget <= 0):
            raise ConfigError.field("profile.budget_cpu_s", budget, "must be a number of seconds > 0, or null")

    def check_device(self, device: str) -> None:
        """NVTX ranges exist only for CUDA (Nsight Systems): refuse `profile.nvtx=true` anywhere else."""
        if self.enabled and self.nvtx and device != "cuda":
            raise ConfigError.field(
                "profile.nvtx",
                self.nvtx,
                f"NVTX ranges need runtime=cuda (the run is on {device}); set profile.nvtx=false",
            )
