"""`GenerateHost`: the host work of Hugging Face `generate()`'s loop per decode step, outside the model's forward,
as the vendor's `infer()` runs it: greedy search with `no_repeat_ngram_size=20` (the logits processor walks every
sequence's whole token history each step: its cost grows with batch x context) and the argmax and concatenation of
the new tokens. Measured on a host by `measure.generate_host` (never guessed): step_s(B, context) = per_step_s +
per_sequence_s x B + per_token_s x B x context. On an asynchronous device (a GPU) the scores the processor copies
and masks live on the device (kernels, not host work): only the Python walk over the histories, per_token_s, is
charged there (`host_only`). The text streamer `infer()` passes (batch 1 only) decodes with the vendor's tokenizer,
which the project does not have: it is left out, and said so (`LEFT_OUT`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NGRAM = 20  # infer()'s no_repeat_ngram_size
LEFT_OUT = "the text streamer (tokenizer decode per step, batch 1 only): not measured, left out"


@dataclass(frozen=True)
class GenerateHost:
    per_step_s: float
    per_sequence_s: float  # per sequence (the scores row the processor copies and masks, on the host's memory)
    per_token_s: float  # per sequence and per token of its history (the Python n-gram walk)
    source: str  # how it was measured
    where: str  # the host it was measured on
    host_only: bool = False  # an asynchronous device: the per-token walk only

    def step_s(self, batch: int, context: float) -> float:
        walk = self.per_token_s * batch * (context + 1)
        return walk if self.host_only else self.per_step_s + self.per_sequence_s * batch + walk

    def describe(self) -> dict[str, Any]:
        return {
            "per_step_s": self.per_step_s,
            "per_sequence_s": self.per_sequence_s,
            "per_token_s": self.per_token_s,
            "charged": "per token of history only (an asynchronous device: the scores live on the device)"
            if self.host_only
            else "per step + per sequence + per token of history (a synchronous device: the CPU)",
            "source": self.source,
            "where": self.where,
            "left_out": LEFT_OUT,
        }
