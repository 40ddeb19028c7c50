"""Time per stage, part and decode step of one run, measured and predicted at each time level, read from
the run's artifacts (never recomputed): what the run page's first chart and `compare` show.

Sources:
- predicted: `roofline.json` (`data.stages[stage].total` for a stage, `.summary[alias]` for a part). The time
  levels are read generically: an entry with a `levels` mapping ({level: {time_s, bound, ...}}) gives those;
  an entry without one is today's roofline, the `ideal` level (`time_s`, `bound`). The levels a run lists
  (`data.levels`, else those found) are shown; the known levels it lacks (`KNOWN_LEVELS`) are shown as
  absent, with the reason the artifact gives (`data.absent_levels`) or "not in this run's roofline.json".
- measured: `summary.json` `roofline.rows` (the trace job's measured time per stage and part, with how it was
  measured); `forward` there is the prefill stage.
- FLOPs and bytes: the same `roofline.json` entries (analytic); the decode steps' analytic and measured FLOPs
  from `verification.json`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from llm_perf_opt.analytic.time.convention import LEVEL_NAMES
from llm_perf_opt.errors import ArtifactError

KNOWN_LEVELS = LEVEL_NAMES  # the time model's levels, in display order
ROOFLINE_FILE = "roofline.json"
SUMMARY_FILE = "summary.json"
VERIFICATION_FILE = "verification.json"
STAGE_OF_MEASURED = {"prefill": "forward", "vision": "vision"}  # roofline stage -> summary roofline row name
NOT_IN_RUN = "not in this run's roofline.json"
STEP_MEASURED_BY = "decode step: median of profile.repeats plain forwards of the step (summary.json decode.rows)"


@dataclass
class TimeRow:
    """One stage, part or decode step."""

    key: str  # "prefill", "prefill/sam", "decode/lm_head", "decode step 1"
    label: str
    kind: str  # "stage" | "part" | "step"
    stage: str
    path: Optional[str]  # module path ("" for the whole model), None when not one module
    flops: Optional[float] = None
    flops_measured: Optional[float] = None
    io_bytes: Optional[float] = None
    measured_s: Optional[float] = None
    measured_by: str = ""
    levels: dict[str, dict[str, Any]] = field(default_factory=dict)  # level -> {"time_s", "bound"}

    def predicted(self, level: str) -> Optional[float]:
        return (self.levels.get(level) or {}).get("time_s")

    def bound(self) -> Optional[str]:
        """The bound at the most detailed level present (eager, then kernel, then ideal)."""
        for level in reversed(KNOWN_LEVELS):
            b = (self.levels.get(level) or {}).get("bound")
            if b:
                return b
        for v in self.levels.values():
            if v.get("bound"):
                return v["bound"]
        return None

    def headroom(self) -> Optional[float]:
        """measured / ideal: how many times the roofline the measured time is (None without both)."""
        ideal = self.predicted("ideal")
        if self.measured_s is None or not ideal:
            return None
        return self.measured_s / ideal


@dataclass
class RunTimes:
    rows: list[TimeRow]
    levels: list[str]  # present, in display order
    absent: dict[str, str]  # known level -> why absent
    roof: str  # which roof the predictions use
    convention: dict[str, str]
    sources: list[str]  # the files read

    def row(self, key: str) -> Optional[TimeRow]:
        return next((r for r in self.rows if r.key == key), None)


def levels_of(entry: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """{level: {"time_s", "bound"}} of one roofline entry (see the module's docstring)."""
    out: dict[str, dict[str, Any]] = {}
    raw = entry.get("levels")
    if isinstance(raw, Mapping):
        for name, v in raw.items():
            if isinstance(v, Mapping) and v.get("time_s") is not None:
                out[str(name)] = {"time_s": float(v["time_s"]), "bound": v.get("bound")}
            elif isinstance(v, (int, float)):
                out[str(name)] = {"time_s": float(v), "bound": None}
    if "ideal" not in out and entry.get("time_s") is not None:
        out["ideal"] = {"time_s": float(entry["time_s"]), "bound": entry.get("bound")}
    return out


def _read(run_dir: Path, name: str) -> Optional[dict[str, Any]]:
    path = run_dir / name
    if not path.is_file():
        return None
    return _data(path)


def _data(path: Path) -> dict[str, Any]:
    import json

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), dict):
        raise ArtifactError(f"{path}: no 'data' section")
    return doc["data"]


