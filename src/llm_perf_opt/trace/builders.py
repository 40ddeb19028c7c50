"""What every job builds the same way from a validated job: the analytic model with exactly the knobs the trace
job runs, and the inputs the vendor's `infer()` builds. The trace job, `analyze`, `export` and the gate's pins
all call these, so a number means the same thing in each."""
from __future__ import annotations

from typing import Any

from llm_perf_opt.trace.validate import ValidJob, tokenizer_dir


def analytic_model_for(job: ValidJob, width: int, height: int, seq_len: int | None = None) -> Any:
    """The analytic model with exactly the knobs the job runs: workload, page, prompt, dtype, attention."""
    cfg = job.cfg
    # The vendor decoder has no SDPA path for plain multi-head attention: it is always eager.
    eager = cfg.model.source == "vendor" or cfg.runtime.attn_implementation == "eager"
    family = job.family
    return family.analytic_model(
        job.analytic, family.layout(job.workload, width, height), seq_len,
        prompt_tokens=job.prompt_tokens if seq_len is None else 0, dtype=cfg.runtime.dtype,
        decoder_attention="eager" if eager else "sdpa",
    )


def build_job_inputs(job: ValidJob) -> Any:
    w = job.cfg.workload
    return job.family.build_inputs(
        job.spec, job.workload, width=w.page.width, height=w.page.height, image=w.page.image, prompt=w.prompt,
        model_dir=tokenizer_dir(job.cfg),
    )
