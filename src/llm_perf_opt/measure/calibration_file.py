"""A calibration file given by path (`hardware.calibration`): a recorded device and its host, on any machine.

The file is what `measure.calibrate` writes (schema `llm_perf_opt.calibration`; gzip-compressed when its name ends in
.gz), of this machine or of another (a GPU run's, kept as evidence). It is read, checked and completed here; it is
never measured again nor written. No torch device is used and no CUDA is needed: the figures are the file's.

Checked (`read_calibration_file`; each problem is one `ConfigError` naming the file and the field): the file exists,
is readable JSON, of the calibration schema and a schema version this code knows; the roof's figures are there
(`ROOF_FIELDS`, each measurement's value); each dtype's kernel-level and host figures (`levels[dtype]`) are of a
version this code knows (`level_fillers.known_levels_version`: none newer) and have what the time model reads
(`LEVEL_FIELDS`). A figure an older version lacks, or measured then with another meaning, is filled by the declared
table `level_fillers.FILLERS` from the recorded runs beside the file (`recorded_profile.recordings_beside`) or a named
default; what was filled, and from where, is kept beside the figures (`levels[dtype]["filled"]`) and the file itself
in `levels[dtype]["recorded"]`, which the time model's label reads (`analytic.time.figures`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from llm_perf_opt.errors import ConfigError
from llm_perf_opt.measure.level_fillers import (
    LAUNCH_BOUND,
    TIMED_ON_DEVICE_SINCE,
    Filled,
    MissingFigure,
    fill_levels,
    known_levels_version,
    launch_bound,
    launch_bound_rules,
)
from llm_perf_opt.measure.recorded_profile import RecordedProfile, read_json_file, recordings_beside

SCHEMA = "llm_perf_opt.calibration"
SCHEMA_VERSIONS = (1,)
ROOF_FIELDS = ("device", "device_name", "torch_version", "threads", "plan", "matmul", "bandwidth", "vector")
MEASUREMENT_FIELDS = ("value", "unit", "op", "work", "samples_s", "warmup", "timer")
# what the time model reads of one dtype's levels (analytic.time.figures.device_from_calibration): version 1 on;
# version 2 on adds the medium sizes and each GEMM point's x, version 8 the write bandwidth (a fill) at each size
LEVEL_FIELDS = (
    (1, "gemm"),
    (1, "elementwise.small.bytes_per_s"),
    (1, "elementwise.large.bytes_per_s"),
    (1, "copy.small.bytes_per_s"),
    (1, "copy.large.bytes_per_s"),
    (1, "host"),
    (2, "elementwise.medium.bytes_per_s"),
    (2, "copy.medium.bytes_per_s"),
    (8, "write.small.bytes_per_s"),
    (8, "write.medium.bytes_per_s"),
    (8, "write.large.bytes_per_s"),
)
GEMM_FIELDS = ((1, "m"), (1, "flops_per_s"), (2, "x"), (2, "seconds"))


@dataclass(frozen=True)
class CalibrationFile:
    """A checked calibration file: its data with the levels filled (`data["levels"]`), and what was filled."""

    path: Path
    data: dict[str, Any]
    levels_versions: dict[str, int]  # dtype -> the version the file's figures were measured at
    filled: dict[str, dict[str, Filled]]  # dtype -> {figure: how it was filled}
    recordings: tuple[Path, ...]  # the recorded traces a figure was filled from
    left_out: tuple[str, ...]  # traces beside the file that were not used, each with why

    @property
    def device_type(self) -> str:
        return str(self.data["device"]).split(":")[0]

    def describe_filled(self) -> str:
        """One phrase: each filled figure and where from ("" when none was filled)."""
        origin = {
            "recording": "from the recording beside the file",
            "older": "the file's older figure, kept and labelled",
            "default": "a named default",
            "launch-bound": "launch-bound: an upper bound of the device time, labelled (`level_fillers.LAUNCH_BOUND`)",
        }
        by: dict[tuple[str, str], list[str]] = {}
        for dtype, figures in self.filled.items():
            for figure, got in figures.items():
                by.setdefault((figure, origin.get(got.origin, got.origin)), []).append(dtype)
        return "; ".join(f"{figure} ({', '.join(dtypes)}): {where}" for (figure, where), dtypes in sorted(by.items()))


def _refuse(path: Path, field: str, why: str) -> ConfigError:
    return ConfigError(f"hardware.calibration={str(path)!r}: {field}: {why}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _get(node: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise _refuse(path, "file", "no such file")
    if not path.is_file():
        raise _refuse(path, "file", "not a file")
    try:
        doc = read_json_file(path)  # a .gz name: gzip-compressed (a recording's tarball may hold it so)
    except (OSError, EOFError) as exc:
        why = getattr(exc, "strerror", None) or f"{type(exc).__name__}: {exc}"
        raise _refuse(path, "file", f"cannot be read ({why})") from None
    except UnicodeDecodeError:
        raise _refuse(path, "file", "not text (a calibration is a JSON file)") from None
    except json.JSONDecodeError as exc:
        raise _refuse(path, "file", f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(doc, dict):
        raise _refuse(path, "file", f"a JSON {type(doc).__name__}, not a calibration object")
    if doc.get("schema") != SCHEMA:
        raise _refuse(path, "schema", f"{doc.get('schema')!r} is not a calibration (expected {SCHEMA!r})")
    version = doc.get("schema_version")
    if version not in SCHEMA_VERSIONS:
        newer = _number(version) and version > max(SCHEMA_VERSIONS)
        raise _refuse(
            path,
            "schema_version",
            f"{version!r} is {'newer than' if newer else 'unknown to'} this code (it reads {list(SCHEMA_VERSIONS)})",
        )
    data = doc.get("data")
    if not isinstance(data, dict):
        raise _refuse(path, "data", "missing or not an object")
    return data


def _check_roof(path: Path, data: Mapping[str, Any]) -> None:
    for name in ROOF_FIELDS:
        if name not in data:
            raise _refuse(path, name, "missing")
    if not isinstance(data["matmul"], Mapping) or not data["matmul"]:
        raise _refuse(path, "matmul", "missing or empty (one measurement per dtype)")
    measurements = {f"matmul.{k}": m for k, m in data["matmul"].items()}
    measurements |= {"bandwidth": data["bandwidth"], "vector": data["vector"]}
    for where, m in measurements.items():
        for name in MEASUREMENT_FIELDS:
            if not isinstance(m, Mapping) or name not in m:
                raise _refuse(path, f"{where}.{name}", "missing")
        if not _number(m["value"]) or not 0 < m["value"] < float("inf"):
            raise _refuse(path, f"{where}.value", f"{m['value']!r} is not a positive number")
    if not isinstance(data["plan"], Mapping):
        raise _refuse(path, "plan", "not an object")


def _check_levels(path: Path, dtype: str, lv: Any, known: int) -> int:
    where = f"levels.{dtype}"
    if not isinstance(lv, Mapping):
        raise _refuse(path, where, "not an object")
    version = lv.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _refuse(path, f"{where}.version", f"{version!r} is not a version number")
    if version > known:
        raise _refuse(path, f"{where}.version", f"{version} is newer than this code knows (it reads 1 to {known})")
    for since, name in LEVEL_FIELDS:
        if version >= since and _get(lv, name) is None:
            raise _refuse(path, f"{where}.{name}", f"missing (a version-{version} calibration has it)")
    if not isinstance(lv["gemm"], list) or not lv["gemm"]:
        raise _refuse(path, f"{where}.gemm", "missing or empty (the matmul grid)")
    for i, point in enumerate(lv["gemm"]):
        for since, name in GEMM_FIELDS:
            if version >= since and not _number(_get(point, name)):
                raise _refuse(path, f"{where}.gemm[{i}].{name}", "missing or not a number")
    return version


def read_calibration_file(path: str | Path) -> CalibrationFile:
    """The calibration at `path`, checked and its older figures filled (see the module docstring); ConfigError
    naming the file and the field otherwise. Reads only."""
    path = Path(path).expanduser()
    data = _read(path)
    _check_roof(path, data)
    levels = data.get("levels") or {}
    if not isinstance(levels, Mapping):
        raise _refuse(path, "levels", "not an object")
    known = known_levels_version()
    versions = {dtype: _check_levels(path, dtype, lv, known) for dtype, lv in levels.items()}
    found: Optional[tuple[list[RecordedProfile], list[str]]] = None

    def recordings() -> list[RecordedProfile]:
        nonlocal found
        if found is None:
            found = recordings_beside(path, str(data["device_name"]))
        return found[0]

    device_type = str(data["device"]).split(":")[0]
    filled_levels: dict[str, Any] = {}
    filled: dict[str, dict[str, Filled]] = {}
    for dtype, lv in levels.items():
        try:
            old_cuda = device_type == "cuda" and versions[dtype] < TIMED_ON_DEVICE_SINCE
            rules = launch_bound_rules(bool(recordings())) if old_cuda else LAUNCH_BOUND
            set_aside, bounds = launch_bound(lv, device_type, rules)
            filled_levels[dtype], filled[dtype] = fill_levels(set_aside, device_type, recordings)
            filled[dtype].update(bounds)
        except MissingFigure as exc:
            raise _refuse(path, f"levels.{dtype}.{exc.figure}", exc.why) from None
        filled_levels[dtype]["filled"] = {figure: got.source for figure, got in filled[dtype].items()}
        filled_levels[dtype]["recorded"] = {"file": str(path), "version": versions[dtype]}
    used = tuple(r.trace for r in (found[0] if found else []))
    left = tuple(found[1]) if found else ()
    return CalibrationFile(path, {**data, "levels": filled_levels}, versions, filled, used, left)
