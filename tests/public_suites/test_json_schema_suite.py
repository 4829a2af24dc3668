"""The official JSON Schema Test Suite (draft 2020-12: ``tests/`` and ``optional/format/``)
through toolwire's validation, by its public path: a tool with the case's schema, a call with
the case's instance (see json_schema_suite.py for how the suite is read).

What toolwire must get right: no instance the suite calls invalid is accepted (fail-open:
zero); every schema is declared for every provider; an instance the suite calls valid is
refused only for a documented choice (formats are asserted; a custom meta-schema's
vocabularies are not honoured, so everything is validated).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import toolwire
from toolwire._validation import compile_validator
from toolwire.providers import provider_names
from toolwire.schema._bundle import bundle

from .json_schema_suite import (
    Case,
    as_tool_call,
    cases,
    figures,
    remotes_of,
    suite_dir,
)

pytestmark = pytest.mark.public_suites


@pytest.fixture(scope="module")
def suite() -> Path:
    return suite_dir()


@pytest.fixture(scope="module")
def remotes(suite: Path) -> dict[str, Any]:
    return remotes_of(suite)


def test_no_invalid_instance_is_accepted_and_only_documented_choices_refuse(
    suite: Path, remotes: dict[str, Any]
) -> None:
    found = figures(suite, remotes)
    assert found["fail_open"] == 0
    assert found["refused"] == 0
    assert found["fail_closed_undocumented"] == []
    assert found["cases"] > 1_700  # the whole suite was read
    assert found["agreement_without_documented_choices"] == 1.0
    _report("json_schema_test_suite", found)


def test_every_schema_of_the_suite_is_declared_for_every_provider(
    suite: Path, remotes: dict[str, Any]
) -> None:
    schemas: dict[str, Case] = {}
    for case in cases(suite):
        schemas.setdefault(json.dumps(case.schema, sort_keys=True), case)
    failures: Counter[str] = Counter()
    for case in schemas.values():
        tool, _ = as_tool_call(case, remotes)
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
    for case in cases(suite):
        tool, arguments = as_tool_call(case, remotes)
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
