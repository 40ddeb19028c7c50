"""Runtime patches: named, explicit, reversible replacements of attributes of the loaded model code.

A patch names its targets as (module, qualified attribute) per model source, e.g. for the vendor code
`("modeling_deepseekv2", "DeepseekV2Model.forward")` and for the twin `("model", "DeepseekOCRModel._decode")`.
The module is found through the loaded model itself (`type(model).__module__` → its package in
`sys.modules`), so the vendor's dynamically loaded `transformers_modules.<dir>.*` and a family's twin
package (registered with `register_twin_package`, e.g. `llm_perf_opt.dsocr.twin.*`) are handled alike.
Patches are applied only inside ONE context manager:

    with runtime_patches(session, ["quick_gelu", "vision_inputs", "llm_stack"]) as log:
        session.forward(inputs)
    log.events("vision_inputs")

Every replaced attribute is restored when the block exits, in reverse order, also when the forward (or
applying a later patch) raises; nothing on disk is touched. A missing target (the vendor code changed)
raises `PatchError` naming it; an unknown patch name raises `PatchError` listing the known ones.
"""

from __future__ import annotations

import warnings
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, ContextManager, Iterable, Iterator, Mapping, Optional

from llm_perf_opt.callgraph.torchlens_adapter import paused_if_loaded
from llm_perf_opt.errors import PatchError
from llm_perf_opt.model_runtime.runtime_log import RuntimeLog
from llm_perf_opt.model_runtime.vendor import package_modules

_MISSING = object()
ANY_SOURCE = "*"
# A twin package -> the packages whose modules its patches reach, by short name (later ones win a name): each
# family registers its twin's package (`register_twin_package`), after the shared packages its twin reuses.
TWIN_PACKAGES: dict[str, tuple[str, ...]] = {}


def register_twin_package(package: str, *packages: str) -> None:
    """Make `package` a twin package whose patches reach the modules of `packages` (then its own)."""
    TWIN_PACKAGES[package] = tuple(packages) + (package,)


# ---------------------------------------------------------------------------------------------- model code
@dataclass
class ModelCode:
    """The python modules a loaded model's classes come from, by short name ("deepencoder", "model", ...)."""

    source: str  # "twin" | "vendor"
    package: str  # e.g. "transformers_modules.deepseek-ocr" or a family's twin package
    modules: dict[str, ModuleType] = field(default_factory=dict)

    def module(self, key: str) -> ModuleType:
        if key == "torch":
            import torch

            return torch
        if key not in self.modules:
            raise PatchError(
                f"{self.source} code ({self.package}) has no module {key!r} "
                f"(loaded: {sorted(self.modules) or 'none'}); the code changed?"
            )
        return self.modules[key]


def model_code(obj: Any) -> ModelCode:
    """The `ModelCode` of a session (anything with `.model`) or of a model."""
    model = getattr(obj, "model", None) if not _is_module(obj) else obj
    if model is None:
        raise PatchError(f"cannot find a model in {type(obj).__name__} (expected a session or a model)")
    module_name = type(model).__module__
    for twin, packages in TWIN_PACKAGES.items():
        if module_name == twin or module_name.startswith(twin + "."):
            modules: dict[str, ModuleType] = {}
            for package in packages:
                modules.update(package_modules(package))
            return ModelCode("twin", twin, modules)
    vendor_modules = getattr(obj, "vendor_modules", None) if obj is not model else None
    package = module_name.rpartition(".")[0]
    if not package:
        raise PatchError(
            f"model class {type(model).__qualname__} lives in a top-level module {module_name!r}; "
            "expected the vendor package (transformers_modules.<dir>) or the twin"
        )
    return ModelCode("vendor", package, dict(vendor_modules) if vendor_modules else package_modules(package))


def _is_module(obj: Any) -> bool:
    try:
        import torch

        return isinstance(obj, torch.nn.Module)
    except ImportError:  # pragma: no cover
        return False


# ---------------------------------------------------------------------------------------------- targets
@dataclass(frozen=True)
class PatchTarget:
    """An attribute `qualname` (dotted, e.g. "DeepseekV2Model.forward") reached from `root` (a module)."""

    root: Any
    qualname: str
    label: str  # human name: "<module key>.<qualname>"

    def owner_and_attr(self, create: bool = False) -> tuple[Any, str]:
        parts = self.qualname.split(".")
        owner = self.root
        for i, part in enumerate(parts[:-1]):
            owner = getattr(owner, part, _MISSING)
            if owner is _MISSING:
                raise PatchError(
                    f"patch target {self.label} is missing: {'.'.join(parts[: i + 1])} does not exist "
                    "(the model code changed?)"
                )
        attr = parts[-1]
        if not create and getattr(owner, attr, _MISSING) is _MISSING:
            owner_name = owner.__name__ if isinstance(owner, (type, ModuleType)) else type(owner).__name__
            raise PatchError(
                f"patch target {self.label} is missing: {owner_name} has no attribute {attr!r} "
                "(the model code changed?)"
            )
        return owner, attr

    def current(self) -> Any:
        owner, attr = self.owner_and_attr()
        return getattr(owner, attr)


@dataclass(frozen=True)
class Patch:
    """A named runtime patch. `targets` maps a source ("vendor", "twin" or "*") to (module key, qualname)."""

    name: str
    summary: str
    apply: Callable[["PatchContext"], None]
    targets: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    create: bool = False  # the attribute may be absent before patching (e.g. shadowing a builtin)


PATCHES: dict[str, Patch] = {}


