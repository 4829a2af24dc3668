"""The cases ``test_same_path.py`` compares: every surface that runs a turn through the engine
boundary (``execute_tool_calls``, ``toolwire.loop``, ``DurableTools``, hosted approvals, the
gateway's calls and tasks, the google-genai helpers) driven with the same model responses,
policies, approvers and stores, and what the model or the user sees of each case, as JSON.

    python tests/same_path_cases.py OUT.json [CASE_PREFIX ...]

runs every case (or those whose id starts with a prefix) against the ``toolwire`` this
interpreter imports and writes what each case saw. The recording in
``tests/data/same_path/recorded.json`` was made this way against the release before the
surfaces moved onto the engine boundary; the test runs this same script against the code as it
is and compares the two, case by case.

It is one script run in a process of its own, rather than cases run inside the test process,
because the same code has to run against two releases of the library (the older one through
``PYTHONPATH``) and because DBOS is one launched instance per process: the process launches it
once, with the workflow every DBOS case runs registered before the launch. Where the public API
changed between the two releases, the case says how it adapts (``adapted``).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

import toolwire
from toolwire import (
    ApprovalPending,
    AutoApprove,
    CallContext,
    DeferredApproval,
    Executor,
    MemoryStore,
    Policy,
    Rule,
    SQLiteStore,
    ToolSet,
    ledger,
)
from toolwire.providers import get_provider

NEW_API = hasattr(toolwire, "parse_turn")
"""Whether the library is the one whose surfaces run through the engine boundary."""
PROVIDERS = ("anthropic", "openai-chat", "openai-responses", "gemini")
PRINCIPAL = "alice"
TTL = 0.05
"""Seconds a request waits in the cases where it expires."""

# -- the tools ---------------------------------------------------------------------------------

RAN: Counter[str] = Counter()
"""Each tool's runs in the current case: ``tool n for principal``."""


def _ran(tool: str, n: int, context: CallContext) -> str:
    RAN[f"{tool} {n} for {context.principal}"] += 1
    return f"{tool} did {n}"


@toolwire.tool
async def work(n: int, context: CallContext) -> str:
    """Work on ``n``."""
    return _ran("work", n, context)


@toolwire.tool(parallel_safe=False)
async def serial(n: int, context: CallContext) -> str:
    """Work on ``n``, never beside another call."""
    return _ran("serial", n, context)


@toolwire.tool
async def pay(n: int, context: CallContext) -> str:
    """Pay ``n``."""
    return _ran("pay", n, context)


@toolwire.tool
async def boom(n: int, context: CallContext) -> str:
    """Fail on ``n``."""
    _ran("boom", n, context)
    raise RuntimeError(f"boom on {n}")


TOOLS = [work, serial, pay, boom]
POLICIES: dict[str, Policy | None] = {
    "allow": None,
    "deny": Policy(Rule("deny", "pay", reason="no paying today")),
    "ask": Policy(Rule("ask", "pay", reason="it costs money")),
}
SHAPES: dict[str, list[tuple[str, str, Any]]] = {
    "parallel": [
        ("c1", "work", {"n": 1}),
        ("c2", "serial", {"n": 2}),
        ("c3", "serial", {"n": 3}),
        ("c4", "work", {"n": 4}),
    ],
    "unknown": [("c1", "work", {"n": 1}), ("c2", "nope", {"n": 2})],
    "invalid": [("c1", "work", {"n": "x"}), ("c2", "work", {"n": 2}), ("c3", "work", {})],
    "failing": [("c1", "boom", {"n": 1}), ("c2", "work", {"n": 2})],
    "repeated_id": [("c1", "work", {"n": 1}), ("c1", "work", {"n": 2})],
    "gated": [("c1", "pay", {"n": 1}), ("c2", "work", {"n": 2}), ("c3", "serial", {"n": 3})],
    "gated_two": [("c1", "pay", {"n": 1}), ("c2", "pay", {"n": 5}), ("c3", "work", {"n": 3})],
    "no_calls": [],
}
"""The model's calls of each response: (id, tool, arguments)."""
MALFORMED: dict[str, Any] = {
    "anthropic": {"role": "assistant", "content": "not a list of blocks"},
    "openai-chat": {"choices": [{"message": {"role": "assistant", "tool_calls": "x"}}]},
    "openai-responses": {"output": {"type": "function_call"}},
    "gemini": {"candidates": [{"content": {"parts": [{"functionCall": "x"}]}}]},
}
NOT_AN_OBJECT: dict[str, Any] = {
    "anthropic": {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "c1", "name": "work", "input": [1]}],
    },
    "openai-chat": {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "work", "arguments": "{not json"},
                        }
                    ],
                }
            }
        ]
    },
    "openai-responses": {
        "output": [
            {"type": "function_call", "call_id": "c1", "name": "work", "arguments": "[1, 2]"}
        ]
    },
    "gemini": {
        "candidates": [
            {"content": {"parts": [{"functionCall": {"id": "c1", "name": "work", "args": [1]}}]}}
        ]
    },
}
"""A response whose one call's arguments are not a JSON object."""

