"""A tool's function asking for its call's context (a ``CallContext`` parameter): given it on
every call, with the turn's ``deps``, and never declared to the model nor kept by the run."""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any, Optional

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from toolwire import (
    CallContext,
    CallOutcome,
    ConfigurationError,
    DeferredApproval,
    Executor,
    InvalidArguments,
    MemoryStore,
    Policy,
    Rule,
    ToolSet,
    tool,
)
from toolwire.providers import gemini, parse_calls, provider_names

pytestmark = pytest.mark.anyio


@dataclass
class Deps:
    """What the application hands its tools: a price list, and where they note their calls."""

    prices: dict[str, float]
    seen: list[Any] = field(default_factory=list)


class ShopContext(CallContext[Deps]):
    """An application's own context class, with a shortcut."""

    @property
    def prices(self) -> dict[str, float]:
        return self.deps.prices


def price_of(item: str, ctx: CallContext[Deps]) -> str:
    """The price of an item.

    Args:
        item: What to price.
    """
    ctx.deps.seen.append((ctx, threading.current_thread()))
    return f"{ctx.deps.prices[item]:.2f}"


price = tool(price_of, name="price")


def _price_without_context(item: str) -> str:
    return item


_price_without_context.__doc__ = price_of.__doc__
price_twin = tool(_price_without_context, name="price")
"""The same tool without the context parameter: what the model must be told of ``price``."""


@tool
async def stock(item: str, ctx: CallContext[Deps]) -> str:
    """How many of an item are in stock."""
    ctx.deps.seen.append((ctx, threading.current_thread()))
    return "3"


@tool
def send(to: str) -> str:
    """Send a note."""
    return f"sent to {to}"


def response(*calls: dict[str, Any]) -> dict[str, Any]:
    parts = [{"functionCall": call} for call in calls]
    return {"candidates": [{"content": {"role": "model", "parts": parts}}]}


async def run(executor: Executor, *calls: dict[str, Any], **options: Any) -> list[CallOutcome]:
    items = parse_calls("gemini", response(*calls), executor.toolset)
    return await executor.run(items, **options)


# -- what the model is told ----------------------------------------------------------------------


def test_the_context_parameter_is_left_out_of_the_schema() -> None:
    assert gemini.function_declarations(ToolSet([price])) == [
        {
            "name": "price",
            "description": "The price of an item.",
            "parametersJsonSchema": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"item": {"type": "string", "description": "What to price."}},
                "required": ["item"],
            },
        }
    ]
    assert price.context_parameter == "ctx"
    assert price_twin.context_parameter is None


@pytest.mark.parametrize("provider", provider_names())
def test_every_provider_is_told_of_the_tool_as_if_it_had_no_context_parameter(
    provider: str,
) -> None:
    assert toolwire.tools([price], provider).tools == toolwire.tools([price_twin], provider).tools


# -- what the tool is given ----------------------------------------------------------------------


async def test_a_sync_tool_is_given_its_calls_context_in_a_worker_thread() -> None:
    deps = Deps(prices={"tea": 2.5})
    [outcome] = await run(
        Executor([price]),
        {"name": "price", "args": {"item": "tea"}, "id": "c1"},
        run_id="r1",
        principal="alice",
        taint=["web"],
        deps=deps,
    )
    assert outcome.result.text == "2.50"
    [(ctx, thread)] = deps.seen
    assert type(ctx) is CallContext
    assert (ctx.run_id, ctx.call_id, ctx.principal, ctx.taint) == (
        "r1",
        "c1",
        "alice",
        frozenset({"web"}),
    )
    assert ctx.deps is deps
    assert ctx.arguments == {"item": "tea"}
    assert ctx.tool is price
    assert thread is not threading.main_thread()


