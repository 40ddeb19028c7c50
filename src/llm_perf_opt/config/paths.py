"""Where the Hydra configuration lives: `conf/` at the repository root, shipped as package data.

An editable install and a plain `pip install .` both expose it as the package `llm_perf_opt.conf`
(pyproject maps that package to the top-level `conf/` directory); a source checkout that was never
installed falls back to the directory itself. Nothing here imports torch.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from llm_perf_opt.errors import ConfigError


@lru_cache(maxsize=1)
def conf_dir() -> Path:
    """The directory holding `config.yaml` and the config groups."""
    candidates = []
    try:
        from importlib.resources import files

        candidates.append(Path(str(files("llm_perf_opt.conf"))))
    except (ModuleNotFoundError, TypeError):
        pass
    candidates.append(Path(__file__).resolve().parents[3] / "conf")
    for path in candidates:
        if (path / "config.yaml").is_file():
            return path
    raise ConfigError(
        f"the Hydra configuration (config.yaml) was not found in {', '.join(map(str, candidates))}: a broken install?"
    )


# The directory the user ran the command from. `./dev` changes into the repository before it runs a job, so
# it passes the user's directory on in this variable; the console script runs where the user is already.
USER_CWD_ENV = "LLM_PERF_OPT_CWD"


def user_cwd() -> Path:
    """Where relative paths the user typed are meant from: $LLM_PERF_OPT_CWD (set by `./dev`), else the cwd."""
    import os

    given = os.environ.get(USER_CWD_ENV)
    return Path(given) if given and Path(given).is_absolute() else Path.cwd()


def user_path(path: str | Path) -> Path:
    """A path the user gave (`~` expanded), absolute: relative ones are taken from `user_cwd()`."""
    import os

    p = Path(path).expanduser()
    return Path(os.path.normpath(p if p.is_absolute() else user_cwd() / p))


# The calibration cache (`measure.calibrate` writes it; the time model reads this host's figures from it): one rule
# for every job, reader and config. `hardware.cache_dir` when set, else this variable, else DEFAULT_CALIBRATION_DIR.
CALIBRATION_DIR_ENV = "LLM_PERF_OPT_CALIBRATION_DIR"
DEFAULT_CALIBRATION_DIR = "tmp/calibration"  # relative to the working directory: the repository root for ./dev


def calibration_dir(configured: str | os.PathLike[str] | None = None) -> str:
    """Where calibrations are cached: `configured` (hardware.cache_dir) when given, else $LLM_PERF_OPT_CALIBRATION_DIR
    when set, else `tmp/calibration` (relative to the working directory)."""
    if configured is not None and str(configured):
        return str(configured)
    return os.environ.get(CALIBRATION_DIR_ENV) or DEFAULT_CALIBRATION_DIR
