"""The ready sweeps in conf/experiment/ and the page presets in conf/page/ compose, validate and expand
to the jobs they promise (page shapes as (width, height) pairs, not a cartesian product)."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from llm_perf_opt.config import to_typed_config
from llm_perf_opt.config.compose import compose, group_options
from llm_perf_opt.config.sweeps import planned_jobs
from llm_perf_opt.dsocr.parts import mode_names
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.runs.launchers import check_launcher

MODES = list(mode_names())
PAGES = {
    "letter_portrait": (1700, 2200),
    "letter_landscape": (2200, 1700),
    "a4_portrait": (1654, 2339),
    "a4_landscape": (2339, 1654),
    "square": (1600, 1600),
    "slide": (1920, 1080),
    "receipt": (800, 3000),
    "small": (600, 500),
}


def compose_cfg(*overrides: str, hydra: bool = False):
    return compose(overrides, return_hydra_config=hydra)


def planned(cfg, *cli: str) -> list[list[str]]:
    """The jobs of `--multirun CLI...` with cfg's sweeper params (compose() refuses sweep syntax itself)."""
    multirun = OmegaConf.create(
        {"hydra": {"sweeper": OmegaConf.to_container(cfg.hydra.sweeper), "overrides": {"task": list(cli)}}}
    )
    return planned_jobs(multirun)


def test_modes_experiment():
    cfg = compose_cfg("experiment=modes", hydra=True)
    assert cfg.experiment == "modes"
    assert cfg.hydra.sweeper.params.workload.split(",") == MODES
    assert len(planned(cfg, "experiment=modes")) == 6


def test_pages_experiment_sweeps_pairs():
    cfg = compose_cfg("experiment=pages", hydra=True)
    assert cfg.experiment == "pages"
    pages = cfg.hydra.sweeper.params.page.split(",")
    assert pages == list(PAGES)
    jobs = planned(cfg, "experiment=pages", "workload=tiny,gundam")
    assert len(jobs) == len(PAGES) * 2
    assert ["page=slide", "experiment=pages", "workload=gundam"] in jobs


def test_every_page_preset_sets_a_width_height_pair():
    assert set(group_options("page")) == set(PAGES)
    for name, (w, h) in PAGES.items():
        cfg = to_typed_config(compose_cfg(f"page={name}", "workload=gundam"))
        assert (cfg.workload.page.width, cfg.workload.page.height) == (w, h)
        assert cfg.workload.name == "gundam"  # the preset touches the page only


def test_no_page_preset_keeps_the_default_page_and_overrides_still_win():
    assert to_typed_config(compose_cfg()).workload.page.width == 1700
    cfg = to_typed_config(compose_cfg("page=slide", "workload.page.height=1200"))
    assert (cfg.workload.page.width, cfg.workload.page.height) == (1920, 1200)


def test_modes_are_the_workload_group():
    assert set(group_options("workload")) == set(MODES)


def test_expansion_matches_the_jobs_hydra_launched(ok_sweep, failing_sweep):
    """planned_jobs on Hydra's own multirun.yaml gives exactly the jobs (and their order) the sweeper ran."""
    for sweep, _ in (ok_sweep, failing_sweep):
        jobs = sorted((p for p in sweep.iterdir() if (p / ".hydra").is_dir()), key=lambda p: int(p.name))
        launched = [list(OmegaConf.load(p / ".hydra" / "overrides.yaml")) for p in jobs]
        assert planned_jobs(OmegaConf.load(sweep / "multirun.yaml")) == launched


def test_expansion_keeps_the_last_value_of_a_repeated_key_and_gives_up_on_other_sweepers():
    cfg = OmegaConf.create(
        {
            "hydra": {
                "sweeper": {"params": {"workload": "tiny,base"}},
                "overrides": {"task": ["workload=gundam", "page=slide,receipt"]},
            }
        }
    )
    assert planned_jobs(cfg) == [["workload=gundam", "page=slide"], ["workload=gundam", "page=receipt"]]
    other = OmegaConf.create(
        {"hydra": {"sweeper": {"_target_": "hydra_plugins.optuna.OptunaSweeper"}, "overrides": {"task": ["a=1,2"]}}}
    )
    assert planned_jobs(other) is None
    ranged = OmegaConf.create({"hydra": {"overrides": {"task": ["x=interval(0,1)"]}}})
    assert planned_jobs(ranged) is None


def test_free_command_line_sweeps_expand():
    cfg = compose_cfg(hydra=True)
    jobs = planned(cfg, "workload.base_size=640,1024", "workload.crop_mode=true,false", "page=slide,receipt")
    assert len(jobs) == 8 and ["workload.base_size=1024", "workload.crop_mode=False", "page=receipt"] in jobs


@pytest.mark.parametrize(
    "target, refused",
    [
        ("hydra._internal.core_plugins.basic_launcher.BasicLauncher", False),
        ("hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher", False),
        ("hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher", False),
        ("hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher", True),
    ],
)
def test_check_launcher(target, refused):
    cfg = compose_cfg(f"hydra.launcher._target_={target}", hydra=True)
    if refused:
        with pytest.raises(ConfigError, match="not supported.*TorchLens"):
            check_launcher(cfg)
    else:
        check_launcher(cfg)
