"""The `profile` config group: presets compose, bad values are refused in one line naming the field,
NVTX without CUDA is refused before anything runs."""

from __future__ import annotations

import pytest
import torch
from hydra import compose, initialize_config_dir

from llm_perf_opt import families
from llm_perf_opt.config import to_typed_config
from llm_perf_opt.config.paths import conf_dir
from llm_perf_opt.config.schemas import ProfileConfig
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.measure.profile import ForwardCall, planned_rounds, profile_forward
from llm_perf_opt.measure.profile_table import render_profile


def compose_cfg(*overrides: str):
    families.register_configs()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def test_presets():
    default = to_typed_config(compose_cfg()).profile
    assert default == ProfileConfig(enabled=True, warmup=1, repeats=3, budget_cpu_s=60.0, nvtx=False, chrome_trace=True)
    assert to_typed_config(compose_cfg("profile.budget_cpu_s=null")).profile.budget_cpu_s is None
    assert to_typed_config(compose_cfg("profile=off")).profile.enabled is False
    assert to_typed_config(compose_cfg("profile.repeats=5", "profile.warmup=0")).profile.repeats == 5


@pytest.mark.parametrize(
    "overrides, needle",
    [
        (["profile.repeats=0"], "profile.repeats=0 is invalid: must be an integer >= 1"),
        (["profile.repeats=-2"], "profile.repeats=-2"),
        (["profile.warmup=-1"], "profile.warmup=-1 is invalid: must be an integer >= 0"),
        (["profile.budget_cpu_s=0"], "profile.budget_cpu_s=0.0 is invalid: must be a number of seconds > 0, or null"),
    ],
)
def test_bad_values_one_line(overrides, needle):
    with pytest.raises(ConfigError) as err:
        to_typed_config(compose_cfg(*overrides))
    assert needle in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"repeats": 0}, "profile.repeats"),
        ({"repeats": True}, "profile.repeats"),
        ({"repeats": 2.5}, "profile.repeats"),
        ({"warmup": -1}, "profile.warmup"),
        ({"budget_cpu_s": -5.0}, "profile.budget_cpu_s"),
        ({"budget_cpu_s": True}, "profile.budget_cpu_s"),
        ({"budget_cpu_s": "60"}, "profile.budget_cpu_s"),
        ({"nvtx": "yes"}, "profile.nvtx"),
        ({"enabled": 1}, "profile.enabled"),
    ],
)
def test_schema_refuses_bad_values(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        ProfileConfig(**kwargs)


def test_wrong_type_refused_by_hydra_while_composing():
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException, match="profile.repeats=three"):
        compose_cfg("profile.repeats=three")


class Counting(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x)


def test_nvtx_on_cpu_refused_before_any_forward():
    cfg = to_typed_config(compose_cfg("profile.nvtx=true", "runtime=cpu"))
    with pytest.raises(ConfigError) as err:
        cfg.profile.check_device(cfg.runtime.device)
    assert str(err.value).startswith("profile.nvtx=True is invalid: NVTX ranges need runtime=cuda")
    model = Counting()
    with pytest.raises(ConfigError, match="profile.nvtx"):
        profile_forward(ForwardCall(model, {"x": torch.ones(1, 2)}), ProfileConfig(nvtx=True))
    assert model.calls == 0
    ProfileConfig(nvtx=True, enabled=False).check_device("cpu")  # profiling off: nothing to refuse


def test_disabled_profile_refused():
    model = Counting()
    with pytest.raises(ConfigError, match="profile.enabled=False"):
        profile_forward(ForwardCall(model, {"x": torch.ones(1, 2)}), ProfileConfig(enabled=False))
    assert model.calls == 0