DECISIONS: dict[str, Any] = {
    "allowed": toolwire.allow(),
    "denied": toolwire.deny("not today"),
    "edited": toolwire.allow(arguments={"n": 7}),
    "halted": toolwire.halt("stop everything"),
    "bad_edit": toolwire.allow(arguments={"n": "many"}),
}
"""What a person decides for a call that waits (``expired``: nobody, until it expires)."""
APPROVERS = ("auto", *DECISIONS, "expired")
SHAPES_PLAIN = ("parallel", "unknown", "invalid", "failing", "repeated_id", "no_calls", "stopped")


STOPPED: dict[str, Any] = {
    "anthropic": {
        "role": "assistant",
        "content": [{"type": "text", "text": "I will not."}],
        "stop_reason": "refusal",
    },
    "openai-chat": {
        "choices": [
            {"message": {"role": "assistant", "content": None}, "finish_reason": "content_filter"}
        ]
    },
    "openai-responses": {
        "output": [{"type": "message", "content": [{"type": "refusal", "refusal": "I will not."}]}]
    },
    "gemini": {"promptFeedback": {"blockReason": "SAFETY"}},
}
"""A response the model was stopped in (refused, blocked): no calls, and a reason to say."""


def response(provider: str, shape: str) -> Any:
    if shape == "stopped":
        return STOPPED[provider]
    if shape == "malformed":
        return MALFORMED[provider]
    if shape == "not_an_object":
        return NOT_AN_OBJECT[provider]
    calls = SHAPES[shape]
    text = "all done" if not calls else None
    return get_provider(provider).response_for(calls, text=text)


# -- what a case saw ---------------------------------------------------------------------------


class Seen:
    """What one case saw, in the order it saw it; run ids replaced by ``<run N>`` in order of
    appearance (a run the library names itself gets another name each time)."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.run_ids: dict[str, str] = {}
        self.adapted: list[str] = []

    def run(self, run_id: Any) -> str | None:
        if run_id is None:
            return None
        return self.run_ids.setdefault(str(run_id), f"<run {len(self.run_ids) + 1}>")

    def add(self, kind: str, value: Any) -> None:
        self.steps.append({kind: value})

    def error(self, exc: BaseException) -> None:
        if isinstance(exc, ApprovalPending):
            self.pending(exc)
            return
        self.add("error", f"{type(exc).__name__}: {exc}")

    def pending(self, exc: ApprovalPending) -> None:
        self.run(exc.run_id)
        self.add("pending", [request_seen(request) for request in exc.pending])

    def outcome(self, outcome: Any) -> None:
        self.run(outcome.run_id)
        self.add(
            "answers",
            {
                "results": [jsonable(result) for result in outcome.results],
                "calls": [call_seen(call) for call in outcome.calls],
                "halted": outcome.halted,
                "stopped": stopped_seen(outcome.stopped),
            },
        )

    def ran(self) -> None:
        self.add("ran", dict(sorted(RAN.items())))
        RAN.clear()

    async def records(self, store: Any, run_id: str | None) -> None:
        if run_id is None:
            return
        self.run(run_id)
        trails = await ledger.history(store, run_id)
        self.add("records", [trail_seen(trail) for trail in trails])

    def to_json(self) -> dict[str, Any]:
        text = json.dumps(self.steps, sort_keys=True, default=str)
        for run_id, name in sorted(self.run_ids.items(), key=lambda kv: -len(kv[0])):
            text = text.replace(run_id, name)
        text = re.sub(r"\b[0-9a-f]{32}\b", "<id>", text)
        seen: dict[str, Any] = {"steps": json.loads(text)}
        if self.adapted:
            seen["adapted"] = self.adapted
        return seen


def stopped_seen(stopped: Any) -> list[Any] | None:
    return None if stopped is None else [stopped.kind, stopped.reason, stopped.message]


def jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    return json.loads(json.dumps(value, default=str))


def call_seen(call: Any) -> list[Any]:
    result = call.result
    return [call.item.local_id, result.error_kind, result.text, result.is_error]


def request_seen(request: Any) -> dict[str, Any]:
    return {
        "call_id": request.call_id,
        "tool": request.exposed_name,
        "arguments": jsonable(dict(request.arguments)),
        "principal": request.principal,
        "reason": request.reason,
        "expires": request.expires_at is not None,
    }


def trail_seen(trail: Any) -> dict[str, Any]:
    decided = trail.decided or {}
    finished = trail.finished or {}
    return {
        "call_id": trail.call_id,
        "tool": trail.exposed_name,
        "state": str(trail.state),
        "decided": decided.get("kind"),
        "edited": decided.get("edited"),
        "error_kind": finished.get("error_kind"),
    }


# -- cases -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    play: Callable[[Seen, Path], Awaitable[None]]


class Stores:
    """A fresh store of each kind for each case."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.opened: list[Any] = []
        self.count = 0

    def __call__(self, kind: str) -> Any:
        if kind == "memory":
            return MemoryStore()
        self.count += 1
        store = SQLiteStore(self.workdir / f"runs{self.count}.db")
        self.opened.append(store)
        return store

    def close(self) -> None:
        for store in self.opened:
            store.close()
        self.opened.clear()


