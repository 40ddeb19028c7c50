"""Refusals made before a job, Hydra or the model families are imported: a bound any job shares, checked on the
command line itself, so that a `workload.batch` of 10^9 is one line in a fraction of the start-up time whatever the
job. Imports only `errors` and `config.fields` (whose message is the one the job's own validation gives); anything
else, a malformed value included, is left to the job."""

from __future__ import annotations

import re
import sys
from typing import Optional, Sequence

BATCH_KEYS = ("workload.batch", "+workload.batch", "++workload.batch")


def batch_beyond_bound(overrides: Sequence[str]) -> Optional[str]:
    """The one line for a `workload.batch` beyond `config.fields.MAX_BATCH` (a value or a sweep's comma list); None
    when nothing is beyond the bound."""
    from llm_perf_opt.config.fields import _batch
    from llm_perf_opt.errors import ConfigError

    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or key not in BATCH_KEYS:
            continue
        for part in value.split(","):
            if re.fullmatch(r"\s*\d+\s*", part) is None:
                continue
            try:
                _batch("workload.batch", int(part))
            except ConfigError as exc:
                return str(exc)
    return None


def refused(overrides: Sequence[str]) -> Optional[int]:
    """Print the refusal and return the exit code (`ExitCode.CONFIG`) when the command line is refused here."""
    from llm_perf_opt.errors import ExitCode

    said = batch_beyond_bound(overrides)
    if said is None:
        return None
    print(f"error: {said}", file=sys.stderr)
    return ExitCode.CONFIG
