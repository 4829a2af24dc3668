"""What the public suites check, for the tests and for ``benchmarks/public_suites.py``.

For a suite's functions (anything with ``name``, ``description`` and ``parameters``, a JSON
Schema) and calls of them:

- [`declare`][]: every function declared alone through ``toolwire.tools`` to one provider in
  one mode (every registered provider, every set of options its profile says converts schemas
  differently: OpenAI's and Anthropic's strict mode, Gemini's ``parameters`` for the Gemini API
  and for Vertex AI beside ``parametersJsonSchema``); what was declared is checked with the
  provider's official SDK type and with toolwire's own rule checker for that provider (what
  ``toolwire check`` applies), and each function is assessed as ``toolwire check`` does.
- [`Validation`][]: every distinct call sent in a model response of that provider and executed
  with ``toolwire.execute_tool_calls`` against tools that echo their arguments; the ``jsonschema``
  package decides, independently, whether the call fits the function's schema (after the nulls
  strict mode lets the model send for "left out" are left out, where the listing says so).
  A call that fits must run with exactly its arguments; one that does not must be answered
  ``invalid_arguments``, naming the JSON path of every place it breaks the schema.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import jsonschema
import pydantic

import toolwire
from toolwire.compat import check
from toolwire.providers import get_provider, make_options, provider_names
from toolwire.schema.checks import (
    anthropic_name_violations,
    anthropic_violations,
    gemini_violations,
    openai_name_violations,
    openai_violations,
)

__all__ = [
    "Declared",
    "Mode",
    "Problem",
    "SuiteCall",
    "SuiteFunction",
    "SuiteRun",
    "Validated",
    "Validation",
    "declare",
    "json_path",
    "modes",
    "oracle_errors",
]


class SuiteFunction(Protocol):
    """A function of a suite (bfcl_suite.Function)."""

    @property
    def key(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def parameters(self) -> dict[str, Any]: ...


class SuiteCall(Protocol):
    """A call of a suite's function (bfcl_suite.Call)."""

    @property
    def function(self) -> str: ...
    @property
    def arguments(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Mode:
    """One provider with one set of options that converts schemas its own way."""

    provider: str
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        """``defaults``, or the options (``schema=openapi, backend=vertex``)."""
        return ", ".join(f"{k}={v}" for k, v in self.options) or "defaults"

    @property
    def id(self) -> str:
        return f"{self.provider}[{self.label}]"

    @property
    def strict(self) -> bool:
        """True when the mode asks for strict schemas (its options' ``strict``)."""
        options = make_options(get_provider(self.provider), dict(self.options))
        return bool(getattr(options, "strict", False))

    def listing(self, tools: Iterable[toolwire.Tool]) -> toolwire.Listing:
        return toolwire.tools(list(tools), self.provider, **dict(self.options))


def modes() -> list[Mode]:
    """Every registered provider in every set of options its profile lists as converting
    schemas differently (``ProviderProfile.option_sets``)."""
    return [
        Mode(name, tuple(options.items()))
        for name in provider_names()
        for options in get_provider(name).PROFILE.option_sets
    ]


# -- what a provider was sent, its SDK's type and toolwire's rules --------------------------------


def _sdk_tools() -> dict[str, pydantic.TypeAdapter[Any]]:
    """Per provider, the official SDK's type of a request's ``tools`` (as
    tests/providers/test_contract.py checks them)."""
    from anthropic import types as anthropic_types
    from google.genai import interactions as interactions_types
    from google.genai import types as genai_types
    from openai.types import chat as chat_types
    from openai.types import responses as responses_types

    files = pydantic.ConfigDict(arbitrary_types_allowed=True)  # media fields take file objects
    return {
        "gemini": pydantic.TypeAdapter(list[genai_types.Tool]),
        "gemini-interactions": pydantic.TypeAdapter(
            list[interactions_types.ToolParam], config=files
        ),
        "anthropic": pydantic.TypeAdapter(list[anthropic_types.ToolParam]),
        "openai-chat": pydantic.TypeAdapter(list[chat_types.ChatCompletionFunctionToolParam]),
        "openai-responses": pydantic.TypeAdapter(list[responses_types.FunctionToolParam]),
    }


@dataclass(frozen=True, slots=True)
class _Sent:
    """One function as a request's ``tools`` carries it."""

    name: str
    schema: Any
    strict: bool


def _sent(provider: str, tools: Any) -> list[_Sent]:
    """The functions of a request's ``tools`` for ``provider``."""
    tools = tools or []
    if provider == "gemini":
        return [
            _Sent(d["name"], d.get("parametersJsonSchema", d.get("parameters")), False)
            for tool in tools
            for d in tool.get("functionDeclarations", [])
        ]
    if provider == "gemini-interactions":
        return [_Sent(t["name"], t["parameters"], False) for t in tools if t["type"] == "function"]
    if provider == "anthropic":
        return [_Sent(t["name"], t["input_schema"], t.get("strict") is True) for t in tools]
    if provider == "openai-chat":
        return [
            _Sent(t["function"]["name"], t["function"]["parameters"], t["function"]["strict"])
            for t in tools
        ]
    if provider == "openai-responses":
        return [_Sent(t["name"], t["parameters"], t["strict"]) for t in tools]
    raise KeyError(f"no SDK shape known for provider {provider!r}")


def _rule_violations(mode: Mode, sent: _Sent) -> list[str]:
    """Where ``sent`` breaks the provider's documented rules, by toolwire's checkers."""
    options = dict(mode.options)
    if mode.provider == "gemini":
        notes = gemini_violations(
            sent.schema,
            mode="openapi" if options.get("schema") == "openapi" else "json",
            backend=options.get("backend", "gemini"),
        )
    elif mode.provider == "gemini-interactions":
        notes = gemini_violations(sent.schema)
    elif mode.provider == "anthropic":
        notes = anthropic_violations(sent.schema, strict=sent.strict)
        notes += anthropic_name_violations(sent.name)
    elif mode.provider in ("openai-chat", "openai-responses"):
        notes = openai_violations(sent.schema, strict=sent.strict)
        notes += openai_name_violations(sent.name)
    else:
        raise KeyError(f"no rule checker known for provider {mode.provider!r}")
    found = [f"{note.path}: {note.message}" for note in notes]
    if not get_provider(mode.provider).PROFILE.accepts_name(sent.name):
        found.append(f"name {sent.name!r} does not fit the provider's name pattern")
    return found


COVERED = frozenset(
    {"gemini", "gemini-interactions", "anthropic", "openai-chat", "openai-responses"}
)
"""The providers [`_sent`][] and [`_rule_violations`][] know."""


# -- declaring ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Problem:
    """A function toolwire could not declare as the provider takes it."""

    function: str
    mode: str
    stage: str
    """``declare`` (toolwire raised), ``sdk`` (the SDK's type refused it), ``rules`` (it
    breaks toolwire's own rule checker), ``check`` (``toolwire check`` rejects it),
    ``null_paths`` (strict mode would leave out a null that is not an optional argument's)."""
    message: str
    parameters: Any

    def __str__(self) -> str:
        schema = json.dumps(self.parameters, sort_keys=True)
        if len(schema) > 400:
            schema = schema[:400] + "..."
        return f"{self.mode} {self.function!r} ({self.stage}): {self.message}; schema {schema}"


@dataclass(slots=True)
class Declared:
    """How one mode took every function."""

    mode: Mode
    functions: int = 0
    declared: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    """``toolwire check``'s verdicts: accepted (as is), converted, rejected."""
    strict: int = 0
    """Functions sent strict (OpenAI, Anthropic)."""
    made_nullable: int = 0
    """Functions whose optional arguments strict mode made nullable (a null there is left
    out before the call)."""
    not_strict: Counter[str] = field(default_factory=Counter)
    """Why the others were not, when strict mode was asked for (the reason, its path left
    out), and how many."""
    problems: list[Problem] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        return {
            "functions": self.functions,
            "declared": self.declared,
            "accepted_as_is": self.verdicts["accepted"],
            "converted": self.verdicts["converted"],
            "rejected": self.verdicts["rejected"],
            "strict": self.strict,
            "made_nullable": self.made_nullable,
            "not_strict": dict(self.not_strict.most_common()),
            "problems": len(self.problems),
        }


def _reason(text: str) -> str:
    """A reason without the path it starts with (``#/properties/a: ...``)."""
    return text.split(": ", 1)[1] if text.startswith("#") and ": " in text else text


def declare(functions: Sequence[SuiteFunction], mode: Mode) -> Declared:
    """Every function declared alone in ``mode``, checked with the SDK's type, toolwire's
    rule checker and ``toolwire check``."""
    result = Declared(mode, functions=len(functions))
    tools = [_tool(f) for f in functions]
    sent_tools: list[Any] = []
    owners: list[int] = []
    for index, (function, tool) in enumerate(zip(functions, tools, strict=True)):
        try:
            listing = mode.listing([tool])
        except Exception as exc:
            result.problems.append(
                Problem(function.name, mode.id, "declare", repr(exc), function.parameters)
            )
            continue
        result.declared += 1
        entry = listing.declaration.entries[function.name]
        if entry.strict:
            result.strict += 1
        elif mode.strict:
            result.not_strict[_reason(entry.not_strict_because or "no reason given")] += 1
        if entry.null_paths:
            result.made_nullable += 1
        for path in entry.null_paths:
            if not _optional_at(function.parameters, path):
                result.problems.append(
                    Problem(
                        function.name,
                        mode.id,
                        "null_paths",
                        f"{list(path)} is no optional argument, yet its null would be left out",
                        function.parameters,
                    )
                )
        for sent in _sent(mode.provider, listing.tools):
            for violation in _rule_violations(mode, sent):
                result.problems.append(
                    Problem(function.name, mode.id, "rules", violation, function.parameters)
                )
        sent_tools += listing.tools
        owners += [index] * len(listing.tools)
    try:
        _sdk_tools()[mode.provider].validate_python(sent_tools)
    except pydantic.ValidationError as exc:
        for error in exc.errors():
            function = functions[owners[int(error["loc"][0])]]
            where = ".".join(map(str, error["loc"][1:]))
            result.problems.append(
                Problem(
                    function.name, mode.id, "sdk", f"{where}: {error['msg']}", function.parameters
                )
            )
    options = {mode.provider: dict(mode.options)} if mode.options else None
    for function, report in zip(
        functions, check(tools, [mode.provider], options=options), strict=True
    ):
        (verdict,) = report.verdicts
        result.verdicts[verdict.status] += 1
        if verdict.status == "rejected":
            result.problems.append(
                Problem(
                    function.name, mode.id, "check", "; ".join(verdict.notes), function.parameters
                )
            )
    return result


def _optional_at(schema: Any, path: Sequence[str]) -> bool:
    """True when ``path`` (a null path of a strict declaration) names an optional property of
    ``schema`` (``*``: an array's items)."""
    node = schema
    for step in path[:-1]:
        if not isinstance(node, dict):
            return False
        node = node.get("items") if step == "*" else node.get("properties", {}).get(step)
    return (
        isinstance(node, dict)
        and path[-1] in node.get("properties", {})
        and path[-1] not in node.get("required", [])
    )


async def _echo(**arguments: Any) -> dict[str, Any]:
    """A tool's handler: the arguments it was called with."""
    return {"arguments": arguments}


def _tool(function: SuiteFunction) -> toolwire.Tool:
    return toolwire.Tool(
        name=function.name,
        description=function.description,
        input_schema=function.parameters,
        handler=_echo,
    )


# -- validating -----------------------------------------------------------------------------------


def _validator(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    kind = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return kind(schema, format_checker=kind.FORMAT_CHECKER)


def oracle_errors(schema: Mapping[str, Any], arguments: Any) -> list[jsonschema.ValidationError]:
    """Where ``arguments`` break ``schema``, by the ``jsonschema`` package (formats asserted,
    as toolwire asserts them)."""
    return list(_validator(schema).iter_errors(arguments))


def json_path(path: Iterable[Any]) -> str:
    """A location as toolwire's errors name it (``InvalidArguments``: ``$.a[0].b``)."""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _left_out(arguments: dict[str, Any], paths: Iterable[Sequence[str]]) -> dict[str, Any]:
    """``arguments`` without the nulls a strict listing reads as "left out" (its
    ``null_paths``; ``*`` is every item of an array)."""
    arguments = copy.deepcopy(arguments)
    for path in paths:
        nodes: list[Any] = [arguments]
        for step in path[:-1]:
            following = []
            for node in nodes:
                if step == "*" and isinstance(node, list):
                    following += node
                elif isinstance(node, dict) and step in node:
                    following.append(node[step])
            nodes = following
        for node in nodes:
            if isinstance(node, dict) and path[-1] in node and node[path[-1]] is None:
                del node[path[-1]]
    return arguments


@dataclass(slots=True)
class Validated:
    """How one mode answered every distinct call."""

    mode: Mode
    calls: int = 0
    fit: int = 0
    """Calls that fit their schema, by the oracle (after strict mode's nulls are left out)."""
    accepted: int = 0
    rejected: int = 0
    disagreements: list[str] = field(default_factory=list)
    """Calls toolwire judged otherwise than the oracle."""
    unclear: list[str] = field(default_factory=list)
    """Rejected calls whose answer is not ``invalid_arguments`` naming every broken path."""
    altered: list[str] = field(default_factory=list)
    """Accepted calls whose handler got other arguments than were sent."""
    nulls_left_out: int = 0
    """Calls with a null the listing's strict mode reads as "left out" (see ``null_paths``)."""

    def figures(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "fit": self.fit,
            "accepted": self.accepted,
            "rejected": self.rejected,
            "disagreements": len(self.disagreements),
            "unclear": len(self.unclear),
            "altered": len(self.altered),
            "nulls_left_out": self.nulls_left_out,
        }


def _batches(
    functions: Mapping[str, SuiteFunction], keys: Iterable[str], size: int
) -> list[dict[str, SuiteFunction]]:
    """The functions of ``keys`` in groups of at most ``size`` with distinct names (a toolset
    resolves a call by name)."""
    groups: list[dict[str, SuiteFunction]] = []
    for key in dict.fromkeys(keys):
        function = functions[key]
        for group in groups:
            if function.name not in group and len(group) < size:
                group[function.name] = function
                break
        else:
            groups.append({function.name: function})
    return groups


@dataclass(slots=True)
class _Batch:
    toolset: toolwire.ToolSet
    calls: list[tuple[str, Any]]
    """(a label for messages, the call) of each call to the group's functions."""


class Validation:
    """The distinct calls of a suite grouped once, to run in every mode."""

    def __init__(
        self,
        functions: Mapping[str, SuiteFunction],
        calls: Iterable[tuple[str, SuiteCall]],
        size: int = 64,
    ) -> None:
        self.functions = functions
        by_function: dict[str, list[tuple[str, SuiteCall]]] = {}
        for label, call in calls:
            by_function.setdefault(call.function, []).append((label, call))
        self.batches = [
            _Batch(
                toolwire.ToolSet([_tool(f) for f in group.values()]),
                [pair for f in group.values() for pair in by_function[f.key]],
            )
            for group in _batches(functions, by_function, size)
        ]

    @cached_property
    def _oracles(self) -> dict[str, jsonschema.protocols.Validator]:
        """The oracle's validator of each function's schema."""
        return {key: _validator(f.parameters) for key, f in self.functions.items()}

    def run(self, mode: Mode) -> Validated:
        result = Validated(mode)
        adapter = get_provider(mode.provider)
        for batch in self.batches:
            listing = mode.listing(batch.toolset)
            null_paths = listing.null_paths
            sent = [
                (f"c{i}", self.functions[call.function].name, copy.deepcopy(call.arguments))
                for i, (_, call) in enumerate(batch.calls)
            ]
            outcome = toolwire.execute_tool_calls_sync(listing, adapter.response_for(sent))
            if len(outcome.calls) != len(sent):
                raise AssertionError(
                    f"{mode.id}: {len(sent)} calls sent, {len(outcome.calls)} answered"
                )
            for (label, call), (call_id, name, _), answered in zip(
                batch.calls, sent, outcome.calls, strict=True
            ):
                self._judge(result, label, call, name, null_paths.get(name, ()), answered)
                if answered.call_id not in (None, call_id):
                    raise AssertionError(f"{mode.id}: answer {answered.call_id} for call {call_id}")
        return result

    def _judge(
        self,
        result: Validated,
        label: str,
        call: SuiteCall,
        name: str,
        null_paths: Sequence[Sequence[str]],
        answered: Any,
    ) -> None:
        result.calls += 1
        expected = _left_out(call.arguments, null_paths)
        result.nulls_left_out += expected != call.arguments
        errors = list(self._oracles[call.function].iter_errors(expected))
        outcome = answered.result
        accepted = not outcome.is_error
        shown = f"{label} {name}({json.dumps(call.arguments, sort_keys=True)[:300]})"
        if not errors:
            result.fit += 1
        if accepted:
            result.accepted += 1
        else:
            result.rejected += 1
        if accepted == bool(errors):
            said = _text(outcome) if not accepted else "accepted"
            oracle = "; ".join(f"{json_path(e.absolute_path)}: {e.message}" for e in errors)
            result.disagreements.append(
                f"{shown}: toolwire {said[:300]!r}; jsonschema {oracle or 'fits'}"
            )
        elif accepted:
            got = (outcome.structured_content or {}).get("arguments")
            if got != expected:
                result.altered.append(f"{shown}: the handler got {json.dumps(got)[:300]}")
        else:
            text = _text(outcome)
            missing = sorted(
                {
                    json_path(e.absolute_path)
                    for e in errors
                    if f"{json_path(e.absolute_path)}:" not in text
                }
            )
            if outcome.error_kind != "invalid_arguments" or missing:
                result.unclear.append(
                    f"{shown}: {outcome.error_kind} {text[:300]!r}"
                    + (f" does not name {', '.join(missing)}" if missing else "")
                )


def _text(result: Any) -> str:
    return " ".join(getattr(part, "text", "") for part in result.content)


class SuiteRun:
    """A suite's functions declared, and its calls validated, in each mode (each once)."""

    def __init__(
        self, functions: Mapping[str, SuiteFunction], calls: Iterable[tuple[str, SuiteCall]]
    ) -> None:
        self.functions = functions
        self.validation = Validation(functions, calls)
        self._declared: dict[Mode, Declared] = {}
        self._validated: dict[Mode, Validated] = {}

    def declared(self, mode: Mode) -> Declared:
        if mode not in self._declared:
            self._declared[mode] = declare(list(self.functions.values()), mode)
        return self._declared[mode]

    def validated(self, mode: Mode) -> Validated:
        if mode not in self._validated:
            self._validated[mode] = self.validation.run(mode)
        return self._validated[mode]

    def figures(self) -> dict[str, Any]:
        """Per provider and mode, how the functions were declared and the calls judged."""
        declared: dict[str, dict[str, Any]] = {}
        validated: dict[str, dict[str, Any]] = {}
        for mode in modes():
            declared.setdefault(mode.provider, {})[mode.label] = self.declared(mode).figures()
            validated.setdefault(mode.provider, {})[mode.label] = self.validated(mode).figures()
        return {"declared": declared, "validated": validated}
