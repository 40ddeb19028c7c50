"""`./dev report`: aggregate a multirun, or sweep page sizes analytically.

    ./dev report SWEEP_DIR [--out DIR] [--no-plots] [--hardware h100_sxm,rtx5090]
        report.csv, report.md, report.html and report_plots/ (SVG + PNG) in SWEEP_DIR (or DIR); predicted
        time to first token per job on each --hardware datasheet (default: the datasheets the jobs ran
        with, else h100_sxm)
    ./dev report --analytic OUT_DIR [--modes tiny gundam ...] [--n N] [--min-side PX] [--max-side PX]
                 [--model deepseek_ocr|tiny|VENDOR_DIR] [--dtype bfloat16] [--hardware h100_sxm,rtx5090]
        analytic.csv, analytic.md, analytic.html and analytic_plots/ in OUT_DIR; no model is built;
        predicted times on each --hardware datasheet (default h100_sxm; --hardware none: no predictions)

Where it writes: a sweep's report is derived from its jobs' files and rewritten each time (into the sweep
directory, or --out). An --analytic OUT_DIR is protected like a run directory: refused when it is a run or
sweep directory (or inside one), or already holds the same report (analytic.* or compare.*), unless
--overwrite (the earlier report's files are removed first). The --analytic options (--modes, --n, --min-side,
--max-side, --model, --family, --compare, --dtype, --overwrite) are refused without --analytic, and --out with
it, rather than ignored.

Relative paths are taken from the directory the command was run in. Exit status: 0; 3 when a job of the
sweep failed, was interrupted, killed or never started (so scripts and CI notice); 2 for bad arguments,
a directory that is not a sweep (no multirun.yaml), or an output it cannot write (read-only, full disk),
with one line `error: ...` and nothing written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence, TypeVar

from llm_perf_opt.config.paths import user_path
from llm_perf_opt.errors import ArtifactError, ConfigError, ExitCode, one_line_errors
from llm_perf_opt.jobs.args import OneLineParser

T = TypeVar("T")


def output_dir(path: str, field: str) -> str:
    """A directory the report writes into, absolute; refused (one line) when it is an existing file."""
    resolved = user_path(path)
    if resolved.exists() and not resolved.is_dir():
        raise ConfigError.field(field, str(resolved), "is an existing file, not a directory")
    return str(resolved)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = OneLineParser(
        prog="./dev report",
        description=__doc__.split("\n\n", 1)[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    p.add_argument("directory", help="the sweep directory (hydra.sweep.dir), or with --analytic the output directory")
    p.add_argument("--analytic", action="store_true", help="analytic-only page sweep into DIRECTORY (no model run)")
    p.add_argument("--out", default=None, help="write the sweep report here instead of the sweep directory")
    p.add_argument("--no-plots", action="store_true", help="tables only")
    p.add_argument(
        "--overwrite", action="store_true", help="--analytic: replace the report OUT_DIR already holds (analytic.*)"
    )
    p.add_argument(
        "--modes",
        nargs="+",
        default=None,
        help="--analytic: workload presets (default: every conf/workload/*.yaml); spaces or commas",
    )
    p.add_argument(
        "--n", type=int, default=None, help="--analytic: page sides per axis (n × n pages per mode; at most 256)"
    )
    p.add_argument("--min-side", type=int, default=None, help="--analytic: smallest page side in pixels")
    p.add_argument("--max-side", type=int, default=None, help="--analytic: largest page side in pixels")
    p.add_argument(
        "--model",
        default=None,
        help="--analytic: named spec (deepseek_ocr, tiny) or a vendor model directory / config.json",
    )
    p.add_argument("--family", default=None, help="--analytic: the model family (llm_perf_opt.families)")
    p.add_argument(
        "--compare",
        nargs="+",
        default=None,
        metavar="LABEL=FAMILY:MODEL:MODE",
        help="--analytic: families / models side by side at the page presets (compare.csv, compare.md), "
        "e.g. v1=dsocr:deepseek_ocr:gundam v1tiny=dsocr:tiny:gundam",
    )
    p.add_argument("--dtype", default=None, help="--analytic: element type for byte counts (default bfloat16)")
    p.add_argument(
        "--hardware",
        nargs="+",
        default=None,
        help="datasheets (conf/hardware/) to predict time to first token on; spaces or commas; 'none': no predictions",
    )
    args = p.parse_args(argv)
    analytic_only = [
        name for name in ANALYTIC_ONLY if getattr(args, name.lstrip("-").replace("-", "_")) not in (None, False)
    ]
    if not args.analytic and analytic_only:
        p.error(
            f"{', '.join(analytic_only)} appl{'ies' if len(analytic_only) == 1 else 'y'} to --analytic only "
            "(a sweep's report takes --out, --no-plots and --hardware)"
        )
    if args.analytic and args.out is not None:
        p.error("--out applies to a sweep's report only: --analytic writes into its OUT_DIR")
    for name, default in ANALYTIC_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    return args


# the options of `--analytic` alone, and their defaults (None in the parser: given or not is told apart)
ANALYTIC_ONLY = (
    "--modes",
    "--n",
    "--min-side",
    "--max-side",
    "--model",
    "--family",
    "--compare",
    "--dtype",
    "--overwrite",
)
ANALYTIC_DEFAULTS = {
    "n": 48,
    "min_side": 256,
    "max_side": 4096,
    "model": "deepseek_ocr",
    "family": "dsocr",
    "dtype": "bfloat16",
}


def hardware_list(values: Optional[Sequence[str]]) -> Optional[list[str]]:
    """--hardware as a list (None when not given; [] for 'none')."""
    if values is None:
        return None
    names = [n for item in values for n in item.split(",") if n]
    return [] if names == ["none"] else names


def compare_entries(items: Sequence[str]) -> list:
    """--compare LABEL=FAMILY:MODEL:MODE ... as entries (each family from the registry); a malformed item is one
    ConfigError naming --compare."""
    from llm_perf_opt import families
    from llm_perf_opt.report.analytic_sweep import CompareEntry

    out = []
    labels: dict[str, str] = {}
    for item in (i for raw in items for i in raw.split(",") if i):
        label, eq, rest = item.partition("=")
        fields = rest.split(":") if eq else []
        if len(fields) != 3 or not label or not all(fields):
            raise ConfigError.field(
                "--compare", item, "must be LABEL=FAMILY:MODEL:MODE (e.g. v1=dsocr:deepseek_ocr:gundam)"
            )
        if label in labels:
            raise ConfigError.field(
                "--compare", item, f"the label {label!r} is given twice ({labels[label]}): each entry needs its own"
            )
        labels[label] = item
        name, model, mode = fields
        if name not in families.names():
            raise ConfigError.field("--compare", item, f"family {name!r} is not one of {', '.join(families.names())}")
        family = families.family(name)
        model = str(user_path(model)) if user_path(model).exists() else model
        try:
            from llm_perf_opt.report.analytic_sweep import model_spec

            model_spec(family, model)
        except ConfigError as exc:
            raise ConfigError.field("--compare", item, f"model {model!r}: {exc}") from None
        if mode not in family.modes():
            raise ConfigError.field(
                "--compare", item, f"mode {mode!r} is not one of {', '.join(family.modes())} ({family.label})"
            )
        out.append(CompareEntry(label, family, model, mode))
    return out


class OutputClaim:
    """The --analytic OUT_DIR: checked at once (a file, a run or sweep directory, an earlier report without
    --overwrite: one line before any work), claimed when the report writes (`report.output_dirs.claim_output`:
    the earlier report's files removed, the directory made), and taken back when the writing fails half-way (a
    full disk, Ctrl-C): the outputs begun, and the directory when the claim made it. A report refused before it
    writes touches nothing, an earlier report included."""

    def __init__(self, args: argparse.Namespace, names: Sequence[str]) -> None:
        from llm_perf_opt.report.output_dirs import claim_output

        self.names, self.overwrite = tuple(names), args.overwrite
        self.out = claim_output(
            user_path(args.directory), names, field="OUT_DIR", overwrite=self.overwrite, create=False
        )
        self.made: Optional[bool] = None  # None until claimed

    def __call__(self, out: Path) -> Path:
        from llm_perf_opt.report.output_dirs import claim_output

        self.made = not out.exists()
        return claim_output(out, self.names, field="OUT_DIR", overwrite=self.overwrite)

    def write(self, build: Callable[[], T]) -> T:
        from llm_perf_opt.report.output_dirs import discard_outputs

        try:
            return build()
        except BaseException:
            if self.made is not None:
                discard_outputs(self.out, self.names, self.made)
            raise


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    return one_line_errors(lambda: run(args))


def run(args: argparse.Namespace) -> int:
    from llm_perf_opt import families

    if args.analytic and args.compare:
        from llm_perf_opt.report.analytic_sweep import COMPARE_OUTPUTS, build_family_comparison

        hardware = hardware_list(args.hardware)
        entries = compare_entries(args.compare)
        claim = OutputClaim(args, COMPARE_OUTPUTS)
        csv_path, md_path, n_rows = claim.write(
            lambda: build_family_comparison(
                claim.out,
                entries,
                dtype=args.dtype,
                make_dir=claim,
                **({"hardware": hardware} if hardware is not None else {}),
            ),
        )
        print(f"{n_rows} rows side by side")
        for path in (md_path, csv_path):
            print(path)
        return ExitCode.OK
    if args.analytic:
        from llm_perf_opt.report.analytic_sweep import ANALYTIC_OUTPUTS, build_analytic_report

        modes = [m for item in args.modes for m in item.split(",") if m] if args.modes else None
        hardware = hardware_list(args.hardware)
        model = str(user_path(args.model)) if user_path(args.model).exists() else args.model
        claim = OutputClaim(args, ANALYTIC_OUTPUTS)
        rep = claim.write(
            lambda: build_analytic_report(
                claim.out,
                modes=modes,
                n=args.n,
                min_side=args.min_side,
                max_side=args.max_side,
                model=model,
                dtype=args.dtype,
                plots=not args.no_plots,
                family=families.family(args.family),
                make_dir=claim,
                **({"hardware": hardware} if hardware is not None else {}),
            ),
        )
        print(f"{rep.points:,} page layouts and cost models in {rep.seconds:.2f} s")
        for path in (rep.html, rep.markdown, rep.csv):
            print(path)
        return ExitCode.OK
    from llm_perf_opt.report.sweep import build_sweep_report

    sweep_dir = user_path(args.directory)
    if sweep_dir.exists() and not sweep_dir.is_dir():
        raise ArtifactError(f"{sweep_dir}: not a sweep directory (it is a file)")
    out = output_dir(args.out, "--out") if args.out else None
    rep = build_sweep_report(
        sweep_dir,
        out_dir=out,
        plots=not args.no_plots,
        hardware=hardware_list(args.hardware),
        family=families.for_run_dir(sweep_dir / "0"),  # the colours and order of its parts
        family_named=families.family,
    )  # the columns of each job's own family
    n_failed, n_running = len(rep.failed), len(rep.running)
    expected = rep.sweep.expected
    print(
        f"{len(rep.rows)} jobs ({len(rep.rows) - n_failed - n_running} ok, {n_failed} failed"
        + (f", {n_running} running or pending" if n_running else "")
        + ")"
        + (f" of {expected} planned" if expected is not None and expected != len(rep.rows) else "")
    )
    for row in rep.failed:
        print(f"  job {row['job']}: {row['status']}", file=sys.stderr)
    for path in (rep.html, rep.markdown, rep.csv):
        print(path)
    return ExitCode.JOBS_FAILED if n_failed else ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
