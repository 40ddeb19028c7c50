"""The host work of `generate()`'s loop per greedy decode step on this host (`analytic.serve_engines.generate_host`):
the `no_repeat_ngram_size=20` logits processor of transformers (the class `generate()` builds for it), the argmax
and the concatenation of the new tokens, timed on token histories of 3 batches x 3 lengths (`SHAPES`), fastest of 5
per shape; a least-squares fit y = a + b x batch + c x batch x length gives the per-step, per-sequence and per-token
figures. Cached per host and transformers version as `generate_host.json` in the calibration directory
(`config.paths.calibration_dir()`); measured (a few seconds) when missing.
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Optional

from llm_perf_opt.analytic.serve_engines.generate_host import NGRAM, GenerateHost
from llm_perf_opt.config.paths import calibration_dir

FILE = "generate_host.json"
SHAPES = ((1, 64), (1, 1024), (1, 2048), (4, 64), (4, 1024), (8, 64), (8, 2048))
VOCAB = 129_280  # DeepSeek-OCR's vocabulary: the width of the scores the processor masks
REPEATS = 5


def measure() -> GenerateHost:
    import torch
    import transformers
    from transformers.generation.logits_process import NoRepeatNGramLogitsProcessor

    proc = NoRepeatNGramLogitsProcessor(NGRAM)
    gen = torch.Generator().manual_seed(0)
    rows, ys = [], []
    for b, length in SHAPES:
        ids = torch.randint(0, 1000, (b, length), generator=gen)  # a small alphabet: repeated n-grams occur
        scores = torch.zeros(b, VOCAB)
        best = float("inf")
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            s = proc(ids, scores)
            nxt = torch.argmax(s, dim=-1)
            torch.cat([ids, nxt[:, None]], dim=-1)
            best = min(best, time.perf_counter() - t0)
        rows.append((1.0, float(b), float(b * length)))
        ys.append(best)
    import numpy as np

    a, per_seq, per_tok = (max(float(v), 0.0) for v in np.linalg.lstsq(np.array(rows), np.array(ys), rcond=None)[0])
    return GenerateHost(
        a,
        per_seq,
        per_tok,
        f"transformers {transformers.__version__} NoRepeatNGramLogitsProcessor({NGRAM}) + argmax + cat on token "
        f"histories (batch, length) {list(SHAPES)} of a {VOCAB}-wide vocabulary, fastest of {REPEATS}, "
        "least-squares fit over 1, batch and batch x length",
        f"this host ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)",
    )


def generate_host(cache_dir: Optional[str | Path] = None) -> GenerateHost:
    """The cached figure of this host, measured now when missing."""
    import transformers

    path = Path(calibration_dir(cache_dir)) / FILE
    key = f"{platform.node()}|{platform.processor() or platform.machine()}|transformers {transformers.__version__}"
    try:
        data = json.loads(path.read_text())
        if data.get("key") == key:
            return GenerateHost(**{k: v for k, v in data["figure"].items() if k != "host_only"})
    except (OSError, ValueError, TypeError, KeyError):
        pass
    fig = measure()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"key": key, "figure": fig.__dict__}, indent=2))
    return fig
