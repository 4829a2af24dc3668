"""The API reference is complete: every public name of every public module of toolwire is
rendered by a mkdocstrings directive (``::: module``) of ``docs/reference/``.

A public module is one whose dotted path has no part starting with ``_``; its public names are
its ``__all__`` (or, without one, the functions and classes it defines whose names do not start
with ``_``). A name is covered when a directive renders its module whole, or lists it in
``members``, or when it is a re-export of a name covered in the public module that defines it
(``toolwire.Executor`` is documented as ``toolwire.executor.Executor``).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import toolwire

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "reference"
DIRECTIVE = re.compile(r"^::: *(?P<path>[\w.]+) *$")
# Options every directive needs so that no name or parameter is silently dropped: names without
# a docstring rendered too, and signatures shown whole with their annotations.
# Values whose identity says nothing of where they come from (small strings are interned).
SCALARS = (str, bytes, int, float, bool, type(None))
REQUIRED_OPTIONS = {
    "show_if_no_docstring": True,
    "show_signature_annotations": True,
    "separate_signature": True,
}


@dataclass
class Directive:
    page: str
    path: str
    options: dict[str, Any]

    @property
    def members(self) -> list[str] | None:
        members = self.options.get("members")
        if members is None or members is True:
            return None
        return [] if members is False else list(members)


def _options(block: list[str]) -> dict[str, Any]:
    """The ``options:`` of a directive's block: ``key: value`` scalars and ``key:`` lists of
    ``- item`` (all the reference pages use; the test suite runs without a YAML parser)."""
    options: dict[str, Any] = {}
    inside = False
    key = None
    for raw in block:
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip():
            continue
        if line.strip() == "options:":
            inside = True
            continue
        if not inside:
            continue
        text = line.strip()
        if text.startswith("- ") and key is not None:
            options[key].append(text[2:].strip())
            continue
        name, _, value = text.partition(":")
        key, value = name.strip(), value.strip()
        if value == "":
            options[key] = []
        else:
            options[key] = {"true": True, "false": False}.get(value.lower(), value)
            key = None
    return options


def directives() -> list[Directive]:
    """Every ``::: path`` of docs/reference/, with its options."""
    found = []
    for page in sorted(REFERENCE.glob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            match = DIRECTIVE.match(line)
            if match is None:
                continue
            block = []
            for following in lines[i + 1 :]:
                if following.strip() and not following.startswith("    "):
                    break
                block.append(following)
            found.append(Directive(page.name, match["path"], _options(block)))
    return found


def public_modules() -> dict[str, ModuleType]:
    names = ["toolwire"] + [
        info.name for info in pkgutil.walk_packages(toolwire.__path__, prefix="toolwire.")
    ]
    public = [n for n in names if not any(part.startswith("_") for part in n.split("."))]
    return {name: importlib.import_module(name) for name in sorted(public)}


def public_names(module: ModuleType) -> list[str]:
    exported = getattr(module, "__all__", None)
    if exported is not None:
        return list(exported)
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == module.__name__
    ]


def covered_directly(found: list[Directive]) -> tuple[set[str], set[str]]:
    """(modules rendered whole, ``module.name`` listed as a member)."""
    whole = {d.path for d in found if d.members is None}
    listed = {f"{d.path}.{name}" for d in found if d.members is not None for name in d.members}
    return whole, listed


def missing_names(found: list[Directive]) -> list[str]:
    modules = public_modules()
    whole, listed = covered_directly(found)

    def direct(module: str, name: str) -> bool:
        return module in whole or f"{module}.{name}" in listed

    # Where each object is covered directly, to count its re-exports as covered.
    documented: list[Any] = [
        getattr(module, name)
        for path, module in modules.items()
        for name in public_names(module)
        if hasattr(module, name) and direct(path, name)
    ]
    missing = []
    for path, module in modules.items():
        for name in public_names(module):
            if direct(path, name):
                continue
            value = getattr(module, name, None)
            if not isinstance(value, SCALARS) and any(value is other for other in documented):
                continue
            missing.append(f"{path}.{name}")
    return missing


def test_every_public_name_has_a_reference_entry() -> None:
    missing = missing_names(directives())
    assert not missing, (
        "public names without an API reference entry in docs/reference/ (add a `::: module` "
        f"directive, or the name to a directive's `members`): {missing}"
    )


def test_every_public_module_is_in_the_reference() -> None:
    paths = {d.path for d in directives()}
    absent = [
        name
        for name, module in public_modules().items()
        if public_names(module) and name not in paths
    ]
    assert not absent, f"public modules with no `::: module` directive in docs/reference/: {absent}"


@pytest.mark.parametrize("directive", directives(), ids=lambda d: f"{d.page}:{d.path}")
def test_directive_renders_every_parameter(directive: Directive) -> None:
    wrong = {
        key: directive.options.get(key)
        for key, value in REQUIRED_OPTIONS.items()
        if directive.options.get(key) != value
    }
    assert not wrong, f"{directive.page}: `::: {directive.path}` needs options {REQUIRED_OPTIONS}"


def test_directives_name_public_modules() -> None:
    modules = public_modules()
    stale = [f"{d.page}: {d.path}" for d in directives() if d.path not in modules]
    assert not stale, f"directives of modules that are not public toolwire modules: {stale}"


def test_a_new_public_name_without_an_entry_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check itself: a name added to a listed-members module is reported."""
    monkeypatch.setattr(toolwire, "__all__", [*toolwire.__all__, "brand_new"], raising=True)
    monkeypatch.setattr(toolwire, "brand_new", object(), raising=False)
    assert "toolwire.brand_new" in missing_names(directives())
    whole = [Directive("x.md", "toolwire", {})]
    assert "toolwire.brand_new" not in missing_names(whole)
