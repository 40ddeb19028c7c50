"""Verification: analytic FLOPs (`flops_matmul`, what torch's counter counts) against measured FLOPs,
per stage and per part, with a relative tolerance.

Rows: for each stage, the stage total and every part the analytic model names (vendor module paths).
A measured value for a path is the counter's figure for that module; for a path that is not a module
entered through `__call__` (a `ModuleList` such as `model.layers` or `…mlp.experts`, or CLIP's
`self_attn` / `mlp`, called through `.forward`) it is the sum of its children, so every analytic part
has a measured counterpart. Stage `vision` is measured inside the prefill forward (its roots are
`model.sam_model`, `model.vision_model`, `model.projector`); `prefill` is the whole forward;
`decode` the whole forward of one decode step. Decode steps are checked one by one: step k (1-based)
against the analytic decode stage at its context (seq_len + k - 1 cached tokens), every part and
layer, its check labelled `step k, context c` and carrying `step`.

KV cache: after the prefill (step 0) and after each decode step k, the bytes of the cache tensors the
model holds (`model_runtime.decode.kv_cache_bytes`) against the analytic model's (`kv_cache_bytes(seq_len + k)`:
keys and values of every layer), one `KvCacheRow` each; bytes are products of shapes, so a row passes
only when they are equal.

relative error = |analytic − measured| / measured (0 when both are 0, inf when only measured is 0);
a row passes when it is ≤ rtol. The verification fails if any row fails, if a matmul-like op ran
without a FLOP formula, if the measurement has FLOPs in a module the analytic model does not name, or
if the measured model has a module class the cost registry cannot cost (`unsupported_modules`: listed
by name, never counted as zero).

Activation bytes (`activation_rows`, written under `activation_bytes`, a verdict of their own that does
not change the FLOPs verdict): per part of the prefill, the analytic `activation_bytes` against the op
outputs TorchLens recorded (`CallGraph.op_output_bytes`), split by op family (`callgraph.op_families`:
compute, copy/cast, gather, view, same tensor). Views and ops that return their input make no memory, so
the analytic figure is set against the materialised families plus what TorchLens cannot see — the
float32 mean and rstd of every LayerNorm call; what is left (`unexplained`) must be within rtol.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from llm_perf_opt import units
from llm_perf_opt.analytic import registry
from llm_perf_opt.analytic.stage import StageCost
from llm_perf_opt.callgraph import op_families
from llm_perf_opt.measure.flops import FvcoreFlops, MeasuredFlops, reconcile_fvcore

DEFAULT_RTOL = 1e-3


def is_summary_path(path: str, vocabulary: Any) -> bool:
    """A part of the family's vocabulary or one decoder layer: the rows a summary shows."""
    return vocabulary is not None and vocabulary.is_part(path)


def relative_error(analytic: int, measured: int) -> float:
    if analytic == measured:
        return 0.0
    if measured == 0:
        return math.inf
    return abs(analytic - measured) / abs(measured)


@dataclass(frozen=True)
class VerificationRow:
    stage: str  # "vision", "prefill", "decode" (decode rows carry the context length in `label`)
    part: str  # module path ("" = the stage total)
    analytic: int
    measured: int
    rel_error: float
    ok: bool
    label: str = ""
    fvcore: int | None = None  # 2 × fvcore multiply-adds for the same path, when fvcore ran

    @property
    def name(self) -> str:
        if self.part == "":
            return "(total)"
        return self.part

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "label": self.label,
            "part": self.part,
            "analytic": self.analytic,
            "measured": self.measured,
            "rel_error": None if math.isinf(self.rel_error) else self.rel_error,
            "ok": self.ok,
            "fvcore": self.fvcore,
        }


@dataclass(frozen=True)
class KvCacheRow:
    """Bytes of the KV cache after a step (0: the prefill), analytic against measured."""

    step: int
    context_len: int  # tokens in the cache after the step
    analytic: int
    measured: int
    rel_error: float
    ok: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "context_len": self.context_len,
            "analytic": self.analytic,
            "measured": self.measured,
            "rel_error": None if math.isinf(self.rel_error) else self.rel_error,
            "ok": self.ok,
        }


