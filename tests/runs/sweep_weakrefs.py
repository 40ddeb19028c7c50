"""Run a real multirun of the trace job in this one process (Hydra's basic launcher, as `./dev sweep`)
and check, after each job, that the model and the parameters that job built are gone.

A spy around `DeepSeekOCRSession.open` (it calls the real one) keeps weak references to each session's
model and parameters; a Hydra callback added on the command line (`+hydra.callbacks.weakrefs`) checks
them in `on_job_end`, after the job returned, without collecting garbage itself. One JSON line per job on
stdout, then the exit status of the sweep:

    {"job": 0, "models": 1, "alive_models": 0, "alive_params": 0, "rss": ...}
    {"exit": 0}

Usage: python sweep_weakrefs.py SWEEP_DIR [overrides...]   (tests/runs/test_job_memory.py runs it)
"""

from __future__ import annotations

import json
import sys
import weakref
from typing import Any

from hydra.experimental.callback import Callback

from llm_perf_opt.dsocr.session import DeepSeekOCRSession
from llm_perf_opt.jobs import cli
from llm_perf_opt.runs.memory import rss_bytes

MODELS: list[weakref.ref] = []
PARAMS: list[weakref.ref] = []
_open = DeepSeekOCRSession.open.__func__


def spy_open(cls, *args: Any, **kwargs: Any) -> DeepSeekOCRSession:
    session = _open(cls, *args, **kwargs)
    MODELS.append(weakref.ref(session.model))
    PARAMS.extend(weakref.ref(p) for p in session.model.parameters())
    return session


DeepSeekOCRSession.open = classmethod(spy_open)


class WeakrefCheck(Callback):
    def on_job_end(self, config: Any, job_return: Any = None, **kwargs: Any) -> None:
        print(
            json.dumps(
                {
                    "job": int(config.hydra.job.num),
                    "models": len(MODELS),
                    "alive_models": sum(r() is not None for r in MODELS),
                    "alive_params": sum(r() is not None for r in PARAMS),
                    "rss": rss_bytes(),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    sweep_dir, *overrides = sys.argv[1:]
    code = cli.main(
        [
            "sweep",
            *overrides,
            f"hydra.sweep.dir={sweep_dir}",
            f"+hydra.callbacks.weakrefs._target_={__name__}.WeakrefCheck",
        ]
    )
    print(json.dumps({"exit": int(code)}), flush=True)
