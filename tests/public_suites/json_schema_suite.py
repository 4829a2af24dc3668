"""The official JSON Schema Test Suite (draft 2020-12: ``tests/`` and ``optional/format/``)
read and run through toolwire's public path, for tests/public_suites/test_json_schema_suite.py
and benchmarks/public_suites.py.

The suite comes from the ``jsonschema`` sdist on PyPI, which ships a copy under ``json/``
(fetched once with pip into the suites' cache). Its remote documents (``json/remotes``, served
at ``http://localhost:1234/`` in the suite's own runs) are handed to each tool as
``resources``, as a user hands over the documents their schema names. A case whose instance is
not an object (a tool's arguments are) is run as the one property of an object, its schema an
embedded resource of its own (an ``$id`` when it has none), so its references mean what they
mean at a root.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import toolwire
from toolwire.errors import ConfigurationError, InvalidArguments, SchemaConversionError

from .fetch import unpacked_sdist

__all__ = [
    "ANNOTATION_ONLY",
    "CUSTOM_VOCABULARY",
    "VERSION",
    "Case",
    "as_tool_call",
    "cases",
    "figures",
    "remotes_of",
    "suite_dir",
    "verdicts",
]

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


def suite_dir() -> Path:
    """The suite's ``json/`` folder, fetched once."""
    return unpacked_sdist("jsonschema", VERSION) / "json"


def remotes_of(suite: Path) -> dict[str, Any]:
    """The suite's remote documents, by the URI its cases name them with."""
    root = suite / "remotes"
    return {
        REMOTE_BASE + path.relative_to(root).as_posix(): json.loads(path.read_text("utf-8"))
        for path in sorted(root.rglob("*.json"))
    }


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


def cases(suite: Path) -> Iterator[Case]:
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


def as_tool_call(case: Case, remotes: dict[str, Any]) -> tuple[toolwire.Tool, dict[str, Any]]:
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


def verdicts(suite: Path, remotes: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {"agree": [], "open": [], "closed": [], "refused": []}
    for case in cases(suite):
        try:
            tool, arguments = as_tool_call(case, remotes)
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


def figures(suite: Path, remotes: dict[str, Any]) -> dict[str, Any]:
    """How toolwire decides the suite's cases: agreeing, failing open (accepting an instance
    the suite calls invalid), failing closed for a documented choice, refused."""
    found = verdicts(suite, remotes)
    total = sum(len(listed) for listed in found.values())
    closed = len(found["closed"])
    return {
        "package": f"jsonschema {VERSION} (its json/ copy of the suite), draft 2020-12",
        "cases": total,
        "agree": len(found["agree"]),
        "fail_open": len(found["open"]),
        "fail_closed": closed,
        "fail_closed_undocumented": [
            case
            for case in found["closed"]
            if ANNOTATION_ONLY not in case and CUSTOM_VOCABULARY not in case
        ],
        "refused": len(found["refused"]),
        "agreement": len(found["agree"]) / total,
        "agreement_without_documented_choices": len(found["agree"]) / (total - closed),
    }
