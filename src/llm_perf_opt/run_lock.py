"""A run directory belongs to one process: a lock held for the job's life, and a refusal to mix two runs.

`claim(dir)` takes an exclusive `flock` on `dir/.lock` (created if needed) and keeps it until `release()`
or until the process ends, however it ends (the kernel drops the lock of a killed process). So:

* a second run aimed at the same directory finds the lock taken and is refused, naming the holder;
* a directory that already holds a run's results (`summary.json`, `costs.json`, ... any file of
  `run_artifacts.RUN_FILES`, or for a sweep `multirun.yaml` and job directories) is refused too, unless
  `overwrite=True` (`run.overwrite=true`): then the previous run's result files are removed first, so the
  directory never mixes the files of two runs;
* `holder(dir)` tells, from any process, whether a live process holds the directory now (the report
  tells a job still running from one that was killed with it).

The lock file keeps the holder's pid, host, start time and command line for the messages. `flock` works
on local file systems and on NFS (Linux emulates it with POSIX locks there), which SLURM sweeps use.
Layer: imports `errors` and `run_artifacts` only; no torch.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from llm_perf_opt.errors import ConfigError

LOCK_FILE = ".lock"

try:  # POSIX; on other systems runs are not locked (and say so in holder())
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


@dataclass
class RunLock:
    """An exclusive lock on one run (or sweep) directory, held while this object is open."""

    dir: Path
    fd: Optional[int]

    def release(self) -> None:
        if self.fd is not None:
            try:
                if fcntl is not None:
                    fcntl.flock(self.fd, fcntl.LOCK_UN)
            finally:
                os.close(self.fd)
                self.fd = None

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _read_info(path: Path) -> dict[str, Any]:
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
        return info if isinstance(info, dict) else {}
    except (OSError, ValueError):
        return {}


def holder(directory: str | os.PathLike) -> Optional[dict[str, Any]]:
    """The holder's {pid, host, started, argv} when a live process holds `directory`'s lock, else None."""
    path = Path(directory) / LOCK_FILE
    if fcntl is None or not path.is_file():
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_info(path) or {"pid": None}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _describe(info: dict[str, Any]) -> str:
    parts = [f"pid {info['pid']}" if info.get("pid") else "another process"]
    if info.get("host") and info.get("host") != socket.gethostname():
        parts.append(f"on {info['host']}")
    if info.get("started"):
        parts.append(f"since {info['started']}")
    return " ".join(parts)


def previous_results(directory: Path, sweep: bool = False) -> list[Path]:
    """What another run left in `directory`: its result files (a run directory), or for a sweep directory
    `multirun.yaml`, the job directories and the report files."""
    from llm_perf_opt.run_artifacts import RUN_FILES

    if not directory.is_dir():
        return []
    if not sweep:
        return [directory / f.file for f in RUN_FILES if f.file != LOCK_FILE and (directory / f.file).is_file()]
    found = [p for p in (directory / "multirun.yaml",) if p.is_file()]
    found += sorted(p for p in directory.iterdir() if p.is_dir() and p.name.isdigit() and (p / ".hydra").is_dir())
    found += sorted(p for p in directory.glob("report.*") if p.is_file())
    found += [p for p in (directory / "report_plots",) if p.is_dir()]
    return found


def _remove(paths: list[Path]) -> None:
    for p in paths:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)


def hold(directory: str | os.PathLike, *, field: str = "RUN_DIR") -> RunLock:
    """Lock an existing run directory for a command that rewrites some of its files (`./dev group`): refused
    with one line while a run holds it; its results are kept (unlike `claim`)."""
    directory = Path(directory).absolute()
    try:
        fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ConfigError.field(field, str(directory), f"cannot be written: {exc.strerror}") from None
    _lock_or_refuse(fd, directory / LOCK_FILE, field, "a running job", "wait for it to end")
    return RunLock(directory, fd)


def _lock_or_refuse(fd: int, lock_path: Path, field: str, holder: str, advice: str) -> None:
    """Take the exclusive lock on `fd` without waiting; when another process holds it, close `fd` and raise
    one ConfigError on `field` naming the directory, the holder (from the lock file) and what to do."""
    if fcntl is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        info = _read_info(lock_path)
        os.close(fd)
        raise ConfigError.field(
            field, str(lock_path.parent), f"is in use by {holder} ({_describe(info)}); {advice}"
        ) from None


def claim(
    directory: str | os.PathLike,
    *,
    overwrite: bool = False,
    sweep: bool = False,
    field: str = "hydra.run.dir",
    lock_file: str = LOCK_FILE,
    clear: bool = False,
) -> RunLock:
    """Lock `directory` for this process (creating it), or raise ConfigError with one line saying why not.

    `field` names the setting that chose the directory, for the message; `sweep` judges it as a sweep
    directory (see `previous_results`); `lock_file` names the lock (the verification gate has its own).
    `clear` (a single run's directory, before Hydra writes into it): with `overwrite`, every entry of the
    previous run goes, not only its result files (`model_explorer/`, `export/`, plots, logs), so nothing
    of it can be served beside the new run's files."""
    directory = Path(directory).absolute()
    if directory.exists() and not directory.is_dir():
        raise ConfigError.field(field, str(directory), "is an existing file, not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ConfigError.field(field, str(directory), f"cannot be created or written: {exc.strerror}") from None
    lock = RunLock(directory, fd)
    _lock_or_refuse(fd, directory / lock_file, field, "another run", "choose another directory")
    left = previous_results(directory, sweep=sweep)
    if left and not overwrite:
        lock.release()
        names = ", ".join(p.name + ("/" if p.is_dir() else "") for p in left[:4]) + (" ..." if len(left) > 4 else "")
        raise ConfigError.field(
            field,
            str(directory),
            f"already holds the results of another {'sweep' if sweep else 'run'} "
            f"({names}); pass run.overwrite=true to replace it, or choose another directory",
        )
    if left and clear:
        left = [p for p in directory.iterdir() if p.name != lock_file]
    if left:
        _remove(left)
    info = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "argv": sys.argv,
    }
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
    except OSError as exc:  # a full disk: the run could write nothing either
        lock.release()
        raise ConfigError.field(field, str(directory), f"cannot be written: {exc.strerror}") from None
    return lock