@dataclass
class StageCheck:
    """One stage's comparison: its rows and what could hide FLOPs."""

    stage: str
    label: str
    rows: list[VerificationRow]
    ops_without_formula: dict[str, int]
    matmul_like_without_formula: dict[str, int]
    unmatched_measured: dict[str, int]  # measured modules with FLOPs the analytic model does not name
    shapes: Mapping[str, Any] = field(default_factory=dict)
    unsupported_modules: dict[str, int] = field(default_factory=dict)  # classes of the model without a formula
    step: int | None = None  # decode step (1-based) of a decode check; None for vision and prefill

    @property
    def total_row(self) -> VerificationRow:
        return self.rows[0]

    @property
    def passed(self) -> bool:
        return (
            all(r.ok for r in self.rows)
            and not self.matmul_like_without_formula
            and not self.unmatched_measured
            and not self.unsupported_modules
        )


@dataclass
class Verification:
    rtol: float
    checks: list[StageCheck]
    fvcore: FvcoreFlops | None = None
    context: dict[str, Any] = field(default_factory=dict)
    fvcore_reconciliation: dict[str, Any] | None = None  # by op family, when fvcore and a prefill ran
    kv_cache: list[KvCacheRow] = field(default_factory=list)  # after the prefill and each decode step
    activation: list[ActivationRow] = field(default_factory=list)  # prefill activation bytes vs TorchLens
    kernels: list[KernelRow] = field(default_factory=list)  # kernel counts vs the ops TorchLens recorded
    vocabulary: Any = None  # the family's parts (names the rows of `render_table`); not written

    @property
    def rows(self) -> list[VerificationRow]:
        return [r for c in self.checks for r in c.rows]

    @property
    def failures(self) -> list[VerificationRow]:
        return [r for r in self.rows if not r.ok]

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks) and all(r.ok for r in self.kv_cache)

    def decode_checks(self) -> list[StageCheck]:
        """The decode checks, in step order."""
        return sorted((c for c in self.checks if c.stage == "decode"), key=lambda c: (c.step or 0, c.label))

    @property
    def max_rel_error(self) -> float:
        return max((r.rel_error for r in self.rows), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able data for `verification.json` (`verification_file` writes and loads it)."""
        return {
            "rtol": self.rtol,
            "passed": self.passed,
            "max_rel_error": None if math.isinf(self.max_rel_error) else self.max_rel_error,
            "n_rows": len(self.rows),
            "n_failures": len(self.failures),
            "context": dict(self.context),
            "stages": [
                {
                    "stage": c.stage,
                    "label": c.label,
                    "passed": c.passed,
                    "shapes": dict(c.shapes),
                    "analytic": c.total_row.analytic,
                    "measured": c.total_row.measured,
                    "rel_error": None if math.isinf(c.total_row.rel_error) else c.total_row.rel_error,
                    "ops_without_formula": dict(sorted(c.ops_without_formula.items())),
                    "matmul_like_without_formula": c.matmul_like_without_formula,
                    "unmatched_measured": c.unmatched_measured,
                    "rows": [r.to_dict() for r in c.rows],
                    "step": c.step,
                    # written only when some class is missing, so a covered model's file is unchanged
                    **({"unsupported_modules": c.unsupported_modules} if c.unsupported_modules else {}),
                }
                for c in self.checks
            ],
            "kv_cache": [r.to_dict() for r in self.kv_cache],
            "fvcore": None if self.fvcore is None else self._fvcore_dict(),
            **({"activation_bytes": self.activation_dict()} if self.activation else {}),
            **({"kernel_counts": self.kernels_dict()} if self.kernels else {}),
        }

    @property
    def kernels_passed(self) -> bool | None:
        return all(r.ok for r in self.kernels) if self.kernels else None

    def kernels_dict(self) -> dict[str, Any]:
        return {
            "passed": self.kernels_passed,
            "n_rows": len(self.kernels),
            "n_failures": sum(1 for r in self.kernels if not r.ok),
            "convention": KERNEL_CONVENTION,
            "rows": [r.to_dict() for r in self.kernels],
        }

    @property
    def activation_passed(self) -> bool | None:
        return all(r.ok for r in self.activation) if self.activation else None

    def activation_dict(self) -> dict[str, Any]:
        return {
            "stage": "prefill",
            "passed": self.activation_passed,
            "rtol": self.rtol,
            "convention": "analytic activation_bytes vs the materialised op outputs TorchLens recorded (compute, "
            "copy/cast, gather) plus LayerNorm mean/rstd (float32, not op outputs); views and ops "
            "returning their input make no memory (callgraph.op_families)",
            "rows": [r.to_dict() for r in self.activation],
        }

    def _fvcore_dict(self) -> dict[str, Any]:
        fv = self.fvcore
        assert fv is not None
        out = fv.to_dict()
        prefill = next((c for c in self.checks if c.stage == "prefill"), None)
        if fv.ok and prefill is not None:
            measured = prefill.total_row.measured
            out["vs_torch_prefill"] = {
                "fvcore": fv.total,
                "torch": measured,
                "difference": fv.total - measured,
                "rel_difference": None if measured == 0 else (fv.total - measured) / measured,
                "note": "fvcore counts multiply-adds (shown ×2), skips scaled_dot_product_attention and "
                "counts norms/upsampling/some elementwise ops; see unsupported_ops and by_operator",
            }
            if self.fvcore_reconciliation is not None:
                out["reconciliation"] = self.fvcore_reconciliation
            out["by_part"] = [
                {
                    "part": r.part,
                    "torch": r.measured,
                    "fvcore": r.fvcore,
                    "difference": None if r.fvcore is None else r.fvcore - r.measured,
                }
                for r in prefill.rows
                if r.fvcore is not None and r.fvcore != r.measured
            ]
        return out


def _children_index(names: Iterable[str]) -> dict[str, list[str]]:
    index: dict[str, list[str]] = {}
    for name in names:
        parent = name.rpartition(".")[0]
        index.setdefault(parent, []).append(name)
    return index


def _measured_of(
    path: str, measured: MeasuredFlops, containers: frozenset[str], children: Mapping[str, list[str]]
) -> int:
    if path == "":
        return measured.total
    if path in measured.by_module:
        return measured.by_module[path]
    if path in containers:
        # a ModuleList / a module called through .forward(): the sum of its children as measured
        # (module children of a ModuleList are numbered; others are named)
        total = 0
        prefix = path + "."
        kids = set(children.get(path, []))
        kids.update(k for k in measured.by_module if k.startswith(prefix) and "." not in k[len(prefix) :])
        for kid in kids:
            total += _measured_of(kid, measured, containers, children)
        return total
    return 0


def check_stage(
    stage: StageCost,
    measured: MeasuredFlops,
    rtol: float = DEFAULT_RTOL,
    label: str = "",
    fvcore: FvcoreFlops | None = None,
    parts: str = "all",
) -> StageCheck:
    """Compare one analytic stage with one measured forward. `parts`: "all" or "summary"."""
    analytic_parts = stage.parts
    containers = stage.containers
    children = _children_index(analytic_parts)
    roots = stage.roots
    in_stage = [p for p in analytic_parts if roots == ("",) or any(p == r or p.startswith(r + ".") for r in roots)]
    if parts == "summary":
        in_stage = [p for p in in_stage if is_summary_path(p, stage.vocabulary)]
    rows: list[VerificationRow] = []

    def row(part: str, a: int, m: int, fv: int | None) -> VerificationRow:
        err = relative_error(a, m)
        return VerificationRow(stage.stage, part, a, m, err, err <= rtol, label, fv)

    if roots == ("",):
        a_total, m_total = stage.flops_matmul, measured.total
        fv_total = fvcore.total if fvcore is not None and fvcore.ok else None
    else:
        a_total = sum(analytic_parts[r].flops_matmul for r in roots if r in analytic_parts)
        m_total = sum(_measured_of(r, measured, containers, children) for r in roots)
        fv_total = None
        if fvcore is not None and fvcore.ok:
            vals = [fvcore.module(r) for r in roots]
            fv_total = sum(v for v in vals if v is not None)
    rows.append(row("", a_total, m_total, fv_total))
    for path in in_stage:
        fv = fvcore.module(path) if fvcore is not None and fvcore.ok else None
        rows.append(
            row(path, analytic_parts[path].flops_matmul, _measured_of(path, measured, containers, children), fv)
        )

    # measured FLOPs in modules the analytic tree does not name (beneath an analytic leaf is fine:
    # e.g. model.layers.1.mlp.experts.5.gate_proj under the aggregated `experts` leaf)
    leaves = {p for p in analytic_parts if p not in children}
    unmatched: dict[str, int] = {}
    for path, flops in measured.by_module.items():
        if not flops or path == "" or path in analytic_parts:
            continue
        if roots != ("",) and not any(path == r or path.startswith(r + ".") for r in roots):
            continue
        parts_of = path.split(".")
        if any(".".join(parts_of[:i]) in leaves for i in range(1, len(parts_of))):
            continue
        unmatched[path] = flops
    return StageCheck(
        stage=stage.stage,
        label=label,
        rows=rows,
        ops_without_formula=dict(measured.ops_without_formula),
        matmul_like_without_formula=measured.matmul_like_without_formula,
        unmatched_measured=unmatched,
        shapes=dict(stage.shapes),
        unsupported_modules=registry.unsupported(
            measured.module_classes, stage.vocabulary.family if stage.vocabulary is not None else ""
        ),
    )


def check_agreement(
    pairs: Iterable[tuple[StageCost, MeasuredFlops] | tuple[StageCost, MeasuredFlops, str]],
    rtol: float = DEFAULT_RTOL,
    fvcore: FvcoreFlops | None = None,
    parts: str = "all",
    context: Mapping[str, Any] | None = None,
) -> Verification:
    """Verify (analytic stage, measured forward[, label]) pairs. fvcore figures join the prefill rows."""
    checks = []
    for pair in pairs:
        stage, measured = pair[0], pair[1]
        label = pair[2] if len(pair) > 2 else ""  # type: ignore[misc]
        fv = fvcore if stage.stage in ("prefill", "vision") else None
        checks.append(check_stage(stage, measured, rtol, label, fv, parts))
    return Verification(rtol=rtol, checks=checks, fvcore=fvcore, context=dict(context or {}))


def check_model_agreement(
    model,
    prefill: MeasuredFlops,
    decode: Mapping[int, MeasuredFlops] | None = None,
    rtol: float = DEFAULT_RTOL,
    fvcore: FvcoreFlops | None = None,
    parts: str = "all",
    context: Mapping[str, Any] | None = None,
    kv_cache_bytes: Mapping[int, int] | None = None,
) -> Verification:
    """Verify a family's analytic model (`ModelFamily.analytic_model`) against a measured prefill forward (which
    also gives the vision stage) and measured decode steps keyed by their context length (tokens in the KV cache);
    `kv_cache_bytes`: {step: bytes of the cache the model held after it} (0: the prefill)."""
    pairs: list[tuple] = [(model.vision(), prefill, ""), (model.prefill(), prefill, "")]
    steps: list[int | None] = [None, None]
    for ctx, m in sorted((decode or {}).items()):
        step = ctx - model.seq_len + 1
        pairs.append((model.decode(ctx), m, f"step {step}, context {ctx}"))
        steps.append(step)
    ctx_info = {"seq_len": model.seq_len, "layout": model.layout.as_dict(), "model": model.spec.name}
    ctx_info.update(context or {})
    v = check_agreement(pairs, rtol, fvcore, parts, ctx_info)
    for check, step in zip(v.checks, steps):
        check.step = step
    v.kv_cache = kv_cache_rows(model, kv_cache_bytes or {})
    v.vocabulary = getattr(model, "vocabulary", None)
    if fvcore is not None:
        v.fvcore_reconciliation = reconcile_fvcore(prefill, fvcore)
    return v


def kv_cache_rows(model, measured: Mapping[int, int]) -> list[KvCacheRow]:
    """One row per step (0: the prefill): the analytic cache bytes at seq_len + step tokens vs measured.
    Bytes of a cache are a product of its shapes: a row passes only when they are equal (no tolerance)."""
    rows = []
    for step, bytes_ in sorted(measured.items()):
        ctx = model.seq_len + step
        analytic = int(model.kv_cache_bytes(ctx))
        rows.append(
            KvCacheRow(step, ctx, analytic, int(bytes_), relative_error(analytic, int(bytes_)), analytic == int(bytes_))
        )
    return rows


# --------------------------------------------------------------------------------------------- activations
@dataclass(frozen=True)
class ActivationRow:
    """Analytic activation bytes of one part against the op outputs TorchLens observed in it."""

    part: str  # module path ("" = the whole forward)
    analytic: int
    observed: int  # every op output in the subtree, views and same-tensor results included
    families: dict[str, int]  # observed by op family
    materialised: int  # compute + copy/cast + gather
    unseen: int  # materialised but no op output: LayerNorm mean/rstd (float32, 2 per row)
    unexplained: int  # analytic - materialised - unseen
    rel_error: float  # |unexplained| / analytic
    ok: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "part": self.part,
            "analytic": self.analytic,
            "observed": self.observed,
            "families": dict(self.families),
            "materialised": self.materialised,
            "layer_norm_statistics": self.unseen,
            "unexplained": self.unexplained,
            "rel_error": None if math.isinf(self.rel_error) else self.rel_error,
            "ok": self.ok,
        }


def captured_stages(analytic: Any, decode_steps: int) -> list[StageCost]:
    """The analytic stages of a captured program: the prefill, then decode step k (1-based) at context
    seq_len + k - 1, for each of `decode_steps` steps."""
    return [analytic.prefill()] + [analytic.decode(analytic.seq_len + k - 1) for k in range(1, decode_steps + 1)]


def program_bytes(batch: int, decode_steps: int) -> int:
    """What the greedy loop makes outside the model in a capture with decode steps: after each pass one argmax, an
    int64 token per sequence (none without decode steps: the capture is the forward alone)."""
    return 8 * batch * (decode_steps + 1) if decode_steps else 0


def stages_activation_bytes(stages: Sequence[StageCost], path: str, program: int = 0) -> int:
    """Analytic activation bytes of `path` ("" the whole forward, plus `program`) summed over `stages` (a part a
    stage lacks, vision in decode, adds 0)."""
    return sum(
        s.activation_bytes if path == "" else (s.parts[path].activation_bytes if path in s.parts else 0) for s in stages
    ) + (program if path == "" else 0)


def activation_row(
    path: str, analytic: int, observed: int, families: Mapping[str, int], unseen: int, rtol: float = DEFAULT_RTOL
) -> ActivationRow:
    """One part's row: `analytic` against the materialised families of what TorchLens observed plus `unseen`."""
    mat = sum(families[f] for f in op_families.MATERIALISED)
    left = analytic - mat - unseen
    err = relative_error(analytic, mat + unseen) if analytic or mat + unseen else 0.0
    return ActivationRow(path, analytic, observed, dict(families), mat, unseen, left, err, err <= rtol)


