"""Where a report writes (`./dev compare`, `./dev report --analytic`): protected like a run directory.

A report's outputs are results too, so they are never replaced without a word:

* `claim_output(dir, names, ...)`: `--out DIR` (or the analytic report's OUT_DIR) is refused, in one line naming
  the option, when it is an existing file, a run or sweep directory or a directory inside one (a report never
  drops files among a trace's), or when it holds the outputs of an earlier report (`names`); with `overwrite`
  (`--overwrite`) those earlier outputs are removed first, so the directory never mixes two reports;
* `unique_dir(parent, stem)`: a default directory of its own for every report (`stem`, else `stem-2`, `stem-3`,
  ...), made atomically, so two reports started together never meet;
* `discard_outputs`: a report that fails half-way (a full disk) takes back what it wrote.

Layer: `errors` only (a run directory is known by what its job and Hydra leave in it).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Optional, Sequence

from llm_perf_opt.errors import ConfigError

# What marks a directory as a run's or a sweep's: the job's summary, Hydra's record, a sweep's plan
RUN_MARKERS = ("summary.json", ".hydra", "multirun.yaml")
MAX_UNIQUE = 10_000  # stem-2 ... stem-10000: beyond that the parent is full of reports (refused in one line)


def run_directory_of(path: Path) -> Optional[Path]:
    """`path` itself or the nearest directory above it that is a run or sweep directory (`RUN_MARKERS`), else None."""
    for d in (path, *path.parents):
        if d.is_dir() and any((d / m).exists() for m in RUN_MARKERS):
            return d
    return None


def claim_output(
    directory: str | os.PathLike, names: Sequence[str], *, field: str, overwrite: bool = False, create: bool = True
) -> Path:
    """`directory`, created, for a report writing `names` (files, or directories such as `analytic_plots`):
    ConfigError naming `field` when it is a file, a run or sweep directory (or inside one), or already holds
    one of `names` (unless `overwrite`: then they are removed first). `create=False`: the checks only, nothing
    removed or made (a report checks its output before its work, and claims it when it writes)."""
    out = Path(directory).absolute()
    if out.exists() and not out.is_dir():
        raise ConfigError.field(field, str(out), "is an existing file, not a directory")
    run = run_directory_of(out)
    if run is not None:
        where = "is" if run == out else f"is inside {run}, which is"
        raise ConfigError.field(
            field,
            str(out),
            f"{where} a run or sweep directory (it holds {', '.join(m for m in RUN_MARKERS if (run / m).exists())}): "
            "a report never writes among a job's files; choose another directory",
        )
    earlier = [out / n for n in names if (out / n).exists()]
    if earlier and not overwrite:
        shown = ", ".join(p.name for p in earlier[:4]) + (" ..." if len(earlier) > 4 else "")
        raise ConfigError.field(
            field,
            str(out),
            f"already holds an earlier report ({shown}); pass --overwrite to replace it, or choose another directory",
        )
    if not create:
        return out
    for p in earlier:
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    out.mkdir(parents=True, exist_ok=True)
    return out


def unique_dir(parent: str | os.PathLike, stem: str, *, field: str = "--out") -> Path:
    """A new directory `parent/stem` (or `stem-2`, `stem-3`, ...: the first free name), created here, so a
    default output never replaces an earlier one."""
    root = Path(parent).absolute()
    root.mkdir(parents=True, exist_ok=True)
    for i in range(1, MAX_UNIQUE + 1):
        candidate = root / (stem if i == 1 else f"{stem}-{i}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise ConfigError.field(
        field, str(root / stem), f"{MAX_UNIQUE:,} reports of that name exist: name one with {field}"
    )


def discard_outputs(directory: str | os.PathLike, names: Sequence[str], made: bool) -> None:
    """A report that failed half-way (a full disk, Ctrl-C) leaves nothing: the directory when it was `made` for
    it, else the outputs `names` it had begun to write (never anything else in it)."""
    out = Path(directory)
    if made:
        shutil.rmtree(out, ignore_errors=True)
        return
    for n in names:
        p = out / n
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() and not p.is_symlink() else p.unlink(missing_ok=True)
