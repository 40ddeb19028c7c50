"""Small helpers of the routing tests: a fake session around a bare model, for the runtime patches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class BareSession:
    """What the runtime patches read from a session: the model, and where its weights came from."""

    model: Any
    weights: str = "random"
