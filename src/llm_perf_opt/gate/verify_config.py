"""The `verify` section: the trace job's verification knobs (`rtol`, `fvcore`, `analytic_spec`) and the
verification gate's matrix (`./dev verify verify=NAME`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from llm_perf_opt.errors import ConfigError


@dataclass
class VerifyConfig:
    """Two readers. The trace job reads `rtol`, `fvcore` and `analytic_spec` (how it verifies its FLOPs).
    `./dev verify` reads the verification matrix chosen with `verify=NAME` (conf/verify/NAME.yaml: `name`,
    `overrides`, `sweep`) and its own knobs (`expected`, `update_expected`, `pins_only`, `out_dir`); the trace job
    ignores those. With no `verify=` choice (the trace job's default) there is no matrix."""

    rtol: float = 0.001  # analytic vs measured FLOPs, per stage, part and decode step (0.1%)
    fvcore: bool = False  # also count the prefill with fvcore (a second, jit-traced forward), reconciled
    # ModelSpec fields changed for the analytic model only (`+verify.analytic_spec.decoder.num_layers=11`):
    # the analytic model then describes another model than the one that ran, a real divergence the gate
    # must catch. Empty: the analytic model uses the running model's spec.
    analytic_spec: dict[str, Any] = field(default_factory=dict)
    name: Optional[str] = None  # the matrix (conf/verify/<name>.yaml); null: none chosen
    description: str = ""
    overrides: list[str] = field(default_factory=list)  # overrides every job of the matrix gets
    sweep: dict[str, list[str]] = field(default_factory=dict)  # key -> values: one job per combination
    expected: Optional[str] = None  # the pinned analytic totals; null: conf/verify/expected.yaml
    update_expected: bool = False  # rewrite `expected` from the analytic model instead of gating
    pins_only: bool = False  # judge the pinned analytic totals only: no job runs, no model is built (seconds)
    out_dir: Optional[str] = None  # where ./dev verify writes; null: tmp/verify/<date>/<time>-<pid>

    def __post_init__(self) -> None:
        if isinstance(self.rtol, bool) or not isinstance(self.rtol, (int, float)) or not 0 <= self.rtol < 1:
            raise ConfigError.field("verify.rtol", self.rtol, "must be in [0, 1)")
        if not isinstance(self.analytic_spec, dict):
            raise ConfigError.field(
                "verify.analytic_spec",
                self.analytic_spec,
                "must be a mapping of ModelSpec fields, e.g. {decoder: {num_layers: 11}}",
            )
        for key, values in self.sweep.items():
            if not values:
                raise ConfigError.field(f"verify.sweep.{key}", values, "must list at least one value")
            for value in values:
                if "," in str(value):
                    raise ConfigError.field(
                        f"verify.sweep.{key}", value, "must list one value per entry (no commas: the list is the sweep)"
                    )
        for override in self.overrides:
            if "=" not in str(override):
                raise ConfigError.field("verify.overrides", override, "must be key=value overrides")