async def kept_requests(store: Any, run_id: str, call_ids: Sequence[str]) -> list[Any]:
    """The requests ``run_id`` keeps for ``call_ids``, read from their records (expired or not:
    ``pending`` leaves out a request whose deadline passed, which a busy machine may reach
    before it reads)."""
    found = []
    for call_id in call_ids:
        kept = await ledger.record(store, run_id, call_id)
        if kept is not None and kept.request is not None:
            found.append(ledger.request_of(run_id, kept))
    return found


async def until_expired(store: Any, pending: ApprovalPending | Sequence[Any]) -> None:
    """Wait until the store's time passes every request's deadline."""
    requests = pending.pending if isinstance(pending, ApprovalPending) else pending
    deadline = max(r.expires_at for r in requests if r.expires_at is not None)
    with anyio.fail_after(30):
        while await ledger.store_time(store) <= deadline:
            await anyio.sleep(0.01)


async def decide_all(
    seen: Seen, store: Any, run_id: str, requests: Sequence[Any], approver: str
) -> None:
    """A person decides every waiting request (or lets them expire)."""
    if approver == "expired":
        await until_expired(store, requests)
        return
    for request in requests:
        try:
            await toolwire.decide(
                run_id, request.call_id, DECISIONS[approver], store=store, by="ops"
            )
        except toolwire.ToolwireError as exc:
            seen.add("decide", f"{type(exc).__name__}: {exc}")


def executor_for(policy: str, approver: str, store: Any) -> Executor:
    chosen = AutoApprove() if approver == "auto" else DeferredApproval()
    ttl = TTL if approver == "expired" else None
    return Executor(TOOLS, policy=POLICIES[policy], approver=chosen, store=store, approval_ttl=ttl)


def variants() -> Iterator[tuple[str, str, str]]:
    """(policy, approver, store) of the gated cases."""
    for store in ("memory", "sqlite"):
        yield "allow", "auto", store
        yield "deny", "auto", store
        for approver in APPROVERS:
            yield "ask", approver, store


# -- execute_tool_calls ------------------------------------------------------------------------


def facade_cases(stores: Stores) -> Iterator[Case]:
    for provider in PROVIDERS:
        for shape in (
            "parallel",
            "unknown",
            "invalid",
            "failing",
            "repeated_id",
            "no_calls",
            "stopped",
            "malformed",
            "not_an_object",
        ):
            yield Case(f"facade/{provider}/{shape}", _facade_plain(stores, provider, shape))
        for policy, approver, store in variants():
            for shape in ("gated", "gated_two"):
                name = f"facade/{provider}/{shape}/{policy}/{approver}/{store}"
                yield Case(name, _facade_gated(stores, provider, shape, policy, approver, store))
        for store in ("memory", "sqlite"):
            for again in ("same_turn", "other_response", "other_principal"):
                name = f"facade/{provider}/run_id_reused/{again}/{store}"
                yield Case(name, _facade_reused(stores, provider, again, store))


def _facade_plain(stores: Stores, provider: str, shape: str) -> Any:
    async def play(seen: Seen, workdir: Path) -> None:
        listing = toolwire.tools(TOOLS, provider)
        try:
            outcome = await toolwire.execute_tool_calls(
                listing, response(provider, shape), store=stores("memory"), principal=PRINCIPAL
            )
            seen.outcome(outcome)
        except toolwire.ToolwireError as exc:
            seen.error(exc)
        seen.ran()

    return play


async def _facade_turn(
    seen: Seen, listing: Any, answer: Any, executor: Executor, run_id: str, principal: str
) -> ApprovalPending | None:
    try:
        outcome = await toolwire.execute_tool_calls(
            listing, answer, executor=executor, run_id=run_id, principal=principal
        )
    except ApprovalPending as exc:
        seen.pending(exc)
        return exc
    except toolwire.ToolwireError as exc:
        seen.error(exc)
        return None
    seen.outcome(outcome)
    return None


def _facade_gated(
    stores: Stores, provider: str, shape: str, policy: str, approver: str, kind: str
) -> Any:
    async def play(seen: Seen, workdir: Path) -> None:
        store = stores(kind)
        executor = executor_for(policy, approver, store)
        listing = toolwire.tools(TOOLS, provider, policy=POLICIES[policy])
        answer, run_id = response(provider, shape), f"run-{provider}-{shape}"
        paused = await _facade_turn(seen, listing, answer, executor, run_id, PRINCIPAL)
        seen.ran()
        if paused is not None:
            await decide_all(seen, store, paused.run_id, paused.pending, approver)
            await _facade_turn(seen, listing, answer, executor, run_id, PRINCIPAL)
            seen.ran()
        await seen.records(store, run_id)

    return play


