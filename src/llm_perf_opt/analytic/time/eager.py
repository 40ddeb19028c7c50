"""The eager level: the kernel level + the host, as an eager PyTorch forward runs it.

Each kernel costs the host `HostFigures.dispatch_s` (Python + nn.Module + dispatcher, calibrated on this host) plus,
on an asynchronous device, `DeviceFigures.launch_s` (the driver's launch call). Sync points (`LayerCost.syncs`:
`.item()`, the MoE's `tokens_per_expert.cpu()`) split the forward into segments, walked in call order: on an
asynchronous device a segment takes max(host, device) + the sync's round trip; on the CPU (synchronous) everything
is serial: kernel time + host time (convention: `convention.LEVELS["eager"]`).
"""

from __future__ import annotations

from typing import Sequence

from llm_perf_opt.analytic.stage import CostNode
from llm_perf_opt.analytic.time.figures import DeviceFigures, HostFigures
from llm_perf_opt.analytic.time.kernel import KernelLevel


def eager_time(
    nodes: Sequence[CostNode],
    device: DeviceFigures,
    host: HostFigures,
    kernel: KernelLevel,
    kernel_s: float,
    count: int,
) -> tuple[float, float]:
    """(eager seconds, host seconds) of `nodes` run one after another, whose `count` kernels take `kernel_s` at the
    kernel level."""
    per_op = host.dispatch_s + device.launch_s
    host_s = per_op * count
    if device.synchronous:
        return kernel_s + host_s, host_s
    # async: walk in call order, a segment closes at each sync: max(host, device) + the round trip
    state = [0.0, 0.0, 0.0]  # host, device of the open segment; closed time

    def walk(node: CostNode) -> None:
        for _, child in node.children:
            walk(child)
        own = node.own
        if own.kernels:
            state[0] += per_op * own.kernels.count
            state[1] += kernel(own.kernels)[0]
        for _ in range(own.syncs):
            state[2] += max(state[0], state[1]) + device.sync_s
            state[0] = state[1] = 0.0

    for n in nodes:
        walk(n)
    return state[2] + max(state[0], state[1]), host_s
