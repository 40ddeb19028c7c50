"""`CostNode` trees named by module path, and `StageCost`: the cost of one stage, per part.

A `CostNode` is the cost of one module call: the work it does itself (`own`, ops outside any child
module) plus its children, each under its attribute name, and the module class it models (`module`,
the key it was costed under in `analytic.registry`). Identical blocks share one node, so a
stage for a new shape is composed from a handful of nodes in well under a millisecond; the flat
per-part table (`StageCost.parts`, keyed by the vendor's module paths such as
`model.sam_model.blocks.2.attn`) is built only when asked for.

Children may repeat a name (SAM, CLIP and the projector are called twice per image in crop mode:
on the crop batch and on the global view); the flat table sums them, as a per-module measurement
does. A node marked `container` is a path that is not a module entered through `__call__` (a
`ModuleList`, or CLIP's `self_attn` / `mlp`, whose `.forward` the vendor calls directly): its cost
is the sum of its children and the work it does itself is attributed to its caller.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterator, Mapping

from llm_perf_opt.analytic.costs import ZERO, LayerCost, UnitViews
from llm_perf_opt.family import PartVocabulary


@dataclass(frozen=True, eq=False)
class CostNode:
    own: LayerCost = ZERO
    children: tuple[tuple[str, "CostNode"], ...] = ()
    container: bool = False
    module: str = ""  # the nn.Module class name it models ("" for a synthetic node)
    total: LayerCost = field(init=False)

    def __post_init__(self) -> None:
        total = self.own
        for _, child in self.children:
            total = total + child.total
        object.__setattr__(self, "total", total)

    def walk(self, prefix: str = "") -> Iterator[tuple[str, "CostNode"]]:
        """(path, node) for every descendant, depth first, in call order (not for `self`)."""
        for name, child in self.children:
            path = f"{prefix}.{name}" if prefix else name
            yield path, child
            yield from child.walk(path)


def repeated(node: CostNode, n: int) -> CostNode:
    """`n` identical calls of `node`'s module as one node: every cost of its subtree times `n`, so the flat
    table sums to what `n` copies would (a batch of identical pages priced once, not page by page). Shared
    subtrees stay shared (one scaled node per node)."""
    if n == 1:
        return node
    done: dict[int, CostNode] = {}

    def scale(x: CostNode) -> CostNode:
        got = done.get(id(x))
        if got is None:
            kids = tuple((name, scale(child)) for name, child in x.children)
            got = done[id(x)] = CostNode(x.own.times(n), kids, x.container, x.module)
        return got

    return scale(node)


def leaf(cost: LayerCost, module: str = "") -> CostNode:
    return CostNode(cost, module=module)


def _of_total(name: str) -> property:
    return property(lambda self: getattr(self.root.total, name), doc=f"`{name}` of the stage total")


@dataclass(frozen=True, eq=False)
class StageCost(UnitViews):
    """Cost of one stage (`vision`, `prefill` or `decode`), in total and per part.

    `roots` are the part paths whose sum is the stage ("" = the whole forward). Byte quantities
    follow `llm_perf_opt.analytic.costs` (I/O = weights read + inputs read + outputs written, each
    once per layer call; activations = bytes of every tensor the eager op sequence produces).
    """

    stage: str
    root: CostNode
    roots: tuple[str, ...] = ("",)
    shapes: Mapping[str, Any] = field(default_factory=dict)
    vocabulary: PartVocabulary | None = None  # the family's parts (aliases, decoder layers); None: paths only

    # ------------------------------------------------------------------ totals
    @property
    def total(self) -> LayerCost:
        return self.root.total

    flops = _of_total("flops")
    flops_matmul = _of_total("flops_matmul")
    flops_other = _of_total("flops_other")
    weight_bytes = _of_total("weight_bytes")
    io_bytes = _of_total("io_bytes")
    activation_bytes = _of_total("activation_bytes")

    # ------------------------------------------------------------------ parts
    @cached_property
    def _flat(self) -> tuple[dict[str, LayerCost], frozenset[str], dict[str, str]]:
        parts: dict[str, LayerCost] = {}
        containers: set[str] = set()
        modules: dict[str, str] = {}
        for path, node in self.root.walk():
            parts[path] = parts[path] + node.total if path in parts else node.total
            if node.container:
                containers.add(path)
            modules[path] = node.module
        return parts, frozenset(containers), modules

    @property
    def parts(self) -> dict[str, LayerCost]:
        """Every module path of the stage -> its cost (summed over its calls)."""
        return self._flat[0]

    @property
    def containers(self) -> frozenset[str]:
        """Paths that are not modules entered through `__call__` (sum of their children)."""
        return self._flat[1]

    @property
    def modules(self) -> dict[str, str]:
        """Every module path of the stage -> the module class its cost models (`analytic.registry`)."""
        return self._flat[2]

    def part(self, name: str) -> LayerCost:
        """A part by module path, or by alias of the family's vocabulary (`sam`, `decoder`, `decoder.layer.<i>`,
        ..., `total`); a path the stage does not run costs nothing."""
        path = self.vocabulary.path(name) if self.vocabulary is not None else ("" if name in ("total", "all") else name)
        if path == "":
            return self.total
        return self.parts.get(path, ZERO)

    def summary(self) -> dict[str, LayerCost]:
        """The family's parts by alias, in forward order (each decoder layer after the stack), for the stage's
        parts that exist (`PartVocabulary.summary`)."""
        return self.vocabulary.summary(self.parts) if self.vocabulary is not None else {}

    def to_dict(self, with_parts: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "stage": self.stage,
            "roots": list(self.roots),
            "shapes": dict(self.shapes),
            "total": self.total.to_dict(),
            "units": {
                "tflops": self.tflops,
                "io_tb": self.io_tb,
                "weights_gb": self.weights_gb,
                "activations_gb": self.activations_gb,
            },
            "summary": {k: v.to_dict() for k, v in self.summary().items()},
        }
        if with_parts:
            out["parts"] = {k: v.to_dict() for k, v in self.parts.items()}
            out["containers"] = sorted(self.containers)
        return out