def _facade_reused(stores: Stores, provider: str, again: str, kind: str) -> Any:
    async def play(seen: Seen, workdir: Path) -> None:
        store = stores(kind)
        executor = executor_for("ask", "allowed", store)
        listing = toolwire.tools(TOOLS, provider, policy=POLICIES["ask"])
        answer, run_id = response(provider, "gated"), "reused"
        paused = await _facade_turn(seen, listing, answer, executor, run_id, PRINCIPAL)
        assert paused is not None
        await decide_all(seen, store, run_id, paused.pending, "allowed")
        await _facade_turn(seen, listing, answer, executor, run_id, PRINCIPAL)
        seen.ran()
        principal = "bob" if again == "other_principal" else PRINCIPAL
        if again == "other_response":
            answer = response(provider, "parallel")
        await _facade_turn(seen, listing, answer, executor, run_id, principal)
        seen.ran()
        await seen.records(store, run_id)

    return play


# -- toolwire.loop -----------------------------------------------------------------------------

FIRST_MESSAGES: dict[str, list[Any]] = {
    "anthropic": [{"role": "user", "content": "go"}],
    "openai-chat": [{"role": "user", "content": "go"}],
    "openai-responses": [{"role": "user", "content": "go"}],
    "gemini": [{"role": "user", "parts": [{"text": "go"}]}],
}


class Scripted:
    """A model that makes the case's calls, then says it is done."""

    def __init__(self, provider: str, shape: str) -> None:
        self.provider, self.shape, self.sent = provider, shape, 0

    async def __call__(self, **request: Any) -> Any:
        self.sent += 1
        return response(self.provider, self.shape if self.sent == 1 else "no_calls")


def loop_seen(seen: Seen, result: Any) -> None:
    for outcome in result.outcomes:
        seen.outcome(outcome)
    if result.pending is not None:
        seen.pending(result.pending)
    seen.add(
        "loop",
        {
            "conversation": jsonable(result.conversation),
            "done": result.done,
            "halted": result.halted,
            "text": result.text,
        },
    )


def loop_cases(stores: Stores) -> Iterator[Case]:
    for provider in PROVIDERS:
        for shape in ("parallel", "unknown", "invalid", "failing", "stopped", "malformed"):
            yield Case(f"loop/{provider}/{shape}", _looped(stores, provider, shape, "allow"))
        for policy, approver, store in variants():
            name = f"loop/{provider}/gated/{policy}/{approver}/{store}"
            yield Case(name, _looped(stores, provider, "gated", policy, approver, store))
        for store in ("memory", "sqlite"):
            name = f"loop/{provider}/named_run/{store}"
            yield Case(name, _looped(stores, provider, "gated", "ask", "allowed", store, "chat"))


def _looped(
    stores: Stores,
    provider: str,
    shape: str,
    policy: str,
    approver: str = "auto",
    kind: str = "memory",
    run_id: str | None = None,
) -> Any:
    async def play(seen: Seen, workdir: Path) -> None:
        store = stores(kind)
        executor = executor_for(policy, approver, store)
        listing = toolwire.tools(TOOLS, provider, policy=POLICIES[policy])
        send = Scripted(provider, shape)
        options: dict[str, Any] = {"executor": executor, "principal": PRINCIPAL}
        if run_id is not None:
            options["run_id"] = run_id
            if NEW_API:
                seen.adapted.append(
                    "run_id='chat' names the conversation now (each turn's run is "
                    "chat-N-<digest of its request>; before, chat-N): run ids are compared "
                    "by order of appearance"
                )
        try:
            result = await toolwire.loop(send, listing, FIRST_MESSAGES[provider], **options)
        except toolwire.ToolwireError as exc:
            seen.error(exc)
            seen.ran()
            return
        loop_seen(seen, result)
        seen.ran()
        if result.pending is not None:
            paused = result.pending
            await decide_all(seen, store, paused.run_id, paused.pending, approver)
            try:
                result = await toolwire.loop(send, listing, result, **options)
            except toolwire.ToolwireError as exc:
                seen.error(exc)
            else:
                loop_seen(seen, result)
            seen.ran()
            await seen.records(store, paused.run_id)

    return play


# -- hosted approvals --------------------------------------------------------------------------

HOSTED: dict[str, list[dict[str, Any]]] = {
    "one": [{"id": "a1", "server_label": "bank", "name": "pay", "arguments": '{"n": 1}'}],
    "mixed": [
        {"id": "a1", "server_label": "bank", "name": "pay", "arguments": '{"n": 1}'},
        {"id": "a2", "server_label": "bank", "name": "work", "arguments": '{"n": 2}'},
        {"id": "a3", "server_label": "bank", "name": "pay", "arguments": "{broken"},
        {"id": "a4", "server_label": "bank", "name": "pay", "arguments": "[1]"},
    ],
}
HOSTED_POLICIES: dict[str, Policy | None] = {
    "allow": None,
    "deny": Policy(Rule("deny", "bank/pay", reason="no paying today")),
    "ask": Policy(Rule("ask", "bank/pay", reason="it costs money")),
}


