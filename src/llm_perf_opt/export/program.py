"""`torch.export` of one call, to two graphs: the export IR and core ATen.

`torch.export.export(module, args, kwargs, strict=False)` traces the module at exactly the recorded
shapes (no dynamic dimensions) into an `ExportedProgram` in the export IR, where composite ops such as
`linear`, `conv2d`, `einsum`, `matmul`, `layer_norm` and `scaled_dot_product_attention` are still
single nodes. `run_decompositions()` lowers it to core ATen (`addmm`/`mm`, `convolution`, `bmm`,
`native_layer_norm`, the math form of SDPA ...), the op set torch's FLOP formulas are written for and
the one other tools (ONNX, compilers) consume. Both are kept: the op tables and FLOPs come from the
core graph, and the difference between the two is the list of ops export decomposes.

A refusal is caught and turned into one line (`ExportRefused`), never a traceback.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from dataclasses import dataclass
from typing import Any, ContextManager

import torch

from llm_perf_opt.errors import PipelineError
from llm_perf_opt.export.modules import ExportCall


class ExportRefused(PipelineError):
    """`torch.export` refused the module; the message is one line saying why."""


@dataclass
class ExportedGraphs:
    program: Any  # torch.export.ExportedProgram, export IR
    core: Any  # the same after run_decompositions(): core ATen
    export_seconds: float
    decompose_seconds: float


def one_line(exc: BaseException, limit: int = 300) -> str:
    """`Type: first non-empty line of the message`, cut to `limit` characters."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def model_frame(exc: BaseException) -> str:
    """`file.py:line in function` of the innermost traceback frame outside torch: where in the model's
    code the refused operation is ("" when there is none)."""
    import os
    import traceback

    torch_dir = os.path.dirname(torch.__file__)
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith(torch_dir)
        and os.sep + "llm_perf_opt" + os.sep + "export" + os.sep not in f.filename
    ]
    if not frames:
        return ""
    f = frames[-1]
    return f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}"


def _quiet() -> ContextManager[Any]:
    stack = contextlib.ExitStack()
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    return stack


def export_graphs(call: ExportCall, context: ContextManager[Any] | None = None) -> ExportedGraphs:
    """Export `call.module(*call.args, **call.kwargs)`; ExportRefused with the reason when torch refuses."""
    module = call.module
    was_training = module.training
    module.eval()
    try:
        with _quiet(), context or contextlib.nullcontext():
            t0 = time.perf_counter()
            try:
                program = torch.export.export(module, tuple(call.args), dict(call.kwargs), strict=False)
            except Exception as exc:  # noqa: BLE001 - every refusal becomes one line
                where = model_frame(exc)
                raise ExportRefused(one_line(exc) + (f" (at {where})" if where else "")) from exc
            t1 = time.perf_counter()
            try:
                core = program.run_decompositions()
            except Exception as exc:  # noqa: BLE001
                raise ExportRefused(f"exported, but decomposition to core ATen failed: {one_line(exc)}") from exc
            t2 = time.perf_counter()
    finally:
        module.train(was_training)
    return ExportedGraphs(program=program, core=core, export_seconds=t1 - t0, decompose_seconds=t2 - t1)


def run_program(graphs: ExportedGraphs, call: ExportCall, context: ContextManager[Any] | None = None) -> Any:
    """Run the core-ATen program on the recorded inputs (no grad)."""
    with torch.no_grad(), context or contextlib.nullcontext():
        return graphs.core.module()(*call.args, **call.kwargs)
