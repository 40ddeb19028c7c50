"""ONNX files of exported calls (for Netron, ONNX Runtime, compilers), each checked twice.

`torch.onnx.export(exported_program, dynamo=True)` translates the program (through onnxscript) into
an ONNX model with the weights inside. The file must pass `onnx.checker.check_model(full_check=True)`
(which also runs shape inference), and ONNX Runtime's CPU execution of it on the recorded inputs must
match the eager module's output within `|ort - eager| <= atol + rtol * |eager|` elementwise.

onnx, onnxscript and onnxruntime are the optional extra `onnx` (`pip install 'llm-perf-opt[onnx]'`,
naming the installed torch in the same command); without them `onnx_unavailable()` says so in one line.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import time
from pathlib import Path
from typing import Any, Optional

import torch

from llm_perf_opt.export.modules import ExportCall, flat_tensors
from llm_perf_opt.export.program import one_line

REQUIRED = ("onnx", "onnxscript", "onnxruntime")


def onnx_unavailable() -> Optional[str]:
    """None when onnx, onnxscript and onnxruntime import; else the one-line reason."""
    missing = []
    for name in REQUIRED:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a broken install is as good as a missing one
            missing.append(name)
    if missing:
        return (
            f"{', '.join(missing)} not installed: pip install 'llm-perf-opt[onnx]' torch==<your torch> "
            "(./dev installs the extra)"
        )
    return None


def _named_inputs(call: ExportCall) -> dict[str, torch.Tensor]:
    """The call's tensor inputs by the forward's parameter names (the names torch.onnx gives the inputs)."""
    bound = inspect.signature(call.module.forward).bind(*call.args, **call.kwargs)
    out: dict[str, torch.Tensor] = {}
    for name, value in bound.arguments.items():
        if isinstance(value, torch.Tensor):
            out[name] = value
        elif isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
            out.update({f"{name}_{i}": v for i, v in enumerate(value)})  # torch.onnx flattens a tuple: name_i
        elif isinstance(value, dict):  # **kwargs
            out.update({k: v for k, v in value.items() if isinstance(v, torch.Tensor)})
    return out


def write_onnx(program: Any, call: ExportCall, path: str | Path, rtol: float, atol: float) -> dict[str, Any]:
    """Write `program` as ONNX to `path`, run the checker and ONNX Runtime (CPU); return the record."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"file": path.name, "tolerance": {"rtol": rtol, "atol": atol}}
    # their INFO lines (and torch.onnx's warnings that torchvision's ops are not installed) flood the job's log
    for name in ("torch.onnx", "onnx_ir", "onnxscript"):
        logging.getLogger(name).setLevel(logging.ERROR)
    t0 = time.perf_counter()
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        onnx_program = torch.onnx.export(
            program, tuple(call.args), kwargs=dict(call.kwargs), dynamo=True, verbose=False
        )
        onnx_program.save(str(tmp))
        tmp.replace(path)
    except Exception as exc:  # noqa: BLE001 - the translation refused: say why in one line
        tmp.unlink(missing_ok=True)
        record.update(ok=False, error=f"torch.onnx.export failed: {one_line(exc)}")
        return record
    record["export_seconds"] = round(time.perf_counter() - t0, 3)
    record["bytes"] = path.stat().st_size
    try:
        onnx.checker.check_model(str(path), full_check=True)
        record["checker"] = "passed"
    except Exception as exc:  # noqa: BLE001
        record.update(ok=False, checker=f"failed: {one_line(exc)}")
        return record
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    values = _named_inputs(call)
    feeds = {}
    for inp in session.get_inputs():
        if inp.name not in values:
            record.update(ok=False, error=f"ONNX input {inp.name!r} is not an input of the exported program")
            return record
        feeds[inp.name] = values[inp.name].detach().cpu().numpy()
    record["onnx_inputs"] = [
        {"name": i.name, "shape": list(feeds[i.name].shape), "type": i.type} for i in session.get_inputs()
    ]
    t1 = time.perf_counter()
    got = session.run(None, feeds)
    record["ort_seconds"] = round(time.perf_counter() - t1, 3)
    with torch.no_grad():
        want = [t.detach().cpu().numpy() for t in flat_tensors(call.run())]
    if len(got) != len(want):
        record.update(ok=False, error=f"ONNX Runtime gave {len(got)} outputs, the module {len(want)}")
        return record
    diffs = [float(np.max(np.abs(g - w))) if g.size else 0.0 for g, w in zip(got, want)]
    close = all(g.shape == w.shape and np.allclose(g, w, rtol=rtol, atol=atol) for g, w in zip(got, want))
    record.update(
        ort_provider="CPUExecutionProvider",
        max_abs_diff=max(diffs, default=0.0),
        max_abs_eager=max((float(np.max(np.abs(w))) for w in want if w.size), default=0.0),
        ok=close,
    )
    return record