async def test_an_async_tool_is_given_the_local_id_of_a_call_the_provider_sent_no_id_for() -> None:
    deps = Deps(prices={})
    [outcome] = await run(Executor([stock]), {"name": "stock", "args": {"item": "tea"}}, deps=deps)
    assert outcome.result.text == "3"
    [(ctx, thread)] = deps.seen
    assert ctx.call_id == outcome.item.local_id
    assert outcome.call_id is None  # the provider sent none
    assert ctx.run_id is None
    assert ctx.deps is deps
    assert thread is threading.main_thread()  # on the event loop


async def test_a_tool_is_given_the_run_id_made_for_its_turn_after_it_was_planned() -> None:
    """The first call is planned before the second asks for approval (which makes the turn's
    run id): it still runs in that run, and is told so."""
    deps = Deps(prices={"tea": 1.0})
    executor = Executor(
        [price, send], policy=Policy(Rule("ask", "send")), approver=DeferredApproval()
    )
    with pytest.raises(toolwire.ApprovalPending) as pending:
        await run(
            executor,
            {"name": "price", "args": {"item": "tea"}, "id": "c1"},
            {"name": "send", "args": {"to": "bob"}, "id": "c2"},
            deps=deps,
        )
    [(ctx, _)] = deps.seen
    assert ctx.run_id == pending.value.run_id


async def test_without_deps_the_context_has_none() -> None:
    seen: list[Any] = []

    @tool
    def who(ctx: CallContext) -> str:
        """Who asks."""
        seen.append(ctx.deps)
        return str(ctx.principal)

    [outcome] = await run(Executor([who]), {"name": "who", "args": {}}, principal="carol")
    assert (outcome.result.text, seen) == ("carol", [None])


_FORMS = {
    "bare": "CallContext",
    "generic": "CallContext[Deps]",
    "optional": "Optional[CallContext[Deps]] = None",
    "union with None": "CallContext[Deps] | None = None",
    "annotated": "Annotated[CallContext[Deps], 'the call']",
    "optional annotated": "Optional[Annotated[CallContext[Deps], 'the call']] = None",
    "subclass": "ShopContext",
}


def _tool_annotated(form: str, *, postponed: bool) -> toolwire.Tool:
    """A tool whose context parameter is annotated ``form``, its annotations strings
    (``from __future__ import annotations``) or evaluated."""
    source = f'''
def lookup(item: str, ctx: {form}) -> str:
    """Look an item's price up."""
    ctx.deps.seen.append(ctx)
    return str(ctx.deps.prices[item])
'''
    if postponed:
        source = "from __future__ import annotations\n" + source
    namespace: dict[str, Any] = {
        "Annotated": Annotated,
        "CallContext": CallContext,
        "Deps": Deps,
        "Optional": Optional,
        "ShopContext": ShopContext,
    }
    exec(compile(source, "<tool>", "exec", dont_inherit=True), namespace)
    return tool(namespace["lookup"])


@pytest.mark.parametrize("postponed", [True, False], ids=["string hints", "evaluated hints"])
@pytest.mark.parametrize("form", list(_FORMS.values()), ids=list(_FORMS))
async def test_each_way_of_annotating_the_context_parameter_is_given_the_context(
    form: str, postponed: bool
) -> None:
    lookup = _tool_annotated(form, postponed=postponed)
    assert set(lookup.input_schema["properties"]) == {"item"}
    deps = Deps(prices={"tea": 2.0})
    [outcome] = await run(
        Executor([lookup]), {"name": "lookup", "args": {"item": "tea"}}, deps=deps
    )
    assert outcome.result.text == "2.0"
    [ctx] = deps.seen
    assert type(ctx) is (ShopContext if form == "ShopContext" else CallContext)
    assert ctx.deps is deps


async def test_a_subclass_of_the_context_is_what_the_tool_is_given() -> None:
    @tool
    def cheapest(ctx: ShopContext) -> str:
        """The cheapest item."""
        return min(ctx.prices, key=ctx.prices.__getitem__)

    [outcome] = await run(
        Executor([cheapest]), {"name": "cheapest", "args": {}}, deps=Deps({"tea": 2, "pen": 1})
    )
    assert outcome.result.text == "pen"


