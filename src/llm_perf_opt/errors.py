"""One exception family, so a pipeline can print one clear line for anything the user can fix."""

from __future__ import annotations

import errno
import sys
from typing import Callable

MAX_VALUE_CHARS = 120  # a value echoed in an error line is cut beyond this (its length said instead)
MAX_MESSAGE_CHARS = 1500  # an error line is cut in the middle beyond this


def short(value: object, limit: int = MAX_VALUE_CHARS) -> str:
    """`repr(value)`, cut to about `limit` characters with the full length named (a 100 KB prompt is not
    echoed back whole)."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


def cut(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """A message longer than `limit` characters, its middle replaced by how much was left out."""
    if len(message) <= limit:
        return message
    head, tail = message[: limit * 2 // 3], message[-(limit // 3) :]
    return f"{head} [... {len(message) - len(head) - len(tail):,} characters cut ...] {tail}"


class PipelineError(Exception):
    """Base of every error the pipeline raises on purpose (bad input, missing file, changed vendor code).
    The message is one line for a person: a very long one is cut in the middle (`cut`)."""

    def __init__(self, *args: object) -> None:
        if len(args) == 1 and isinstance(args[0], str):
            args = (cut(args[0]),)
        super().__init__(*args)


class ConfigError(PipelineError, ValueError):
    """A configuration value is invalid: the message names the field, the value and what is allowed."""

    @classmethod
    def field(cls, name: str, value: object, allowed: str) -> "ConfigError":
        return cls(f"{name}={short(value)} is invalid: {allowed}")


class ArtifactError(PipelineError):
    """An artifact file is missing, corrupt, of an unknown schema version, or lacks a field."""


class PatchError(PipelineError):
    """A runtime patch target is missing (the vendor code changed) or a patch could not be applied."""


class TraceError(PipelineError):
    """The forward could not be captured (TorchLens refused it, or the graph is inconsistent)."""


class ExitCode:
    """The exit statuses of every job and command (`./dev`, `llm-perf-opt`); the README's table lists them.

    Plain ints (not an enum) so `sys.exit(ExitCode.CONFIG)` and shell scripts read the same numbers.
    """

    OK = 0
    ERROR = 1  # an unexpected error (a bug): Python prints the traceback
    CONFIG = 2  # bad input, found by Hydra or by the project: one line `error: ...` (config, arguments, files)
    JOBS_FAILED = 3  # a sweep, or the report of a sweep, in which at least one job failed or did not finish
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT): `interrupted at stage X; partial results in DIR`

    _MEANINGS = {
        "OK": "the job, sweep or report finished, and every job in it is `ok`",
        "ERROR": "an unexpected error (a bug): Python's traceback",
        "CONFIG": "bad input, whether Hydra finds it (`workload.base_size=abc`, an unknown key) or the project "
        "(a value out of range, a missing file, a run directory in use, changed vendor code, a directory that is not "
        "a sweep, a run that cannot be compared), or an output the file system refuses (a full disk, a read-only "
        "directory): one line `error: ...`, nothing written",
        "JOBS_FAILED": "a sweep in which a job failed, or `./dev report` of such a sweep (failed, interrupted, "
        "killed or never started)",
        "INTERRUPTED": "Ctrl-C (or SIGTERM/SIGHUP): one line `interrupted at stage X; partial results in DIR` (or "
        "`..., before any result was written: nothing kept`: the run directory is taken back); a second signal "
        "while it ends changes nothing",
    }

    @classmethod
    def all(cls) -> dict[str, int]:
        """{name: code} in the order above."""
        return {k: v for k, v in vars(cls).items() if k.isupper() and isinstance(v, int)}

    @classmethod
    def meaning(cls, name: str) -> str:
        """When a job ends with this code (the docs' exit-code table is generated from these)."""
        return cls._MEANINGS[name]


def one_line(exc: BaseException) -> str:
    """A multi-line message (Hydra's, OmegaConf's) as one line: the first line of the error and of its cause."""
    lines = [str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__]
    cause = exc.__cause__ or exc.__context__
    if cause is not None and str(cause).strip():
        first = str(cause).strip().splitlines()[0]
        if first not in lines[0]:
            lines.append(first)
    return cut(": ".join(line.rstrip(".: ") for line in lines))


def os_error_line(exc: OSError) -> str:
    """A file-system error (a read-only directory, a full disk, a missing file) as one line naming the path."""
    where = f"{exc.filename}: " if exc.filename else ""
    return cut(f"{where}{exc.strerror or exc}" + (f" (errno {exc.errno})" if exc.errno else ""))


# errno values of an output that cannot be written: a full disk or quota, a read-only file system, no permission, a
# file above the size limit. A job that meets one ends in one line (the path and the reason), never a traceback.
WRITE_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ("ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "EFBIG", "ENOTDIR")
    if hasattr(errno, name)
)


def is_write_error(exc: BaseException) -> bool:
    """An OSError of the file system refusing an output (`WRITE_ERRNOS`), not a bug."""
    return isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS


def one_line_errors(run: Callable[[], int]) -> int:
    """Run a plain (argparse) command: a PipelineError, or an OSError from the file system (a read-only
    directory, a full disk), ends it as one line `error: ...` on stderr and `ExitCode.CONFIG`, as the Hydra
    jobs end, instead of a traceback."""
    try:
        return run()
    except PipelineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.CONFIG
    except OSError as exc:
        print(f"error: {os_error_line(exc)}", file=sys.stderr)
        return ExitCode.CONFIG
