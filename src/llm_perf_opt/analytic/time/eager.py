"""The eager level: the kernel level + the host, as an eager PyTorch forward runs it.

Each kernel costs the host `HostFigures.dispatch_s` (Python + nn.Module + dispatcher, calibrated on this host) plus,
on an asynchronous device, `DeviceFigures.launch_s` (the driver's launch call). A host figure per op
(`HostFigures.per_op`) is paid once per op the code calls (`Kernels.op_count`), not per kernel: an op's inner kernels
(an autocast cast, cuDNN's layout transforms, SDPA's memset) are launched by the dispatcher inside it, with no Python,
module or dispatch of their own; their launch calls are in the op's measured cost (`DeviceFigures.launch_s` is still
charged per kernel). Sync points (`LayerCost.syncs`:
`.item()`, the MoE's `tokens_per_expert.cpu()`) split the forward into segments, walked in call order: on an
asynchronous device a segment takes max(host, device) + the sync's round trip; on the CPU (synchronous) everything
is serial: kernel time + host time (convention: `convention.LEVELS["eager"]`).
"""

from __future__ import annotations

from typing import Sequence

from llm_perf_opt.analytic.costs import Kernels
from llm_perf_opt.analytic.stage import CostNode
from llm_perf_opt.analytic.time.figures import DeviceFigures, HostFigures
from llm_perf_opt.analytic.time.kernel import KernelLevel


def eager_time(
    nodes: Sequence[CostNode],
    device: DeviceFigures,
    host: HostFigures,
    kernel: KernelLevel,
    kernel_s: float,
    kernels: Kernels,
) -> tuple[float, float]:
    """(eager seconds, host seconds) of `nodes` run one after another, whose `kernels` take `kernel_s` at the
    kernel level."""

    def host_of(k: Kernels) -> float:
        return host.dispatch_s * host.charged(k) + device.launch_s * k.count

    host_s = host_of(kernels)
    if device.synchronous:
        return kernel_s + host_s, host_s
    # async: walk in call order, a segment closes at each sync: max(host, device) + the round trip
    state = [0.0, 0.0, 0.0]  # host, device of the open segment; closed time

    def walk(node: CostNode) -> None:
        for _, child in node.children:
            walk(child)
        own = node.own
        if own.kernels:
            state[0] += host_of(own.kernels)
            state[1] += kernel(own.kernels)[0]
        for _ in range(own.syncs):
            state[2] += max(state[0], state[1]) + device.sync_s
            state[0] = state[1] = 0.0

    for n in nodes:
        walk(n)
    return state[2] + max(state[0], state[1]), host_s
