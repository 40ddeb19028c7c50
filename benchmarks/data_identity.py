"""The data every job writes, dumped so that two commits can be compared byte for byte.

    python benchmarks/data_identity.py run OUT [--repo DIR] [--no-vendor]
    python benchmarks/data_identity.py compare DIR_A DIR_B

`run` runs, in the checkout `--repo` (default: this one) and with its own `./dev`:

* the default trace job (`./dev trace`: the tiny twin, workload=gundam) with `hardware=h100_sxm`, so the
  roofline predictions come from a datasheet and not from this machine's calibration;
* `./dev analyze` on a few pages and modes (full-size spec, `hardware=h100_sxm`);
* an analytic sweep (`./dev report --analytic`, two modes, 6 x 6 pages);
* an OCR-2 trace, a batch-2 trace and the full twin in Gundam mode (`EXTRA_TRACES`, no profile);
* when DSOCR_MODEL_PATH is set (and not `--no-vendor`), the vendor Tiny run (`model=vendor workload=tiny
  trace.decode_steps=2`, random weights from config.json) under the big-model lock.

It then writes OUT/data/: for every artifact (a JSON file with a `data` section) its `data`, and every CSV,
with what differs between two runs of the same commit removed: measured times, memory, paths, dates, host and
library versions (`VOLATILE` names the keys). `compare` diffs two such folders file by file, byte for byte,
and prints how many files and leaf values it compared; exit 1 on any difference.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from llm_perf_opt.jobs.args import run_script

ANALYZE_PAGES = (
    ("gundam", 1000, 1400),
    ("base", 640, 640),
    ("large", 3000, 1000),
    ("tiny", 800, 1200),
    ("gundam_m", 2480, 3508),
)
SWEEP = [
    "--no-plots",
    "--modes",
    "tiny,gundam",
    "--n",
    "6",
    "--min-side",
    "512",
    "--max-side",
    "3000",
    "--hardware",
    "h100_sxm",
]

# Keys whose values are measured on this machine at this moment, or name where and when: not data of the model.
VOLATILE = re.compile(
    r"(seconds|_s$|_ms$|_us$|^time|times?$|wall|elapsed|rss|peak_cuda|memory|path|dir$|^file|files$|created|date|"
    r"host|hostname|pid|producer|versions?$|^log$|calibrat|measured_roof|profile$|^run$|started|finished|"
    r"duration|throughput|per_s$|job_seconds|generated|timestamp|url|cwd|command|^location$)",
    re.I,
)
# (`location`: a file:line in the model's source, e.g. a scalar escape's: it moves with any edit of that file)
# Columns of a CSV that are measured times or paths.
VOLATILE_COLUMNS = re.compile(r"(seconds|_s$|time|wall|rss|path|dir|run$)", re.I)


# Measured on this machine, under keys that also name deterministic data elsewhere: the calibrated roof of the
# device (`roofs.measured`, `predicted.measured`), the profile's coverage, the achieved FLOP/s, the eager level's
# host-overhead shares (this host's calibrated dispatch time), the eager level itself and what follows from it
# (`levels.eager`, the verdict, the accuracy against measured: the host's cost per op is calibrated on this
# machine even where the device is a datasheet), the efficiency of a timed decode step (predicted / its measured
# wall time), and the graph's measured-time and eager metric tables (`time_measured*`, `time_predicted_eager*`).
MEASURED_UNDER = {"roofs": "measured", "predicted": "measured", "levels": "eager"}
MEASURED_KEYS = re.compile(
    r"^(coverage\w*|achieved_flops|hardware_notes|overhead_share|eager_over_measured|verdict|"
    r"accuracy|eager\w*|efficiency)$"
)
MEASURED_TABLES = ("time_measured", "time_predicted_eager")
CHECKOUT = re.compile(r"/(tmp/base\w*|tmp/seam_pre|work/wt/[\w-]+|work/main)/")


def strip(value: Any, parent: str = "") -> Any:
    if isinstance(value, dict):
        return {
            k: strip(v, str(k))
            for k, v in sorted(value.items())
            if not VOLATILE.search(str(k)) and not MEASURED_KEYS.search(str(k)) and MEASURED_UNDER.get(parent) != k
        }
    if isinstance(value, list):
        return [
            strip(v, parent)
            for v in value
            if not (isinstance(v, dict) and str(v.get("name", "")).startswith(MEASURED_TABLES))
        ]
    if isinstance(value, str):
        return CHECKOUT.sub("/<checkout>/", value)
    return value


def leaves(value: Any) -> int:
    if isinstance(value, dict):
        return sum(leaves(v) for v in value.values())
    if isinstance(value, list):
        return sum(leaves(v) for v in value)
    return 1


def dump(out: Path) -> tuple[int, int]:
    """OUT/data/<relative path>: the stripped data section of every artifact and every CSV. (files, values)."""
    target = out / "data"
    files = values = 0
    for path in sorted(out.rglob("*")):
        if not path.is_file() or target in path.parents or "model_explorer" in path.parts:
            continue
        rel = path.relative_to(out)
        rel = Path(*[re.sub(r"^\d{2}-\d{2}-\d{2}\.\d+-\d+$", "RUN", p) for p in rel.parts])
        if path.suffix == ".json":
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if not isinstance(doc, dict) or "data" not in doc:
                continue
            data = strip(doc["data"])
            text = json.dumps(
                {"schema": doc.get("schema"), "schema_version": doc.get("schema_version"), "data": data},
                indent=1,
                sort_keys=True,
            )
            values += leaves(data)
        elif path.suffix == ".csv":
            rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
            if not rows:
                continue
            keep = [i for i, name in enumerate(rows[0]) if not VOLATILE_COLUMNS.search(name)]
            buf = io.StringIO()
            writer = csv.writer(buf, lineterminator="\n")
            for row in rows:
                writer.writerow([row[i] for i in keep if i < len(row)])
            text = buf.getvalue()
            values += sum(len(keep) for _ in rows[1:])
        else:
            continue
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        files += 1
    return files, values


# The other trace jobs whose numbers a refactoring must keep: an OCR-2 job, a batch-2 job and the full twin in
# Gundam mode (under the big-model lock). No profile: its times are measured, so stripped anyway.
EXTRA_TRACES = (
    ("ocr2_tiny", ("model=ocr2_twin_tiny", "workload=ocr2/default", "profile=off")),
    ("batch2", ("workload.batch=2", "profile=off")),
    ("twin_gundam", ("model=twin", "runtime=cpu_bf16", "workload=gundam", "trace.decode_steps=1", "profile=off")),
)
BIG = {"twin_gundam"}

PYTHON: str | None = None  # --python: run the jobs' scripts with this interpreter (PYTHONPATH=REPO/src), not ./dev


def _dev(repo: Path, *args: str, lock: bool = False) -> None:
    cmd = [str(repo / "dev"), *args] if PYTHON is None else [PYTHON, f"pipelines/{args[0]}.py", *args[1:]]
    env = None if PYTHON is None else {**os.environ, "PYTHONPATH": str(repo / "src")}
    if lock:
        cmd = ["flock", "/tmp/llm-perf-opt-big.lock", *cmd]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=repo, check=True, env=env)


def run(out: Path, repo: Path, vendor: bool) -> None:
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    _dev(repo, "trace", "hardware=h100_sxm", f"hydra.run.dir={out}/trace")
    for mode, w, h in ANALYZE_PAGES:
        _dev(
            repo,
            "analyze",
            f"workload={mode}",
            f"workload.page.width={w}",
            f"workload.page.height={h}",
            "hardware=h100_sxm",
            f"hydra.run.dir={out}/analyze_{mode}_{w}x{h}",
        )
    _dev(repo, "report", "--analytic", str(out / "sweep"), *SWEEP)
    for name, overrides in EXTRA_TRACES:
        _dev(repo, "trace", *overrides, "hardware=h100_sxm", f"hydra.run.dir={out}/{name}", lock=name in BIG)
    model_path = os.environ.get("DSOCR_MODEL_PATH")
    if vendor and model_path:
        _dev(
            repo,
            "trace",
            "model=vendor",
            f"model.path={model_path}",
            "workload=tiny",
            "trace.decode_steps=2",
            "hardware=h100_sxm",
            f"hydra.run.dir={out}/vendor_tiny",
            lock=True,
        )
    elif vendor:
        print("DSOCR_MODEL_PATH is not set: no vendor run", flush=True)
    files, values = dump(out)
    print(f"dumped {files} files, {values} values into {out / 'data'}")


def compare(a: Path, b: Path) -> int:
    da, db = a / "data", b / "data"
    fa = {p.relative_to(da) for p in da.rglob("*") if p.is_file()}
    fb = {p.relative_to(db) for p in db.rglob("*") if p.is_file()}
    bad = 0
    for rel in sorted(fa ^ fb):
        print(f"only in {'A' if rel in fa else 'B'}: {rel}")
        bad += 1
    values = 0
    for rel in sorted(fa & fb):
        ta, tb = (da / rel).read_text(encoding="utf-8"), (db / rel).read_text(encoding="utf-8")
        if rel.suffix == ".json":
            values += leaves(json.loads(ta)["data"])
        else:
            values += sum(max(len(r), 0) for r in list(csv.reader(io.StringIO(ta)))[1:])
        if ta != tb:
            bad += 1
            la, lb = ta.splitlines(), tb.splitlines()
            diff = [f"  A: {x}\n  B: {y}" for x, y in zip(la, lb) if x != y][:5]
            print(f"DIFFERS: {rel}\n" + "\n".join(diff))
    print(f"compared {len(fa & fb)} files ({values} values): {bad} difference(s)")
    return 1 if bad else 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command and its options (a command is required: run, dump or compare)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    r.add_argument("--no-vendor", action="store_true")
    r.add_argument(
        "--python",
        default=None,
        help="interpreter for the jobs (with PYTHONPATH=REPO/src) instead of "
        "REPO/dev: a checkout without its own virtual environment",
    )
    d = sub.add_parser("dump", help="redo OUT/data from the runs already in OUT")
    d.add_argument("out", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.cmd == "run":
        global PYTHON
        PYTHON = args.python
        run(args.out, args.repo.resolve(), not args.no_vendor)
        return 0
    if args.cmd == "dump":
        print("dumped %d files, %d values" % dump(args.out.resolve()))
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(run_script(main))