def activation_rows(
    stage: StageCost | Sequence[StageCost],
    op_output_bytes: Mapping[str, Mapping[str, int]],
    layer_norm_stats: Mapping[str, int],
    rtol: float = DEFAULT_RTOL,
    paths: Iterable[str] | None = None,
    program_bytes: int = 0,
) -> list[ActivationRow]:
    """One row for the whole forward and each summary part of the first stage (or `paths`) that TorchLens
    saw. Several stages (a prefill and its decode steps, captured in one graph) sum their activation bytes
    per path, as the op outputs of all their passes do; a part a stage lacks (vision in decode) adds 0.
    `program_bytes`: what the captured program makes outside the model (the greedy loop's argmax), added
    to the whole-forward row."""
    stages = [stage] if isinstance(stage, StageCost) else list(stage)
    first = stages[0]
    wanted = (
        list(paths)
        if paths is not None
        else [""] + [p for p in first.parts if is_summary_path(p, first.vocabulary) and p not in first.containers]
    )
    rows = []
    for path in wanted:
        ops = op_families.subtree_ops(op_output_bytes, path)
        if path and not ops:
            continue
        head = path + "."
        unseen = sum(v for a, v in layer_norm_stats.items() if not path or a == path or a.startswith(head))
        analytic = stages_activation_bytes(stages, path, program_bytes)
        rows.append(activation_row(path, analytic, sum(ops.values()), op_families.by_family(ops), unseen, rtol))
    return rows


