"""The trace job: its stages, in the order it runs them (`job.STAGES`; `stage.run_stages` is the loop). Above the
model families' registry and `prepare`: a family reaches it as an object (`families`), never by import.

| stage | file | reads | writes |
|---|---|---|---|
| validate | `prepare/validate.py` | the composed config | `ValidJob` (every rule checked before any work) |
| inputs | `prepare/builders.py`, `job.py` | the job | the inputs, the export plan; summary.json from now on |
| analytic | `prepare/builders.py`, `job.py` | the job, the layout | `costs.json`, summary `analytic` |
| session | `job.py` | model, runtime | the open session, summary `session`, `params` |
| forward | `job.py` | session, inputs | summary `forward` (one plain timed forward) |
| profile | `profile.py` | session, inputs | `profile.json`, `profile.trace.json`, summary `profile` |
| capture | `job.py`, `decode.py` | session, inputs, profile | `callgraph.json`, runtime log, grouped graph, routing |
| verify | `job.py` | session, inputs, analytic | `verification.json`, summary `flops`, `parts`, `verification` |
| decode | `decode.py` | session, inputs, analytic | summary `decode` (per-step FLOPs, KV bytes, times) |
| export | `export/stage.py` | session, inputs, export plan | `export/`, summary `export` |
| roofline | `roofline.py` | analytic, profile, decode | `roofline.json`, `roofline.svg/png`, summary `roofline` |
| serving | `serving.py` | analytic | `serving.json`, `curve.csv/svg/png`, summary `serving` |
| graph costs | `graph.py` | callgraph, analytic, verify, profile | `module_costs.json`, renderings, `model_explorer/` |

The session is open from `session` to `export` and closed (the model dropped) before `roofline`. Each stage is a
`stage.Stage` (its name, what it reads and writes, when it runs, whether it needs the session); the job ends with
the run page (`report.run_page`). The validation and the builders every job shares are the `prepare` package's.

| file | job |
|---|---|
| `job.py` | the stage list and the stages written in the job itself (inputs, analytic, forward, capture, verify) |
| `stage.py` | `Stage`, the job's state `TraceRun`, and `run_stages` (the run control, written once) |
| `trace_config.py` | the `trace` config section (which stages run) |
| `trace_summary.py` | summary.json's sections the stages write themselves: forward, decode, roofline, graph |
| `profile.py` | the profile stage: measured time per module call of the job's forward (`measure.profile`) |
| `roofline.py` | the roofline stage: predicted times on the job's roofs, set against the measured ones |
| `serving.py` | the serving stage: with `hardware=` set, the serving figures of the job's page at `workload.batch` |
| `graph.py` | the "costs on the graph" stage: every per-module figure as metric tables on the grouped graph |
| `decode.py` | the decode stage, the capture's plan and the routing record |
"""
