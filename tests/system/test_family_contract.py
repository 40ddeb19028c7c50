"""The family contract is declared in one place: every member of a model family the generic layers use is a member
of `llm_perf_opt.family.ModelFamily`, and no generic module probes a family with `getattr` / `hasattr`.

The generic modules are read as source (their AST), so a member used on a path no test runs still fails here. A
family is what these expressions give: a name `family` / `fam` / `model_family`, an attribute `.family`
(`job.family`, `self.session.family`), a call of the registry (`families.family(...)`, `families.for_config(...)`,
`families.for_run_dir(...)`, `family_named(...)`) and a name assigned from any of them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import llm_perf_opt
from llm_perf_opt.family import ModelFamily

SRC = Path(llm_perf_opt.__file__).parent
# the families themselves and the code the DeepSeek-OCR families share (their base class is
# deepseek_ocr_shared.family_base): they use their own members freely
FAMILY_PACKAGES = ("dsocr", "dsocr2", "deepseek_ocr_shared")
FAMILY_NAMES = {"family", "fam", "model_family"}
REGISTRY_CALLS = {"family", "for_config", "for_run_dir", "family_named"}


def declared_members() -> set[str]:
    """Every member `ModelFamily` declares: its attributes, annotations, methods and properties."""
    names: set[str] = set()
    for cls in ModelFamily.__mro__:
        if cls is object:
            continue
        names |= set(vars(cls)) | set(getattr(cls, "__annotations__", {}))
    return {n for n in names if not n.startswith("_")} | {"__repr__"}


def generic_modules() -> list[Path]:
    return sorted(
        path
        for path in SRC.rglob("*.py")
        if path.relative_to(SRC).parts[0].removesuffix(".py") not in FAMILY_PACKAGES and path.name != "family.py"
    )


def _is_registry_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if name not in REGISTRY_CALLS:
        return False
    # `families.family(...)`, `family_named(...)`, or `family(...)` imported from the registry; not `op_family(...)`
    return not isinstance(func, ast.Attribute) or (isinstance(func.value, ast.Name) and func.value.id == "families")


def family_uses(tree: ast.AST) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(line, member) of every attribute read on a family, and (line, call) of every getattr / hasattr of one."""
    names = set(FAMILY_NAMES)
    for node in ast.walk(tree):  # names bound to a family from the registry
        if isinstance(node, ast.Assign) and _is_registry_call(node.value):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}

    def is_family(node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in names
        if isinstance(node, ast.Attribute):
            return node.attr == "family"
        return _is_registry_call(node)

    members, probes = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_family(node.value):
            members.append((node.lineno, node.attr))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and node.args
            and is_family(node.args[0])
        ):
            probes.append((node.lineno, ast.unparse(node)))
    return members, probes


def test_generic_modules_use_only_declared_family_members():
    declared = declared_members()
    undeclared, probed, used = [], [], set()
    for path in generic_modules():
        members, probes = family_uses(ast.parse(path.read_text(encoding="utf-8")))
        where = path.relative_to(SRC)
        used |= {m for _, m in members}
        undeclared += [f"{where}:{line}: .{m}" for line, m in members if m not in declared]
        probed += [f"{where}:{line}: {call}" for line, call in probes]
    assert not undeclared, "family members the contract (llm_perf_opt.family.ModelFamily) does not declare:\n" + (
        "\n".join(undeclared)
    )
    assert not probed, "a family probed instead of declared:\n" + "\n".join(probed)
    # the walk sees the seam: the members every trace job uses are among those found
    assert {"parts", "layout", "analytic_model", "open_session", "measure", "runtime_checks"} <= used


def test_the_walk_fails_on_an_undeclared_member_and_a_probe():
    source = (
        "from llm_perf_opt import families\n"
        "def f(cfg, job):\n"
        "    fam = families.for_config(cfg)\n"
        "    chosen = families.family('dsocr')\n"
        "    fam.parts\n"
        "    job.family.secret_member\n"
        "    chosen.another_secret\n"
        "    if hasattr(job.family, 'optional_thing'):\n"
        "        getattr(fam, 'x', None)\n"
    )
    members, probes = family_uses(ast.parse(source))
    declared = declared_members()
    assert sorted(m for _, m in members if m not in declared) == ["another_secret", "secret_member"]
    assert [line for line, _ in probes] == [8, 9]


def test_every_builtin_family_is_a_model_family_with_every_abstract_member():
    from llm_perf_opt import families

    for name in families.names():
        family = families.family(name)
        assert isinstance(family, ModelFamily) and family.name == name
        assert not getattr(type(family), "__abstractmethods__", None)


def test_a_family_lacking_a_required_member_cannot_be_created():
    class Half(ModelFamily):
        name = "half"

    with pytest.raises(TypeError, match="abstract") as err:
        Half()
    assert "spec_named" in str(err.value) and "measure" in str(err.value)


def test_the_registry_refuses_an_object_that_is_not_a_model_family(monkeypatch):
    from llm_perf_opt import families
    from llm_perf_opt.errors import ConfigError

    monkeypatch.setenv(families.ENV_VAR, "notafamily=llm_perf_opt.family:PartVocabulary")
    families.family.cache_clear()
    try:
        assert "notafamily" in families.names()
        with pytest.raises(ConfigError, match=r"^model.family='notafamily' is invalid: .* not a llm_perf_opt.family"):
            families.family("notafamily")
        monkeypatch.setenv(families.ENV_VAR, "no-target")
        with pytest.raises(ConfigError, match=r"^LLM_PERF_OPT_FAMILIES='no-target' is invalid"):
            families.names()
    finally:
        families.family.cache_clear()