class Shop:
    def __init__(self, discount: float) -> None:
        self.discount = discount

    def discounted(self, item: str, ctx: CallContext[Deps]) -> str:
        """An item's price after the shop's discount."""
        return f"{ctx.deps.prices[item] * self.discount:.2f}"


def price_in(item: str, currency: str, ctx: CallContext[Deps]) -> str:
    """An item's price in a currency."""
    return f"{ctx.deps.prices[item]:.2f} {currency}"


async def stock_at(item: str, shop: str, ctx: CallContext[Deps]) -> str:
    """How many of an item a shop has."""
    return f"{shop}: {len(ctx.deps.prices)}"


async def test_methods_and_partials_are_given_the_context_too() -> None:
    tools = [
        tool(Shop(0.5).discounted),
        tool(functools.partial(price_in, currency="EUR")),
        tool(functools.partial(stock_at, shop="Porto")),
    ]
    for each in tools:
        assert set(each.input_schema["properties"]) == {"item"}, each.name
    outcomes = await run(
        Executor(tools),
        {"name": "discounted", "args": {"item": "tea"}},
        {"name": "price_in", "args": {"item": "tea"}},
        {"name": "stock_at", "args": {"item": "tea"}},
        deps=Deps({"tea": 3.0}),
    )
    assert [o.result.text for o in outcomes] == ["1.50", "3.00 EUR", "Porto: 1"]


# -- hooks ---------------------------------------------------------------------------------------


async def test_hooks_see_the_turns_deps() -> None:
    seen: list[tuple[str, str, Any, str]] = []
    deps = Deps(prices={"tea": 1.0})

    def before(ctx: CallContext[Deps]) -> None:
        seen.append(("before", ctx.tool.name, ctx.deps, ctx.call_id))

    def after(ctx: CallContext[Deps], result: toolwire.ToolResult) -> None:
        seen.append(("after", ctx.tool.name, ctx.deps, ctx.call_id))

    executor = Executor([price, send], before_call=[before], after_call=[after])
    await run(
        executor,
        {"name": "price", "args": {"item": "tea"}, "id": "c1"},
        {"name": "send", "args": {"to": "bob"}, "id": "c2"},
        deps=deps,
    )
    before_calls = [s for s in seen if s[0] == "before"]
    after_calls = sorted(s for s in seen if s[0] == "after")  # the calls ran concurrently
    assert before_calls == [("before", "price", deps, "c1"), ("before", "send", deps, "c2")]
    assert after_calls == [("after", "price", deps, "c1"), ("after", "send", deps, "c2")]
    [(ctx, _)] = deps.seen
    assert ctx.deps is deps


# -- what the model cannot do, and what is never kept --------------------------------------------


async def test_an_argument_named_like_the_context_parameter_is_refused_and_nothing_runs() -> None:
    deps = Deps(prices={"tea": 1.0})
    [outcome] = await run(
        Executor([price]),
        {"name": "price", "args": {"item": "tea", "ctx": {"deps": "forged"}}},
        deps=deps,
    )
    assert outcome.result.error_kind == "invalid_arguments"
    assert deps.seen == []
    with pytest.raises(InvalidArguments) as refused:
        price.validate_arguments({"item": "tea", "ctx": {}})
    assert [path for path, _ in refused.value.errors] == ["$.ctx"]


async def test_deps_are_no_part_of_what_a_run_keeps() -> None:
    """A resume with other deps is the same run, answered from the store: deps are in neither
    the run's binding nor the calls' fingerprints, and no record carries them."""
    store = MemoryStore()
    call = {"name": "price", "args": {"item": "tea"}, "id": "c1"}
    first = await run(Executor([price], store=store), call, run_id="r1", deps=Deps({"tea": 1.0}))
    again = await run(Executor([price], store=store), call, run_id="r1", deps=Deps({"tea": 9.0}))
    assert again[0].from_store
    assert again[0].result == first[0].result
    record = await store.get("r1", "c1")
    assert record is not None
    assert "Deps" not in repr(record)


