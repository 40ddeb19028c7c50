"""Helpers of the export tests (importable: conftest puts this directory on sys.path)."""

from __future__ import annotations

from hydra import compose, initialize_config_dir

from llm_perf_opt.config import to_typed_config
from llm_perf_opt.runs.entry import CONF_DIR

# Gundam on a 1300x700 page: a 2x1 crop grid (2 crops of 640) and the 1024 global view, so every
# submodule exists while the crop batch stays small.
GUNDAM_SMALL_PAGE = ("workload=gundam", "workload.page.width=1300", "workload.page.height=700")


def typed_cfg(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return to_typed_config(compose(config_name="config", overrides=list(overrides)))


def open_session(cfg):
    """The session as the jobs open it: through the config's family (the export stage reaches the family's
    parts and expert loop through `session.family`)."""
    from llm_perf_opt.families import for_config

    return for_config(cfg).open_session(cfg.model, cfg.runtime)


def job_inputs(cfg):
    from llm_perf_opt.prepare.builders import build_job_inputs
    from llm_perf_opt.prepare.validate import validate

    return build_job_inputs(validate(cfg))