def hosted_response(shape: str) -> dict[str, Any]:
    items = [{"type": "mcp_approval_request", **item} for item in HOSTED[shape]]
    return {"id": "resp_1", "output": [{"type": "message", "content": []}, *items]}


def hosted_cases(stores: Stores) -> Iterator[Case]:
    for policy, approver, store in variants():
        if approver == "expired" or (approver == "auto" and policy == "ask"):
            continue  # a hosted request never expires; the approver cases are below
        for shape in HOSTED:
            name = f"hosted/{shape}/{policy}/{approver}/{store}"
            yield Case(name, _hosted(stores, shape, policy, approver, store))
    for shape in HOSTED:
        yield Case(f"hosted/{shape}/ask/auto/memory", _hosted(stores, shape, "ask", "auto"))
    for broken in ("no_output", "no_id"):
        yield Case(f"hosted/malformed/{broken}", _hosted_broken(broken))


def _hosted(stores: Stores, shape: str, policy: str, approver: str, kind: str = "memory") -> Any:
    from toolwire.hosted import answer_hosted_approvals

    async def play(seen: Seen, workdir: Path) -> None:
        store = stores(kind)
        options: dict[str, Any] = {
            "policy": HOSTED_POLICIES[policy],
            "store": store,
            "principal": PRINCIPAL,
            "run_id": "hosted-run",
        }
        if approver == "auto":
            options["approver"] = AutoApprove()
        got = await answer_hosted_approvals(hosted_response(shape), **options)
        _hosted_seen(seen, got)
        if got.pending:
            await decide_all(seen, store, "hosted-run", got.pending, approver)
            _hosted_seen(seen, await answer_hosted_approvals(hosted_response(shape), **options))
        await seen.records(store, "hosted-run")

    return play


def _hosted_seen(seen: Seen, got: Any) -> None:
    seen.run(got.run_id)
    seen.add(
        "hosted",
        {
            "answers": got.answers,
            "pending": [request_seen(r) for r in got.pending],
            "run_id": got.run_id,
        },
    )


def _hosted_broken(broken: str) -> Any:
    from toolwire.hosted import answer_hosted_approvals

    async def play(seen: Seen, workdir: Path) -> None:
        body: Any = {"id": "resp_1"}
        if broken == "no_id":
            body["output"] = [{"type": "mcp_approval_request", "server_label": "b", "name": "x"}]
        try:
            await answer_hosted_approvals(body, store=MemoryStore())
        except toolwire.ToolwireError as exc:
            seen.error(exc)

    return play


# -- the google-genai helpers ------------------------------------------------------------------


def genai_cases(stores: Stores) -> Iterator[Case]:
    for shape in ("parallel", "unknown", "invalid", "failing", "repeated_id", "no_calls"):
        yield Case(f"genai/function_calls/{shape}", _genai_calls(stores, shape, "allow", "auto"))
        yield Case(f"genai/interaction/{shape}", _genai_interaction(stores, shape))
    for policy, approver, store in variants():
        name = f"genai/function_calls/gated/{policy}/{approver}/{store}"
        yield Case(name, _genai_calls(stores, "gated", policy, approver, store))
    for arguments in ({"n": 1}, {"n": "x"}, {}):
        name = f"genai/afc/{json.dumps(arguments, sort_keys=True)}"
        yield Case(name, _genai_afc(stores, arguments))
    yield Case("genai/function_calls/not_a_list", _genai_not_a_list())


def _function_calls(shape: str) -> list[Any]:
    from google.genai import types

    return [
        types.FunctionCall(id=call_id, name=name, args=arguments)
        for call_id, name, arguments in SHAPES[shape]
    ]


def _genai_calls(
    stores: Stores, shape: str, policy: str, approver: str, kind: str = "memory"
) -> Any:
    from toolwire.integrations.genai import run_function_calls

    async def play(seen: Seen, workdir: Path) -> None:
        store = stores(kind)
        executor = executor_for(policy, approver, store)
        run_id = "genai-run"

        async def turn() -> ApprovalPending | None:
            try:
                parts = await run_function_calls(
                    _function_calls(shape), executor=executor, run_id=run_id, principal=PRINCIPAL
                )
            except ApprovalPending as exc:
                seen.pending(exc)
                return exc
            except toolwire.ToolwireError as exc:
                seen.error(exc)
                return None
            seen.add("parts", [jsonable(part) for part in parts])
            return None

        paused = await turn()
        seen.ran()
        if paused is not None:
            await decide_all(seen, store, run_id, paused.pending, approver)
            await turn()
            seen.ran()
        await seen.records(store, run_id)

    return play


