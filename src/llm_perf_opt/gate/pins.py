"""The pinned analytic totals of the verification gate: `conf/verify/expected.yaml`.

The file holds, for the full DeepSeek-OCR (`model=twin`'s spec, no model built), the analytic model's
prefill and first-decode-step FLOPs in every vendor mode on a few page shapes, computed exactly as the
trace job computes them (`trace_job.analytic_model_for` on the validated config). The gate recomputes
them in about a second on every run; a change to the analytic model that moves any of them fails the
gate with the old and the new number, until the file is regenerated on purpose:

    ./dev verify verify.update_expected=true      (or: ./dev verify --update-expected)

then reviewed (`git diff conf/verify/expected.yaml`) and committed with the change that moved them.
Integers are compared exactly: the analytic model is closed-form, so any difference is a change.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import yaml

from llm_perf_opt import units
from llm_perf_opt.artifacts import atomic_write_text
from llm_perf_opt.config.compose import compose_each
from llm_perf_opt.config.paths import conf_dir
from llm_perf_opt.errors import ConfigError

EXPECTED_FILE = "verify/expected.yaml"  # under conf/
UPDATE_COMMAND = "./dev verify verify.update_expected=true"
BASE_OVERRIDES = ("model=twin", "runtime=cpu")  # the full model; eager attention, float32 (FLOPs are dtype-free)
DEFAULT_PAGES = ("letter_portrait", "slide")
COUNTS = ("flops_matmul", "flops")
STAGES = ("prefill", "decode")
HEADER = f"""\
# Pinned analytic FLOPs of the full DeepSeek-OCR (model=twin's spec; no model is built), per vendor mode
# and page shape: the prefill over the whole prompt, and the first decode step (KV cache = the prompt,
# context = seq_len). flops_matmul: matmul-class ops (mm, bmm, conv, SDPA) as torch.utils.flop_counter
# counts them; flops: plus the analytic elementwise, norm and softmax estimates. FLOPs = 2 x multiply-adds.
# ./dev verify recomputes these on every run and fails when one moves. Written by the gate, never by hand:
#   {UPDATE_COMMAND}
# then review `git diff conf/verify/expected.yaml` and commit it with the change that moved the numbers.
"""


def default_path() -> Path:
    return conf_dir() / EXPECTED_FILE


@dataclass(frozen=True)
class Pin:
    """One pinned number: mode, page, stage, count."""

    mode: str
    page: str
    stage: str
    count: str
    value: int

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.mode, self.page, self.stage, self.count


@dataclass(frozen=True)
class PinChange:
    """A pinned number that moved (`old` None: not pinned yet; `new` None: no longer computed)."""

    mode: str
    page: str
    stage: str
    count: str
    old: Optional[int]
    new: Optional[int]

    @property
    def change(self) -> str:
        if self.old is None:
            return "not pinned in the file"
        if self.new is None:
            return "pinned, but this mode or page no longer exists"
        rel = (self.new - self.old) / self.old if self.old else float("inf")
        return f"{self.new - self.old:+,} ({'+' if rel >= 0 else ''}{units.percent(rel)})"


def compute(modes: Sequence[str], pages: Sequence[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """{mode: {page: {seq_len, prefill: {flops_matmul, flops}, decode: {context, flops_matmul, flops}}}}
    from the analytic model, exactly as the trace job builds it (no model is built)."""
    from llm_perf_opt.prepare.builders import analytic_model_for
    from llm_perf_opt.prepare.validate import validate

    combos = [(m, p) for m in modes for p in pages]
    configs = compose_each([[*BASE_OVERRIDES, f"workload={m}", f"page={p}"] for m, p in combos])
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (mode, page), raw in zip(combos, configs):
        job = validate(raw)
        model = analytic_model_for(job, job.page_width, job.page_height)
        prefill, decode = model.prefill().total, model.decode(model.seq_len).total
        out.setdefault(mode, {})[page] = {
            "seq_len": model.seq_len,
            "prefill": {"flops_matmul": prefill.flops_matmul, "flops": prefill.flops},
            "decode": {"context": model.seq_len, "flops_matmul": decode.flops_matmul, "flops": decode.flops},
        }
    return out


def pins_of(table: Mapping[str, Any]) -> dict[tuple[str, str, str, str], int]:
    return {
        (m, p, s, c): int(entry[s][c])
        for m, by_page in table.items()
        for p, entry in by_page.items()
        for s in STAGES
        for c in COUNTS
    }


def load(path: str | Path) -> tuple[dict[str, dict[str, dict[str, Any]]], list[str]]:
    """(the pins, the pages) from `path`; a missing file or a malformed entry is one ConfigError naming it."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"verify.expected={str(path)!r} is invalid: no such file; create it with {UPDATE_COMMAND}")
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("pins"), dict) or not isinstance(doc.get("pages"), list):
        raise ConfigError(
            f"{path}: expected a mapping with 'pages' (a list) and 'pins' (mode -> page -> figures); "
            f"regenerate it with {UPDATE_COMMAND}"
        )
    for mode, by_page in doc["pins"].items():
        if not isinstance(by_page, dict):
            raise ConfigError(f"{path}: pins.{mode} must map page shapes to figures")
        for page, entry in by_page.items():
            for stage in STAGES:
                for count in COUNTS:
                    value = (
                        (entry or {}).get(stage, {}).get(count) if isinstance((entry or {}).get(stage), dict) else None
                    )
                    if isinstance(value, bool) or not isinstance(value, int):
                        raise ConfigError(
                            f"{path}: pins.{mode}.{page}.{stage}.{count} must be an integer, found {value!r}"
                        )
    return doc["pins"], [str(p) for p in doc["pages"]]


def compare(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[PinChange]:
    """Every pinned number that differs, is missing from the file, or is pinned but no longer computed."""
    a, b = pins_of(old), pins_of(new)
    changes = []
    for key in list(dict.fromkeys([*b, *a])):
        if a.get(key) != b.get(key):
            changes.append(PinChange(*key, a.get(key), b.get(key)))
    return changes


def render(table: Mapping[str, Any], pages: Sequence[str]) -> str:
    body = {
        "model": "twin (ModelSpec.deepseek_ocr)",
        "overrides": list(BASE_OVERRIDES),
        "pages": list(pages),
        "pins": table,
    }
    return HEADER + yaml.safe_dump(body, sort_keys=False, width=120)


def write(path: str | Path, table: Mapping[str, Any], pages: Sequence[str]) -> Path:
    return atomic_write_text(path, render(table, pages))
