"""The installed console script: `llm-perf-opt JOB [args]`, the same jobs `./dev` and `pipelines/*.py` run.

    llm-perf-opt trace   [hydra overrides]   session + inputs + forward + call graph + costs
    llm-perf-opt analyze [hydra overrides]   the analytic cost model only (no model is built); hardware=NAME: times
    llm-perf-opt size    [targets] [...]     what serving targets need of a device: compute, bandwidth, memory, replicas
    llm-perf-opt calibrate [overrides]       measure this machine's roof (cached: see below)
    llm-perf-opt export  [hydra overrides]   torch.export of submodules: op tables, FLOP cross-checks, ONNX
    llm-perf-opt sweep   [hydra overrides]   a Hydra multirun of the trace job
    llm-perf-opt group   RUN_DIR [...]       regroup and re-render an existing callgraph.json
    llm-perf-opt explore RUN_DIR [--port N]  the run's graphs in Model Explorer (the `explorer` extra)
    llm-perf-opt report  SWEEP_DIR [...]     aggregate a multirun (or --analytic OUT_DIR: a page sweep)
    llm-perf-opt verify  [verify=NAME ...]   the verification gate: a matrix of trace jobs, JUnit XML, exit status
    llm-perf-opt compare RUN_A RUN_B [...]   two runs side by side: HTML, CSV, the graph coloured by the change

The Hydra configuration ships inside the package (`llm_perf_opt.conf`), so it works from any directory;
outputs go under `tmp/` of the current directory unless `hydra.run.dir` / `hydra.sweep.dir` say otherwise.
Relative paths the user gives (directories, files) are taken from the directory the command was run in
(`./dev` passes it as $LLM_PERF_OPT_CWD). Calibrations are cached in `hardware.cache_dir` when given, else
$LLM_PERF_OPT_CALIBRATION_DIR when set, else `tmp/calibration/` of the current directory
(`llm_perf_opt.config.paths.calibration_dir`).

Exit codes (`llm_perf_opt.errors.ExitCode`): 0 ok; 1 an unexpected error (a traceback); 2 bad input, found
by Hydra or by the project (one line `error: ...`); 3 a sweep or its report with a failed job; 130 Ctrl-C.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Callable, Optional, Sequence

from llm_perf_opt.errors import ExitCode, is_write_error, os_error_line

# Overrides naming directories or files outside the config schema (the schema resolves the page image and
# the vendor model path itself): made absolute against the user's directory before Hydra sees them.
PATH_OVERRIDES = ("hydra.run.dir", "hydra.sweep.dir", "hardware.cache_dir")
# Paths the schema itself resolves against the user's directory: only quoted for Hydra when they need it.
SCHEMA_PATHS = ("workload.page.image", "model.path", "serve.routing")


_PLAIN = re.compile(r"[A-Za-z0-9_/\-+.:%@]+")  # a value Hydra's override grammar reads unquoted as it is
_INTERPOLATION = ("$", ",", "(", ")", "[", "]", "{", "}")  # a sweep, a choice or `${...}`: Hydra's own syntax


def _unquoted(value: str) -> tuple[str, bool]:
    """(the text of a quoted override value, True), or (value, False) when it is not quoted."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        quote = value[0]
        return value[1:-1].replace("\\" + quote, quote), True
    return value, False


def _quoted(path: str) -> str:
    """`path` as an override value Hydra reads back verbatim: unquoted when its grammar allows, else quoted."""
    if _PLAIN.fullmatch(path):
        return path
    if "'" not in path:
        return f"'{path}'"
    if '"' not in path:
        return f'"{path}"'
    return "'" + path.replace("'", "\\'") + "'"


def absolute_path_overrides(args: Sequence[str]) -> list[str]:
    """`hydra.run.dir=out` -> `hydra.run.dir=<user cwd>/out` (see `config.paths.user_path`), quoted or not
    (`hydra.run.dir='dir with space/run'`); a path Hydra's grammar cannot read unquoted (spaces, non-ASCII letters)
    is quoted for it, here and in `SCHEMA_PATHS`. A value in Hydra's own syntax (a sweep `a,b`, `${...}`) is left
    as it is."""
    from pathlib import Path

    from llm_perf_opt.config.paths import user_cwd, user_path

    elsewhere = user_cwd() != Path.cwd()  # relative paths must be made absolute against the user's directory
    out = []
    for arg in args:
        key, sep, value = arg.partition("=")
        name = key.lstrip("+")
        if sep and name in PATH_OVERRIDES + SCHEMA_PATHS and value:
            text, quoted = _unquoted(value)
            if text and not any(c in text for c in (_INTERPOLATION[:1] if quoted else _INTERPOLATION)):
                rebase = name in PATH_OVERRIDES and (elsewhere or text.startswith("~"))
                arg = f"{key}={_quoted(str(user_path(text)) if rebase else text)}"
        out.append(arg)
    return out


def hydra_error_line(exc: BaseException) -> str:
    """Hydra's and OmegaConf's multi-line messages as one line (`errors.one_line`)."""
    from llm_perf_opt.errors import one_line

    return one_line(exc)


