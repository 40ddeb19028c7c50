"""`./dev explore RUN_DIR [--port N] [--host H] [--raw | --grouped-only]`: open a run in Model Explorer.

Serves `RUN_DIR/model_explorer/graph.json` (the grouped graph) and `raw.json` (every module call) with
every node-data file beside them (one per metric: FLOPs, bytes, time, arithmetic intensity) through
`ai-edge-model-explorer` (the `explorer` extra, which `./dev` installs) on 127.0.0.1, prints the URL and
serves until interrupted. A run directory without `model_explorer/` but with a `callgraph.json` gets the
files made first (grouped, with `module_costs.json` when present). A missing run, a missing package or
a port in use is one line `error: ...`, exit code 2.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from llm_perf_opt.callgraph.model_explorer import GROUPED_FILE, RAW_FILE, node_data_files
from llm_perf_opt.config.paths import user_path
from llm_perf_opt.errors import ArtifactError, ConfigError, ExitCode, one_line_errors
from llm_perf_opt.jobs.args import OneLineParser

EXPLORER_DIR = "model_explorer"
DEFAULT_PORT = 8080


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = OneLineParser(prog="./dev explore", description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", help="a trace run directory (with model_explorer/ or callgraph.json)")
    ap.add_argument("--host", default="127.0.0.1", help="address to serve on (default: %(default)s)")
    ap.add_argument("--port", type=int, default=None, help=f"port (default: {DEFAULT_PORT}, or a free one if busy)")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--grouped-only", action="store_true", help="load only the grouped graph")
    which.add_argument("--raw-only", action="store_true", help="load only the ungrouped graph (every module call)")
    return ap.parse_args(argv)


def explorer_files(run_dir: Path) -> Path:
    """RUN_DIR/model_explorer/, made from callgraph.json (and module_costs.json) when it is missing."""
    if not run_dir.is_dir():
        raise ArtifactError(f"{run_dir}: no such run directory")
    out = run_dir / EXPLORER_DIR
    if (out / GROUPED_FILE).is_file():
        return out
    if not (run_dir / "callgraph.json").is_file():
        raise ArtifactError(
            f"{run_dir}: neither {EXPLORER_DIR}/{GROUPED_FILE} nor callgraph.json: run ./dev trace first"
        )
    from llm_perf_opt import families
    from llm_perf_opt.callgraph.grouping import group_callgraph
    from llm_perf_opt.callgraph.model_explorer import write_model_explorer
    from llm_perf_opt.callgraph.node_costs import MODULE_COSTS_FILE, attach_costs, load_module_costs
    from llm_perf_opt.callgraph.schema import load_callgraph_json

    cg = load_callgraph_json(run_dir / "callgraph.json")
    grouped = group_callgraph(cg, checks=families.for_run_dir(run_dir).runtime_checks)
    costs = load_module_costs(run_dir / MODULE_COSTS_FILE) if (run_dir / MODULE_COSTS_FILE).is_file() else None
    if costs is not None:
        attach_costs(grouped, costs)
    write_model_explorer(grouped, cg, costs, out)
    return out


def free_port(host: str, wanted: int | None) -> int:
    """`wanted` when given (refused if taken or out of 1-65535), else DEFAULT_PORT when free, else any free
    port. A host that does not resolve is refused by name (`--host`)."""
    try:
        socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ConfigError.field("--host", host, f"does not resolve to an IPv4 address ({exc})") from None
    if wanted is not None and not 1 <= wanted <= 65535:
        raise ConfigError.field("--port", wanted, "must be a port number from 1 to 65535")

    def is_free(port: int) -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
            except OSError:
                return False
            return True

    if wanted is not None:
        if not is_free(wanted):
            raise ConfigError.field("--port", wanted, f"is in use on {host}")
        return wanted
    if is_free(DEFAULT_PORT):
        return DEFAULT_PORT
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def explorer_command(files: Path, host: str, port: int, grouped: bool = True, raw: bool = True) -> list[str]:
    """The `model-explorer` command line serving the graphs and node data of `files`."""
    exe = shutil.which("model-explorer", path=str(Path(sys.executable).parent)) or shutil.which("model-explorer")
    if exe is None:
        raise ConfigError(
            "ai-edge-model-explorer is not installed: ./dev installs it (the 'explorer' extra), or "
            "pip install 'llm-perf-opt[explorer]' naming your torch in the same command"
        )
    models = [files / GROUPED_FILE] if grouped else []
    if raw and (files / RAW_FILE).is_file():
        models.append(files / RAW_FILE)
    data = node_data_files(files)
    cmd = [exe, ",".join(str(m) for m in models), "--no_open_in_browser", "--host", host, "--port", str(port)]
    if data:
        cmd += ["--node_data_paths", ",".join(str(p) for p in data)]
    return cmd


def run(args: argparse.Namespace) -> int:
    files = explorer_files(user_path(args.run_dir))  # relative to where the user ran the command
    port = free_port(args.host, args.port)
    cmd = explorer_command(files, args.host, port, grouped=not args.raw_only, raw=not args.grouped_only)
    print(f"Model Explorer: {len(node_data_files(files))} node-data files from {files}", flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    # Ctrl-C or a SIGTERM (a service manager, a test) ends the server with us: never leave it orphaned
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("http://") or line.startswith("https://"):
                print(f"open: {line.strip()}", flush=True)
            elif "error" in line.lower() or "Traceback" in line:
                print(line.rstrip(), file=sys.stderr, flush=True)
        code = proc.wait()
        if code in (-signal.SIGINT, -signal.SIGTERM, 128 + signal.SIGINT):  # the server was stopped with us
            raise KeyboardInterrupt
        return code
    except KeyboardInterrupt:
        print("interrupted: Model Explorer stopped", file=sys.stderr, flush=True)
        return ExitCode.INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    return one_line_errors(lambda: run(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
