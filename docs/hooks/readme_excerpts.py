"""README.md's command excerpts, generated from real runs of the commands, never typed (issue 33, item 7).

    ./dev docs --readme                 run every excerpt's command and rewrite its block in README.md
    ./dev docs --readme analyze size    only those excerpts (the cheap ones: seconds each)
    ./dev docs --readme --check         rewrite nothing: exit 1 and show what differs (modulo timings and paths)

An excerpt in README.md is a fenced block between two marker comments; the opening one names the excerpt and the
command it runs:

    <!-- excerpt analyze: ./dev analyze hardware=h100_sxm workload=gundam -->
    ```
    $ ./dev analyze hardware=h100_sxm workload=gundam      (9.9 s wall, 2.1 s CPU (user+sys) here: 2 CPUs, ...)
    predicted: vision 7.39 ms | ...
    ```
    <!-- /excerpt -->

The block is the command (with how long it took where it was generated), then the lines of its output (stdout and
stderr, progress timestamps dropped) that `EXCERPTS[name]` selects, in the order they were printed. With the trace
excerpt, README's picture (docs/img/run-page.png) is taken again: the first screen (1366x768) of its run page.
Figures that depend on the machine that runs the command (times, shares of time, and for the time levels the
verdict, which the host's eager overhead decides) and paths (run directories are named by date, time and process)
are compared modulo those (`normalise`): tests/system/test_readme.py reruns the cheap commands (and reads the trace
and verify outputs of the session's shared runs) and fails when README.md says anything else.

This is a script, not a mkdocs hook (docs/hooks/ is left out of the site); nothing here is imported by the package.
"""

from __future__ import annotations

import os
import re
import resource
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MARKER = re.compile(
    r"<!-- excerpt (?P<name>[\w-]+): (?P<command>[^\n]+?) -->\n```\n(?P<body>.*?)```\n<!-- /excerpt -->", re.S
)
STAMP = re.compile(r"^\[\d\d:\d\d:\d\d\] ")  # a progress line's time stamp


@dataclass(frozen=True)
class Excerpt:
    """Which lines of a command's output an excerpt shows (regular expressions, each line kept once, in output
    order), and whether the host's verdict words are machine-dependent (the time-level table)."""

    keep: tuple[str, ...]
    host_verdicts: bool = False
    cheap: bool = True  # seconds: the test reruns it (the others come from the session's shared runs)

    def select(self, output: str) -> list[str]:
        patterns = [re.compile(p) for p in self.keep]
        out = []
        for line in output.splitlines():
            line = STAMP.sub("", line.rstrip())
            if any(p.search(line) for p in patterns) and line not in out:
                out.append(line)
        return out


EXCERPTS = {
    "trace": Excerpt(
        (
            r"^twin_tiny \| mode ",
            r"^  grid \d+x\d+ ",
            r"^grouped graph: ",
            r"^verification: ",
            r"^kernel counts vs TorchLens: ",
            r"^run page: ",
        ),
        cheap=False,
    ),
    "analyze": Excerpt(
        (r"^predicted: ", r"^time levels on ", r"^stage / part +ideal +kernel", r"^decode +[\d.]+ "),
        host_verdicts=True,
    ),
    "size": Excerpt((r"^  target ", r"^  (ttft_s|tpot_s|pages_per_day)=", r"^  replicas: ", r"^  binding: ")),
    "verify": Excerpt((r"^verify \w+: (PASSED|FAILED)", r"^  report "), cheap=False),
}

_TIME = re.compile(r"(?<![\w.])[-+−]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?\s?(?:s|ms|µs|us|ns|min|h)(?![\w/])")
_PERCENT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?%")
_PATH = re.compile(r"(?<!\S)(?:[\w.<>~-]*/)+([\w.<>-]+)")
_VERDICT = re.compile(r"(?<= )(host|launch|memory|compute|sync|bandwidth)(?= )")
_MACHINE = re.compile(r"time levels on .*")


def normalise(lines: Sequence[str], excerpt: Excerpt) -> list[str]:
    """The lines with what depends on the machine and the moment made placeholders: times, shares of time, paths
    (to `…/NAME`), the host's description, and (time levels) the verdict; runs of spaces made one."""
    out = []
    for line in lines:
        line = _PATH.sub(r"…/\1", line)
        line = _TIME.sub("<t>", line)
        line = _PERCENT.sub("<%>", line)
        if excerpt.host_verdicts:
            line = _MACHINE.sub("time levels on <this host>", line)
            line = _VERDICT.sub("<verdict>", line)
        out.append(re.sub(r" +", " ", line).strip())
    return out


def blocks(text: str) -> dict[str, tuple[str, list[str]]]:
    """name -> (command, the excerpt's output lines) of every excerpt in README text (the `$` line dropped)."""
    out = {}
    for m in MARKER.finditer(text):
        lines = m["body"].rstrip("\n").split("\n")
        out[m["name"]] = (m["command"], [line for line in lines if not line.startswith("$ ")])
    return out