@settings(max_examples=40, deadline=None)
@given(
    principal=st.none() | st.text(max_size=8),
    taint=st.lists(st.text(max_size=5), max_size=3),
    deps=st.none() | st.integers() | st.text() | st.lists(st.integers(), max_size=3),
    call_id=st.text(alphabet="abcdefghij0123456789_-", min_size=1, max_size=12),
)
def test_the_context_is_exactly_what_the_turn_was_given(
    principal: Any, taint: list[str], deps: Any, call_id: str
) -> None:
    seen: list[CallContext] = []

    @tool
    def echo(text: str, ctx: CallContext) -> str:
        """Echo the text."""
        seen.append(ctx)
        return text

    async def turn() -> list[CallOutcome]:
        return await run(
            Executor([echo]),
            {"name": "echo", "args": {"text": "hi"}, "id": call_id},
            principal=principal,
            taint=taint,
            deps=deps,
        )

    [outcome] = anyio.run(turn)
    assert outcome.result.text == "hi"
    [ctx] = seen
    assert (ctx.principal, ctx.taint, ctx.call_id, ctx.arguments) == (
        principal,
        frozenset(taint),
        call_id,
        {"text": "hi"},
    )
    assert ctx.deps is deps


# -- definitions that cannot work ----------------------------------------------------------------


def test_two_context_parameters_are_refused_when_the_tool_is_made() -> None:
    def twice(item: str, a: CallContext, b: CallContext[Deps]) -> str:
        """Twice."""
        return item

    with pytest.raises(ConfigurationError, match="'a' and 'b'"):
        tool(twice)


def test_a_context_in_a_union_with_other_types_is_refused() -> None:
    def either(item: str, ctx: CallContext | int) -> str:
        """Either."""
        return item

    with pytest.raises(ConfigurationError, match="'ctx'"):
        tool(either)


@dataclass(frozen=True, kw_only=True)
class TenantContext(CallContext[Deps]):
    """A context with a field of its own, which toolwire cannot fill."""

    tenant: str


def test_a_context_subclass_with_fields_toolwire_cannot_fill_is_refused() -> None:
    def of_tenant(ctx: TenantContext) -> str:
        """Of a tenant."""
        return ctx.tenant

    with pytest.raises(ConfigurationError, match="TenantContext"):
        tool(of_tenant)


# -- google-genai's automatic function calling ---------------------------------------------------


@pytest.fixture
def gemini_server() -> Iterator[Any]:
    pytest.importorskip("google.genai")
    from integrations.test_genai_wire import ScriptedGemini

    scripted = ScriptedGemini()
    scripted.thread.start()
    try:
        yield scripted
    finally:
        scripted.server.shutdown()
        scripted.server.server_close()


async def test_afc_callables_declare_no_context_parameter_and_pass_the_deps(
    gemini_server: Any,
) -> None:
    from google.genai import types

    from integrations.test_genai_wire import client_for, model_turn, wire_schema
    from toolwire.integrations.genai import afc_callables

    deps = Deps(prices={"tea": 4.0})
    [callable_] = afc_callables([price], deps=deps)
    assert list(inspect.signature(callable_).parameters) == ["item"]  # what genai inspects

    gemini_server.responses = [
        model_turn({"functionCall": {"name": "price", "args": {"item": "tea"}}}),
        model_turn({"text": "Tea is 4.00."}),
    ]
    config = types.GenerateContentConfig(tools=[callable_])
    reply = await client_for(gemini_server).aio.models.generate_content(
        model="gemini-test", contents="Price of tea?", config=config
    )
    assert reply.text == "Tea is 4.00."
    (_, first), (_, second) = gemini_server.requests
    [declared] = first["tools"][0]["functionDeclarations"]
    assert set(wire_schema(declared)["properties"]) == {"item"}
    [answer] = second["contents"][-1]["parts"]
    assert answer["functionResponse"]["response"] == {"result": "4.00"}
    [(ctx, _)] = deps.seen
    assert ctx.deps is deps
