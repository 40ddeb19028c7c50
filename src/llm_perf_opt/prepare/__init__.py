"""What every job does before its own work, the same way: the configuration checked and the job's model and
inputs built from it. The trace job, `analyze`, `size`, `export` and the gate's pins all start here, so a
number means the same thing in each.

| file | job |
|---|---|
| `validate.py` | the whole configuration checked before any work, the schemas' plain rules then the model family's |
| `builders.py` | from a `ValidJob`: the analytic model with the job's knobs, in a roof's dtype; the job's inputs |

Layer: above the model families' registry (`families`), below the trace stages, the gate and the jobs.
"""
