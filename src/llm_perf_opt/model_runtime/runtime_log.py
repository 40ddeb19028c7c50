"""`RuntimeLog`: the structured events the runtime patches record while a forward runs.

Each event is a plain dict `{"seq": n, "event": kind, ...fields}` with `seq` increasing by one per event
in the order they were recorded (0, 1, 2, ...), so interleaved kinds (`vision_inputs`, `llm_stack`,
`decode_step`) keep their order. The log also keeps which patches were active (`patches`), so a reader
knows what the events can contain. Saved as the `llm_perf_opt.runtime_log` artifact (schema version 1).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Optional

from llm_perf_opt.artifacts import file_in, read_artifact, to_jsonable, write_artifact
from llm_perf_opt.errors import ArtifactError

RUNTIME_LOG_SCHEMA = "llm_perf_opt.runtime_log"
RUNTIME_LOG_VERSION = 1
RUNTIME_LOG_FILE = "runtime_log.json"


class RuntimeLog:
    """An ordered list of events (dicts with a monotonically increasing `seq`) plus the active patches."""

    def __init__(self, events: Iterable[Mapping[str, Any]] = (), patches: Iterable[Mapping[str, Any]] = ()) -> None:
        self._lock = threading.Lock()
        self._events: list[dict[str, Any]] = []
        self.patches: list[dict[str, Any]] = [dict(p) for p in patches]
        for event in events:
            self._append(dict(event))

    # ------------------------------------------------------------------ recording
    def _append(self, event: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self._events and "seq" in event and event["seq"] <= self._events[-1]["seq"]:
                raise ArtifactError(
                    f"runtime log: event seq {event['seq']} does not increase (previous {self._events[-1]['seq']})"
                )
            event.setdefault("seq", self._events[-1]["seq"] + 1 if self._events else 0)
            # keep `seq` and `event` first, for readable JSON
            ordered = {"seq": event.pop("seq"), "event": event.pop("event")}
            ordered.update(event)
            self._events.append(ordered)
            return ordered

    def record(self, event: str, **fields: Any) -> dict[str, Any]:
        """Append one event of kind `event` with JSON-able `fields`; returns the stored dict."""
        if not isinstance(event, str) or not event:
            raise ValueError("event kind must be a non-empty string")
        for reserved in ("seq", "event"):
            if reserved in fields:
                raise ValueError(f"field name {reserved!r} is reserved")
        return self._append({"event": event, **{k: to_jsonable(v) for k, v in fields.items()}})

    def note_patch(self, name: str, targets: Iterable[str]) -> None:
        """Remember that patch `name` was active (with the qualified names it replaced)."""
        with self._lock:
            self.patches.append({"name": name, "targets": list(targets)})

    def clear(self) -> None:
        with self._lock:
            self._events.clear()

    # ------------------------------------------------------------------ queries
    def events(self, kind: Optional[str] = None) -> list[dict[str, Any]]:
        """All events in order, or only those of one kind (copies of the list, not of the dicts)."""
        with self._lock:
            if kind is None:
                return list(self._events)
            return [e for e in self._events if e["event"] == kind]

    def first(self, kind: str) -> Optional[dict[str, Any]]:
        found = self.events(kind)
        return found[0] if found else None

    def last(self, kind: str) -> Optional[dict[str, Any]]:
        found = self.events(kind)
        return found[-1] if found else None

    def count(self, kind: Optional[str] = None) -> int:
        return len(self.events(kind))

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.events():
            out[e["event"]] = out.get(e["event"], 0) + 1
        return out

    def kinds(self) -> list[str]:
        return list(self.counts())

    def patch_names(self) -> list[str]:
        return [p["name"] for p in self.patches]

    def __len__(self) -> int:
        return self.count()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.events())

    def __repr__(self) -> str:
        return f"RuntimeLog({len(self)} events, counts={self.counts()}, patches={self.patch_names()})"

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        return {
            "patches": [dict(p) for p in self.patches],
            "counts": self.counts(),
            "events": [dict(e) for e in self.events()],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "runtime log") -> "RuntimeLog":
        events = data.get("events")
        if not isinstance(events, list):
            raise ArtifactError(f"{source}: field 'events' must be a list")
        for i, e in enumerate(events):
            if not isinstance(e, Mapping):
                raise ArtifactError(f"{source}: events[{i}] must be an object")
            for key, kind in (("seq", int), ("event", str)):
                if key not in e:
                    raise ArtifactError(f"{source}: events[{i}] lacks field '{key}'")
                if not isinstance(e[key], kind) or isinstance(e[key], bool):
                    raise ArtifactError(f"{source}: events[{i}].{key} must be {kind.__name__}, found {e[key]!r}")
        patches = data.get("patches", [])  # optional: missing metadata reads as empty
        if not isinstance(patches, list) or not all(isinstance(p, Mapping) for p in patches):
            raise ArtifactError(f"{source}: field 'patches' must be a list of objects")
        try:
            return cls(events, patches)
        except ArtifactError as exc:
            raise ArtifactError(f"{source}: {exc}") from None

    def save(self, path: str | os.PathLike, config: Any = None) -> Path:
        """Write `runtime_log.json` (or `path` itself when it names a .json file) atomically."""
        path = Path(path)
        if path.suffix != ".json":
            path = path / RUNTIME_LOG_FILE
        return write_artifact(path, RUNTIME_LOG_SCHEMA, RUNTIME_LOG_VERSION, self.to_dict(), config=config)


def load_runtime_log(path: str | os.PathLike) -> RuntimeLog:
    """Read a `runtime_log.json` (or the directory holding one); unknown versions and bad events raise."""
    path = file_in(path, RUNTIME_LOG_FILE)
    _, data = read_artifact(path, RUNTIME_LOG_SCHEMA, [RUNTIME_LOG_VERSION], required=["events"])
    return RuntimeLog.from_dict(data, source=str(path))
