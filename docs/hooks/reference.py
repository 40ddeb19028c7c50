"""MkDocs hook: the reference tables of the docs, generated from the code at build time so they cannot drift.

A page holds a marker on a line of its own, `<!-- ref:NAME -->`; `on_page_markdown` replaces it with the table
`TABLES[NAME]()` renders from the code: the run directory's files (`RUN_FILES`), the report's columns (`COLUMNS`),
the exit codes (`ExitCode`), the cost registry's formulas with their derivations, the config schemas (every field,
its type, default and the comment beside it in `config/schemas.py` or the stage's section module), the hardware
datasheets (`conf/hardware/`), the jobs (`jobs.cli.JOBS`) and the model families. An unknown marker fails the build,
as a broken link does under `mkdocs build --strict`.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import re
import sys
import tokenize
from pathlib import Path
from typing import Callable

MARKER = re.compile(r"^<!-- ref:([a-z0-9_-]+) -->$", re.M)


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def table(header: list[str], rows: list[list[object]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def run_files() -> str:
    from llm_perf_opt.run_files import RUN_FILES

    rows = [
        [f"`{f.file}`", f.role, f.doc, f"`{f.schema}` v{f.version}" if f.schema else "", f"`{f.written_by}`"]
        for f in RUN_FILES
    ]
    return table(["file", "role", "what", "schema", "written by"], rows)


def report_columns() -> str:
    from llm_perf_opt.report.table import COLUMNS

    rows = [
        [f"`{c.key}`", "yes" if c.brief and not c.when_present else ("when present" if c.brief else ""), c.kind, c.doc]
        for c in COLUMNS
    ]
    return table(["column", "in the table", "kind", "meaning"], rows)


def family_report_columns() -> str:
    """The columns each model family adds to a sweep's report (`ModelFamily.report_columns()`), per family."""
    from llm_perf_opt import families

    rows = []
    for name in families.names():
        fam = families.family(name)
        columns = tuple(fam.report_columns()) if hasattr(fam, "report_columns") else ()
        rows += [[f"`{c.key}`", f"{fam.label} (`{name}`)", "yes" if c.brief else "", c.kind, c.doc] for c in columns]
        if not columns:
            rows.append(["(none)", f"{fam.label} (`{name}`)", "", "", "no columns beyond the ones above"])
    return table(["column", "family", "in the table", "kind", "meaning"], rows)


def exit_codes() -> str:
    from llm_perf_opt.errors import ExitCode

    rows = [[code, f"`{name}`", ExitCode.meaning(name)] for name, code in ExitCode.all().items()]
    return table(["code", "name", "when"], rows)


def cost_registry() -> str:
    from llm_perf_opt.analytic import registry

    _load_families()
    rows = [
        [f"`{name}`", "formula" if not e.counted_by_children else "its children", e.derivation]
        for name, e in sorted(registry.entries().items())
    ]
    return table(["module class", "costed by", "derivation"], rows)


def _load_families() -> None:
    """Every family's analytic model built once (on its first mode and a square page), so its cost formulas are
    registered: a family registers them when its analytic model loads."""
    from llm_perf_opt import families

    for name in families.names():
        fam = families.family(name)
        workload = next(iter(fam.modes().values()))
        fam.analytic_model(fam.spec_named(fam.twin_specs[0]), fam.layout(workload, 1024, 1024)).stages()


def _field_comments(source: str) -> dict[tuple[str, str], str]:
    """{(class, field): the comment on the field's line} for every dataclass field of a module's source."""
    comments = {
        t.start[0]: t.string.lstrip("# ").strip()
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type == tokenize.COMMENT
    }
    out = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    text = " ".join(comments[n] for n in range(item.lineno, item.end_lineno + 1) if n in comments)
                    out[(node.name, item.target.id)] = text
    return out


