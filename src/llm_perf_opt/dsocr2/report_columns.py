"""DeepSeek-OCR 2's own report columns (`ModelFamily.report_columns`): what its encoder does per page, read from
the layout the trace job wrote in summary.json (`layout`: the SAM token grids of the global view and of a crop,
and the crop count), never recomputed from the model.

DeepEncoder V2 appends one learnable query per SAM token to each view (256 at the 1024-px global view: 16x16 SAM
tokens; 144 per 768-px crop: 12x12) and returns only the query positions, so a page's encoder queries are
global_grid² + crops x crop_grid² (256 + 144 n); its layers run over each view's SAM tokens and queries, twice
that many positions.
"""

from __future__ import annotations

from typing import Any, Optional

from llm_perf_opt.report.collect import JobRecord
from llm_perf_opt.report.table import Column, section


def encoder_queries(job: JobRecord) -> Optional[int]:
    """global_grid² + num_crops x crop_grid² of the job's layout; None without a layout."""
    layout = section(job, "layout")
    if layout is None:
        return None
    raw: dict[str, Any] = layout.raw
    return int(raw["global_grid"]) ** 2 + layout.num_crops * int(raw["crop_grid"]) ** 2


def encoder_positions(job: JobRecord) -> Optional[int]:
    queries = encoder_queries(job)
    return None if queries is None else 2 * queries


COLUMNS: tuple[Column, ...] = (
    Column(
        "encoder_queries",
        "encoder queries",
        "count",
        "DeepSeek-OCR 2: query tokens DeepEncoder V2 returns per page, one per SAM token of each view "
        "(256 for the 1024-px global view + 144 per 768-px crop), from the job's layout",
        encoder_queries,
    ),
    Column(
        "encoder_positions",
        "encoder positions",
        "count",
        "DeepSeek-OCR 2: positions the encoder's layers run over per page, each view's SAM tokens and as many "
        "queries (2 x encoder queries), from the job's layout",
        encoder_positions,
        False,
    ),
)
