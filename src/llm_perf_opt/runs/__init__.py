"""Run control shared by every job: run directories and their locks, the job's life (status, memory, signals),
Hydra callbacks and launchers, progress lines. Generic: it knows jobs and run directories, never a model.

| file | job |
|---|---|
| `entry.py` | what every Hydra entry point shares: config registration, run directory, progress, how a job ends |
| `dirs.py` | the Hydra callback that gives each run its own directory, locked for the job's life |
| `job_run.py` | what a job is doing now, so that however it ends, `summary.json` says so truly |
| `signals.py` | Ctrl-C, SIGTERM and SIGHUP end a job the same way: one line, status `interrupted` naming the signal |
| `memory.py` | each job's own peak memory, and everything a job built handed back before the next job starts |
| `callbacks.py` | the project's Hydra callbacks (`SweepProgress`: a long multirun readable on stderr) |
| `launchers.py` | which Hydra launchers a sweep may use (basic, submitit; joblib refused) |
| `run_config.py` | the `run` config section: the run directory itself |
| `run_summary.py` | summary.json's `memory` and `error` sections: run control's figures of the job |
"""