def _genai_interaction(stores: Stores, shape: str) -> Any:
    from toolwire.integrations.genai import run_interaction_calls

    async def play(seen: Seen, workdir: Path) -> None:
        outputs: list[dict[str, Any]] = [
            {"type": "function_call", "id": call_id, "name": name, "arguments": arguments}
            for call_id, name, arguments in SHAPES[shape]
        ]
        if not outputs:
            outputs = [{"type": "text", "text": "all done"}]
        interaction = {"id": "int_1", "status": "requires_action", "outputs": outputs}
        executor = executor_for("allow", "auto", stores("memory"))
        try:
            got = await run_interaction_calls(interaction, executor=executor, principal=PRINCIPAL)
            seen.add("interaction", jsonable(got))
        except toolwire.ToolwireError as exc:
            seen.error(exc)
        seen.ran()

    return play


def _genai_afc(stores: Stores, arguments: dict[str, Any]) -> Any:
    from toolwire.integrations.genai import afc_callable

    async def play(seen: Seen, workdir: Path) -> None:
        for chosen in (work, boom):
            call = afc_callable(chosen, executor=executor_for("allow", "auto", stores("memory")))
            try:
                seen.add("afc", jsonable(await call(**arguments)))
            except Exception as exc:  # what genai's AFC would see
                seen.add("afc_error", f"{type(exc).__name__}: {exc}")
        seen.ran()

    return play


def _genai_not_a_list() -> Any:
    from toolwire.integrations.genai import run_function_calls

    async def play(seen: Seen, workdir: Path) -> None:
        try:
            await run_function_calls("x", toolset=TOOLS)  # type: ignore[arg-type]
        except toolwire.ToolwireError as exc:
            seen.error(exc)

    return play


# -- the gateway's calls -----------------------------------------------------------------------

WAITS = re.compile(r"Run id: (\S+); call id: (\S+)\.")


def gateway_cases(stores: Stores) -> Iterator[Case]:
    plain = {
        "work": {"n": 1},
        "serial": {"n": 2},
        "boom": {"n": 3},
        "nope": {"n": 4},
        "work_invalid": {"n": "x"},
        "work_missing": {},
    }
    for name, arguments in plain.items():
        yield Case(f"gateway/{name}", _gateway(stores, name.split("_")[0], arguments, "allow"))
    for policy, approver, store in variants():
        name = f"gateway/pay/{policy}/{approver}/{store}"
        yield Case(name, _gateway(stores, "pay", {"n": 1}, policy, approver, store))
    for store in ("memory", "sqlite"):
        name = f"gateway/pay/called_again_after_answer/{store}"
        yield Case(name, _gateway(stores, "pay", {"n": 1}, "ask", "allowed", store, again=True))


def _gateway(
    stores: Stores,
    tool: str,
    arguments: dict[str, Any],
    policy: str,
    approver: str = "auto",
    kind: str = "memory",
    *,
    again: bool = False,
) -> Any:
    async def play(seen: Seen, workdir: Path) -> None:
        import mcp

        from toolwire.mcp import Gateway

        store = stores(kind)
        options: dict[str, Any] = {
            "policy": POLICIES[policy],
            "store": store,
            "principal": PRINCIPAL,
            "approver": AutoApprove() if approver == "auto" else None,
        }
        if approver == "expired":
            options["approval_ttl"] = TTL
        if "approve_by" in inspect.signature(Gateway).parameters:
            options["approve_by"] = "ledger"
        else:
            options["elicit"] = False
            seen.adapted.append("approve_by='ledger' was elicit=False")
        gateway = Gateway(ToolSet(TOOLS), **options)
        async with mcp.Client(gateway.server()) as client:

            async def call() -> str | None:
                answer = await client.call_tool(tool, arguments)
                texts = [part.text for part in answer.content if hasattr(part, "text")]
                waits = WAITS.search(" ".join(texts))
                if waits is not None:
                    seen.run(waits.group(1))
                seen.add(
                    "called",
                    {
                        "is_error": bool(answer.is_error),
                        "texts": texts,
                        "structured": answer.structured_content,
                    },
                )
                return waits.group(1) if waits is not None else None

            waiting = await call()
            seen.ran()
            if waiting is not None:
                run_id = waiting
                requests = await kept_requests(store, run_id, ["call"])
                seen.add("requests", [request_seen(r) for r in requests])
                await decide_all(seen, store, run_id, requests, approver)
                await call()
                seen.ran()
                await seen.records(store, run_id)
                if again:
                    await call()
                    seen.ran()

    return play


# -- the gateway's tasks -----------------------------------------------------------------------

TERMINAL = ("completed", "failed", "cancelled")


