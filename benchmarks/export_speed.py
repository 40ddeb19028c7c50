"""Export time per submodule of the full-size twin (Gundam mode, a 1700x2200 page: 6 crops, 903 image
tokens): torch.export to the export IR, run_decompositions() to core ATen, and the FLOP count on the
graph, each timed once (wall clock, CPU, no warm-up: export is a one-off per shape). Prints one row per
submodule and the time to record the inputs (the real forward with hooks).

Builds the 3.3B-parameter model (about 13 GB in float32): run it under the big-run lock,
    flock /tmp/llm-perf-opt-big.lock ./dev bench export_speed [--model twin_tiny] [--workload gundam]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from typing import Optional, Sequence

from llm_perf_opt import families, units
from llm_perf_opt.config.compose import compose
from llm_perf_opt.dsocr.session import DeepSeekOCRSession
from llm_perf_opt.export import plan_targets
from llm_perf_opt.export.flops import graph_ops, total_flops
from llm_perf_opt.export.hooks import record_calls
from llm_perf_opt.export.modules import call_for
from llm_perf_opt.export.moe import fixed_routing
from llm_perf_opt.export.program import ExportRefused, export_graphs
from llm_perf_opt.jobs.args import run_script
from llm_perf_opt.prepare.builders import build_job_inputs
from llm_perf_opt.prepare.validate import validate


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The options; no argument: the defaults."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="twin", help="model config (twin = full size; twin_tiny for a dry run)")
    ap.add_argument("--workload", default="gundam")
    ap.add_argument("--runtime", default="cpu")
    return ap.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    families.register_configs()  # the families' workload schemas, which conf/workload/*.yaml name
    job = validate(compose([f"model={args.model}", f"workload={args.workload}", f"runtime={args.runtime}"]))
    cfg, spec = job.cfg, job.spec
    inputs = build_job_inputs(job)
    plan = plan_targets(cfg.export, spec, inputs.layout, inputs.seq_len, mode=cfg.workload.name, family=job.family)
    t0 = time.perf_counter()
    with DeepSeekOCRSession.open(cfg.model, cfg.runtime) as session:
        t_open = time.perf_counter() - t0
        t0 = time.perf_counter()
        recorded = record_calls(session, inputs, plan.targets)
        t_record = time.perf_counter() - t0
        print(
            f"{spec.name} | {cfg.workload.name} | page {inputs.layout.page_width}x{inputs.layout.page_height} | "
            f"sequence {inputs.seq_len} | {cfg.runtime.dtype} on {session.device} | threads "
            f"{__import__('torch').get_num_threads()}"
        )
        print(
            f"open the model {units.seconds(t_open)}; record inputs (prefill + decode step, hooks) "
            f"{units.seconds(t_record)}"
        )
        head = (
            f"{'submodule':<17} {'first input':<22} {'export':>9} {'decompose':>10} {'FLOP count':>11} "
            f"{'core nodes':>10} {'FLOPs':>11}"
        )
        print(head)
        print("-" * len(head))
        for target in plan.targets:
            rec = recorded[target.name]
            call = call_for(session.model, rec)
            note = ""
            try:
                graphs = export_graphs(call, session.autocast_context())
            except ExportRefused:
                with fixed_routing(call.module.mlp, rec.routing, job.family.run_experts_by_load):
                    graphs = export_graphs(call, session.autocast_context())
                note = "  (fixed routing)"
            t0 = time.perf_counter()
            ops = graph_ops(graphs.core, call.relative_path)
            flops = total_flops(ops)
            t_count = time.perf_counter() - t0
            first = next(t for _, t in rec.tensor_inputs())
            print(
                f"{target.name:<17} {str(list(first.shape)):<22} {units.seconds(graphs.export_seconds):>9} "
                f"{units.seconds(graphs.decompose_seconds):>10} {units.seconds(t_count):>11} {len(ops):>10} "
                f"{units.flops(flops):>11}{note}"
            )
    print(f"peak RSS {units.nbytes(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)}")


if __name__ == "__main__":
    sys.exit(run_script(main))