def test_planned_rounds():
    """The rounds a forward gets: as many as asked while they fit in the budget at the round's CPU time, never
    none."""
    assert planned_rounds(3, 60.0, 2.0) == 3  # 30 rounds would fit: the 3 asked
    assert planned_rounds(3, 60.0, 25.0) == 2  # floor(60 / 25)
    assert planned_rounds(3, 60.0, 48.0) == 1  # the full twin's Tiny forward at 24 CPU-s: one round
    assert planned_rounds(3, 60.0, 500.0) == 1  # over the budget alone: still one round
    assert planned_rounds(3, None, 500.0) == 3  # no budget: every round asked
    assert planned_rounds(3, 60.0, 0.0) == 3  # no cost measured: every round asked


@pytest.mark.parametrize("warmup", [1, 0])
def test_costly_forward_gets_fewer_rounds(warmup, tmp_path):
    """A forward costlier than the budget (any forward, for a budget of a picosecond) gets one round; the
    artifact says how many ran and how many were asked, and every statistic covers the rounds run. With no
    warm-up the first round sets the pace."""
    model = Counting()
    cfg = ProfileConfig(warmup=warmup, repeats=3, budget_cpu_s=1e-12)
    times = profile_forward(ForwardCall(model, {"x": torch.ones(1, 2)}), cfg, trace_path=tmp_path / "trace.json")
    rewarmed = times.wall["plain_rewarmed"]  # a forward under 50 ms runs once more before each plain one
    assert model.calls == warmup + 2 + rewarmed  # the warm-up, one plain (re-warmed) and one profiled forward
    assert times.repeats == times.method["repeats"] == 1 and times.method["repeats_asked"] == 3
    assert times.method["budget_cpu_s"] == 1e-12 and times.method["round_cpu_s"] > 0
    assert times.summary()["repeats"] == 1 and times.summary()["repeats_asked"] == 3
    assert len(times.wall["plain_s"]["repeats"]) == len(times.wall["profiled_s"]["repeats"]) == 1
    assert all(len(c.inclusive_s.repeats) == 1 for c in times.calls)
    assert times.trace_repeat == 0 and (tmp_path / "trace.json").is_file()
    assert "1 of 3 round(s)" in render_profile(times)


def test_no_budget_runs_every_round():
    model = Counting()
    times = profile_forward(
        ForwardCall(model, {"x": torch.ones(1, 2)}), ProfileConfig(warmup=1, repeats=3, budget_cpu_s=None)
    )
    assert model.calls == 1 + 3 * (2 + times.wall["plain_rewarmed"])
    assert times.repeats == 3 and times.method["repeats_asked"] == 3 and times.trace_repeat is None
    assert "round(s)" not in render_profile(times)  # every round asked ran: nothing to explain


def test_plain_forwards_before_the_profiler_lead_plain_s_and_pair_with_nothing(monkeypatch):
    """On CUDA `profile_forward` times plain forwards before the first profiled one (a plain forward after a profiled
    one is slower there); the CPU times none. Here the CPU made to take two: they lead `plain_s`, the overhead
    pairs stay the rounds' own."""
    from llm_perf_opt.measure import profile as profile_module

    assert profile_module.plain_before_profiler(torch.device("cpu")) == 0
    assert profile_module.plain_before_profiler(torch.device("cuda")) == profile_module.PLAIN_BEFORE_PROFILER == 3
    monkeypatch.setattr(profile_module, "plain_before_profiler", lambda device: 2)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4)).eval()
    times = profile_module.profile_forward(
        profile_module.ForwardCall(model, {"input": torch.randn(2, 4)}), ProfileConfig(warmup=1, repeats=2)
    )
    wall = times.wall
    assert wall["plain_before_profiler"] == 2 and len(wall["plain_s"]["repeats"]) == 2 + 2
    assert (
        len(wall["profiled_s"]["repeats"]) == 2 and "2 plain forwards (before any profiled one" in times.method["order"]
    )
    rounds = wall["plain_s"]["repeats"][2:]
    paired = sorted(p / q for p, q in zip(wall["profiled_s"]["repeats"], rounds))
    assert wall["overhead_ratio_paired"] == pytest.approx(sum(paired) / 2)
