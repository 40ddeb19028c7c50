"""The entry points: one module per job (`llm-perf-opt JOB`, `./dev JOB`, `pipelines/JOB.py`), each a few lines
composing the layers below; `cli` dispatches to them."""

from llm_perf_opt import families

# Before any job composes `conf/`: the model families' workload schemas in Hydra's ConfigStore
# (`workload_schema/<family>`, which their workload files name), whichever way the job starts (`jobs.cli`,
# `python -m llm_perf_opt.jobs.<job>`, a test calling a job in-process). The layers below cannot ask the families.
families.register_configs()