def task_cases(stores: Stores) -> Iterator[Case]:
    yield Case("tasks/work", _tasked(stores, "work", "allow", "auto", "memory"))
    yield Case("tasks/pay/deny", _tasked(stores, "pay", "deny", "auto", "memory"))
    for store in ("memory", "sqlite"):
        for approver in ("allowed", "denied", "edited", "halted", "expired", "cancelled"):
            name = f"tasks/pay/ask/{approver}/{store}"
            yield Case(name, _tasked(stores, "pay", "ask", approver, store))
        name = f"tasks/pay/ask/allowed/redacted/{store}"
        yield Case(name, _tasked(stores, "pay", "ask", "allowed", store, redacted=True))


def _redact(request: Any) -> dict[str, Any]:
    return {"n": "(hidden)"}


def _tasked(
    stores: Stores, tool: str, policy: str, approver: str, kind: str, *, redacted: bool = False
) -> Any:
    async def play(seen: Seen, workdir: Path) -> None:
        import httpx2

        sys.path.insert(0, str(Path(__file__).parent / "mcp_gateway"))
        from auth_support import served
        from task_client import Client, _text

        from toolwire.mcp import TaskSettings

        store = stores(kind)
        options: dict[str, Any] = {
            "policy": POLICIES[policy],
            "store": store,
            "principal": PRINCIPAL,
            "tasks": TaskSettings(after=0.2, poll=0.05),
        }
        if approver == "auto":
            options["approver"] = AutoApprove()
        if approver == "expired":
            options["approval_ttl"] = TTL
        if redacted:
            options["redact"] = _redact

        def task_seen(task: dict[str, Any]) -> None:
            result = task.get("result")
            seen.add(
                "task",
                {
                    "status": task.get("status"),
                    "result": None
                    if result is None
                    else {"is_error": bool(result.get("isError")), "text": _text(result)},
                },
            )

        async with (
            httpx2.AsyncClient(timeout=30) as http,
            served(ToolSet(TOOLS), **options) as url,
        ):
            client = Client(http, url)
            answer = await client.call(tool, n=1)
            seen.ran()
            if answer.get("resultType") != "task":
                seen.add("called", {"is_error": bool(answer.get("isError")), "text": _text(answer)})
                return
            run_id = answer["taskId"]
            seen.run(run_id)
            task_seen(answer)
            requests = await kept_requests(store, run_id, ["call"])
            seen.add("requests", [request_seen(r) for r in requests])
            if approver == "cancelled":
                seen.add("cancel", (await client.task("cancel", run_id)).get("result", {}))
            else:
                await decide_all(seen, store, run_id, requests, approver)
            with anyio.move_on_after(5) as waited:  # (a task never answered stays working)
                task_seen(await client.until(run_id, *TERMINAL))
            if waited.cancelled_caught:
                seen.add("task", "still working after 5 seconds")
            seen.ran()
            await seen.records(store, run_id)

    return play


# -- DurableTools ------------------------------------------------------------------------------


class Durable:
    """The DBOS side: one ``DurableTools`` per (policy, approver), one workflow running a turn
    of any of them, DBOS launched once on a SQLite system database."""

    def __init__(self, workdir: Path) -> None:
        from dbos import DBOS

        from toolwire.integrations.dbos import DurableTools

        self.store = SQLiteStore(workdir / "durable.db")
        self.sets: dict[str, Any] = {}
        for policy, approver in (
            ("allow", "auto"),
            ("deny", "auto"),
            ("ask", "auto"),
            ("ask", "deferred"),
            ("ask", "expired"),
        ):
            name = f"{policy}-{approver}"
            executor = executor_for(policy, approver, self.store)
            if approver == "deferred":
                executor = Executor(TOOLS, policy=POLICIES[policy], store=self.store)
            self.sets[name] = DurableTools(executor, name=f"same-{name}", recheck=30)
        sets = self.sets
        given = Executor(TOOLS, policy=POLICIES["ask"], store=self.store)
        DurableTools(given, name="same-untouched")
        self.given_approver = type(given.approver).__name__

        @DBOS.workflow(name="same_path_turn")
        async def turn(
            name: str, provider: str, shape: str, policy: str, run_id: str | None
        ) -> dict[str, Any]:
            listing = toolwire.tools(TOOLS, provider, policy=POLICIES[policy])
            try:
                outcome = await sets[name].execute_tool_calls(
                    listing, response(provider, shape), principal=PRINCIPAL, run_id=run_id
                )
            except toolwire.ToolwireError as exc:
                return {"error": f"{type(exc).__name__}: {exc}"}
            return {
                "results": [jsonable(r) for r in outcome.results],
                "calls": [call_seen(c) for c in outcome.calls],
                "halted": outcome.halted,
                "run_id": outcome.run_id,
                "stopped": stopped_seen(outcome.stopped),
            }

        self.turn = turn
        DBOS(
            config={
                "name": "same-path",
                "system_database_url": f"sqlite:///{workdir / 'dbos.sqlite'}",
                "notification_listener_polling_interval_sec": 0.01,
                "log_level": "WARNING",
            }
        )
        DBOS.launch()

    def close(self) -> None:
        from dbos import DBOS

        DBOS.destroy()
        self.store.close()


