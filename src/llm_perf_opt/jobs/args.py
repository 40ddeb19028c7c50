"""The argparse parser of the plain commands (group, explore, report): a bad argument is one line.

argparse prints its usage block before the error; the project's rule for bad input is one line `error: ...`
and exit code 2, so the parser prints only the line, with a pointer to `--help` for the usage.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from llm_perf_opt.errors import ExitCode, cut


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line: `error: PROG: MESSAGE (PROG --help for usage)`."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {cut(message)} ({self.prog} --help for usage)", file=sys.stderr)
        raise SystemExit(ExitCode.CONFIG)
