"""The cost registry: an `nn.Module` class name -> the shape-only formula of one call of that class.

Like `torch.utils.flop_counter`'s registry of aten-op formulas, one level up: the analytic model asks
for the cost of a module *class* with the shapes of one call (`module_cost("Block", ...)`) and gets a
`CostNode`: the work the module does itself plus its children, each costed through this registry too
and each declaring the class it models. Every class is registered in one of two ways:

* `register_cost(name, derivation)`: a formula (shapes in; a `LayerCost`, or `(own, children)` for a
  module with child modules), with a one-line derivation;
* `register_children(name, derivation)`: counted by its children (a `ModuleList`, a `Sequential`, a
  wrapper whose own forward only reshapes); `children_node` builds its node from costed children.

A class that is not registered is unsupported: `module_cost` raises `UnsupportedLayerError`, and
`unsupported(classes)` lists the classes of a real model the registry cannot cost (as fvcore lists
unsupported ops): reported, never counted as zero.

Keys are class names, not classes: the analytic package never imports torch or the vendor code. The
`torch.nn` classes are registered here under their bare names (`Linear`); a model family registers its own
classes under its namespace (`dsocr.Block`, in `dsocr.costs`), so two families' `Attention` or `Block` never
collide. Formulas with many shapes take one named dataclass (`deepseek_ocr_shared.costs.ForwardShape`). Nodes are
cached (bounded; `clear_caches`), so identical blocks share one node.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable, Mapping, Union

from llm_perf_opt.analytic import costs as cost_formulas
from llm_perf_opt.analytic.costs import ZERO, LayerCost, UnsupportedLayerError
from llm_perf_opt.analytic.stage import CostNode

Children = tuple[tuple[str, CostNode], ...]
FormulaResult = Union[LayerCost, tuple[LayerCost, Children]]
Formula = Callable[..., FormulaResult]


@dataclass(frozen=True)
class ModuleCost:
    """How the registry costs one module class."""

    module: str  # the nn.Module class name
    derivation: str  # one line: what the formula counts, or why the children carry the cost
    formula: Formula | None = None  # None: counted by its children

    @property
    def counted_by_children(self) -> bool:
        return self.formula is None


_REGISTRY: dict[str, ModuleCost] = {}


def _add(entry: ModuleCost) -> None:
    if entry.module in _REGISTRY:
        raise RuntimeError(f"duplicate cost entry for module class {entry.module!r}")
    _REGISTRY[entry.module] = entry


def register_cost(module: str, derivation: str) -> Callable[[Formula], Formula]:
    """Register the formula of one call of `module` (duplicates are an error)."""

    def deco(fn: Formula) -> Formula:
        _add(ModuleCost(module, derivation, fn))
        return fn

    return deco


def register_children(module: str, derivation: str) -> None:
    """Register `module` as counted by its children (its own forward does no counted work)."""
    _add(ModuleCost(module, derivation))


def entry(module: str) -> ModuleCost:
    try:
        return _REGISTRY[module]
    except KeyError:
        raise UnsupportedLayerError(module, supported_modules()) from None


def supported_modules() -> tuple[str, ...]:
    return tuple(sorted(_REGISTRY))


def entries() -> Mapping[str, ModuleCost]:
    return dict(_REGISTRY)


_BASES: dict[str, tuple[str, ...]] = {}  # a family's namespace -> the namespaces whose classes it also runs


def extend_namespace(namespace: str, *bases: str) -> None:
    """Classes of `namespace` not registered under it are looked up under `bases` in turn (a family that runs
    another family's modules: DeepSeek-OCR 2's SAM and decoder are v1's `dsocr.<Class>`)."""
    _BASES[namespace] = tuple(bases)


def key(module: str, namespace: str = "") -> str:
    """The registry key of a class of a model of family `namespace`: its own `namespace.Class` when the family
    registered one (or a base namespace of it did), else the shared `torch.nn` entry (`Linear`), else the
    namespaced key (unsupported)."""
    if namespace:
        own = f"{namespace}.{module}"
        if own in _REGISTRY:
            return own
        for base in _BASES.get(namespace, ()):
            if f"{base}.{module}" in _REGISTRY:
                return f"{base}.{module}"
        if module not in _REGISTRY:
            return own
    return module


def unsupported(module_classes: Iterable[str] | Mapping[str, int], namespace: str = "") -> dict[str, int]:
    """{class name: occurrences} of the classes the registry cannot cost, in order of appearance
    (`module_classes`: class names, one per module, or {class name: count}); `namespace`: the model's family
    (`dsocr`), whose classes are registered as `dsocr.<Class>` beside the shared `torch.nn` ones."""
    counts = module_classes if isinstance(module_classes, Mapping) else Counter(module_classes)
    return {name: n for name, n in counts.items() if key(name, namespace) not in _REGISTRY}


@lru_cache(maxsize=16384)
def module_cost(module: str, /, *args, **shape) -> CostNode:
    """The cost of one call of a `module` instance with these shapes (the arguments of its formula)."""
    found = entry(module)
    if found.formula is None:
        raise UnsupportedLayerError(f"{module} (counted by its children: build it with children_node)")
    result = found.formula(*args, **shape)
    if isinstance(result, LayerCost):
        return CostNode(result, module=module)
    own, children = result
    return CostNode(own, children, module=module)


def layer_cost(module: str, /, *args, **shape) -> LayerCost:
    """The total cost of one call of `module` (its own work and its children's)."""
    return module_cost(module, *args, **shape).total


def children_node(module: str, children: Children, *, container: bool = False, own: LayerCost = ZERO) -> CostNode:
    """The node of a class counted by its children. `container`: not entered through `__call__`
    (a ModuleList); `own`: children not costed one by one (the routed experts' aggregate)."""
    found = entry(module)
    if not found.counted_by_children:
        raise UnsupportedLayerError(f"{module} (has a formula: cost it with module_cost)")
    return CostNode(own, children, container, module)


def called_through_forward(node: CostNode) -> tuple[LayerCost, CostNode]:
    """`node` as its parent sees it when the parent calls `child.forward(...)` instead of `child(...)`:
    the child's own work runs in the parent's name, and its path becomes a container of its children.
    Returns (the work that moves to the parent, the container node)."""
    return node.own, CostNode(ZERO, node.children, True, node.module)


def collect_costs(items: Iterable[tuple[str, Mapping]]) -> tuple[LayerCost, list[str]]:
    """Sum the costs of (module class, shape) items; classes without a formula are recorded, not zeroed.

    Returns (total of the supported items, the unsupported classes in order of appearance). A caller
    that gets a non-empty list must report the total as incomplete.
    """
    total = ZERO
    missing: list[str] = []
    for module, shape in items:
        found = _REGISTRY.get(module)
        if found is None or found.formula is None:
            missing.append(module)
            continue
        total = total + layer_cost(module, **shape)
    return total, missing


def clear_caches() -> None:
    module_cost.cache_clear()


# --------------------------------------------------------------------------------------- torch.nn
register_cost("Linear", "2·tokens·in·out (addmm's bias add is not counted by torch)")(cost_formulas.linear)
register_cost("Conv2d", "2·B·Cout·Hout·Wout·Cin·k² (torch's conv_flop_count; bias not counted)")(cost_formulas.conv2d)
register_cost("LayerNorm", "one fused native_layer_norm: no matmul, 7 elementwise FLOPs per element")(
    cost_formulas.layer_norm
)
register_cost("Embedding", "a gather of `tokens` rows: no arithmetic")(cost_formulas.embedding)


@register_cost("GELU", "exact GELU over `numel` elements: 5 elementwise FLOPs each, no matmul")
def gelu(numel: int, dtype_bytes: int = 2) -> LayerCost:
    return cost_formulas.elementwise(numel, "gelu", 1, dtype_bytes)


@register_cost("SiLU", "x·sigmoid(x) over `numel` elements: 2 elementwise FLOPs each, no matmul")
def silu(numel: int, dtype_bytes: int = 2) -> LayerCost:
    return cost_formulas.elementwise(numel, "silu", 1, dtype_bytes)


register_children("ModuleList", "never called itself: its entries are called one by one")
register_children("Sequential", "calls its entries in order; no work of its own")
