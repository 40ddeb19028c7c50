"""The entry points: one module per job (`llm-perf-opt JOB`, `./dev JOB`, `pipelines/JOB.py`), each a few lines
composing the layers below; `cli` dispatches to them. The top layer of the import order.

| file | job |
|---|---|
| `cli.py` | the installed console script `llm-perf-opt JOB [args]`: the jobs, exit codes, where outputs go |
| `args.py` | the argparse parser of the plain commands and benchmarks: one-line errors, bounded integers |
| `trace.py` | `./dev trace`: session, inputs, forward, call graph, grouping, costs and verification for one config |
| `analyze.py` | `./dev analyze`: the analytic cost model alone, no model built; with `hardware=NAME` times, serving |
| `size.py` | `./dev size`: the compute, bandwidth and memory a device needs for serving targets, and the replicas |
| `calibrate.py` | `./dev calibrate`: measure the roof of the device this job runs on and print it (cached) |
| `export.py` | `./dev export`: torch.export of submodules at the shapes of one workload and page |
| `group.py` | `./dev group RUN_DIR`: regroup and re-render an existing `callgraph.json` without tracing |
| `explore.py` | `./dev explore RUN_DIR`: open a run in Model Explorer |
| `report.py` | `./dev report`: aggregate a multirun, or sweep page sizes analytically |
| `compare.py` | `./dev compare RUN_A RUN_B`: two runs side by side (`report.compare`) |
| `verify.py` | `llm-perf-opt verify`: the verification gate (`llm_perf_opt.gate.run`) |
"""

from llm_perf_opt import families

# Before any job composes `conf/`: the model families' workload schemas in Hydra's ConfigStore
# (`workload_schema/<family>`, which their workload files name), whichever way the job starts (`jobs.cli`,
# `python -m llm_perf_opt.jobs.<job>`, a test calling a job in-process). The layers below cannot ask the families.
families.register_configs()
