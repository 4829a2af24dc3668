"""A schema's ``pattern`` never runs in a backtracking engine on model input.

Reproduction (issue 14, item 2): ``{"pattern": "^(a+)+$"}`` and 27 ``a``s then ``!`` took
seconds in Python ``re`` (doubling with each character) on every call, before any timeout.
jsonschema-rs decides patterns with the ``regex`` crate, linear in the input; a pattern that
engine cannot compile (look-around, backreferences) is refused, never run elsewhere.

Timing is checked only as a generous wall-clock bound around a subprocess doing many calls
that Python ``re`` would need hours (or years) for.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from typing import Any

import anyio
import pytest

import toolwire
from toolwire import ConfigurationError, InvalidArguments, Tool, compat

EVIL = "^(a+)+$"
# Python re backtracks 2^n times on these before saying no: n = 40 is hours, 60 is years.
NEAR_MISS = "a" * 60 + "!"


def _object(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


# (schema, arguments that must be rejected, arguments that must be accepted)
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "nested plus": (
        _object(q={"type": "string", "pattern": EVIL}),
        {"q": NEAR_MISS},
        {"q": "a" * 60},
    ),
    "nested star": (
        _object(q={"type": "string", "pattern": "^(a*)*b$"}),
        {"q": "a" * 60},
        {"q": "a" * 60 + "b"},
    ),
    "overlapping alternation": (
        _object(q={"type": "string", "pattern": "^(a|a)*$"}),
        {"q": NEAR_MISS},
        {"q": "a" * 60},
    ),
    "alternation of a class and its subset": (
        _object(q={"type": "string", "pattern": "^(\\w|\\d)+$"}),
        {"q": "1" * 60 + "!"},
        {"q": "1a" * 30},
    ),
    "the classic e-mail pattern": (
        _object(
            q={
                "type": "string",
                "pattern": "^([a-zA-Z0-9])(([\\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}"
                "(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$",
            }
        ),
        {"q": "a" * 60 + "@"},
        {"q": "ab.cd@ef.gh"},
    ),
    "in items": (
        _object(q={"type": "array", "items": {"type": "string", "pattern": EVIL}}),
        {"q": ["a", NEAR_MISS]},
        {"q": ["a", "aa"]},
    ),
    "in patternProperties": (
        {"type": "object", "patternProperties": {EVIL: {"type": "integer"}}},
        {"a" * 60: "not an integer"},
        {NEAR_MISS: "a key the pattern does not match is free"},
    ),
    "in propertyNames": (
        {"type": "object", "propertyNames": {"pattern": EVIL}},
        {NEAR_MISS: 1},
        {"aaa": 1},
    ),
    "in dependentSchemas": (
        {
            "type": "object",
            "properties": {"kind": {"type": "string"}, "q": {"type": "string"}},
            "dependentSchemas": {"kind": {"properties": {"q": {"pattern": EVIL}}}},
        },
        {"kind": "x", "q": NEAR_MISS},
        {"q": NEAR_MISS},
    ),
    "in $defs": (
        {
            "type": "object",
            "properties": {"q": {"$ref": "#/$defs/word"}},
            "$defs": {"word": {"type": "string", "pattern": EVIL}},
        },
        {"q": NEAR_MISS},
        {"q": "aaa"},
    ),
    "in a union": (
        _object(q={"anyOf": [{"type": "integer"}, {"type": "string", "pattern": EVIL}]}),
        {"q": NEAR_MISS},
        {"q": 3},
    ),
    "under if/then/else and not": (
        {
            "type": "object",
            "properties": {"q": {"type": "string"}},
            "if": {"properties": {"q": {"pattern": "^(a|aa)+$"}}},
            "then": {"properties": {"q": {"maxLength": 3}}},
            "else": {"not": {"properties": {"q": {"pattern": "^(a+)+b$"}}}},
        },
        {"q": "a" * 60},
        {"q": NEAR_MISS},
    ),
    "upper-case types (normalised first)": (
        {"type": "OBJECT", "properties": {"q": {"type": "STRING", "pattern": EVIL}}},
        {"q": NEAR_MISS},
        {"q": "a"},
    ),
}

_WORKER = textwrap.dedent(
    """
    import json, sys
    from toolwire import InvalidArguments, Tool

    cases, calls = json.load(sys.stdin), int(sys.argv[1])
    for name, (schema, rejected, accepted) in cases.items():
        subject = Tool(name="t", input_schema=schema)
        for _ in range(calls):
            try:
                subject.validate_arguments(rejected)
            except InvalidArguments:
                pass
            else:
                sys.exit(f"{name}: accepted {rejected!r}")
            assert subject.validate_arguments(accepted) == accepted, name
    print("done")
    """
)


def _finishes_in_bound(script: str, *args: str, given: str | None = None) -> None:
    """Run ``script`` in a fresh interpreter; it must print "done" within two minutes."""
    result = subprocess.run(
        [sys.executable, "-c", script, *args],
        input=given,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "done"


def test_patterns_from_a_schema_are_decided_in_linear_time() -> None:
    # 13 schemas x 200 calls x 2 verdicts: microseconds each in a linear engine; in Python re
    # the first near miss alone would not finish. The bound is for a slow, busy machine.
    _finishes_in_bound(_WORKER, "200", given=json.dumps(CASES))


@pytest.fixture
def python_patterns(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every pattern Python's ``re`` compiles (or looks up) while the test runs."""
    seen: list[Any] = []
    original = re._compile  # type: ignore[attr-defined]

    def recording(pattern: Any, flags: Any) -> Any:
        seen.append(pattern)
        return original(pattern, flags)

    monkeypatch.setattr(re, "_compile", recording)
    return seen