def run(command: str) -> tuple[str, str]:
    """(stdout and stderr, how long it took: wall and CPU seconds) of `./dev ...` run from the repository."""
    argv = shlex.split(command)
    if not argv or argv[0] != "./dev":
        raise SystemExit(f"error: an excerpt's command must start with ./dev, found {command!r}")
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=3600)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"error: {command} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    took = f"{wall:.1f} s wall, {cpu:.1f} s CPU (user+sys) here: {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}"
    return proc.stdout + proc.stderr, took


_DATE_DIR = re.compile(r"/\d{4}-\d\d-\d\d/")
_TIME_DIR = re.compile(r"/\d\d-\d\d-\d\d(?:\.\d+)?(-\d+)?/")


def relative(lines: list[str]) -> list[str]:
    """Absolute paths inside the repository written relative to it (README readers have their own checkout), and a
    run directory's date, time and process as `<date>/<time>-<pid>` (the names every run gets)."""
    out = []
    for line in lines:
        line = _DATE_DIR.sub("/<date>/", line.replace(str(REPO) + "/", ""))
        out.append(_TIME_DIR.sub(lambda m: "/<time>-<pid>/" if m.group(1) else "/<time>/", line))
    return out


def block(command: str, lines: list[str], took: str) -> str:
    return "\n".join([f"$ {command}      ({took})", *lines]) + "\n"


SCREENSHOT = REPO / "docs" / "img" / "run-page.png"  # README's picture: the trace excerpt's run page, first screen
RUN_PAGE = re.compile(r"^(?:\[\d\d:\d\d:\d\d\] )?run page: (\S+)$", re.M)


def screenshot(output: str, path: Path = SCREENSHOT, size: tuple[int, int] = (1366, 768)) -> str:
    """The first screen of the run page the trace printed, saved as README's picture (Playwright driving the
    system's chromium, $CHROMIUM or chromium on the PATH); what it did, in one line."""
    import shutil

    m = RUN_PAGE.search(output)
    exe = shutil.which(os.environ.get("CHROMIUM") or "chromium") or shutil.which("chromium-browser")
    if m is None or exe is None:
        return f"screenshot: not taken ({'no run page in the output' if m is None else 'no chromium'})"
    from playwright.sync_api import sync_playwright

    page_file = Path(m.group(1)) if Path(m.group(1)).is_absolute() else REPO / m.group(1)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": size[0], "height": size[1]})
        page.goto(page_file.as_uri(), wait_until="load")
        page.screenshot(path=str(path))
        browser.close()
    return f"screenshot: {path.relative_to(REPO)} from {page_file} at {size[0]}x{size[1]}"


def regenerate(text: str, names: Sequence[str] = ()) -> tuple[str, list[str]]:
    """README text with the named excerpts (all when empty) rerun and rewritten; and what it ran."""
    ran = []

    def replace(m: re.Match) -> str:
        name, command = m["name"], m["command"]
        if names and name not in names:
            return m.group(0)
        if name not in EXCERPTS:
            raise SystemExit(f"error: README.md names an unknown excerpt {name!r} (known: {', '.join(EXCERPTS)})")
        output, took = run(command)
        lines = relative(EXCERPTS[name].select(output))
        if not lines:
            raise SystemExit(f"error: {command} printed none of the lines excerpt {name!r} keeps")
        ran.append(f"{name}: {command}: {len(lines)} lines ({took})")
        if name == "trace":
            ran.append(screenshot(output))
        return f"<!-- excerpt {name}: {command} -->\n```\n{block(command, lines, took)}```\n<!-- /excerpt -->"

    return MARKER.sub(replace, text), ran


def differences(readme: str, outputs: dict[str, str]) -> list[str]:
    """What README text says that the outputs (name -> the command's output) do not, modulo timings and paths:
    one line per differing excerpt line; [] when they agree."""
    found = blocks(readme)
    out = []
    for name, output in outputs.items():
        if name not in found:
            out.append(f"{name}: no such excerpt in README.md")
            continue
        excerpt = EXCERPTS[name]
        said = normalise(found[name][1], excerpt)
        printed = normalise(relative(excerpt.select(output)), excerpt)
        if said != printed:
            out.append(f"{name} ({found[name][0]}):\n  README says: {said}\n  it prints:   {printed}")
    return out


def main(argv: Sequence[str]) -> int:
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("-")]
    unknown = [n for n in names if n not in EXCERPTS]
    if unknown:
        print(f"error: unknown excerpt {unknown[0]!r}: one of {', '.join(EXCERPTS)}", file=sys.stderr)
        return 2
    text = README.read_text(encoding="utf-8")
    if check:
        outputs = {}
        for name, (command, _) in blocks(text).items():
            if not names or name in names:
                outputs[name] = run(command)[0]
        diff = differences(text, outputs)
        print("\n".join(diff) or f"README.md: {len(outputs)} excerpts agree with their commands")
        return 1 if diff else 0
    new, ran = regenerate(text, names)
    if new != text:
        README.write_text(new, encoding="utf-8")
    print("\n".join(ran))
    print(f"README.md: {len(ran)} excerpts {'rewritten' if new != text else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