def durable_cases(durable: Callable[[], Durable]) -> Iterator[Case]:
    for provider in PROVIDERS:
        for shape in SHAPES_PLAIN:
            name = f"dbos/{provider}/{shape}"
            yield Case(name, _durable(durable, provider, shape, "allow", "auto"))
        for shape in ("malformed", "not_an_object"):
            yield Case(
                f"dbos/{provider}/{shape}", _durable(durable, provider, shape, "allow", "auto")
            )
        for policy, approver in (("allow", "auto"), ("deny", "auto"), ("ask", "auto")):
            name = f"dbos/{provider}/gated/{policy}/{approver}/sqlite"
            yield Case(name, _durable(durable, provider, "gated", policy, approver))
        for approver in ("allowed", "denied", "edited", "halted", "expired"):
            name = f"dbos/{provider}/gated/ask/{approver}/sqlite"
            yield Case(name, _durable(durable, provider, "gated", "ask", approver))
    yield Case("dbos/memory_store", _durable_memory())
    yield Case("dbos/executor_given", _durable_given(durable))


def _durable(
    durable: Callable[[], Durable], provider: str, shape: str, policy: str, approver: str
) -> Any:
    async def play(seen: Seen, workdir: Path) -> None:
        from dbos import DBOS, SetWorkflowID

        on = durable()
        name = f"{policy}-{approver if approver in ('auto', 'expired') else 'deferred'}"
        run_id = f"durable-{provider}-{shape}-{policy}-{approver}"
        with SetWorkflowID(f"wf-{run_id}"):
            handle = await DBOS.start_workflow_async(on.turn, name, provider, shape, policy, run_id)
        if approver not in ("auto",):
            requests = await _waiting(on.store, run_id, handle)
            if requests:
                seen.add("pending", [request_seen(r) for r in requests])
                await decide_all(seen, on.store, run_id, requests, approver)
                if approver == "expired":  # nothing wakes it but the recheck: a message does
                    await _nudge(on.store, run_id, f"wf-{run_id}")
        with anyio.fail_after(60):
            got = await handle.get_result()
        seen.run(got.get("run_id"))
        seen.add("workflow", got)
        seen.ran()
        await seen.records(on.store, run_id)

    return play


async def _waiting(store: Any, run_id: str, handle: Any) -> list[Any]:
    """The requests of ``run_id`` once its workflow waits (none if it ended first)."""
    with anyio.fail_after(60):
        while True:
            requests = await kept_requests(store, run_id, ["c1"])
            if requests:
                return requests
            status = await handle.get_status()
            if status.status in ("SUCCESS", "ERROR"):
                return []
            await anyio.sleep(0.01)


async def _nudge(store: Any, run_id: str, workflow: str) -> None:
    """Wake the workflow waiting for ``run_id`` (as a decision's message would)."""
    from dbos import DBOS

    await DBOS.send_async(workflow, {"run_id": run_id, "call_id": "c1"}, f"toolwire:{run_id}")


def _durable_given(durable: Callable[[], Durable]) -> Any:
    async def play(seen: Seen, workdir: Path) -> None:
        seen.add("approver_of_the_executor_given", durable().given_approver)

    return play


def _durable_memory() -> Any:
    async def play(seen: Seen, workdir: Path) -> None:
        from toolwire.integrations.dbos import DurableTools

        try:
            DurableTools(Executor(TOOLS, store=MemoryStore()), name="same-memory")
        except toolwire.ToolwireError as exc:
            seen.error(exc)

    return play


# -- running them ------------------------------------------------------------------------------


def all_cases(stores: Stores, durable: Callable[[], Durable]) -> list[Case]:
    return [
        *facade_cases(stores),
        *loop_cases(stores),
        *hosted_cases(stores),
        *genai_cases(stores),
        *gateway_cases(stores),
        *task_cases(stores),
        *durable_cases(durable),
    ]


async def record(workdir: Path, prefixes: Sequence[str]) -> dict[str, Any]:
    stores = Stores(workdir)
    launched: list[Durable] = []

    def durable() -> Durable:
        if not launched:
            launched.append(Durable(workdir))
        return launched[0]

    seen_by_case: dict[str, Any] = {}
    try:
        for case in all_cases(stores, durable):
            if prefixes and not case.id.startswith(tuple(prefixes)):
                continue
            RAN.clear()
            seen = Seen()
            try:
                with anyio.fail_after(90):
                    await case.play(seen, workdir)
            except Exception as exc:  # a foreign exception is what the case saw
                seen.add("raised", f"{type(exc).__name__}: {exc}")
            seen_by_case[case.id] = seen.to_json()
            stores.close()
    finally:
        if launched:
            launched[0].close()
    return seen_by_case


def main(argv: Sequence[str]) -> None:
    out, prefixes = Path(argv[0]), argv[1:]
    with tempfile.TemporaryDirectory() as workdir:
        seen = asyncio.run(record(Path(workdir), prefixes))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(seen, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
