"""The entry points: one module per job (`llm-perf-opt JOB`, `./dev JOB`, `pipelines/JOB.py`), each a few lines
composing the layers below; `cli` dispatches to them."""
