"""Time per stage, part and decode step of one run, measured and predicted at each time level, read from
the run's artifacts (never recomputed): what the run page's first chart and `compare` show.

Sources:
- predicted: `roofline.json` (`data.stages[stage].total` for a stage, `.summary[alias]` for a part). The time
  levels are read generically: an entry with a `levels` mapping ({level: {time_s, bound, ...}}) gives those;
  an entry without one is today's roofline, the `ideal` level (`time_s`, `bound`). The levels a run lists
  (`data.levels`, else those found) are shown; the known levels it lacks (`KNOWN_LEVELS`) are shown as
  absent, with the reason the artifact gives (`data.absent_levels`) or "not in this run's roofline.json".
- measured: one quantity for every row (`quantities`): the fastest plain run (`fastest`), from `summary.json`
  `roofline.levels.stages` (what the time-levels table prints and the accuracy compares); a run without that
  section falls back to `roofline.rows` (the roofline table's: `median_plain` for the forward, `ranges` for the
  parts), each row naming its quantity (`TimeRow.measured_q`). Decode steps: the fastest plain forward of the
  step (`decode.rows[].min_s`).
- bound: `TimeRow.bound(level)` at one level for the whole page, `RunTimes.bound_level` (`quantities.bound_level`).
- FLOPs and bytes: the same `roofline.json` entries (analytic); the decode steps' analytic and measured FLOPs
  from `verification.json`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from llm_perf_opt.analytic.time.convention import LEVEL_NAMES
from llm_perf_opt.errors import ArtifactError
from llm_perf_opt.quantities import bound_level, label

KNOWN_LEVELS = LEVEL_NAMES  # the time model's levels, in display order
ROOFLINE_FILE = "roofline.json"
SUMMARY_FILE = "summary.json"
VERIFICATION_FILE = "verification.json"
STAGE_OF_MEASURED = {"prefill": "forward", "vision": "vision"}  # roofline stage -> summary roofline row name
NOT_IN_RUN = "not in this run's roofline.json"
STEP_MEASURED_BY = "decode step: the fastest of profile.repeats plain forwards of the step (summary.json decode.rows)"
ROW_QUANTITY = {"forward": "median_plain"}  # roofline.rows' forward; its other rows are module ranges


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
    measured_q: str = "fastest"  # the quantity (`quantities.QUANTITIES`) of measured_s
    levels: dict[str, dict[str, Any]] = field(default_factory=dict)  # level -> {"time_s", "bound", ...}

    def predicted(self, level: str) -> Optional[float]:
        return (self.levels.get(level) or {}).get("time_s")

    @property
    def measured_label(self) -> str:
        return label(self.measured_q)

    def bound(self, level: Optional[str]) -> Optional[str]:
        """The bound at `level` (the page's one level: `RunTimes.bound_level`); None when that level has none."""
        return (self.levels.get(level) or {}).get("bound") if level else None

    def overhead(self) -> tuple[Optional[float], Optional[float]]:
        """(eager - kernel seconds, its share of eager) when the eager level has them."""
        e = self.levels.get("eager") or {}
        return e.get("overhead_s"), e.get("overhead_share")

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

    accuracy: list[dict[str, Any]] = field(default_factory=list)  # summary.json roofline.levels.accuracy
    accuracy_bound: float = 0.25
    vision_parts: list[str] = field(default_factory=list)  # the vision stage's part aliases (roofline.json)

    def row(self, key: str) -> Optional[TimeRow]:
        return next((r for r in self.rows if r.key == key), None)

    @property
    def bound_level(self) -> Optional[str]:
        return bound_level(self.levels)

    def accuracy_line(self) -> Optional[str]:
        """ "N/M units within 25%" as the time-levels table prints it (None without the section)."""
        if not self.accuracy:
            return None
        ok = sum(1 for r in self.accuracy if abs(r["ratio"] - 1) <= self.accuracy_bound)
        return f"{ok}/{len(self.accuracy)} units within {self.accuracy_bound:.0%}"


def levels_of(entry: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """{level: {"time_s", "bound"}} of one roofline entry (see the module's docstring)."""
    out: dict[str, dict[str, Any]] = {}
    raw = entry.get("levels")
    if isinstance(raw, Mapping):
        for name, v in raw.items():
            if isinstance(v, Mapping) and v.get("time_s") is not None:
                out[str(name)] = {**v, "time_s": float(v["time_s"]), "bound": v.get("bound")}
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


def _fastest(summary: Optional[Mapping[str, Any]]) -> tuple[dict[str, dict[str, float]], str]:
    """({stage: {"" or part alias: seconds}}, how) of the `fastest` quantity: summary.json's levels section."""
    section = (((summary or {}).get("roofline") or {}).get("levels")) or {}
    out: dict[str, dict[str, float]] = {}
    for stage, parts in (section.get("stages") or {}).items():
        if isinstance(parts, Mapping):
            out[str(stage)] = {
                str(a): float(e["measured_s"])
                for a, e in parts.items()
                if isinstance(e, Mapping) and e.get("measured_s") is not None
            }
    return out, str(section.get("measured_by") or "")


def _set_measured(row: TimeRow, fastest: Mapping[str, float], how: str, fallback: Optional[Mapping[str, Any]]) -> None:
    """The row's measured time: the fastest run when the levels section has it, else the roofline row's own."""
    alias = "" if row.kind == "stage" else row.label
    if alias in fastest:
        row.measured_s, row.measured_by, row.measured_q = fastest[alias], how, "fastest"
    elif fallback is not None and fallback.get("measured_s") is not None:
        row.measured_s, row.measured_by = fallback.get("measured_s"), str(fallback.get("measured_by", ""))
        row.measured_q = ROW_QUANTITY.get(str(fallback.get("name")), "ranges")


def run_times(run_dir: str | Path) -> RunTimes:
    """The time table of one run directory (rows empty when it has no roofline.json)."""
    run_dir = Path(run_dir)
    roof = _read(run_dir, ROOFLINE_FILE)
    summary = _read(run_dir, SUMMARY_FILE)
    verification = _read(run_dir, VERIFICATION_FILE)
    measured = _measured(summary)
    fastest, fastest_by = _fastest(summary)
    step_times = _step_times(summary)
    sources = [
        n
        for n, d in ((ROOFLINE_FILE, roof), (SUMMARY_FILE, summary), (VERIFICATION_FILE, verification))
        if d is not None
    ]
    rows: list[TimeRow] = []
    found: list[str] = []
    vision_parts: list[str] = []

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
        _set_measured(row, fastest.get(stage, {}), fastest_by, m)
        if row.measured_s is None and stage == "decode" and step_times.get(1) is not None:
            row.measured_s, row.measured_by = step_times[1], STEP_MEASURED_BY  # the decode stage: step 1's context
        add(row, s.get("total") or {})
        paths = {p.get("alias"): p.get("path") for p in (s.get("parts") or []) if isinstance(p, Mapping)}
        if stage == "vision":
            vision_parts = [str(a) for a in (s.get("summary") or {})]
            continue  # its parts are the prefill's own SAM, CLIP and projector rows
        for alias, entry in (s.get("summary") or {}).items():
            part = TimeRow(
                key=f"{stage}/{alias}",
                label=alias,
                kind="part",
                stage=stage,
                path=paths.get(alias) or _row_path(measured.get(alias)),
            )
            _set_measured(part, fastest.get(stage, {}), fastest_by, measured.get(alias) if stage == "prefill" else None)
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
    accuracy = [
        r
        for r in ((((summary or {}).get("roofline") or {}).get("levels") or {}).get("accuracy") or [])
        if isinstance(r, Mapping) and r.get("ratio") is not None
    ]
    return RunTimes(
        accuracy=accuracy,
        vision_parts=vision_parts,
        rows=rows,
        levels=levels,
        absent=absent,
        roof=roof_text,
        convention={str(k): str(v) for k, v in ((roof or {}).get("convention") or {}).items()},
        sources=sources,
    )


def _step_times(summary: Optional[Mapping[str, Any]]) -> dict[int, float]:
    """{step: measured seconds} of the timed decode steps (summary.json `decode.rows`, the fastest plain forward)."""
    out = {}
    for r in ((summary or {}).get("decode") or {}).get("rows") or []:
        fastest = r.get("min_s") if isinstance(r, Mapping) and r.get("min_s") is not None else None
        if isinstance(r, Mapping) and r.get("step") is not None and fastest is not None:
            out[int(r["step"])] = float(fastest)
    return out


def _row_path(m: Optional[Mapping[str, Any]]) -> Optional[str]:
    return None if m is None else m.get("path")


# ------------------------------------------------------------------------------------------- the first screen
def _s(x: Optional[float]) -> str:
    from llm_perf_opt import units

    return units.seconds(x) if x is not None else "—"


def _times(x: float) -> str:
    return f"{x:.2g}×" if x < 100 else f"{x:.0f}×"


def verdict_text(r: TimeRow, level: Optional[str]) -> str:
    """What binds the stage at `level` (its bound: `TimeRow.bound`) and what would help, from the levels alone."""
    b = r.bound(level)
    if b is None:
        return f"{r.label}: no bound at the {level} level" if level else f"{r.label}: no predicted level"
    over, share = r.overhead()
    kernel = r.levels.get("kernel") or {}
    ideal, measured = r.predicted("ideal"), r.measured_s
    gap = f"; measured {_times(measured / ideal)} the ideal {_s(ideal)}" if measured is not None and ideal else ""
    if b == "host":
        syncs = (r.levels.get("eager") or {}).get("syncs")
        fix = "CUDA graphs / torch.compile (no per-op dispatch)" + (
            " and a fused MoE kernel (no host syncs)" if syncs else ""
        )
        return (
            f"{r.label} is host-bound at the {level} level: {share:.0%} overhead (eager − kernel); {fix} would "
            f"remove ~{_s(over)}{gap}"
        )
    held = (kernel.get("kernel_bound_s") or {}).get(b)
    help_ = {
        "compute": "faster matmuls (batching, tensor-core dtypes) would help",
        "memory": "fewer bytes moved (lower-precision weights, fusion, batching) would help",
        "launch": "fewer, larger kernels (fusion, CUDA graphs) would help",
    }.get(b, "")
    over_text = f"; overhead {_s(over)} ({share:.0%})" if over and share and share >= 0.1 else ""
    return (
        f"{r.label} is {b}-bound at the {level} level"
        + (f" ({_s(held)} of {_s(kernel.get('time_s'))} kernel time)" if held is not None else "")
        + (f": {help_}" if help_ else "")
        + over_text
        + gap
    )


def headline(times: RunTimes) -> dict[str, Any]:
    """The headline card: per stage measured (its quantity) against the prediction at the bound level, the ratio
    predicted / measured (as the time-levels table's eager/m), the bound at that level and the verdict; the
    accuracy line the console prints."""
    from llm_perf_opt.quantities import label as qlabel

    level = times.bound_level
    rows = []
    for r in times.rows:
        if r.kind != "stage":
            continue
        p = r.predicted(level) if level else None
        rows.append(
            {
                "stage": r.stage,
                "label": r.label,
                "measured": _s(r.measured_s),
                "measured_q": r.measured_label,
                "predicted": _s(p),
                "ratio": f"{p / r.measured_s:.2f}" if p and r.measured_s else "—",
                "bound": r.bound(level) or "—",
                "verdict": verdict_text(r, level),
            }
        )
    return {
        "level": level,
        "predicted_q": qlabel(level) if level in ("ideal", "kernel", "eager") else (level or "—"),
        "rows": rows,
        "accuracy": times.accuracy_line(),
        "worst": max(times.accuracy, key=lambda a: abs(a["ratio"] - 1)) if times.accuracy else None,
    }


def stage_details(times: RunTimes, node_of: Mapping[str, str]) -> list[dict[str, Any]]:
    """The side panel of each stage (a stage bar selects it): every level's time, the bound at the page's level,
    the overhead, and the parts with their measured share; `node_of`: {module path: grouped node id}."""
    level = times.bound_level
    out = []
    for r in times.rows:
        if r.kind != "stage":
            continue
        names = times.vision_parts if r.stage == "vision" else None
        parts = [
            p
            for p in times.rows
            if p.kind == "part" and (p.stage == r.stage if names is None else p.stage == "prefill" and p.label in names)
        ]
        over, share = r.overhead()
        out.append(
            {
                "stage": r.stage,
                "label": r.label,
                "facts": [(r.measured_label, _s(r.measured_s))]
                + [(f"predicted: {lv}", _s(r.predicted(lv))) for lv in times.levels]
                + [
                    (f"bound ({level} level)", r.bound(level) or "—"),
                    ("overhead (eager − kernel)", f"{_s(over)} ({share:.0%})" if over is not None and share else "—"),
                    ("verdict", verdict_text(r, level)),
                ],
                "how": r.measured_by,
                "parts": [
                    {
                        "label": p.label,
                        "measured": _s(p.measured_s),
                        "share": f"{p.measured_s / r.measured_s:.0%}" if p.measured_s and r.measured_s else "—",
                        "predicted": _s(p.predicted(level)) if level else "—",
                        "bound": p.bound(level) or "—",
                        "node": node_of.get(p.path or "\0"),
                    }
                    for p in parts
                ],
                "nodes": sorted({node_of[p.path] for p in parts if p.path and p.path in node_of}),
            }
        )
    return out
