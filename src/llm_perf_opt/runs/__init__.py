"""Run control shared by every job: run directories and their locks, the job's life (status, memory, signals),
Hydra callbacks and launchers, progress lines."""
