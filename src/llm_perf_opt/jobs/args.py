"""The argparse parser of the plain commands (group, explore, report, compare, the benchmarks): a bad argument is
one line; the argument types with a bound (`positive_int`, `bounded_int`); the benchmarks' `--quick-calibration`.

argparse prints its usage block before the error; the project's rule for bad input is one line `error: ...`
and exit code 2, so the parser prints only the line, with a pointer to `--help` for the usage.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, NoReturn

from llm_perf_opt.errors import ExitCode, cut


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line: `error: PROG: MESSAGE (PROG --help for usage)`."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {cut(message)} ({self.prog} --help for usage)", file=sys.stderr)
        raise SystemExit(ExitCode.CONFIG)


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (argparse names the option in its one-line error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive integer")
    return value


def bounded_int(low: int, high: int):
    """An argparse type: an integer in [low, high] (a size the work must respect)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is not between {low:,} and {high:,}")
        return value

    parse.__name__ = f"integer in [{low}, {high}]"
    return parse


def nonnegative_int(text: str) -> int:
    """An argparse type: an integer >= 0 (a count that may be zero: warm-up runs, decode steps)."""
    return bounded_int(0, 2**62)(text)


def add_quick_calibration(p: argparse.ArgumentParser) -> None:
    """A benchmark's `--quick-calibration`: `hardware=measured` on the quick calibration plan (`quick_calibration`)."""
    p.add_argument(
        "--quick-calibration",
        action="store_true",
        help="hardware=measured on the quick calibration plan (hardware.quick=true: fewer, smaller cases, about a "
        "tenth of the full plan's time; a smoke test's roof, not one to judge a prediction by)",
    )


def quick_calibration(args: argparse.Namespace) -> list[str]:
    """The overrides `--quick-calibration` adds to a benchmark's `hardware=measured` job: [] without it."""
    return ["hardware.quick=true"] if getattr(args, "quick_calibration", False) else []


def run_script(main: Callable[[], Any]) -> int:
    """The `__main__` of a script run by hand (a benchmark: `./dev bench NAME`): `main()`'s exit status, with a
    PipelineError or an output the file system refuses as one line `error: ...` and exit 2 (`one_line_errors`),
    never a traceback."""
    from llm_perf_opt.errors import one_line_errors

    return one_line_errors(lambda: main() or ExitCode.OK)
