"""Names a package loads on first use (PEP 562), so importing the package (or one of its light submodules)
does not import what its heavy submodules need (torch, torch.export, the registered patches).

    _LAZY = {"llm_perf_opt.export.stage": ("EXPORT_DIR", "run_export_stage"), ...}
    __getattr__ = lazy_attributes(__name__, _LAZY, globals())
    __all__ = lazy_names(_LAZY)
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping, MutableMapping, Optional


def lazy_names(modules: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Every name of a `{module path: names}` table, sorted: the package's `__all__`."""
    return sorted(name for names in modules.values() for name in names)


def lazy_attributes(
    package: str,
    modules: Mapping[str, tuple[str, ...]],
    namespace: MutableMapping[str, Any],
    before: Optional[Callable[[], Any]] = None,
) -> Callable[[str], Any]:
    """A module `__getattr__` that imports, on first use of a name of `modules` (`{module path: names}`),
    the module that defines it, keeps the value in `namespace` (the package's globals, so the next lookup
    is a plain one) and returns it; `before()` runs first on every such load (e.g. a module whose import
    registers something)."""
    names = {name: module for module, found in modules.items() for name in found}

    def __getattr__(name: str) -> Any:
        if name in names:
            if before is not None:
                before()
            value = getattr(importlib.import_module(names[name]), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
