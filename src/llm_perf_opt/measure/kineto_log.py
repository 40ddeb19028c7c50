"""Kineto's console lines, set at their source before the first torch.profiler session of the process.

This torch's Kineto prints `USDT:... SyncActivityProfilerHandler.cpp:52] profiler_start` / `profiler_stop`
on stderr around every profiler session: markers meant for USDT probes, written through Kineto's own
logger at the `USDT` severity. Kineto reads its threshold once, from `KINETO_LOG_LEVEL`, when the profiler
is first used in the process (`libkineto_init`). Its levels are VERBOSE 0, INFO 1, WARNING 2, STAGE 3,
ERROR 4, USDT 5: USDT sits above ERROR, so the one threshold that hides it (6) also hides Kineto's own
error lines; the profile stage checks its results itself (coverage, unattributed kernels, `problems`).
A user who sets `KINETO_LOG_LEVEL` keeps that choice (e.g. `KINETO_LOG_LEVEL=3` to see every stage).
"""

from __future__ import annotations

import os

KINETO_LOG_LEVEL = "KINETO_LOG_LEVEL"
QUIET = "6"  # above USDT (5), the highest severity Kineto logs


def quiet_kineto() -> bool:
    """Set Kineto's threshold above its USDT markers unless the user chose one; True when this set it.

    Takes effect only before the process' first profiler session (Kineto reads it once)."""
    if os.environ.get(KINETO_LOG_LEVEL):
        return False
    os.environ[KINETO_LOG_LEVEL] = QUIET
    return True
