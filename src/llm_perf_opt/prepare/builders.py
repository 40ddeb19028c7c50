"""What every job builds the same way from a validated job: the analytic model with exactly the knobs the trace
job runs (and the same model with bytes counted in a roof's dtype), and the inputs the vendor's `infer()` builds.
The trace job, `analyze`, `size`, `export` and the gate's pins all call these, so a number means the same thing in
each."""

from __future__ import annotations

from typing import Any

from llm_perf_opt.analytic import dtype_bytes
from llm_perf_opt.prepare.validate import ValidJob, tokenizer_dir


def analytic_model_for(
    job: ValidJob, width: int, height: int, seq_len: int | None = None, *, batch: bool = True
) -> Any:
    """The analytic model with exactly the knobs the job runs: workload, page, prompt, dtype, attention;
    `batch=False`: the page alone at batch 1 (what the serving math scales: `serving_model` serves the first
    page), so a job can check what depends on the batch (its memory) before the batch is priced."""
    cfg = job.cfg
    # The vendor decoder has no SDPA path for plain multi-head attention: it is always eager.
    eager = cfg.model.source == "vendor" or cfg.runtime.attn_implementation == "eager"
    family = job.family
    layout = family.layout(job.workload, width, height)
    batched = {}
    if (
        batch and cfg.workload.batch > 1
    ):  # the batch's layouts, the first being (width, height)'s; one per distinct page
        layouts = {(width, height): layout}
        for w, h in job.page_sizes[1:]:
            if (w, h) not in layouts:
                layouts[(w, h)] = family.layout(job.workload, w, h)
        batched = {
            "batch": cfg.workload.batch,
            "batch_layouts": tuple([layout] + [layouts[size] for size in job.page_sizes[1:]]),
        }
    return family.analytic_model(
        job.analytic,
        layout,
        seq_len,
        prompt_tokens=job.prompt_tokens if seq_len is None else 0,
        dtype=cfg.runtime.dtype,
        decoder_attention="eager" if eager else "sdpa",
        **batched,
    )


def build_job_inputs(job: ValidJob) -> Any:
    """One page's inputs; at batch > 1 every sequence's (page i a synthetic page of seed i, or the image file
    for each), batched as generate() takes them (the family's `batch_inputs`)."""
    w = job.cfg.workload
    build = lambda width, height, seed: job.family.build_inputs(  # noqa: E731
        job.spec,
        job.workload,
        width=width,
        height=height,
        image=w.page.image,
        prompt=w.prompt,
        model_dir=tokenizer_dir(job.cfg),
        seed=seed,
    )
    if w.batch == 1:
        return build(w.page.width, w.page.height, 0)
    return job.family.batch_inputs([build(width, height, i) for i, (width, height) in enumerate(job.page_sizes)])


def model_for_dtype(model: Any, dtype: str) -> Any:
    """The same analytic model with bytes counted in `dtype` (a roof predicts in its own dtype)."""
    if dtype_bytes(dtype) == model.dtype_bytes:
        return model
    return model.with_dtype(dtype)
