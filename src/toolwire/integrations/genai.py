"""google-genai glue: toolwire tools as ``types.Tool``, governed dispatch of the SDK's function
calls, and real async callables for the SDK's automatic function calling (AFC).

Needs the ``genai`` extra (``pip install 'toolwire[genai]'``); without it every function here
raises [`MissingDependency`][toolwire.errors.MissingDependency].

Manual dispatch, the durable path (AFC is leaving ``Models.generate_content``)::

    config = types.GenerateContentConfig(
        tools=[genai_tool(toolset)],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    response = await client.aio.models.generate_content(model=..., contents=..., config=config)
    parts = await run_function_calls(response.function_calls or [], toolset=toolset)

The Interactions API (``client.interactions.create``) has its own pair::

    interaction = await client.aio.interactions.create(
        model=..., input=..., tools=interaction_tools(toolset)
    )
    while calls := await run_interaction_calls(interaction, toolset=toolset):
        interaction = await client.aio.interactions.create(
            model=..., tools=interaction_tools(toolset), **calls
        )
"""

from __future__ import annotations

import inspect
import keyword
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic_core import core_schema

from toolwire._api import execute_tool_calls
from toolwire.approval import ApprovalPending, DeferredApproval
from toolwire.calls import argument_problem
from toolwire.errors import (
    ConfigurationError,
    MalformedResponse,
    MissingDependency,
    ToolNotFound,
    ToolwireError,
)
from toolwire.pipeline.executor import Executor
from toolwire.providers import gemini, gemini_interactions, parse_calls
from toolwire.schema.gemini import inline_gemini_defs
from toolwire.tool import Tool
from toolwire.toolset import ToolSet, make_call

if TYPE_CHECKING:
    from google.genai import types as genai_types

__all__ = [
    "ToolCallFailed",
    "afc_callable",
    "afc_callables",
    "genai_tool",
    "interaction_tools",
    "run_function_calls",
    "run_interaction_calls",
]


def _types() -> Any:
    try:
        from google.genai import types
    except ImportError:
        raise MissingDependency("google-genai", "genai") from None
    return types


class ToolCallFailed(ToolwireError):
    """Raised inside an AFC callable when the governed call failed; genai reports the message
    to the model as the call's error."""


def genai_tool(
    toolset: ToolSet | Iterable[Tool], *, schema: gemini.SchemaMode = "json"
) -> genai_types.Tool:
    """One ``types.Tool`` holding a declaration for every tool exported to Gemini."""
    types = _types()
    declarations = gemini.function_declarations(toolset, schema=schema)
    tool: genai_types.Tool = types.Tool(
        function_declarations=[types.FunctionDeclaration.model_validate(d) for d in declarations]
    )
    return tool


def _executor(
    executor: Executor | None, toolset: ToolSet | Iterable[Tool] | None, caller: str
) -> Executor:
    """The executor given, or a plain one over ``toolset``; never both, so the toolset is
    not silently ignored."""
    if executor is not None:
        if toolset is not None:
            raise ConfigurationError(
                f"{caller}: toolset given beside executor=, which has its own; leave one out"
            )
        return executor
    if toolset is None:
        raise ConfigurationError(f"{caller} needs an executor or a toolset")
    return Executor(toolset)


def _as_part(call: Any) -> Any:
    """A function call in any of the accepted shapes, as a part dict or SDK part."""
    types = _types()
    if isinstance(call, types.FunctionCall):
        return {"functionCall": call.model_dump(mode="json", by_alias=True, exclude_none=True)}
    if isinstance(call, types.Part):
        return call
    if isinstance(call, Mapping):
        if "functionCall" in call or "function_call" in call:
            return call
        return {"functionCall": dict(call)}  # {"name", "args", "id"}
    raise MalformedResponse(f"not a function call: {type(call).__name__}")