def _hydra_job(
    module: str, *leading: str, rewrite: Optional[Callable[[list[str]], list[str]]] = None
) -> Callable[[Sequence[str]], Optional[int]]:
    """A Hydra job reads its overrides from sys.argv: run it with `leading + args` there, after the
    one-line check of config-group options (`hardware=h999`) that Hydra would report in a dozen lines.

    Hydra is asked to raise instead of printing its errors (HYDRA_FULL_ERROR), so an error it finds while
    composing (`workload.base_size=abc`, an unknown key) becomes one line and exit code 2, the same as the
    project's own config errors; an unexpected exception from a job itself keeps its traceback (exit 1)."""

    def run(args: Sequence[str]) -> Optional[int]:
        import importlib

        from hydra.errors import HydraException

        from llm_perf_opt.errors import PipelineError

        if rewrite is not None:
            try:
                args = rewrite(list(args))
            except PipelineError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return ExitCode.CONFIG
        from omegaconf.errors import OmegaConfBaseException

        from llm_perf_opt.config.options import check_group_options
        from llm_perf_opt.runs import callbacks
        from llm_perf_opt.runs.entry import TASK_ERROR_FLAG

        check_group_options(args)
        main = importlib.import_module(f"llm_perf_opt.jobs.{module}").main
        argv, full_error = sys.argv, os.environ.get("HYDRA_FULL_ERROR")
        sys.argv = [f"llm-perf-opt {module}", *leading, *absolute_path_overrides(args)]
        os.environ["HYDRA_FULL_ERROR"] = "1"
        try:
            main()
        except (HydraException, OmegaConfBaseException) as exc:
            if getattr(exc, TASK_ERROR_FLAG, False):
                raise
            print(f"error: {hydra_error_line(exc)}", file=sys.stderr)
            return ExitCode.CONFIG
        except OSError as exc:  # Hydra's own files (.hydra/, the log) on a full or read-only disk, before the job
            if getattr(exc, TASK_ERROR_FLAG, False) or not is_write_error(exc):
                raise
            from llm_perf_opt.runs.dirs import discard_claimed

            taken_back = discard_claimed()
            where = "" if exc.filename or not taken_back else f"hydra.run.dir={taken_back[0]}: "
            print(f"error: {where}{os_error_line(exc)} (Hydra could not write the run's own files)", file=sys.stderr)
            return ExitCode.CONFIG
        finally:
            sys.argv = argv
            if full_error is None:
                os.environ.pop("HYDRA_FULL_ERROR", None)
            else:
                os.environ["HYDRA_FULL_ERROR"] = full_error
        swept = callbacks.last_sweep()
        if swept is not None and swept["failed"]:
            return ExitCode.JOBS_FAILED
        return ExitCode.OK

    return run


def _argparse_job(module: str) -> Callable[[Sequence[str]], Optional[int]]:
    def run(args: Sequence[str]) -> Optional[int]:
        import importlib

        return importlib.import_module(f"llm_perf_opt.jobs.{module}").main(list(args))

    return run


def _size_targets(args: list[str]) -> list[str]:
    """`./dev size tpot_s=0.02`: bare targets are the size job's keys (`size.tpot_s=0.02`)."""
    from llm_perf_opt.jobs.size import expand_targets

    return expand_targets(args)


def _engine_list(args: list[str]) -> list[str]:
    """`serve.engine=hf_eager,vllm` (no --multirun): the list of engines, one block each."""
    from llm_perf_opt.jobs.size import engine_list

    return engine_list(args)


JOBS: dict[str, Callable[[Sequence[str]], Optional[int]]] = {
    "trace": _hydra_job("trace"),
    "analyze": _hydra_job("analyze", rewrite=_engine_list),
    "size": _hydra_job("size", rewrite=_size_targets),
    "calibrate": _hydra_job("calibrate"),
    "export": _hydra_job("export"),
    "sweep": _hydra_job("trace", "--multirun"),
    "group": _argparse_job("group"),
    "explore": _argparse_job("explore"),
    "report": _argparse_job("report"),
    "compare": _argparse_job("compare"),
    "verify": _argparse_job("verify"),
}


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return ExitCode.OK
    job, rest = args[0], args[1:]
    if job not in JOBS:
        print(f"error: unknown job {job!r}: one of {', '.join(JOBS)} (llm-perf-opt --help)", file=sys.stderr)
        return ExitCode.CONFIG
    from llm_perf_opt.early_refusal import refused

    code = refused(rest)
    if code is not None:
        return code
    from llm_perf_opt.runs import signals

    try:
        with signals.handling():  # SIGTERM / SIGHUP like Ctrl-C, in the whole command
            return JOBS[job](rest) or ExitCode.OK
    except KeyboardInterrupt as exc:  # outside a job (a job's own Ctrl-C is recorded and reported by the job)
        by = f" by {exc.name}" if isinstance(exc, signals.Interrupted) and exc.signum != 2 else ""
        print(f"interrupted{by} outside a job of {job}: nothing was left half-written", file=sys.stderr)
        return ExitCode.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
