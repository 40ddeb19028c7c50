"""Op tables: the ops of one exported graph, one row per aten op and input signature.

A row is an aten op of the core-ATen graph with one combination of input shapes and dtypes: how many
nodes have it, the FLOPs of one (torch's formula, `export.flops`) and in total, and where those nodes
came from (the export-IR ops they were decomposed from, and the torch functions that made them).
Rows of one op are adjacent (sorted by op, then by FLOPs); `op_totals` folds them into one entry per
op for the summary. `write_csv` writes `export/<name>.ops.csv` atomically.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional

from llm_perf_opt.artifacts import atomic_write_text
from llm_perf_opt.export.flops import GraphOp

COLUMNS = (
    "op",
    "count",
    "input_shapes",
    "dtypes",
    "flops_per_call",
    "flops",
    "has_formula",
    "decomposed_from",
    "torch_functions",
    "modules",
)


@dataclass
class OpRow:
    op: str
    input_shapes: tuple
    dtypes: tuple[str, ...]
    count: int
    flops_per_call: Optional[int]
    sources: tuple[str, ...]  # export-IR ops these nodes came from (other than the op itself)
    torch_functions: tuple[str, ...]
    modules: tuple[str, ...]  # innermost modules of these nodes

    @property
    def flops(self) -> Optional[int]:
        return None if self.flops_per_call is None else self.flops_per_call * self.count

    def csv_row(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "count": self.count,
            "input_shapes": format_shapes(self.input_shapes),
            "dtypes": " ".join(self.dtypes),
            "flops_per_call": "" if self.flops_per_call is None else self.flops_per_call,
            "flops": "" if self.flops is None else self.flops,
            "has_formula": self.flops_per_call is not None,
            "decomposed_from": " ".join(self.sources),
            "torch_functions": " ".join(self.torch_functions),
            "modules": " ".join(m or "<root>" for m in self.modules),
        }


def format_shapes(shapes: Iterable[Any]) -> str:
    """[1, 908, 64] x [64, 192]; tensor lists in parentheses; non-tensor inputs left out."""

    def one(shape: Any) -> str:
        if shape and isinstance(shape[0], tuple):
            return "(" + ", ".join(one(s) for s in shape) + ")"
        return "[" + ", ".join(str(d) for d in shape) + "]"

    return " x ".join(one(s) for s in shapes if s is not None)


def op_rows(ops: Iterable[GraphOp]) -> list[OpRow]:
    # the FLOPs are part of the key: a convolution's also depend on its stride, not only on input shapes
    groups: dict[tuple, list[GraphOp]] = {}
    for o in ops:
        groups.setdefault((o.op, o.input_shapes, o.dtypes, o.flops), []).append(o)
    rows = []
    for (op, shapes, dtypes, flops), members in groups.items():
        rows.append(
            OpRow(
                op=op,
                input_shapes=shapes,
                dtypes=dtypes,
                count=len(members),
                flops_per_call=flops,
                sources=tuple(sorted({m.source for m in members if m.source != op})),
                torch_functions=tuple(sorted({m.torch_fn for m in members if m.torch_fn})),
                modules=tuple(sorted({m.module for m in members})),
            )
        )
    return sorted(rows, key=lambda r: (r.op, -(r.flops or 0), -r.count, format_shapes(r.input_shapes)))


def op_totals(rows: Iterable[OpRow]) -> dict[str, dict[str, Any]]:
    """{op: {count, flops (None without a formula), signatures}} in row order."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        entry = out.setdefault(r.op, {"count": 0, "flops": None if r.flops is None else 0, "signatures": 0})
        entry["count"] += r.count
        entry["signatures"] += 1
        if r.flops is not None:
            entry["flops"] = (entry["flops"] or 0) + r.flops
    return out


def write_csv(path: str | Path, rows: Iterable[OpRow]) -> Path:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow(r.csv_row())
    return atomic_write_text(path, buf.getvalue())


def read_csv(path: str | Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))