async def run_function_calls(
    calls: Sequence[Any],
    *,
    executor: Executor | None = None,
    toolset: ToolSet | Iterable[Tool] | None = None,
    run_id: str | None = None,
    principal: Any = None,
    taint: Iterable[str] = (),
    deps: Any = None,
    structured: gemini.StructuredMode = "prefer",
) -> list[genai_types.Part]:
    """Run the model's calls through the governed pipeline; one function-response Part each.

    Args:
        calls: ``types.FunctionCall`` objects (``response.function_calls``), parts holding a
            ``function_call``, or ``{"name", "args", "id"}`` dicts.
        executor: the executor to run them (its policy, approver, store); a plain one over
            ``toolset`` when None.
        toolset: the tools, when no executor is given.
        run_id: names the turn (see [`Executor.run`][]).
        principal: who the turn runs for (see [`Executor.run`][]).
        taint: sources whose output is already in the model's context.
        deps: the application's dependencies, for tools that take a
            [`CallContext`][toolwire.CallContext].

    Returns:
        One ``types.Part`` per call, in order, unknown tools and bad arguments included; an
        ``id`` only when the model sent one.

    Raises:
        ApprovalPending: with a deferred approver, as [`Executor.run`][].
        MalformedResponse: when ``calls`` is not a list of function calls.
    """
    types = _types()
    executor = _executor(executor, toolset, "run_function_calls")
    if not isinstance(calls, list | tuple):
        raise MalformedResponse(f"calls must be a list, not {type(calls).__name__}")
    outcome = await execute_tool_calls(
        executor.toolset,
        gemini.NAME,
        [_as_part(c) for c in calls],
        executor=executor,
        run_id=run_id,
        principal=principal,
        taint=taint,
        deps=deps,
        structured=structured,
    )
    return [types.Part.model_validate(answer) for answer in outcome.results]


# -- the Interactions API ------------------------------------------------------------------------


