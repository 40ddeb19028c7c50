"""The `profile` config group: presets compose, bad values are refused in one line naming the field,
NVTX without CUDA is refused before anything runs."""

from __future__ import annotations

import pytest
import torch
from hydra import compose, initialize_config_dir

from llm_perf_opt.config import register_configs, to_typed_config
from llm_perf_opt.config.paths import conf_dir
from llm_perf_opt.config.schemas import ProfileConfig
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.measure.profile import ForwardCall, profile_forward


def compose_cfg(*overrides: str):
    register_configs()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def test_presets():
    default = to_typed_config(compose_cfg()).profile
    assert default == ProfileConfig(enabled=True, warmup=1, repeats=3, nvtx=False, chrome_trace=True)
    assert to_typed_config(compose_cfg("profile=off")).profile.enabled is False
    assert to_typed_config(compose_cfg("profile.repeats=5", "profile.warmup=0")).profile.repeats == 5


@pytest.mark.parametrize(
    "overrides, needle",
    [
        (["profile.repeats=0"], "profile.repeats=0 is invalid: must be an integer >= 1"),
        (["profile.repeats=-2"], "profile.repeats=-2"),
        (["profile.warmup=-1"], "profile.warmup=-1 is invalid: must be an integer >= 0"),
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