def register_patch(patch: Patch, replace: bool = False) -> Patch:
    if patch.name in PATCHES and not replace:
        raise PatchError(f"patch {patch.name!r} is already registered")
    PATCHES[patch.name] = patch
    return patch


def available_patches() -> list[str]:
    return sorted(PATCHES)


def get_patch(name: str) -> Patch:
    if name not in PATCHES:
        raise PatchError(f"unknown runtime patch {name!r}; known patches: {', '.join(available_patches())}")
    return PATCHES[name]


# ---------------------------------------------------------------------------------------------- context
class PatchContext:
    """What a patch's `apply` gets: the session, the log, the model code, and reversible edit helpers."""

    def __init__(self, session: Any, log: RuntimeLog, code: ModelCode, stack: ExitStack) -> None:
        self.session = session
        self.log = log
        self.code = code
        self.state: dict[str, Any] = {}  # per-context scratch space shared by the patches (e.g. step counters)
        self._stack = stack
        self._current: Optional[Patch] = None
        self.replaced: list[str] = []

    @property
    def device(self):
        import torch

        dev = getattr(self.session, "device", None)
        if dev is None:
            model = self.session if _is_module(self.session) else getattr(self.session, "model", None)
            params = next(model.parameters(), None) if model is not None else None
            dev = params.device if params is not None else torch.device("cpu")
        return torch.device(dev)

    def target(self, patch: Optional[Patch] = None) -> PatchTarget:
        """The target of `patch` (default: the patch being applied) for this model's source."""
        patch = patch or self._current
        if patch is None:
            raise PatchError("no patch is being applied")
        spec = patch.targets.get(self.code.source) or patch.targets.get(ANY_SOURCE)
        if spec is None:
            raise PatchError(
                f"patch {patch.name!r} has no target for {self.code.source} models (it knows {sorted(patch.targets)})"
            )
        key, qualname = spec
        root = self.code.module(key)
        label = f"{key}.{qualname}" if key != "torch" else f"torch.{qualname}"
        return PatchTarget(root, qualname, label)

    def replace(self, target: PatchTarget, replacement: Any, create: bool = False) -> Any:
        """Set `target` to `replacement` until the context exits; returns the callable original."""
        owner, attr = target.owner_and_attr(create=create)
        raw = vars(owner).get(attr, _MISSING) if hasattr(owner, "__dict__") else _MISSING
        original = getattr(owner, attr, None)
        try:
            setattr(owner, attr, replacement)
        except (AttributeError, TypeError) as exc:
            raise PatchError(f"patch target {target.label} cannot be replaced: {exc}") from None

        def restore() -> None:
            if vars(owner).get(attr, _MISSING) is not replacement:
                warnings.warn(
                    f"runtime patch: {target.label} was changed by someone else while patched; "
                    "restoring the original anyway",
                    RuntimeWarning,
                    stacklevel=2,
                )
            if raw is _MISSING:
                if attr in vars(owner):
                    delattr(owner, attr)
            else:
                setattr(owner, attr, raw)

        self._stack.callback(restore)
        self.replaced.append(target.label)
        return original

    def wrap(self, target: PatchTarget, factory: Callable[[Any], Any]) -> Any:
        """Replace `target` by `factory(original)`; returns the original."""
        original = target.current()
        self.replace(target, factory(original))
        return original

    def enter(self, cm: ContextManager[Any]) -> Any:
        """Enter a context manager for the lifetime of the patch block (e.g. autocast)."""
        return self._stack.enter_context(cm)


def untracked() -> ContextManager[Any]:
    """A context in which a running TorchLens capture does not record torch calls (wrappers read values).

    The wrappers avoid torch calls where they can (shapes and host lists only); this guards the few
    reads that remain (`tolist` of the host-side crop grid). Without TorchLens loaded it does nothing.
    TorchLens' private pause lives behind the capture's adapter (`callgraph.torchlens_adapter`).
    """
    return paused_if_loaded()


@contextmanager
def runtime_patches(
    session: Any,
    names: Iterable[str],
    log: Optional[RuntimeLog] = None,
) -> Iterator[RuntimeLog]:
    """Apply the named patches to the model code of `session` (or a model) for the duration of the block.

    Yields the `RuntimeLog` the patches write to (a new one unless `log` is given). Every original is
    restored on exit, in reverse order, whether the block returns or raises.
    """
    if isinstance(names, str):
        names = [names]
    names = list(dict.fromkeys(names))  # keep order, drop repeats
    patches = [get_patch(n) for n in names]  # unknown names fail before anything is touched
    log = log if log is not None else RuntimeLog()
    code = model_code(session)
    with ExitStack() as stack:
        ctx = PatchContext(session, log, code, stack)
        for patch in patches:
            ctx._current = patch
            before = len(ctx.replaced)
            try:
                patch.apply(ctx)
            except PatchError as exc:
                msg = str(exc)
                raise PatchError(
                    msg if msg.startswith(f"patch {patch.name!r}") else f"patch {patch.name!r}: {msg}"
                ) from None
            log.note_patch(patch.name, ctx.replaced[before:])
        ctx._current = None
        yield log


def check_patches(session: Any, names: Iterable[str]) -> dict[str, str]:
    """Resolve the targets of `names` without applying anything: {name: target label}; raises PatchError."""
    code = model_code(session)
    out = {}
    for name in names:
        patch = get_patch(name)
        if not patch.targets:
            out[name] = "(context only)"
            continue
        ctx = PatchContext(session, RuntimeLog(), code, ExitStack())
        try:
            target = ctx.target(patch)
            target.owner_and_attr(create=patch.create)
        except PatchError as exc:
            raise PatchError(f"patch {name!r}: {exc}") from None
        out[name] = target.label
    return out
