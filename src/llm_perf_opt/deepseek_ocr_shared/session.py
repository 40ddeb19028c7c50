"""The session of the DeepSeek-OCR model line (v1 and 2 alike): `model_runtime.session.Session` with what both
generations' `DeepseekOCR*Model` need. Each family's loaders and parts complete it (`dsocr.session`, or the
`loaders` / `part_list` that `open` takes).

* parameter counts: the two learned separator vectors of `model.model` (`image_newline`, `view_seperator`;
  v2 has only the second) count as one entry;
* a decode step passes no images (the vision branch runs only for a prompt of more than one token);
* a vendor forward's debugging `print`s are silenced (`quiet_prints`, which a family may map to its own
  patch through `patch_names`).
"""

from __future__ import annotations

from llm_perf_opt.model_runtime.session import Session


class DeepSeekSession(Session):
    separators = ("image_newline", "view_seperator")  # DeepseekOCRModel's learned separator vectors
    decode_step_inputs = {"images": None, "images_seq_mask": None, "images_spatial_crop": None}
    vendor_patches = ("quiet_prints",)
