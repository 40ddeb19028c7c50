"""`trace.job.logits_finite`: the trace job's "every logit finite" figure (summary.json `logits_finite`)."""

import pytest
import torch

from llm_perf_opt.trace.job import logits_finite


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_one_non_finite_logit_anywhere_is_found(dtype):
    logits = torch.randn(2, 37, 1031).mul(60).to(dtype)
    assert logits_finite(logits)
    checked = 0
    for value in (float("nan"), float("inf"), float("-inf")):
        for where in ((0, 0, 0), (1, 36, 1030), (1, 5, 517)):
            bad = logits.clone()
            bad[where] = value
            assert not logits_finite(bad), (value, where)
            checked += 1
    assert checked == 9


def test_large_finite_logits_are_finite():
    """A sum would overflow; the largest and smallest values do not."""
    logits = torch.full((4, 8, 64), torch.finfo(torch.float16).max, dtype=torch.float16)
    logits[..., ::2] *= -1
    assert logits_finite(logits)
