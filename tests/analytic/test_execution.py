"""Where a forward runs (`analytic.execution`): the SDPA backend torch picks for a call and the layout of what it
returns, checked against torch on this CPU where a CPU can tell; a GPU's compute capability from its name."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from llm_perf_opt.analytic.execution import (
    CPU,
    Execution,
    capability_of_name,
    sdpa_output_layout,
)

H200 = Execution("cuda", True, (9, 0))
A100 = Execution("cuda", True, (8, 0))


def test_sdpa_backend_rules():
    # the recorded H200 (torch 2.11): cuDNN for every 16-bit call, masked or not (head dims 64 and 128)
    assert {H200.sdpa_backend(2, mask, d) for mask in (True, False) for d in (64, 128)} == {"cudnn"}
    assert Execution("cuda", True, (10, 0)).sdpa_backend(2, True, 64) == "cudnn"  # B200
    # an A100: flash without a mask, memory-efficient with one; float32: memory-efficient
    assert A100.sdpa_backend(2, False, 64) == "flash" and A100.sdpa_backend(2, True, 64) == "efficient"
    assert H200.sdpa_backend(4, True, 64) == "efficient"  # cuDNN and flash take 16-bit dtypes only
    assert H200.sdpa_backend(2, True, 72) == "cudnn" and H200.sdpa_backend(2, True, 76) == "math"  # 76: not 8k
    assert H200.sdpa_backend(2, True, 64, 128) == "efficient"  # unequal q and v head dims: not cuDNN
    t4 = Execution("cuda", False, (7, 5))  # no flash; 16 bits taken as bfloat16, which memory-efficient runs on sm80+
    assert t4.sdpa_backend(2, False, 64) == "math" and t4.sdpa_backend(4, False, 64) == "efficient"
    assert t4.sdpa_backend(4, False, 62) == "math"  # float32 head dims: a multiple of 4
    assert CPU.sdpa_backend(2, True, 64) == "cpu_flash" == CPU.sdpa_backend(4, False, 64)
    assert CPU.sdpa_backend(8, False, 64) == "cpu_math"
    # unknown GPU: the recorded class, said in the label
    assert Execution("cuda").gpu == (9, 0) and "assumed" in Execution("cuda").label
    with pytest.raises(ValueError, match="xla"):
        Execution("xla")


def test_sdpa_output_layout():
    assert sdpa_output_layout("cudnn", True) == "bhtd" and sdpa_output_layout("cudnn", False) == "bthd"
    assert sdpa_output_layout("flash", True) == "bthd" == sdpa_output_layout("efficient", True)
    assert sdpa_output_layout("math", False) == "bhtd"
    assert sdpa_output_layout("cpu_flash", False) == "bthd" and sdpa_output_layout("cpu_flash", True) == "bhtd"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("mask", [False, True])
def test_cpu_sdpa_result_follows_its_query(dtype, mask):
    """The CPU rule above, on this torch: a query in the (B, T, H, d) order RoPE leaves (a transposed projection) gives
    a result whose transpose is contiguous (no copy), a contiguous query a contiguous (B, H, T, d) result."""
    b, t, h, d = 1, 9, 4, 16
    q, k, v = (torch.randn(b, t, h, d, dtype=dtype).transpose(1, 2) for _ in range(3))
    m = torch.zeros(1, 1, t, t, dtype=dtype) if mask else None
    backend = CPU.sdpa_backend(torch.finfo(dtype).bits // 8, mask, d)
    for query, contiguous in ((q, False), (q.contiguous(), True)):
        out = F.scaled_dot_product_attention(query, k, v, attn_mask=m)
        copies = not out.transpose(1, 2).is_contiguous()
        assert copies == (sdpa_output_layout(backend, contiguous) == "bhtd")


def test_capability_of_name():
    assert capability_of_name("NVIDIA H200") == (9, 0) and capability_of_name("NVIDIA H100 80GB HBM3") == (9, 0)
    assert capability_of_name("NVIDIA A100-SXM4-80GB") == (8, 0)
    assert capability_of_name("NVIDIA GeForce RTX 4090") == (8, 9) and capability_of_name("NVIDIA A10G") == (8, 6)
    assert capability_of_name("Some Future GPU") is None


def test_a_float32_model_is_costed_without_autocast():
    assert H200.for_dtype(4) == Execution("cuda", False, (9, 0)) and H200.for_dtype(2) is H200
    assert not H200.for_dtype(4).cuda_autocast and H200.cuda_autocast and not Execution("cpu", True).cuda_autocast
