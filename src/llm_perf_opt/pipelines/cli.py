"""The installed console script: `llm-perf-opt JOB [args]`, the same jobs `./dev` and `pipelines/*.py` run.

    llm-perf-opt trace   [hydra overrides]   session + inputs + forward + call graph + costs
    llm-perf-opt analyze [hydra overrides]   the analytic cost model only (no model is built); hardware=NAME: times
    llm-perf-opt calibrate [overrides]       measure this machine's roof (cached in tmp/calibration/)
    llm-perf-opt export  [hydra overrides]   torch.export of submodules: op tables, FLOP cross-checks, ONNX
    llm-perf-opt sweep   [hydra overrides]   a Hydra multirun of the trace job
    llm-perf-opt group   RUN_DIR [...]       regroup and re-render an existing callgraph.json
    llm-perf-opt report  SWEEP_DIR [...]     aggregate a multirun (or --analytic OUT_DIR: a page sweep)
    llm-perf-opt verify  [verify=NAME] [...] the verification gate: a matrix of trace jobs, JUnit XML, exit status

The Hydra configuration ships inside the package (`llm_perf_opt.conf`), so it works from any directory;
outputs go under `tmp/` of the current directory unless `hydra.run.dir` / `hydra.sweep.dir` say otherwise.
"""
from __future__ import annotations

import sys
from typing import Callable, Optional, Sequence


def _hydra_job(module: str, *leading: str) -> Callable[[Sequence[str]], Optional[int]]:
    """A Hydra job reads its overrides from sys.argv: run it with `leading + args` there, after the
    one-line check of config-group options (`hardware=h999`) that Hydra would report in a dozen lines."""

    def run(args: Sequence[str]) -> Optional[int]:
        import importlib

        from llm_perf_opt.pipelines.options import check_group_options

        check_group_options(args)
        main = importlib.import_module(f"llm_perf_opt.pipelines.{module}").main
        argv = sys.argv
        sys.argv = [f"llm-perf-opt {module}", *leading, *args]
        try:
            main()
        finally:
            sys.argv = argv
        return 0

    return run


def _argparse_job(module: str) -> Callable[[Sequence[str]], Optional[int]]:
    def run(args: Sequence[str]) -> Optional[int]:
        import importlib

        return importlib.import_module(f"llm_perf_opt.pipelines.{module}").main(list(args))

    return run


JOBS: dict[str, Callable[[Sequence[str]], Optional[int]]] = {
    "trace": _hydra_job("trace"),
    "analyze": _hydra_job("analyze"),
    "calibrate": _hydra_job("calibrate"),
    "export": _hydra_job("export"),
    "sweep": _hydra_job("trace", "--multirun"),
    "group": _argparse_job("group"),
    "report": _argparse_job("report"),
    "verify": _argparse_job("verify"),
}


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return 0
    job, rest = args[0], args[1:]
    if job not in JOBS:
        print(f"error: unknown job {job!r}: one of {', '.join(JOBS)} (llm-perf-opt --help)", file=sys.stderr)
        return 2
    return JOBS[job](rest) or 0


if __name__ == "__main__":
    sys.exit(main())
