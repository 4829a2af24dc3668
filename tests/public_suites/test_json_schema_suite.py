"""The official JSON Schema Test Suite (draft 2020-12: ``tests/`` and ``optional/format/``)
through toolwire's validation, by its public path: a tool with the case's schema, a call with
the case's instance.

The suite comes from the ``jsonschema`` sdist on PyPI, which ships a copy under ``json/``
(fetched once with pip into a cache; nothing else is fetched). Its remote documents
(``json/remotes``, served at ``http://localhost:1234/`` in the suite's own runs) are handed to
each tool as ``resources``, as a user hands the documents their schema names.

A case whose instance is not an object (a tool's arguments are) is run as the one property of
an object, its schema an embedded resource of its own (an ``$id`` when it has none), so its
references mean what they mean at a root.

What toolwire must get right: no instance the suite calls invalid is accepted (fail-open:
zero); every schema is declared for every provider; an instance the suite calls valid is
refused only for a documented choice (formats are asserted; a custom meta-schema's
vocabularies are not honoured, so everything is validated).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import toolwire
from toolwire._validation import compile_validator
from toolwire.errors import ConfigurationError, InvalidArguments, SchemaConversionError
from toolwire.providers import provider_names
from toolwire.schema._bundle import bundle

from .fetch import unpacked_sdist

pytestmark = pytest.mark.public_suites

VERSION = "4.26.0"
"""The jsonschema release whose sdist carries the suite."""
REMOTE_BASE = "http://localhost:1234/"
WRAPPED_ID = "https://suite.toolwire.invalid/case"

ANNOTATION_ONLY = "only an annotation by default"
"""How the suite names a format case that expects formats not to be asserted: toolwire asserts
them (its choice: a model's ``date`` is a date), so these fail closed, as documented."""
CUSTOM_VOCABULARY = "schema that uses custom metaschema with with no validation vocabulary"
"""The one case expecting a custom meta-schema to switch validation off: toolwire validates
with every vocabulary whatever ``$schema`` names (fail-closed, documented)."""


@dataclass(frozen=True)
class Case:
    file: str
    group: str
    description: str
    schema: Any
    data: Any
    valid: bool

    @property
    def id(self) -> str:
        return f"{self.file} | {self.group} | {self.description}"


@pytest.fixture(scope="module")
def suite() -> Path:
    return unpacked_sdist("jsonschema", VERSION) / "json"


@pytest.fixture(scope="module")
def remotes(suite: Path) -> dict[str, Any]:
    root = suite / "remotes"
    return {
        REMOTE_BASE + path.relative_to(root).as_posix(): json.loads(path.read_text("utf-8"))
        for path in sorted(root.rglob("*.json"))
    }


def _cases(suite: Path) -> Iterator[Case]:
    tests = suite / "tests" / "draft2020-12"
    files = sorted(tests.glob("*.json")) + sorted((tests / "optional" / "format").glob("*.json"))
    for path in files:
        for group in json.loads(path.read_text("utf-8")):
            for test in group["tests"]:
                yield Case(
                    path.relative_to(tests).as_posix(),
                    group["description"],
                    test["description"],
                    group["schema"],
                    test["data"],
                    test["valid"],
                )


def _as_tool_call(case: Case, remotes: dict[str, Any]) -> tuple[toolwire.Tool, dict[str, Any]]:
    """The tool a case's schema makes, and the arguments its instance makes."""
    if isinstance(case.data, dict) and isinstance(case.schema, dict):
        schema, arguments = case.schema, case.data
    else:  # the instance as the one property of an object; its schema a resource of its own
        inner = case.schema
        if isinstance(inner, dict) and "$id" not in inner:
            inner = {**inner, "$id": WRAPPED_ID}
        schema = {"type": "object", "properties": {"v": inner}, "required": ["v"]}
        arguments = {"v": case.data}
    tool = toolwire.Tool(
        name="suite_case", input_schema=schema, handler=lambda **_: None, resources=remotes
    )
    return tool, arguments


def _verdicts(suite: Path, remotes: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {"agree": [], "open": [], "closed": [], "refused": []}
    for case in _cases(suite):
        try:
            tool, arguments = _as_tool_call(case, remotes)
            tool.validate_arguments(arguments)
            accepted = True
        except InvalidArguments:
            accepted = False
        except (ConfigurationError, SchemaConversionError) as exc:
            found["refused"].append(f"{case.id}: {exc}")
            continue
        if accepted == case.valid:
            found["agree"].append(case.id)
        else:
            found["open" if accepted else "closed"].append(case.id)
    return found


def test_no_invalid_instance_is_accepted_and_only_documented_choices_refuse(
    suite: Path, remotes: dict[str, Any]
) -> None:
    verdicts = _verdicts(suite, remotes)
    assert verdicts["open"] == []  # fail-open: zero
    assert verdicts["refused"] == []
    undocumented = [
        case
        for case in verdicts["closed"]
        if ANNOTATION_ONLY not in case and CUSTOM_VOCABULARY not in case
    ]
    assert undocumented == []
    total = sum(len(cases) for cases in verdicts.values())
    figures = {
        "cases": total,
        "agree": len(verdicts["agree"]),
        "fail_open": len(verdicts["open"]),
        "fail_closed_documented": len(verdicts["closed"]),
        "refused": len(verdicts["refused"]),
        "agreement": len(verdicts["agree"]) / total,
        "agreement_without_documented_choices": len(verdicts["agree"])
        / (total - len(verdicts["closed"])),
    }
    assert total > 1_700  # the whole suite was read
    _report("json_schema_test_suite", figures)


def test_every_schema_of_the_suite_is_declared_for_every_provider(
    suite: Path, remotes: dict[str, Any]
) -> None:
    schemas: dict[str, Case] = {}
    for case in _cases(suite):
        schemas.setdefault(json.dumps(case.schema, sort_keys=True), case)
    failures: Counter[str] = Counter()
    for case in schemas.values():
        tool, _ = _as_tool_call(case, remotes)
        for provider in provider_names():
            try:
                toolwire.tools([tool], provider)
            except Exception as exc:  # every failure is listed, not just the first
                failures[f"{provider}: {case.file} | {case.group}: {exc}"] += 1
    assert list(failures) == []
    assert len(schemas) > 350


def test_a_bundled_schema_decides_every_case_as_the_original_does(
    suite: Path, remotes: dict[str, Any]
) -> None:
    """What providers are sent starts from the schema as one document (embedded resources,
    anchors and given documents as pointers from its root): validated with jsonschema-rs, it
    gives every case the verdict the original gives, but where a ``$dynamicRef`` is
    declared as its static target (noted)."""
    differ, dynamic = [], 0
    for case in _cases(suite):
        tool, arguments = _as_tool_call(case, remotes)
        bundled, notes = bundle(tool.input_schema, tool.resources)
        if any("$dynamicRef" in note.message for note in notes):
            dynamic += 1
            continue
        validator = compile_validator(bundled)
        assert not isinstance(validator, str), f"{case.id}: {validator}"
        original = compile_validator(tool.input_schema, tool.resources)
        assert not isinstance(original, str)
        if validator.is_valid(arguments) != original.is_valid(arguments):
            differ.append(case.id)
    assert differ == []
    assert dynamic < 60  # only the dynamic-reference cases are set aside


def _report(name: str, figures: dict[str, Any]) -> None:
    """Keep the figures where ``TOOLWIRE_SUITE_FIGURES`` says (the benchmarks page reads
    them), beside those of the other suites."""
    target = os.environ.get("TOOLWIRE_SUITE_FIGURES")
    if not target:
        return
    path = Path(target)
    kept = json.loads(path.read_text("utf-8")) if path.exists() else {}
    kept[name] = figures
    path.write_text(json.dumps(kept, indent=2, sort_keys=True) + "\n", "utf-8")
