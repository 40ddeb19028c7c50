"""The ready sweeps in conf/experiment/ and the page presets in conf/page/ compose, validate and expand
to the jobs they promise (page shapes as (width, height) pairs, not a cartesian product)."""
from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from llm_perf_opt.config import to_typed_config
from llm_perf_opt.pipelines.common import CONF_DIR
from llm_perf_opt.pipelines.launchers import check_launcher, expected_job_overrides
from llm_perf_opt.errors import ConfigError

MODES = ["tiny", "small", "base", "large", "gundam", "gundam_m"]
PAGES = {"letter_portrait": (1700, 2200), "letter_landscape": (2200, 1700), "a4_portrait": (1654, 2339),
         "a4_landscape": (2339, 1654), "square": (1600, 1600), "slide": (1920, 1080), "receipt": (800, 3000),
         "small": (600, 500)}


def compose_cfg(*overrides: str, hydra: bool = False):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides), return_hydra_config=hydra)


def planned(cfg, *cli: str) -> list[list[str]]:
    """The jobs of `--multirun CLI...` with cfg's sweeper params (compose() refuses sweep syntax itself)."""
    multirun = OmegaConf.create({"hydra": {"sweeper": OmegaConf.to_container(cfg.hydra.sweeper),
                                           "overrides": {"task": list(cli)}}})
    return expected_job_overrides(multirun)


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
    files = {p.stem for p in (Path(CONF_DIR) / "page").glob("*.yaml")}
    assert files == set(PAGES)
    for name, (w, h) in PAGES.items():
        cfg = to_typed_config(compose_cfg(f"page={name}", "workload=gundam"))
        assert (cfg.workload.page.width, cfg.workload.page.height) == (w, h)
        assert cfg.workload.name == "gundam"  # the preset touches the page only


def test_no_page_preset_keeps_the_default_page_and_overrides_still_win():
    assert to_typed_config(compose_cfg()).workload.page.width == 1700
    cfg = to_typed_config(compose_cfg("page=slide", "workload.page.height=1200"))
    assert (cfg.workload.page.width, cfg.workload.page.height) == (1920, 1200)


def test_free_command_line_sweeps_expand():
    cfg = compose_cfg(hydra=True)
    jobs = planned(cfg, "workload.base_size=640,1024", "workload.crop_mode=true,false", "page=slide,receipt")
    assert len(jobs) == 8 and ["workload.base_size=1024", "workload.crop_mode=False", "page=receipt"] in jobs


@pytest.mark.parametrize("target, refused", [
    ("hydra._internal.core_plugins.basic_launcher.BasicLauncher", False),
    ("hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher", False),
    ("hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher", False),
    ("hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher", True),
])
def test_check_launcher(target, refused):
    cfg = compose_cfg(f"hydra.launcher._target_={target}", hydra=True)
    if refused:
        with pytest.raises(ConfigError, match="not supported.*TorchLens"):
            check_launcher(cfg)
    else:
        check_launcher(cfg)
