"""The Hydra configuration (`config.yaml` and one folder per config group), shipped as the package
`llm_perf_opt.conf` so a plain `pip install` carries it; `llm_perf_opt.config.paths.conf_dir()` finds it."""
