"""`./dev trace`: session, inputs, forward, call graph, grouping, analytic costs and verification for one config."""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from llm_perf_opt.prepare.validate import validate
from llm_perf_opt.runs.entry import CONF_DIR, reports_errors, run_dir


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
@reports_errors(check=validate)  # before the run directory is created
def main(cfg: DictConfig) -> None:
    from llm_perf_opt.trace.job import run_trace  # torch and the model stack: only once the config is valid

    run_trace(cfg, run_dir())


if __name__ == "__main__":
    main()