# --------------------------------------------------------------------------------------------- kernels
KERNEL_CONVENTION = (
    "analytic kernel count (the ops each cost formula says its module launches, analytic.costs "
    "KERNEL_KINDS, less the kernels inside an op: INNER_KINDS, autocast's casts and cuDNN's memset) vs the ops "
    "TorchLens recorded that launch a kernel (callgraph.op_families."
    "launches_kernel: no views, no no-op casts, no allocations; a multi-output op once), per "
    "forward pass (the prefill; decode step k is pass k + 1); a path that is not an entered "
    "module (containers) counts its children only; exact: a row passes only when they are equal. "
    "With the capture's routing record, the routed experts' kernels are those of the experts the "
    "gates chose (the cost formulas assume min(E, T x top_k) experts get tokens); `unrouted` is what "
    "the row's analytic count took off for experts that got none"
)


@dataclass(frozen=True)
class KernelRow:
    stage: str
    part: str  # module path ("" = the stage total)
    analytic: int
    measured: int
    step: int | None = None  # decode step (1-based) of a decode row
    unrouted: int = 0  # routed-expert kernels taken off `analytic` for experts the measured routing left empty

    @property
    def ok(self) -> bool:
        return self.analytic == self.measured

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "step": self.step,
            "part": self.part,
            "analytic": self.analytic,
            "measured": self.measured,
            "ok": self.ok,
            **({"unrouted": self.unrouted} if self.unrouted else {}),
        }