def _measured(summary: Optional[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    rows = ((summary or {}).get("roofline") or {}).get("rows") or []
    return {str(r.get("name")): r for r in rows if isinstance(r, Mapping)}


def run_times(run_dir: str | Path) -> RunTimes:
    """The time table of one run directory (rows empty when it has no roofline.json)."""
    run_dir = Path(run_dir)
    roof = _read(run_dir, ROOFLINE_FILE)
    summary = _read(run_dir, SUMMARY_FILE)
    verification = _read(run_dir, VERIFICATION_FILE)
    measured = _measured(summary)
    step_times = _step_times(summary)
    sources = [
        n
        for n, d in ((ROOFLINE_FILE, roof), (SUMMARY_FILE, summary), (VERIFICATION_FILE, verification))
        if d is not None
    ]
    rows: list[TimeRow] = []
    found: list[str] = []

    def add(row: TimeRow, entry: Mapping[str, Any]) -> None:
        row.flops = entry.get("flops")
        row.io_bytes = entry.get("io_bytes")
        row.levels = levels_of(entry)
        for lv in row.levels:
            if lv not in found:
                found.append(lv)
        rows.append(row)

    stages = (roof or {}).get("stages") or {}
    for stage, s in stages.items():
        if not isinstance(s, Mapping):
            continue
        m = measured.get(STAGE_OF_MEASURED.get(stage, stage))
        row = TimeRow(
            key=stage,
            label=stage if stage != "decode" else f"decode @ ctx {(s.get('shapes') or {}).get('past_len', '?')}",
            kind="stage",
            stage=stage,
            path="",
        )
        if m is not None:
            row.measured_s, row.measured_by = m.get("measured_s"), str(m.get("measured_by", ""))
        elif stage == "decode" and step_times.get(1) is not None:  # the roofline's decode stage is step 1's context
            row.measured_s, row.measured_by = step_times[1], STEP_MEASURED_BY
        add(row, s.get("total") or {})
        paths = {p.get("alias"): p.get("path") for p in (s.get("parts") or []) if isinstance(p, Mapping)}
        if stage == "vision":
            continue  # its parts are the prefill's own SAM, CLIP and projector rows
        for alias, entry in (s.get("summary") or {}).items():
            part = TimeRow(
                key=f"{stage}/{alias}",
                label=alias,
                kind="part",
                stage=stage,
                path=paths.get(alias) or _row_path(measured.get(alias)),
            )
            mp = measured.get(alias) if stage == "prefill" else None
            if mp is not None:
                part.measured_s, part.measured_by = mp.get("measured_s"), str(mp.get("measured_by", ""))
            add(part, entry)
    for st in (verification or {}).get("stages") or []:
        if isinstance(st, Mapping) and st.get("stage") == "decode" and st.get("step") is not None:
            step = TimeRow(
                key=f"decode step {st['step']}",
                label=f"decode {st.get('label') or st['step']}",
                kind="step",
                stage="decode",
                path=None,
                flops=st.get("analytic"),
                flops_measured=st.get("measured"),
            )
            if step_times.get(st["step"]) is not None:
                step.measured_s, step.measured_by = step_times[st["step"]], STEP_MEASURED_BY
            if st["step"] == 1 and isinstance(stages.get("decode"), Mapping):  # the decode stage's context
                step.levels = levels_of(stages["decode"].get("total") or {})
            rows.append(step)
    listed = (roof or {}).get("levels")
    levels = [str(x) for x in listed] if isinstance(listed, list) else found
    levels = [lv for lv in KNOWN_LEVELS if lv in levels] + [lv for lv in levels if lv not in KNOWN_LEVELS]
    reasons = (roof or {}).get("absent_levels") or {}
    absent = {
        lv: str(reasons.get(lv, NOT_IN_RUN if roof is not None else "no roofline.json in this run"))
        for lv in KNOWN_LEVELS
        if lv not in levels
    }
    r = (roof or {}).get("roof") or {}
    roof_text = f"{r.get('label', r.get('hardware', '?'))} ({r.get('kind', '?')}, {r.get('dtype', '?')})" if r else "—"
    return RunTimes(
        rows=rows,
        levels=levels,
        absent=absent,
        roof=roof_text,
        convention={str(k): str(v) for k, v in ((roof or {}).get("convention") or {}).items()},
        sources=sources,
    )


def _step_times(summary: Optional[Mapping[str, Any]]) -> dict[int, float]:
    """{step: measured seconds} of the timed decode steps (summary.json `decode.rows`, the median plain forward)."""
    out = {}
    for r in ((summary or {}).get("decode") or {}).get("rows") or []:
        if isinstance(r, Mapping) and r.get("step") is not None and r.get("measured_s") is not None:
            out[int(r["step"])] = float(r["measured_s"])
    return out


def _row_path(m: Optional[Mapping[str, Any]]) -> Optional[str]:
    return None if m is None else m.get("path")
