"""`verification.json`: a `Verification` (`Verification.to_dict`), its schema and its loader.

Version 3 adds the decode steps: each stage's `step` (the decode step, 1-based; null for vision and
prefill) and `kv_cache` (the KV-cache bytes after the prefill and each decode step, analytic against
measured). Version 2 (`llm_perf_opt.verification`) has exactly the data of version 1 (written as
`verification`); both read as version 3 without KV-cache rows, a decode stage's step taken from its
label. The loader rebuilds the `Verification` with its rows, checks, KV-cache rows, activation and kernel-count rows
and fvcore figures; the stored verdicts (`passed`, `n_rows`, `n_failures`, and the kernel counts' `n_rows` and
`n_failures`) must agree with the rebuilt ones. A name ending in `.gz` is read through gzip (a recorded run's).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from llm_perf_opt.analytic.artifact_fields import read_known
from llm_perf_opt.artifacts import require, write_artifact
from llm_perf_opt.errors import ArtifactError
from llm_perf_opt.measure.agreement import (
    ActivationRow,
    KernelRow,
    KvCacheRow,
    StageCheck,
    Verification,
    VerificationRow,
)
from llm_perf_opt.measure.flops import FvcoreFlops

VERIFICATION_FILE = "verification.json"
VERIFICATION_SCHEMA = "llm_perf_opt.verification"
VERIFICATION_SCHEMA_VERSION = 3
VERIFICATION_READS = {VERIFICATION_SCHEMA: (2, 3), "verification": (1,)}  # version 1: version 2's data, old name

_DATA_FIELDS = ("rtol", "passed", "max_rel_error", "n_rows", "n_failures", "context", "stages", "fvcore")
_STAGE_FIELDS = (
    "stage",
    "label",
    "passed",
    "shapes",
    "analytic",
    "measured",
    "rel_error",
    "ops_without_formula",
    "matmul_like_without_formula",
    "unmatched_measured",
    "rows",
)
_ROW_FIELDS = ("stage", "label", "part", "analytic", "measured", "rel_error", "ok", "fvcore")
_KV_FIELDS = ("step", "context_len", "analytic", "measured", "rel_error", "ok")
_FVCORE_FIELDS = ("ok", "error", "total", "by_operator", "unsupported_ops", "by_module")


def _error(value: float | None) -> float:
    return math.inf if value is None else value  # to_dict writes an infinite relative error as null


def _row(raw: Any, where: str, path: str | os.PathLike) -> VerificationRow:
    r = require(raw, _ROW_FIELDS, where, path)
    return VerificationRow(
        r["stage"], r["part"], r["analytic"], r["measured"], _error(r["rel_error"]), r["ok"], r["label"], r["fvcore"]
    )


def _step_from_label(stage: str, label: str, shapes: Any, seq_len: Any) -> int | None:
    """A version-2 decode check's step: from its context (`context c` label or past_len) and seq_len."""
    if stage != "decode":
        return None
    past = shapes.get("past_len") if isinstance(shapes, dict) else None
    if not isinstance(past, int) and label.split()[-1:] and label.split()[-1].isdigit():
        past = int(label.split()[-1])
    return past - seq_len + 1 if isinstance(past, int) and isinstance(seq_len, int) else None


def _kv_row(raw: Any, where: str, path: str | os.PathLike) -> KvCacheRow:
    r = require(raw, _KV_FIELDS, where, path)
    return KvCacheRow(r["step"], r["context_len"], r["analytic"], r["measured"], _error(r["rel_error"]), r["ok"])


def _check(raw: Any, where: str, path: str | os.PathLike, version: int, seq_len: Any) -> StageCheck:
    c = require(raw, _STAGE_FIELDS + (("step",) if version >= 3 else ()), where, path)
    step = c["step"] if version >= 3 else _step_from_label(c["stage"], c["label"], c["shapes"], seq_len)
    check = StageCheck(
        stage=c["stage"],
        label=c["label"],
        rows=[_row(r, f"{where}.rows[{i}]", path) for i, r in enumerate(c["rows"])],
        ops_without_formula=c["ops_without_formula"],
        matmul_like_without_formula=c["matmul_like_without_formula"],
        unmatched_measured=c["unmatched_measured"],
        shapes=c["shapes"],
        unsupported_modules=c.get("unsupported_modules", {}),  # written only when a class is missing
        step=step,
    )
    if not check.rows:
        raise ArtifactError(f"{path}: {where}.rows is empty (the stage total row is always there)")
    if check.passed != c["passed"]:
        raise ArtifactError(f"{path}: {where}.passed is {c['passed']} but its rows say {check.passed}")
    return check


