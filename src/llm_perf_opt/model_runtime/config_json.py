"""A vendor model directory's `config.json`, read as a plain dict (no torch): one ConfigError naming the file for
anything wrong with it. The vendor loader (`vendor.read_vendor_config`) and each family's spec reader use it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llm_perf_opt.errors import ConfigError


def read_config_json(path: Path) -> dict[str, Any]:
    """A `config.json` as a dict; one ConfigError naming the file for a missing, unreadable or non-object file."""
    if not path.is_file():
        raise ConfigError(f"model config {path} does not exist")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a JSON object at top level")
    return raw
