"""`export/summary.json` (schema `llm_perf_opt.export`): what the export stage did for each submodule.

One entry per requested submodule, whatever happened to it: `exported`, `exported_with_remedy` (the
plain export was refused; `reason` says why in one line and `remedy` what was done instead) or
`refused` (`reason` says why, `remedy` what was tried). Exported entries carry the op table file,
op and node counts, the FLOPs cross-check (exported graph vs FlopCounterMode vs analytic, per module
and op family), the op-count reconciliation against TorchLens and the check of the exported program's
output against the real forward's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Optional

from llm_perf_opt.artifacts import read_artifact, require, write_artifact
from llm_perf_opt.errors import ArtifactError

EXPORT_SCHEMA = "llm_perf_opt.export"
EXPORT_SCHEMA_VERSION = 1
KNOWN_VERSIONS = (1,)
STATUSES = ("exported", "exported_with_remedy", "refused")

CONVENTIONS = {
    "flops": "2 x multiply-adds of matmul-class ops (mm, addmm, bmm, baddbmm, convolution, SDPA), as "
    "torch.utils.flop_counter counts them; exported = torch's formulas applied to each node of the "
    "core-ATen graph with the shapes torch.export recorded; eager = FlopCounterMode on the module "
    "run once on the recorded inputs; analytic = DeepseekOCRAnalyticModel flops_matmul of that call",
    "op_table": "one row per aten op and input signature of the core-ATen graph (ExportedProgram."
    "run_decompositions()); count = nodes, flops = count x flops_per_call",
    "op_counts": "torchlens = tensor ops TorchLens records in the module (torch-function level, innermost "
    "module); graph_calls = distinct torch-level calls (node.meta['torch_fn']) in the core graph",
    "output_check": "the exported program run on the recorded inputs against the output the real forward "
    "gave: worst relative L2 error ||exported - real|| / ||real|| over the output tensors (and the "
    "max absolute difference)",
}


@dataclass
class SubmoduleExport:
    name: str
    path: str
    part: str
    stage: str
    description: str
    status: str
    reason: Optional[str] = None
    remedy: Optional[dict[str, Any]] = None
    inputs: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    ops_csv: Optional[str] = None
    seconds: dict[str, float] = field(default_factory=dict)
    ops: dict[str, Any] = field(default_factory=dict)
    flops: Optional[dict[str, Any]] = None
    op_counts: Optional[dict[str, Any]] = None
    output_check: Optional[dict[str, Any]] = None

    @property
    def exported(self) -> bool:
        return self.status in ("exported", "exported_with_remedy")

    @property
    def flops_agree(self) -> Optional[bool]:
        return None if self.flops is None else bool(self.flops.get("agree"))


@dataclass
class ExportSummary:
    model: dict[str, Any]
    workload: dict[str, Any]
    layout: dict[str, Any]
    seq_len: int
    decode_context: int
    runtime: dict[str, Any]
    submodules: list[SubmoduleExport]
    onnx: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    conventions: dict[str, str] = field(default_factory=lambda: dict(CONVENTIONS))

    def by_name(self, name: str) -> SubmoduleExport:
        for s in self.submodules:
            if s.name == name:
                return s
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def save(self, path: str | Path, config: Any = None) -> Path:
        return write_artifact(path, EXPORT_SCHEMA, EXPORT_SCHEMA_VERSION, self.to_dict(), config=config)


def _required(cls: type) -> list[str]:
    from dataclasses import MISSING

    return [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]


def load_export_summary(path: str | Path) -> ExportSummary:
    """Read `export/summary.json`; ArtifactError naming the field for a missing one or an unknown version."""
    _, data = read_artifact(path, EXPORT_SCHEMA, KNOWN_VERSIONS, required=_required(ExportSummary))
    subs = []
    if not isinstance(data["submodules"], list):
        raise ArtifactError(f"{path}: field 'submodules' must be a list")
    known = {f.name for f in fields(SubmoduleExport)}
    for i, raw in enumerate(data["submodules"]):
        require(raw, _required(SubmoduleExport), f"submodules[{i}]", path)
        if raw["status"] not in STATUSES:
            raise ArtifactError(f"{path}: submodules[{i}].status={raw['status']!r} is not one of {', '.join(STATUSES)}")
        subs.append(SubmoduleExport(**{k: v for k, v in raw.items() if k in known}))
    top = {f.name for f in fields(ExportSummary)}
    kwargs = {k: v for k, v in data.items() if k in top}
    kwargs["submodules"] = subs
    return ExportSummary(**kwargs)
