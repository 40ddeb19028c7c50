"""Which aten op names do matrix-multiplication or convolution work (`is_matmul_like`): plain names, no torch,
so readers of a finished run (`./dev group`, the costs on the graph) use them without importing torch."""

from __future__ import annotations

import re

# Matmul-like aten ops: if one of these runs without a formula, FLOPs are being lost.
_MATMUL_LIKE = re.compile(
    r"(^|\.)(_?(b|add|baddb|addb)?mm|_?matmul|linear|mkldnn_linear|einsum|tensordot|dot|vdot|mv|addmv|addr|"
    r"ger|outer|inner|_?conv\w*|convolution\w*|mkldnn_convolution|\w*scaled_dot_product\w*|\w*attention\w*|"
    r"\w*flash_?attn\w*|_int_mm|_weight_int\w*mm\w*|_scaled_mm|chain_matmul|linalg_\w+)(\.|$)"
)


def is_matmul_like(op_name: str) -> bool:
    """True for aten op names whose work is matrix multiplication or convolution."""
    return bool(_MATMUL_LIKE.search(op_name))