_ACTIVATION_FIELDS = (
    "part",
    "analytic",
    "observed",
    "families",
    "materialised",
    "layer_norm_statistics",
    "unexplained",
    "rel_error",
    "ok",
)


def _activation(raw: Any, path: str | os.PathLike) -> list[ActivationRow]:
    """The optional `activation_bytes` rows (written when the run had a call graph)."""
    if raw is None:
        return []
    rows = require(raw, ("rows",), "data.activation_bytes", path)["rows"]
    out = []
    for i, r in enumerate(rows):
        r = require(r, _ACTIVATION_FIELDS, f"data.activation_bytes.rows[{i}]", path)
        out.append(
            ActivationRow(
                r["part"],
                r["analytic"],
                r["observed"],
                dict(r["families"]),
                r["materialised"],
                r["layer_norm_statistics"],
                r["unexplained"],
                _error(r["rel_error"]),
                r["ok"],
            )
        )
    return out


_KERNEL_FIELDS = ("stage", "step", "part", "analytic", "measured", "ok")


def _kernels(raw: Any, path: str | os.PathLike) -> list[KernelRow]:
    """The optional `kernel_counts` rows (written when the run had a call graph); `unrouted` only where non-zero."""
    if raw is None:
        return []
    k = require(raw, ("rows", "n_rows", "n_failures"), "data.kernel_counts", path)
    out = []
    for i, r in enumerate(k["rows"]):
        r = require(r, _KERNEL_FIELDS, f"data.kernel_counts.rows[{i}]", path)
        row = KernelRow(r["stage"], r["part"], r["analytic"], r["measured"], r["step"], r.get("unrouted", 0))
        if row.ok != r["ok"]:
            raise ArtifactError(f"{path}: data.kernel_counts.rows[{i}].ok is {r['ok']} but its counts say {row.ok}")
        out.append(row)
    for name, rebuilt in (("n_rows", len(out)), ("n_failures", sum(1 for r in out if not r.ok))):
        if k[name] != rebuilt:
            raise ArtifactError(f"{path}: data.kernel_counts.{name} is {k[name]!r} but its rows say {rebuilt!r}")
    return out


def _fvcore(raw: Any, path: str | os.PathLike) -> FvcoreFlops | None:
    if raw is None:
        return None
    f = require(raw, _FVCORE_FIELDS, "data.fvcore", path)
    return FvcoreFlops(
        ok=f["ok"],
        error=f["error"],
        total=f["total"],
        by_module=f["by_module"],
        by_operator=f["by_operator"],
        unsupported_ops=f["unsupported_ops"],
    )


def load_verification(path: str | os.PathLike) -> Verification:
    """Read `verification.json` (version 2, or 1 under its old name) back into a `Verification`; unknown
    versions, missing fields and verdicts that disagree with the rows are an `ArtifactError`."""
    schema, version, data = read_known(path, VERIFICATION_READS, _DATA_FIELDS)
    version = version if schema == VERIFICATION_SCHEMA else 2  # version 1 under the old name = version 2
    if version >= 3:
        require(data, ("kv_cache",), "data", path)
    stages = data["stages"]
    if not isinstance(stages, list):
        raise ArtifactError(f"{path}: data.stages must be a list")
    kv = data.get("kv_cache", []) if version >= 3 else []
    if not isinstance(kv, list):
        raise ArtifactError(f"{path}: data.kv_cache must be a list")
    seq_len = data["context"].get("seq_len") if isinstance(data["context"], dict) else None
    fv = _fvcore(data["fvcore"], path)
    v = Verification(
        rtol=data["rtol"],
        checks=[_check(c, f"data.stages[{i}]", path, version, seq_len) for i, c in enumerate(stages)],
        fvcore=fv,
        context=data["context"],
        fvcore_reconciliation=data["fvcore"].get("reconciliation") if fv is not None else None,
        kv_cache=[_kv_row(r, f"data.kv_cache[{i}]", path) for i, r in enumerate(kv)],
        activation=_activation(data.get("activation_bytes"), path),
        kernels=_kernels(data.get("kernel_counts"), path),
    )
    verdicts = {"passed": v.passed, "n_rows": len(v.rows), "n_failures": len(v.failures)}
    for name, rebuilt in verdicts.items():
        if data[name] != rebuilt:
            raise ArtifactError(f"{path}: data.{name} is {data[name]!r} but the stages say {rebuilt!r}")
    return v


def write_verification(path: str | os.PathLike, verification: Verification, config: Any = None) -> Path:
    """Write `verification` atomically under the current schema."""
    return write_artifact(path, VERIFICATION_SCHEMA, VERIFICATION_SCHEMA_VERSION, verification.to_dict(), config=config)