@pytest.mark.parametrize("name", list(CASES))
def test_python_re_never_sees_a_schema_pattern(name: str, python_patterns: list[Any]) -> None:
    schema, rejected, accepted = CASES[name]
    subject = Tool(name="t", input_schema=schema)
    with pytest.raises(InvalidArguments) as info:
        subject.validate_arguments(rejected)
    assert subject.validate_arguments(accepted) == accepted
    schema_patterns = set(re.findall(r'"pattern": "((?:[^"\\]|\\.)*)"', json.dumps(schema)))
    schema_patterns |= set(schema.get("patternProperties", {}))
    seen = {p if isinstance(p, str) else p.pattern for p in python_patterns}
    assert not {json.loads(f'"{p}"') for p in schema_patterns} & seen
    # The error still names the field, from jsonschema-rs's own iterator.
    assert info.value.errors
    assert all(path.startswith("$") for path, _ in info.value.errors)


LINEAR_ENGINE_REFUSES = {
    "lookahead": "^(?=.*[0-9]).+$",
    "negative lookahead": "^(?!-)[a-z-]+$",
    "lookbehind": "(?<=a)b",
    "backreference": "^(a+)\\1$",
    "backreference in a ReDoS shape": "^(a|a)*\\1$",
}


@pytest.mark.parametrize("pattern", list(LINEAR_ENGINE_REFUSES.values()))
def test_a_pattern_the_linear_engine_cannot_compile_fails_closed(
    pattern: str, python_patterns: list[Any]
) -> None:
    subject = Tool(name="t", server_id="srv", input_schema=_object(q={"pattern": pattern}))
    for arguments in ({"q": "a1"}, {"q": NEAR_MISS}, {}):
        with pytest.raises(ConfigurationError) as info:
            subject.validate_arguments(arguments)
        message = str(info.value)
        assert "'srv/t'" in message
        assert "#/properties/q/pattern" in message
        assert "look-around or backreferences" in message
    assert pattern not in {p if isinstance(p, str) else p.pattern for p in python_patterns}


@pytest.mark.anyio
async def test_such_a_tool_is_answered_failed_and_reported_by_check() -> None:
    called: list[Any] = []
    subject = Tool(
        name="signup",
        input_schema=_object(password={"type": "string", "pattern": "^(?=.*[0-9]).{8,}$"}),
        handler=lambda **kw: called.append(kw),
    )
    arguments = {"password": "hunter2hunter2"}
    response = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "tu1", "name": "signup", "input": arguments}],
    }
    with anyio.fail_after(20):
        outcome = await toolwire.execute_tool_calls([subject], "anthropic", response)
    (result,) = outcome.calls
    assert result.result.error_kind == "failed"
    assert "look-around" in result.result.text
    assert called == []
    (report,) = compat.check([subject])
    assert report.rejected
    assert {v.status for v in report.verdicts} == {"rejected"}


# -- the linear engine's cost is the compiled pattern's size times the input's --------------------

HUGE_PATTERNS = {
    "a large counted repetition": "\\w{20000}\\W",
    "a large class repetition": "[a-zé]{20000}!",
    "a repeated alternation": "(?:\\w|\\d){30000}!",
}


@pytest.mark.parametrize("pattern", list(HUGE_PATTERNS.values()))
def test_a_pattern_too_large_to_match_quickly_fails_closed(pattern: str) -> None:
    subject = Tool(name="t", server_id="srv", input_schema=_object(q={"pattern": pattern}))
    with pytest.raises(ConfigurationError) as info:
        subject.validate_arguments({"q": "a" * 40_000})  # took 24 s before the cap
    assert "to at most 256 KiB" in str(info.value)
    (report,) = compat.check([subject])
    assert report.rejected


_BIG_INPUT_WORKER = textwrap.dedent(
    """
    import sys
    from toolwire import InvalidArguments, Tool

    for pattern in sys.argv[1:]:
        subject = Tool(name="t", input_schema={
            "type": "object", "properties": {"q": {"type": "string", "pattern": pattern}}})
        for text in ("a" * 200_000, "ab!é " * 40_000):
            for _ in range(20):
                try:
                    subject.validate_arguments({"q": text})
                except InvalidArguments:
                    pass
    print("done")
    """
)


def test_patterns_within_the_cap_decide_large_arguments_quickly() -> None:
    # Patterns close to the cap, 2 x 20 checks of 200,000 characters each: well under 0.1 s a
    # check here; the bound is for a slow, busy machine.
    near_the_cap = ["\\w{2500}\\W", "\\w{1000}\\W\\w{1000}\\W", "(?:a|b|c|d|e){2000}!"]
    _finishes_in_bound(_BIG_INPUT_WORKER, *near_the_cap)
