"""Run control shared by every job: run directories and their locks, the job's life (status, memory, signals),
Hydra callbacks and launchers, progress lines.

Its data in the run: `run_config.py` (the `run` config section), `run_summary.py` (summary.json's `memory` and
`error`).
"""