def analytic_kernel_count(stage: StageCost, path: str) -> int:
    """The analytic kernel count of one row: a part's (`path`), or the stage total ("": the whole forward, or the sum
    of a stage's roots); kernels of ops only (`Kernels.op_count`: not the ones inside an op, which an op trace does
    not see)."""
    if path:
        return stage.parts[path].op_kernel_count
    if stage.roots == ("",):
        return stage.total.op_kernel_count
    return sum(stage.parts[r].op_kernel_count for r in stage.roots if r in stage.parts)


def _measured_kernels(path: str, ops: Mapping[str, Mapping[str, int]], containers: frozenset[str]) -> int:
    total = op_families.subtree_kernels(ops, path)
    if path in containers:  # a container: its children only (its own ops are its caller's in the analytic tree)
        total -= op_families.kernel_count(ops.get(path, {}))
    return total


def kernel_rows(
    stage: StageCost,
    ops: Mapping[str, Mapping[str, int]],
    step: int | None = None,
    parts: str = "summary",
    program_kernels: int = 0,
) -> list[KernelRow]:
    """Kernel counts of one analytic stage against the op counts of the forward pass it models (`ops`:
    address -> {op key: count}, `CallGraph.op_counts_by_pass[pass]`): the stage total, then every part
    (`parts="all"`) or the summary parts. `program_kernels`: kernels the captured program launches outside the
    model in this pass (the greedy loop's argmax), left out of the stage total's measured figure."""
    analytic_parts = stage.parts
    containers = stage.containers
    roots = stage.roots
    in_stage = [p for p in analytic_parts if roots == ("",) or any(p == r or p.startswith(r + ".") for r in roots)]
    if parts == "summary":
        in_stage = [p for p in in_stage if is_summary_path(p, stage.vocabulary)]
    if roots == ("",):
        measured = op_families.subtree_kernels(ops, "") - program_kernels
    else:
        measured = sum(_measured_kernels(r, ops, containers) for r in roots)
    rows = [KernelRow(stage.stage, "", analytic_kernel_count(stage, ""), measured, step)]
    for path in in_stage:
        rows.append(
            KernelRow(
                stage.stage, path, analytic_kernel_count(stage, path), _measured_kernels(path, ops, containers), step
            )
        )
    return rows


