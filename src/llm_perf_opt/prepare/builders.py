"""What every job builds the same way from a validated job: the analytic model with exactly the knobs the trace
job runs (and the same model with bytes counted in a roof's dtype), and the inputs the vendor's `infer()` builds.
The trace job, `analyze`, `size`, `export` and the gate's pins all call these, so a number means the same thing in
each."""

from __future__ import annotations

import sys
from typing import Any, Optional

from llm_perf_opt.analytic import dtype_bytes
from llm_perf_opt.analytic.execution import Execution
from llm_perf_opt.prepare.validate import ValidJob, tokenizer_dir


def running_gpu_capability() -> Optional[tuple[int, int]]:
    """The compute capability of this process's CUDA GPU, when torch is already imported (a job that runs the model has
    imported it; `./dev analyze` does not import it for this) and sees one; else None."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability()
    return int(major), int(minor)


def execution_for(cfg: Any, capability: Optional[tuple[int, int]] = None) -> Execution:
    """Where the job's forward runs (`runtime.device`, `runtime.autocast`), as the cost formulas take it; on CUDA the
    GPU's compute capability: `capability` (a recorded run's), else this process's GPU (`running_gpu_capability`),
    else not known (`Execution` assumes one and says so)."""
    device = str(cfg.runtime.device).split(":")[0]
    autocast = bool(cfg.runtime.autocast)
    if device != "cuda":
        return Execution("cpu", autocast)
    return Execution("cuda", autocast, capability if capability is not None else running_gpu_capability())


def analytic_model_for(
    job: ValidJob,
    width: int,
    height: int,
    seq_len: int | None = None,
    capability: Optional[tuple[int, int]] = None,
    *,
    batch: bool = True,
) -> Any:
    """The analytic model with exactly the knobs the job runs: workload, page, prompt, dtype, attention, where it
    runs (`execution_for`; `capability`: the GPU's, for a recorded run); `batch=False`: the page alone at batch 1
    (what the serving math scales: `serving_model` serves the first page), so a job can check what depends on the
    batch (its memory) before the batch is priced."""
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
        execution=execution_for(cfg, capability),
        **batched,
    )


def build_job_inputs(job: ValidJob) -> Any:
    """One page's inputs; at batch > 1 every sequence's (page i a synthetic page of seed i, or the image file
    for each), batched as generate() takes them (the family's `batch_inputs`)."""
    return batch_of(job, job_samples(job))


def job_samples(job: ValidJob) -> list[Any]:
    """Each sequence's own inputs, unbatched: page i a synthetic page of seed i (or the image file), in the order
    `job.page_sizes` gives (one page at batch 1)."""
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
        return [build(w.page.width, w.page.height, 0)]
    return [build(width, height, i) for i, (width, height) in enumerate(job.page_sizes)]


def batch_of(job: ValidJob, samples: list[Any]) -> Any:
    """The job's inputs from its sequences' (`job_samples`, or the first `workload.batch` of a larger job's with the
    same pages): the one sample at batch 1, else the family's `batch_inputs`."""
    if job.cfg.workload.batch == 1:
        return samples[0]
    return job.family.batch_inputs(list(samples))


def model_for_dtype(model: Any, dtype: str) -> Any:
    """The same analytic model with bytes counted in `dtype` (a roof predicts in its own dtype)."""
    if dtype_bytes(dtype) == model.dtype_bytes:
        return model
    return model.with_dtype(dtype)


def analytic_model_of_run(run: Any) -> Any:
    """The analytic model of a recorded run's configuration (`measure.recorded_runs.RecordedRun`): its overrides
    composed and validated as the analyze job does (nothing that needs the run's device), its page, its prompt length
    as recorded, its GPU's compute capability. The workload knobs the composed mode gives must be the ones the run
    recorded (a mode whose file changed since is refused by name)."""
    from llm_perf_opt.config.compose import compose
    from llm_perf_opt.errors import ArtifactError
    from llm_perf_opt.prepare.validate import validate

    job = validate(compose((*run.overrides(), "~hardware")), runs_model=False)  # no roof: nothing is timed here
    recorded = dict(run.summary.workload.extra)
    for knob, value in recorded.items():
        now = getattr(job.cfg.workload, knob, None)
        if now != value:
            raise ArtifactError(f"{run.path}: workload.{knob} was {value!r}, mode {run.mode!r} now gives {now!r}")
    return analytic_model_for(job, job.page_width, job.page_height, seq_len=run.seq_len, capability=run.cuda_capability)