def config_schemas() -> str:
    from llm_perf_opt.config import schemas

    root = {f.name: f for f in dataclasses.fields(schemas.RootConfig)}
    parts = []
    for group, f in root.items():
        cls = _dataclass_of(f.type, schemas)
        if cls is None:
            continue
        # the section's own module (config.schemas, or the stage package's `<name>_config.py`)
        comments = _field_comments(Path(sys.modules[cls.__module__].__file__).read_text(encoding="utf-8"))
        doc = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        rows = []
        for sub in dataclasses.fields(cls):
            default = (
                sub.default
                if sub.default is not dataclasses.MISSING
                else ("(object)" if sub.default_factory is not dataclasses.MISSING else "required")
            )
            rows.append(
                [
                    f"`{group}.{sub.name}`",
                    f"`{sub.type}`",
                    f"`{default!r}`" if default != "required" else "required",
                    comments.get((cls.__name__, sub.name), ""),
                ]
            )
        parts.append(f"### `{group}`\n\n{doc}\n\n" + table(["key", "type", "default", "what"], rows))
    return "\n\n".join(parts)


def _dataclass_of(annotation: object, module: object):
    name = str(annotation).replace("Optional[", "").rstrip("]").strip("'\"")
    cls = getattr(module, name, None)
    return cls if dataclasses.is_dataclass(cls) else None


def hardware() -> str:
    import yaml

    from llm_perf_opt.analytic.time.hardware import hardware_dir, hardware_names

    def figure(raw: dict, *keys: str) -> str:
        for key in keys:
            raw = (raw or {}).get(key) if isinstance(raw, dict) else None
        value = raw.get("value") if isinstance(raw, dict) else None
        return "" if value in (None, "???") else f"{value:g}"

    rows = []
    for name in hardware_names():
        raw = yaml.safe_load((hardware_dir() / f"{name}.yaml").read_text(encoding="utf-8"))
        rows.append(
            [
                f"`hardware={name}`",
                raw.get("kind", ""),
                raw.get("label", ""),
                figure(raw, "matmul_tflops", "bfloat16"),
                figure(raw, "memory_bandwidth_gbs"),
                figure(raw, "memory_gb"),
                figure(raw, "min_kernel_us"),
                figure(raw, "launch_us"),
            ]
        )
    return table(["option", "kind", "what", "bf16 dense TFLOP/s", "GB/s", "GB", "min kernel µs", "launch µs"], rows)


def jobs() -> str:
    from llm_perf_opt.jobs import cli

    lines = [line.strip() for line in (cli.__doc__ or "").splitlines() if line.strip().startswith("llm-perf-opt ")]
    rows = []
    for line in lines:
        m = re.match(r"llm-perf-opt (\S+)\s+(.*?)\s{2,}(.*)$", line)
        if m:
            rows.append([f"`./dev {m.group(1)} {m.group(2)}`".replace("  ", " "), m.group(3)])
    assert {r[0].split()[1] for r in rows} >= set(cli.JOBS), "a job of jobs.cli.JOBS is missing from its docstring"
    return table(["command", "what"], rows)


def compare_options() -> str:
    """`./dev compare`'s arguments and options, from its argument parser (jobs/compare.py)."""
    from llm_perf_opt.jobs.compare import parser

    rows = []
    for action in parser()._actions:
        if action.help == "==SUPPRESS==" or "-h" in action.option_strings:
            continue
        name = ", ".join(action.option_strings) or action.dest.upper()
        if action.option_strings and action.nargs != 0:
            name += f" {action.metavar or action.dest.upper()}"
        default = "" if action.default in (None, False) or not action.option_strings else f" (default {action.default})"
        rows.append([f"`{name}`", (action.help or "") + default])
    assert len(rows) >= 4, rows
    return table(["argument", "what"], rows)


TABLES: dict[str, Callable[[], str]] = {
    "run-files": run_files,
    "report-columns": report_columns,
    "family-report-columns": family_report_columns,
    "exit-codes": exit_codes,
    "cost-registry": cost_registry,
    "config-schemas": config_schemas,
    "hardware": hardware,
    "jobs": jobs,
    "compare-options": compare_options,
}


def render(markdown: str) -> str:
    """Every `<!-- ref:NAME -->` marker replaced by its generated table (KeyError names an unknown marker)."""

    def one(m: re.Match) -> str:
        name = m.group(1)
        if name not in TABLES:
            raise KeyError(f"unknown reference marker <!-- ref:{name} -->: one of {', '.join(TABLES)}")
        return TABLES[name]()

    return MARKER.sub(one, markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 - the MkDocs hook signature
    return render(markdown)