# --------------------------------------------------------------------------------------------- render
def _flops(x: int | None) -> str:
    return units.flops(x, digits=5)


def render_table(v: Verification, parts: str = "summary", max_rows: int = 60) -> str:
    """A short console table: per stage the total and the summary parts (or all), then failures."""
    lines = [
        f"verification: {'PASS' if v.passed else 'FAIL'}  (rtol {v.rtol:g}, {len(v.rows)} rows, "
        f"{len(v.failures)} failing, max rel. error {units.percent(v.max_rel_error)})"
    ]
    header = f"{'stage':<12} {'part':<44} {'analytic':>14} {'measured':>14} {'rel.err':>9} {'ok':>3}"
    show_fv = v.fvcore is not None and v.fvcore.ok
    if show_fv:
        header += f" {'fvcore×2':>14}"
    lines.append(header)
    lines.append("-" * len(header))
    shown = 0
    for check in v.checks:
        stage_name = (
            check.stage
            + (f" {check.step}" if check.step is not None else "")
            + (f"@{check.label.split()[-1]}" if check.label else "")
        )
        for r in check.rows:
            if parts == "summary" and r.part and not is_summary_path(r.part, v.vocabulary) and r.ok:
                continue
            if shown >= max_rows:
                break
            name = (v.vocabulary.alias(r.part) if v.vocabulary is not None else r.part) if r.part else "(total)"
            line = (
                f"{stage_name:<12} {name[:44]:<44} {_flops(r.analytic):>14} {_flops(r.measured):>14} "
                f"{units.percent(r.rel_error):>9} {'ok' if r.ok else 'NO':>3}"
            )
            if show_fv:
                line += f" {_flops(r.fvcore):>14}"
            lines.append(line)
            shown += 1
    if v.kernels:
        bad = [r for r in v.kernels if not r.ok]
        lines.append(
            f"kernel counts vs TorchLens: {'PASS' if not bad else 'FAIL'} ({len(v.kernels)} rows, {len(bad)} differing)"
        )
        for r in [r for r in v.kernels if r.part == "" or not r.ok][:max_rows]:
            name = (v.vocabulary.alias(r.part) if v.vocabulary is not None else r.part) if r.part else "(total)"
            stage_name = r.stage + (f" {r.step}" if r.step is not None else "")
            lines.append(
                f"{stage_name:<12} {name[:44]:<44} {r.analytic:>14,} {r.measured:>14,} "
                f"{r.measured - r.analytic:>+9,} {'ok' if r.ok else 'NO':>3}"
            )
    for r in v.kv_cache:
        lines.append(
            f"{'kv ' + str(r.step):<12} {f'KV cache, {r.context_len} tokens':<44} "
            f"{units.nbytes(r.analytic, 6):>14} {units.nbytes(r.measured, 6):>14} "
            f"{units.percent(r.rel_error):>9} {'ok' if r.ok else 'NO':>3}"
        )
    for check in v.checks:
        if check.matmul_like_without_formula:
            lines.append(f"{check.stage}: matmul-like ops WITHOUT a FLOP formula: {check.matmul_like_without_formula}")
        if check.unmatched_measured:
            lines.append(
                f"{check.stage}: measured FLOPs in modules the analytic model does not name: {check.unmatched_measured}"
            )
        if check.unsupported_modules:
            lines.append(
                f"{check.stage}: module classes WITHOUT an analytic cost formula (not counted): "
                f"{check.unsupported_modules}"
            )
    if v.fvcore is not None:
        if v.fvcore.ok:
            lines.append(
                f"fvcore (2 x MACs): total {_flops(v.fvcore.total)}; unsupported ops (skipped): "
                f"{v.fvcore.unsupported_ops}"
            )
            rec = v.fvcore_reconciliation
            if rec and rec.get("ok"):
                lines.append(
                    f"fvcore - torch = {_flops(rec['fvcore_minus_torch'])} "
                    f"({units.percent(rec['rel'])} of torch), by op family:"
                )
                for fam in rec["families"]:
                    if fam["torch"] or fam["fvcore"]:
                        lines.append(
                            f"  {fam['family']:<44} torch {_flops(fam['torch']):>14}  "
                            f"fvcore {_flops(fam['fvcore']):>14}  diff {_flops(fam['fvcore_minus_torch']):>14}"
                        )
        else:
            lines.append(f"fvcore failed: {v.fvcore.error}")
    return "\n".join(lines)
