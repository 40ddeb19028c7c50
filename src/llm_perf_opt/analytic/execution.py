"""Where a forward runs, as far as its kernels and tensors depend on it (`Execution`): the device type, CUDA autocast,
and the backend `F.scaled_dot_product_attention` picks there (`Execution.sdpa_backend`) with what that backend makes.
Pure: no torch (the trace job reads the GPU's compute capability from torch and passes it in).

SDPA's backend (torch's `select_sdp_backend`, dense 4-D inputs, inference, no dropout):

* CUDA: the first backend of the priority order whose constraints hold. The order starts with cuDNN attention where
  torch prefers it (`check_prefer_cudnn_attention`: a data-center Hopper or Blackwell GPU, compute capability 9.0 or
  10.0, with the cuDNN of recent torch wheels: the recorded H200 run, torch 2.11, ran every SDPA call on cuDNN), then
  flash attention, memory-efficient attention, math. cuDNN: 16-bit dtypes, equal q and v head dims of at most 256, a
  multiple of 8; flash: the same on capability >= 8.0, and no `attn_mask`; memory-efficient: capability >= 5.0 (a
  bfloat16 call needs 8.0), head dims a multiple of 8 (16-bit) or 4 (float32); else math. A 2-byte dtype is taken as
  bfloat16 (the models' 16-bit dtype here; float16 would also run memory-efficient below 8.0).
* CPU: the fused CPU flash kernel (float32, bfloat16, float16; an `attn_mask` is allowed), else math.

What each makes, besides its one fused kernel: cuDNN zero-fills a 4-byte counter with a memset before its kernel (the
H200 trace: one 4-byte `Memset (Device)` per call), a kernel of kind `memset` inside the op (`analytic.costs.
INNER_KINDS`). The layout of the output (B, H, T, d) in memory (`sdpa_output_layout`), which decides whether the
caller's `out.transpose(1, 2).contiguous()` copies: CUDA's flash and memory-efficient kernels write (B, T, H, d)
rows (the transpose is contiguous: no copy); cuDNN writes the layout of its query (a contiguous query:
(B, H, T, d), the transpose copies), and so does the CPU flash kernel (measured on torch 2.13: a (B, T, H, d)-ordered
query gives a (B, T, H, d)-ordered result, a contiguous one a contiguous result); CUDA's math backend computes P.V
with a matmul ((B, H, T, d): the transpose copies). The math backend's own intermediate tensors (scores,
probabilities) are not listed: no recorded run takes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

DEVICES = ("cpu", "cuda")
# the GPUs the project has recorded or lists datasheets for, by the name torch reports, and their compute capability:
# what an old recording without `cuda_capability` in its session section is read with (`capability_of_name`)
KNOWN_CAPABILITIES = {
    "H200": (9, 0),
    "H100": (9, 0),
    "H800": (9, 0),
    "GH200": (9, 0),
    "B200": (10, 0),
    "GB200": (10, 0),
    "A100": (8, 0),
    "A800": (8, 0),
    "A10": (8, 6),
    "A10G": (8, 6),
    "L4": (8, 9),
    "L40": (8, 9),
    "L40S": (8, 9),
    "RTX 4090": (8, 9),
    "RTX 3090": (8, 6),
    "V100": (7, 0),
    "T4": (7, 5),
}
# a CUDA execution whose GPU is not known (./dev analyze runtime=cuda on a machine without one): the class of the
# project's recorded GPUs, said in `Execution.label`
ASSUMED_CAPABILITY = (9, 0)


def capability_of_name(name: str) -> Optional[tuple[int, int]]:
    """The compute capability of a GPU named as torch names it ("NVIDIA H200"), from `KNOWN_CAPABILITIES` (the
    longest listed name that is a word of it); None when not listed."""
    words = f" {name.upper().replace('-', ' ')} "
    hits = [key for key in KNOWN_CAPABILITIES if f" {key.upper()} " in words]
    return KNOWN_CAPABILITIES[max(hits, key=len)] if hits else None


@dataclass(frozen=True)
class Execution:
    """Where a forward runs: `device` ("cpu", "cuda"), `autocast` (torch.autocast around it, to the model's 16-bit
    dtype, as the vendor's infer() runs), `capability` (a CUDA GPU's compute capability; None: not known)."""

    device: str = "cpu"
    autocast: bool = False
    capability: Optional[tuple[int, int]] = None

    def __post_init__(self) -> None:
        if self.device not in DEVICES:
            raise ValueError(f"execution device {self.device!r}: expected one of {DEVICES}")

    @property
    def cuda(self) -> bool:
        return self.device == "cuda"

    @property
    def cuda_autocast(self) -> bool:
        """CUDA autocast's op policy applies (`analytic.autocast`)."""
        return self.cuda and self.autocast

    @property
    def gpu(self) -> tuple[int, int]:
        """The compute capability the SDPA rules use: the GPU's, or `ASSUMED_CAPABILITY` when not known."""
        return self.capability if self.capability is not None else ASSUMED_CAPABILITY

    def for_dtype(self, dtype_bytes: int) -> "Execution":
        """This execution for a model of `dtype_bytes` elements. Autocast of a float32 model would cast its weights to
        16 bits at every use, which the cost formulas do not model: a 4-byte model is costed without autocast."""
        return Execution(self.device, False, self.capability) if self.autocast and dtype_bytes == 4 else self

    def sdpa_backend(self, dtype_bytes: int, mask: bool, head_dim: int, v_head_dim: Optional[int] = None) -> str:
        """The backend one SDPA call runs on: "cudnn", "flash", "efficient", "math" (CUDA) or "cpu_flash",
        "cpu_math"."""
        hv = head_dim if v_head_dim is None else v_head_dim
        half = dtype_bytes == 2
        if not self.cuda:
            return "cpu_flash" if dtype_bytes in (2, 4) else "cpu_math"
        major, minor = self.gpu
        sm = 10 * major + minor
        fused_dims = head_dim == hv and head_dim <= 256 and head_dim % 8 == 0
        if major in (9, 10) and minor == 0 and half and fused_dims:
            return "cudnn"
        if sm >= 80 and half and fused_dims and not mask:
            return "flash"
        align = 8 if half else 4
        if sm >= 50 and (dtype_bytes != 2 or sm >= 80) and head_dim % align == 0 and hv % align == 0:
            return "efficient"
        return "math"

    @property
    def label(self) -> str:
        if not self.cuda:
            return "cpu" + (" (autocast: not modelled on the CPU)" if self.autocast else "")
        gpu = (
            f"compute capability {self.gpu[0]}.{self.gpu[1]}"
            if self.capability is not None
            else f"compute capability {ASSUMED_CAPABILITY[0]}.{ASSUMED_CAPABILITY[1]} assumed (GPU not known)"
        )
        return f"cuda, {gpu}" + (", CUDA autocast" if self.autocast else "")


CPU = Execution()


def sdpa_output_layout(backend: str, query_contiguous: bool) -> str:
    """The memory order of an SDPA result (B, H, T, d): "bhtd" (contiguous) or "bthd" (rows of (B, T, H, d), as the
    fused kernels write them); cuDNN and the CPU kernels follow their query's layout."""
    if backend in ("cudnn", "cpu_flash", "cpu_math"):
        return "bhtd" if query_contiguous else "bthd"
    return "bhtd" if backend == "math" else "bthd"
