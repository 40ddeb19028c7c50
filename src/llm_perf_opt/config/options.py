"""Refuse an unknown config-group option (`hardware=h999`) with one line, before Hydra composes.

Hydra reports a missing group option in a dozen lines (options, search path, a hint); the project's rule
is one line naming the field. `check_group_options(argv)` looks at `group=option` overrides whose group
is a directory of `conf/` and exits 2 with `error: hardware='h999' is invalid: one of ...` when the
option has no YAML file. Sweep syntax (`a,b`, `choice(...)`, globs) is checked per listed value or left
to Hydra.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional, Sequence

from llm_perf_opt.config.paths import conf_dir
from llm_perf_opt.errors import ConfigError

# YAML files inside a group directory that are data, not options of the group.
DATA_FILES: dict[str, tuple[str, ...]] = {"verify": ("expected",)}  # the gate's pinned totals (verify_expected)


def unknown_group_option(argv: Sequence[str], conf: Optional[Path] = None) -> Optional[ConfigError]:
    conf = Path(conf) if conf is not None else conf_dir()
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep or key.startswith(("+", "~", "hydra.", "hydra/")) or "." in key:
            continue
        folder = conf / key
        if not folder.is_dir() or any(c in value for c in "()[]*?{}$"):
            continue
        options = group_options(folder, key)
        for option in value.split(","):
            if option and option != "null" and option not in options:
                return ConfigError.field(key, option, f"one of {', '.join(options)}")
    return None


def group_options(folder: Path, key: str = "") -> list[str]:
    """The options of a group directory: its YAML files, nested ones as Hydra names them (`ocr2/default`)."""
    names = ("/".join(p.relative_to(folder).with_suffix("").parts) for p in folder.rglob("*.yaml"))
    return sorted(n for n in names if n not in DATA_FILES.get(key, ()))


def check_group_options(argv: Optional[Sequence[str]] = None) -> None:
    """Exit 2 with one line on stderr when an override names a group option that does not exist."""
    problem = unknown_group_option(sys.argv[1:] if argv is None else argv)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        sys.exit(2)