def interaction_tools(
    toolset: ToolSet | Iterable[Tool], *, deferred: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The Interactions API's ``tools``: a ``function`` tool for every tool exported to it
    (``deferred`` names those declared with ``defer_loading``); ``[]`` when there are none."""
    options = gemini_interactions.Options(deferred=tuple(deferred))
    return gemini_interactions.declare(ToolSet.of(toolset), options).tools or []


async def run_interaction_calls(
    interaction: Any,
    *,
    executor: Executor | None = None,
    toolset: ToolSet | Iterable[Tool] | None = None,
    run_id: str | None = None,
    principal: Any = None,
    taint: Iterable[str] = (),
    deps: Any = None,
    structured: gemini.StructuredMode = "prefer",
) -> dict[str, Any]:
    """Run an interaction's ``function_call`` steps through the governed pipeline.

    Args:
        interaction: what ``interactions.create`` returned (or its dict, or what a stream
            accumulator's ``response()`` gave).
        executor: as in [`run_function_calls`][].
        toolset: as in [`run_function_calls`][].
        run_id: as in [`run_function_calls`][].
        principal: as in [`run_function_calls`][].
        taint: as in [`run_function_calls`][].
        deps: as in [`run_function_calls`][].
        structured: how an answer carries structured content (as
            ``InteractionsOptions.structured``).

    Returns:
        The next ``interactions.create`` arguments: ``input``, one ``function_result`` step per
        call in order (unknown tools and bad arguments included), and
        ``previous_interaction_id``; ``{}`` when the model made no call (it is done).

    Raises:
        ApprovalPending: with a deferred approver, as [`Executor.run`][].
        MalformedResponse: when ``interaction`` is not one, or has calls but no id to continue
            from (then nothing runs).
    """
    executor = _executor(executor, toolset, "run_interaction_calls")
    try:
        previous: str | None = gemini_interactions.interaction_id(interaction)
    except MalformedResponse:
        if parse_calls(gemini_interactions.NAME, interaction, executor.toolset):
            raise  # calls, but no interaction to continue: nothing runs
        previous = None
    outcome = await execute_tool_calls(
        executor.toolset,
        gemini_interactions.NAME,
        interaction,
        executor=executor,
        run_id=run_id,
        principal=principal,
        taint=taint,
        deps=deps,
        structured=structured,
    )
    if not outcome.results:
        return {}
    return {"previous_interaction_id": previous, "input": outcome.results}


# -- automatic function calling ------------------------------------------------------------------


def _python_name(name: str, taken: set[str]) -> str:
    """A Python identifier for a schema property name (``X-Trace`` → ``X_Trace``,
    ``class`` → ``p_class``), unique among ``taken``."""
    candidate = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "p"
    if candidate[0].isdigit() or keyword.iskeyword(candidate) or candidate.startswith("__"):
        candidate = f"p_{candidate}"
    base, n = candidate, 2
    while candidate in taken:
        candidate = f"{base}_{n}"
        n += 1
    taken.add(candidate)
    return candidate


class _AcceptsAnything(type):
    """genai checks ``isinstance(value, annotation)`` before calling; validation is ours."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return True


def _declared_as(schema: Mapping[str, Any]) -> type:
    """An annotation genai declares as exactly ``schema`` and lets any value through."""

    class Parameter(metaclass=_AcceptsAnything):
        @classmethod
        def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
            return core_schema.any_schema()

        @classmethod
        def __get_pydantic_json_schema__(cls, core: Any, handler: Any) -> dict[str, Any]:
            return dict(schema)

    return Parameter


def afc_callable(
    tool: Tool,
    *,
    executor: Executor | None = None,
    exposed_name: str | None = None,
    deps: Any = None,
) -> Callable[..., Any]:
    """A real async function genai's AFC can declare and call, running ``tool`` governed.

    Its signature has one keyword parameter per schema property, annotated so that genai
    declares exactly the property's lowered Gemini schema; optional parameters default to None
    so genai doesn't mark them required (and None values it sends for them are dropped). The
    arguments are validated by toolwire against the original schema, not by genai. A
    ``CallContext`` parameter of the tool's function is not in the schema, so not in the
    signature either: each call passes it the call's context, with ``deps``.

    Raises:
        ConfigurationError: when the executor's approver is deferred (AFC cannot pause), or
            its toolset does not hold ``tool`` under the name it is declared by.
    """
    if executor is None:
        executor = Executor([tool])
    if isinstance(executor.approver, DeferredApproval):
        raise ConfigurationError(
            "automatic function calling cannot pause for approval; use an immediate approver "
            "(AutoApprove, CallbackApproval) or run_function_calls"
        )
    try:
        name = exposed_name or executor.toolset.exposed_name(tool)
    except ToolNotFound:  # the executor does not hold the tool at all
        name = tool.name
    if executor.toolset.get(name) is not tool:
        # Declared from ``tool`` and run by the executor under its name: they must be one.
        raise ConfigurationError(
            f"afc_callable: the executor's toolset has no tool {name!r} that is this tool; "
            "build the executor over the tools you declare"
        )
    declaration = gemini.function_declarations(ToolSet([tool]))[0]
    # genai builds each parameter's schema alone: references must be inlined.
    schema = inline_gemini_defs(declaration["parametersJsonSchema"])
    required = set(schema.get("required", ()))
    taken: set[str] = set()
    parameters = []
    original: dict[str, str] = {}
    for prop, prop_schema in schema.get("properties", {}).items():
        py_name = _python_name(prop, taken)
        original[py_name] = prop
        annotation = _declared_as(prop_schema)
        parameters.append(
            inspect.Parameter(
                py_name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=annotation,
                default=inspect.Parameter.empty if prop in required else None,
            )
        )

    async def call(**kwargs: Any) -> Any:
        arguments = {
            original[k]: v
            for k, v in kwargs.items()
            if k in original and not (v is None and original[k] not in required)
        }
        problem = argument_problem(arguments)
        if problem is not None:  # what genai decoded from the model is checked like any call's
            raise ToolCallFailed(f"Invalid arguments for {name!r}: {problem}.")
        try:
            [outcome] = await executor.run(
                [make_call(executor.toolset, name, arguments)], deps=deps
            )
        except ApprovalPending:
            raise ToolCallFailed("this call needs approval, which cannot be given here") from None
        result = outcome.result
        if result.is_error:
            raise ToolCallFailed(result.text)
        if result.structured_content is not None:
            return dict(result.structured_content)
        return result.text

    call.__name__ = call.__qualname__ = name
    call.__doc__ = declaration["description"]
    call.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in parameters}
    return call


def afc_callables(
    toolset: ToolSet | Iterable[Tool], *, executor: Executor | None = None, deps: Any = None
) -> list[Callable[..., Any]]:
    """[`afc_callable`][] for every visible tool exported to Gemini, in toolset order."""
    toolset = ToolSet.of(toolset)
    if executor is None:
        executor = Executor(toolset)
    return [
        afc_callable(tool, executor=executor, exposed_name=toolset.exposed_name(tool), deps=deps)
        for tool in toolset
        if tool.providers is None or gemini.NAME in tool.providers
    ]
