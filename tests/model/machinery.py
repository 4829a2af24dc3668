"""One model of the invariants the governed path keeps, and what the state machines of every
surface share to check it: the tools (which count their own runs), the stores, the event loop
each step runs on, and the model itself.

The invariants, checked after every step:

- **every call answered exactly once**: a turn gives one answer per call item, in the model's
  order, each its own call's; the answer a run keeps for a call is the one every later turn of
  that run gets;
- **nothing run twice**: each call of a run runs at most once (counted in the tools);
- **a deny final**: a call denied (by a person, a halt, the policy, an expired request) never
  runs, even after a later approval;
- **an approval bound to the exact call and principal**: a gated call runs only once an allow
  of that very call of that run is recorded, with the arguments allowed, for the principal the
  run was started for;
- **no answer from another run**: a call's answer names its own run and call.

The model is plain Python: what each run was started for (its principal and its calls), what
was decided for each call, and the answer the run keeps for it once a turn gave one. From that
it says, for every answer a surface gives, whether it is one the path may give.
"""

from __future__ import annotations

import functools
import itertools
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.from_thread
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, precondition, rule

import toolwire
from budgets import scaled
from toolwire import CallContext, Decision, Policy, Rule, RunStore, ToolResult, ledger

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hostile"))

from provider_turns import answer_text, answered_id

T = TypeVar("T")

Budget = Callable[[int, int], settings]
"""``budget(examples, steps)``: a machine's settings for the run (the ``budget`` fixture)."""

BOUND = 60.0
"""The most seconds one step may take: a hang fails the step, it never blocks the suite."""

TTL = 0.4
"""Seconds a request for approval waits, in the examples whose requests expire."""

SKEW = 0.25
"""Seconds a worker's reading of the store's time may be off from the machine's: each store
connection reads the store's clock now and then and carries it forward (``toolwire.store``),
so two connections to one store may disagree by a query's latency."""

LIMIT = 90
"""``pay`` of this much or more is denied by the policy, whoever allowed it."""


def budget(examples: int, steps: int, *, kind: str) -> settings:
    """A machine's hypothesis budget in a run of ``kind``: ``examples`` sequences of at most
    ``steps`` steps, the examples scaled as the suite scales every property test's (see
    ``budgets.py``), the sequences twice as long in the deep run. The profile the suite loads
    (derandomized in CI and the deep run) stays under it."""
    deep = kind == "deep"
    return settings(
        max_examples=scaled(examples, kind),
        stateful_step_count=steps * 2 if deep else steps,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


# -- the tools ------------------------------------------------------------------------------------

POLICY = Policy(
    Rule("deny", "pay", when=lambda c: c.arguments.get("n", 0) >= LIMIT, reason="too much"),
    Rule("ask", "pay", reason="it costs money"),
    Rule("deny", "drop", reason="nothing is dropped"),
)
"""``work`` and ``boom`` run; ``pay`` waits for a person (and is denied from ``LIMIT`` up);
``drop`` is denied outright (not declared: a call to it is an unknown tool)."""

GATED = "pay"
UNDECLARED = "drop"


@dataclass(frozen=True)
class Ran:
    """One run of a tool, as the tool itself saw it."""

    run_id: str | None
    """The run it ran in (None: a turn without one)."""
    deps: Any
    """The turn's ``deps``: the name the model gave its run (None behind a gateway)."""
    call_id: str
    principal: Any
    tool: str
    n: int

    @property
    def run(self) -> str:
        return run_key(self.run_id, self.deps)


def ran_text(tool: str, n: int, run: str, call_id: str, principal: Any) -> str:
    """What a tool answers: its call's own run, id, principal and argument."""
    return f"{tool} n={n} run={run} call={call_id} for={principal}"


def failed_text(n: int, run: str, call_id: str, principal: Any) -> str:
    """What ``boom`` is answered: its failure, naming its own run and call too."""
    return f"Tool 'boom' failed: RuntimeError: {ran_text('boom', n, run, call_id, principal)}"


def run_key(run_id: str | None, deps: Any) -> str:
    return run_id if run_id is not None else f"unnamed:{deps}"


class Counted:
    """The tools every surface serves. Each counts its runs in itself (``ran``); one that
    starts while a crash is armed holds until its turn is cut off."""

    def __init__(self) -> None:
        self.ran: list[Ran] = []
        self.crash: anyio.Event | None = None
        """Set by the tool that holds, when a crash is armed."""
        self.held = False

    async def _run(self, tool: str, n: int, context: CallContext) -> str:
        run = run_key(context.run_id, context.deps)
        self.ran.append(
            Ran(context.run_id, context.deps, context.call_id, context.principal, tool, n)
        )
        if self.crash is not None and not self.held:
            self.held = True
            self.crash.set()
            await anyio.sleep_forever()  # until the crash cuts the turn off
        text = ran_text(tool, n, run, context.call_id, context.principal)
        if tool == "boom":
            raise RuntimeError(text)
        return text

    def tools(self) -> list[toolwire.Tool]:
        counted = self

        @toolwire.tool
        async def work(n: int, context: CallContext) -> str:
            """Work on ``n``."""
            return await counted._run("work", n, context)

        @toolwire.tool
        async def pay(n: int, context: CallContext) -> str:
            """Pay ``n``."""
            return await counted._run("pay", n, context)

        @toolwire.tool
        async def boom(n: int, context: CallContext) -> str:
            """Fail on ``n``."""
            return await counted._run("boom", n, context)

        @toolwire.tool
        async def drop(n: int, context: CallContext) -> str:
            """Drop ``n``."""
            return await counted._run("drop", n, context)

        return [work, pay, boom, drop]

    @contextmanager
    def armed(self) -> Iterator[anyio.Event]:
        """While open, the first tool to start holds (and sets the event) until cut off."""
        self.crash, self.held = anyio.Event(), False
        try:
            yield self.crash
        finally:
            self.crash, self.held = None, False


# -- what a turn's calls are -----------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """One call of a model's response."""

    call_id: str
    tool: str
    n: int

    @property
    def arguments(self) -> dict[str, Any]:
        return {"n": self.n}


TOOL_NAMES = st.sampled_from(["work", "work", "pay", "pay", "boom", "drop"])
CALL_IDS = st.sampled_from(["c1", "c2", "c3", "c4", "c5"])
AMOUNTS = st.one_of(st.sampled_from([1, 2, LIMIT + 5]), st.integers(0, 99))
"""Mostly a few amounts (the same call made again, under another id), some any."""
SPEC = st.builds(Spec, CALL_IDS, TOOL_NAMES, AMOUNTS)
SPECS = st.lists(SPEC, min_size=1, max_size=4).map(tuple)
"""A response's calls: repeated ids (a later call with an earlier one's id is rejected),
repeated calls, gated ones, failing ones, undeclared ones."""
PRINCIPALS = st.sampled_from(["alice", "bob"])
DECISIONS = st.one_of(
    st.just(toolwire.allow()),
    st.builds(lambda n: toolwire.allow(arguments={"n": n}), st.integers(0, 99)),
    st.just(toolwire.allow(arguments={"n": "many"})),  # not the tool's schema: refused
    st.builds(toolwire.deny, st.sampled_from([None, "not today"])),
    st.builds(toolwire.halt, st.sampled_from([None, "stop everything"])),
)

NOT_RUN = ("approval_denied", "Not run: an approver halted this turn.")
EXPIRED = ("approval_denied", "Denied: the approval request expired.")
TOO_MUCH = ("denied", "Denied: too much.")
Said = tuple[str | None, str]
"""An answer as the model compares it: its error kind (None: not an error) and its text."""


def said(result: ToolResult) -> Said:
    return (result.error_kind, result.text)


def refused(decision: Decision) -> Said:
    return ("approval_denied", f"Denied: {decision.reason or 'the call was not approved'}.")


# -- the model -------------------------------------------------------------------------------------


@dataclass
class Call:
    """What the model knows of one call of a run."""

    spec: Spec
    asked: bool = False
    """Its request is kept in the run (a turn said it waits)."""
    deadlines: set[float] = field(default_factory=set)
    """When its request expires, as the turns that first asked said (two workers asking at
    once may say two: the run keeps one of them)."""
    asked_in: Clock | None = None
    """The step that first asked."""
    decision: Decision | None = None
    """The decision the run records for it."""
    kept: Said | None = None
    """The answer the run keeps for it."""
    kept_in: Clock | None = None
    """The step that answered it."""
    uncertain: bool = False
    """A turn was cut off while it may have been claimed: it may be answered interrupted."""
    unseen: tuple[float, float] | None = None
    """A turn cut off may have asked for it, no turn showing the request (it may have expired
    before the run was read): the earliest and the latest that request would expire at."""

    def expires(self) -> tuple[float, float] | None:
        """The earliest and the latest its request may expire at (None: it never expires)."""
        return (min(self.deadlines), max(self.deadlines)) if self.deadlines else None


@dataclass
class Run:
    """What the model knows of one run: who and what it was started for."""

    name: str
    principal: str
    specs: tuple[Spec, ...]
    named: bool = True
    """Whether its turns name it (else it gets an id only when a call of it waits)."""
    rejects: frozenset[str] = frozenset({UNDECLARED})
    """The tools a call of is answered on admission (never kept, never run)."""
    run_id: str | None = None
    """Its id (None for a turn without one, until it pauses and gets one)."""
    calls: dict[str, Call] = field(default_factory=dict)
    paused: Any = None
    """How to resume it, once a turn of it paused (the surface's own handle)."""
    story: list[str] = field(default_factory=list)
    """What happened to it, step by step (told when an invariant breaks: a failure that
    depends on the store's clock may not replay)."""

    def __post_init__(self) -> None:
        for index, spec in enumerate(self.specs):
            if not self.rejected(index):
                self.calls[spec.call_id] = Call(spec)

    def __repr__(self) -> str:
        return f"<run {self.name} ({self.run_id}): {'; '.join(self.story)}>"

    def told(self, what: str) -> None:
        self.story.append(what)

    def rejected(self, index: int) -> bool:
        """Whether the call at ``index`` is answered on admission: an undeclared tool, or an id
        an earlier call of the response has."""
        spec = self.specs[index]
        earlier = {s.call_id for s in self.specs[:index]}
        return spec.tool in self.rejects or spec.call_id in earlier

    def bound(self) -> list[tuple[str, str, int]]:
        """What the run is bound to besides its principal: its calls (rejected ones aside),
        in any order."""
        return sorted(
            (s.call_id, s.tool, s.n) for i, s in enumerate(self.specs) if not self.rejected(i)
        )

    def call_at(self, index: int) -> Call | None:
        return None if self.rejected(index) else self.calls[self.specs[index].call_id]

    @property
    def stored(self) -> bool:
        """Whether the store certainly holds the run (so it is bound to its principal)."""
        return any(call.kept is not None or call.asked for call in self.calls.values())

    def halt_index(self) -> int | None:
        """The first call a halt was recorded for: the calls after it, and those before it
        that would run, are not run."""
        for index in range(len(self.specs)):
            call = self.call_at(index)
            if call is not None and call.decision is not None and call.decision.kind == "halt":
                return index
        return None


class Broken(AssertionError):
    """An invariant does not hold."""


def check(condition: bool, why: str) -> None:
    if not condition:
        raise Broken(why)


@dataclass
class Clock:
    """The store's time around a step: before it started, and once it ended."""

    before: float
    after: float


class Model:
    """The runs the machine started, and what may happen to each of their calls."""

    rejecting = frozenset({UNDECLARED})
    """The tools a call of is answered on admission (an unknown tool: not declared)."""
    rejections = frozenset({"not_found", "invalid_arguments"})
    """The kinds of answers a call rejected on admission gets."""

    def __init__(self) -> None:
        self.runs: dict[str, Run] = {}
        self._names = itertools.count(1)
        self._checked = 0

    def view(self, answer: Said) -> Said:
        """An answer as the surface shows it."""
        return answer

    def new_run(
        self, principal: str, specs: tuple[Spec, ...], *, named: bool, by_name: bool = True
    ) -> Run:
        """A run of a new turn; ``named``: the turn names its run (its id is its name, or, not
        ``by_name``, one the surface makes from it)."""
        name = f"r{next(self._names)}"
        run = Run(
            name,
            principal,
            specs,
            named=named,
            rejects=self.rejecting,
            run_id=name if named and by_name else None,
        )
        self.runs[name] = run
        return run

    def alias(self, run: Run, run_id: str) -> None:
        """``run``, known to the store as ``run_id`` from now on."""
        check(
            run.run_id in (None, run_id),
            f"{run!r} paused under run {run_id!r}, not its own {run.run_id!r}",
        )
        run.run_id = run_id
        self.runs[run_id] = run

    # -- answers ----------------------------------------------------------------------------------

    def expected(
        self, run: Run, index: int, clock: Clock, *, concurrent: bool = False
    ) -> list[Said | None]:
        """The answers the call at ``index`` may get in a turn now, as the surface shows them
        (None: it may wait). ``concurrent``: the turn ran at once with the one that answered
        the call in this step, and may have read the run before that answer was kept."""
        call = run.call_at(index)
        assert call is not None
        halt = run.halt_index()
        if call.kept is not None and not (concurrent and call.kept_in is clock):
            return [call.kept]
        normal = self._normal(run, call, clock)
        if halt is None:
            found = normal
        elif index == halt:
            assert call.decision is not None
            found = [refused(call.decision)]
        elif index > halt:
            found = [NOT_RUN]
        else:  # before the halted call: what would run is not run, the rest as ever
            found = [NOT_RUN if self._runs(answer) else answer for answer in normal]
        if call.uncertain:
            found.append(("interrupted", "*"))
        return [None if answer is None else self.view(answer) for answer in found]

    def _runs(self, answer: Said | None) -> bool:
        return answer is not None and (answer[0] is None or answer[1].startswith("Tool 'boom'"))

    def _normal(self, run: Run, call: Call, clock: Clock) -> list[Said | None]:
        spec, key = call.spec, run_key(run.run_id, run.name)
        if spec.tool == "work":
            return [(None, ran_text("work", spec.n, key, spec.call_id, run.principal))]
        if spec.tool == "boom":
            return [("failed", failed_text(spec.n, key, spec.call_id, run.principal))]
        decision = call.decision
        if decision is None:
            if spec.n >= LIMIT:
                return [TOO_MUCH]
            # The turn read the store's time somewhere between the step's two readings (give
            # or take what the worker's own reading of the store's clock is off by).
            expires = call.expires()
            may_wait = expires is None or clock.before - SKEW < expires[1]
            waits: list[Said | None] = [None] if may_wait else []
            seen_or_not = expires or call.unseen  # (a request seen tells its own deadline)
            earliest = seen_or_not[0] if seen_or_not is not None else None
            if earliest is not None and earliest <= clock.after + SKEW:
                waits.append(EXPIRED)
            return waits
        if not decision.allowed:
            return [refused(decision)]
        n = decision.arguments["n"] if decision.arguments is not None else spec.n
        if n >= LIMIT:
            return [TOO_MUCH]
        return [(None, ran_text("pay", n, key, spec.call_id, run.principal))]

    def answered(
        self, run: Run, index: int, item_id: str, got: Said, clock: Clock, *, cut: bool
    ) -> None:
        """Check the answer a turn gave the call at ``index``, as the surface shows it
        (``cut``: the turn was cut off, so an attempt's own answer, ``cancelled``, may stand
        for now)."""
        spec = run.specs[index]
        check(
            item_id == spec.call_id,
            f"{run!r}: answer {index} is call {item_id!r}'s, not {spec.call_id!r}'s",
        )
        if run.rejected(index):
            check(
                got[0] in self.rejections,
                f"{run!r}: call {index} ({spec}) should be rejected, got {got}",
            )
            return
        call = run.call_at(index)
        assert call is not None
        if cut and got[0] == "cancelled" and call.kept is None:
            call.uncertain = True
            run.told(f"{spec.call_id}: cancelled")
            return
        expected = [answer for answer in self.expected(run, index, clock) if answer is not None]
        check(
            any(_matches(got, answer) for answer in expected),
            f"{run!r} (principal {run.principal}): call {spec} answered {got}; "
            f"it may be answered {expected} (decision {call.decision}, kept {call.kept})",
        )
        call.kept, call.kept_in, call.uncertain = got, clock, False
        run.told(f"{spec.call_id}: {got[0] or 'ok'}")

    def waiting(self, run: Run, request: toolwire.ApprovalRequest, clock: Clock) -> None:
        """Check a call a turn says waits for a decision."""
        check(request.run_id == run.run_id, f"{run!r}: a request of run {request.run_id!r}")
        indices = [i for i, s in enumerate(run.specs) if s.call_id == request.call_id]
        check(bool(indices), f"{run!r}: a request for a call it does not have: {request}")
        index = indices[0]
        call = run.call_at(index)
        check(call is not None, f"{run!r}: rejected call {request.call_id!r} waits")
        assert call is not None
        # Two workers at once: one may answer the call (its request expired by its reading of
        # the store's clock) while the other, reading a moment behind, still shows it waiting.
        check(
            None in self.expected(run, index, clock, concurrent=True),
            f"{run!r}: call {call.spec} waits; it may be answered "
            f"{self.expected(run, index, clock)} (decision {call.decision}, kept {call.kept})",
        )
        check(
            dict(request.arguments) == call.spec.arguments,
            f"{run!r}: the request of {call.spec} shows {dict(request.arguments)}",
        )
        check(
            request.principal == run.principal,
            f"{run!r}: the request of {call.spec} is for {request.principal!r}, "
            f"the run's principal is {run.principal!r}",
        )
        first = not call.asked or call.asked_in is clock
        if first:
            call.asked, call.asked_in, call.unseen = True, clock, None
            if request.expires_at is not None:
                call.deadlines.add(request.expires_at)
        else:  # asked again: the request its run keeps, deadline included
            check(
                request.expires_at in call.deadlines | {None},
                f"{run!r}: call {call.spec} waits until {request.expires_at}; its request "
                f"expires at {sorted(call.deadlines)}",
            )
        run.told(f"{call.spec.call_id}: waits until {request.expires_at} (clock {clock})")

    def turn(
        self,
        run: Run,
        answers: Sequence[tuple[int, ToolResult]],
        waits: Sequence[toolwire.ApprovalRequest],
        clock: Clock,
        *,
        cut: bool = False,
    ) -> None:
        """Check one turn of ``run``: ``answers``, (index, result) for each call answered (see
        [`placed`][]); ``waits``, the calls waiting."""
        for index, result in answers:
            self.answered(run, index, run.specs[index].call_id, said(result), clock, cut=cut)
        for request in waits:
            self.waiting(run, request, clock)

    # -- decisions --------------------------------------------------------------------------------

    def decision_outcome(self, run: Run, index: int, decision: Decision, clock: Clock) -> set[str]:
        """What deciding the call at ``index`` may do: ``recorded``, ``kept`` (the same
        decision said again), ``refused`` (a ToolwireError, nothing recorded)."""
        call = run.calls.get(run.specs[index].call_id)  # (a rejected call's id is another's)
        if call is None or run.run_id is None:
            return {"refused"}
        if call.uncertain:
            return {"recorded", "kept", "refused"}
        if call.kept is not None or not call.asked:
            return {"refused"}
        outcomes: set[str] = set()
        expires = call.expires()
        if expires is not None and clock.before >= expires[1]:
            return {"refused"}
        if expires is not None and clock.after >= expires[0]:
            outcomes.add("refused")
        earlier = call.decision
        if earlier is not None:
            if earlier == decision:
                return outcomes | {"kept"}
            if not (earlier.allowed and not decision.allowed):
                return outcomes | {"refused"}
        if decision.arguments is not None and not self.fits(decision.arguments):
            return outcomes | {"refused"}
        return outcomes | {"recorded"}

    def fits(self, arguments: Mapping[str, Any]) -> bool:
        """Whether a person's edited arguments fit the tool's schema (else no decision)."""
        return isinstance(arguments.get("n"), int)

    def cut_off(self, run: Run, clock: Clock, ttl: float | None) -> None:
        """A turn of ``run`` was cut off in ``clock`` without answering: each call it would
        have run may have been claimed, and is answered interrupted if it was; each it would
        have asked for may have a request, expiring ``ttl`` seconds after it was asked."""
        run.told("cut off")
        for call in run.calls.values():
            if call.kept is None:
                call.uncertain = True
            if ttl is not None and call.kept is None and not call.asked:
                earliest, latest = clock.before + ttl, clock.after + ttl
                if call.unseen is not None:
                    earliest, latest = min(earliest, call.unseen[0]), max(latest, call.unseen[1])
                call.unseen = (earliest, latest)

    def decided(self, run: Run, index: int, decision: Decision) -> None:
        call = run.calls[run.specs[index].call_id]
        run.told(f"{call.spec.call_id}: decided {decision.kind}")
        call.decision = decision

    # -- runs -------------------------------------------------------------------------------------

    def check_ran(self, ran: Sequence[Ran]) -> None:
        """Nothing ran twice, nothing denied ran, and each run of a gated call was the call a
        person allowed, for its run's principal."""
        counts = Counter((entry.run, entry.call_id) for entry in ran)
        twice = [key for key, count in counts.items() if count > 1]
        check(not twice, f"ran twice: {twice}")
        for entry in ran[self._checked :]:
            self._check_entry(entry)
        self._checked = len(ran)
        for entry in ran:  # a deny recorded later would be a deny that is not final
            self._check_still_allowed(entry)

    def run_of(self, entry: Ran) -> Run | None:
        """The run a tool ran in: by its id, or by the name its turn gave as ``deps``."""
        found = self.runs.get(entry.run_id) if entry.run_id is not None else None
        return found or self.runs.get(str(entry.deps))

    def _check_entry(self, entry: Ran) -> None:
        run = self.run_of(entry)
        check(run is not None, f"a tool ran in a turn the model never started: {entry}")
        assert run is not None
        if entry.run_id is not None:
            if run.run_id is None:  # (a surface that names its runs itself, cut off)
                self.alias(run, entry.run_id)
            check(run.run_id == entry.run_id, f"{entry} ran in another run than {run!r}'s")
        call = run.calls.get(entry.call_id)
        check(call is not None, f"{run!r} has no call {entry.call_id!r}, yet it ran: {entry}")
        assert call is not None
        check(
            entry.principal == run.principal,
            f"{entry} ran for {entry.principal!r}; {run!r} was started for {run.principal!r}",
        )
        check(entry.tool == call.spec.tool, f"{entry} ran as call {call.spec}")
        if entry.tool != GATED:
            check(entry.n == call.spec.n, f"{entry} ran with other arguments than {call.spec}")
            return
        decision = call.decision
        check(
            decision is not None and decision.allowed,
            f"gated {entry} ran without an allow (decision {decision})",
        )
        assert decision is not None
        allowed = decision.arguments["n"] if decision.arguments is not None else call.spec.n
        check(entry.n == allowed, f"{entry} ran with n={entry.n}; the allow was for {allowed}")

    def _check_still_allowed(self, entry: Ran) -> None:
        run = self.run_of(entry)
        if run is None or entry.tool != GATED:
            return
        call = run.calls[entry.call_id]
        check(
            call.decision is None or call.decision.allowed,
            f"{entry} ran, and a {call.decision} was recorded for it afterwards",
        )


OTHER_ARGUMENTS = (
    "Refused: approved with other arguments than the model's, and the provider runs the "
    "model's own, which nobody approved."
)


class HostedModel(Model):
    """The model as OpenAI's hosted MCP approvals see it: a request answered approved (it
    "runs": the provider runs it) or refused with the reason; ``drop`` is a tool the policy
    denies (every hosted tool is the server's, none unknown); ``boom`` stands for a request
    whose arguments are not JSON (refused before it reaches the pipeline)."""

    rejecting = frozenset({"boom"})
    rejections = frozenset({"refused"})

    def view(self, answer: Said) -> Said:
        kind, text = answer
        return ("approved", "") if kind is None else ("refused", text)

    def fits(self, arguments: Mapping[str, Any]) -> bool:
        return True  # a hosted tool's schema is the provider's: any object is kept

    def _normal(self, run: Run, call: Call, clock: Clock) -> list[Said | None]:
        if call.spec.tool == UNDECLARED:
            return [("denied", "Denied: nothing is dropped.")]
        decision = call.decision
        if (
            decision is not None
            and decision.arguments is not None
            and dict(decision.arguments) != call.spec.arguments
        ):  # the provider runs the model's arguments: an approval of others approves nothing
            return [("denied", OTHER_ARGUMENTS)]
        return super()._normal(run, call, clock)


def _matches(got: Said, expected: Said) -> bool:
    kind, text = expected
    if got[0] != kind:
        return False
    return text == "*" or got[1] == text


# -- the steps' event loop and the stores ----------------------------------------------------------


class Steps:
    """The event loop a machine's steps run on, in a thread of its own (its stores' connections
    live there from the first step to the last); each step bounded."""

    def __init__(self) -> None:
        self._portal = anyio.from_thread.start_blocking_portal("asyncio")
        self.portal = self._portal.__enter__()

    def __call__(self, step: Callable[..., Awaitable[T]], *args: Any) -> T:
        async def bounded() -> T:
            with anyio.fail_after(BOUND):
                return await step(*args)

        return self.portal.call(bounded)

    def close(self) -> None:
        self._portal.__exit__(None, None, None)


_prefixes = itertools.count()


@dataclass(frozen=True)
class Stores:
    """Fresh stores of one kind (``memory``, ``sqlite``, ``redis``, ``postgres``), one per
    machine: the machine's, and a second connection to it for a second worker."""

    kind: str
    workdir: Path
    url: str | None = None

    async def open(self, stack: AsyncExitStack) -> tuple[RunStore, RunStore]:
        n = next(_prefixes)
        if self.kind == "memory":
            store = toolwire.MemoryStore()
            return store, store
        if self.kind == "sqlite":
            path = self.workdir / f"runs{n}.db"
            first, second = toolwire.SQLiteStore(path), toolwire.SQLiteStore(path)
            stack.callback(first.close)
            stack.callback(second.close)
            return first, second
        assert self.url is not None
        if self.kind == "redis":
            from toolwire.store.redis import RedisStore

            return (
                await stack.enter_async_context(RedisStore(self.url, prefix=f"model{n}:")),
                await stack.enter_async_context(RedisStore(self.url, prefix=f"model{n}:")),
            )
        from toolwire.store.postgres import PostgresStore

        return (
            await stack.enter_async_context(PostgresStore(self.url, prefix=f"model{n}_")),
            await stack.enter_async_context(PostgresStore(self.url, prefix=f"model{n}_")),
        )


async def clock_of(store: RunStore) -> float:
    return await ledger.store_time(store)


async def until_past(store: RunStore, deadline: float) -> None:
    """Wait until the store's time passes ``deadline`` (what expires a request)."""
    while await ledger.store_time(store) < deadline:
        await anyio.sleep(0.02)


# -- the machines' common part ---------------------------------------------------------------------


def placed(
    run: Run, completed: Sequence[Any], waits: Sequence[toolwire.ApprovalRequest]
) -> list[tuple[int, ToolResult]]:
    """The answers of a turn of ``run`` by the index of the call each answers, from the
    outcomes it gave (one per call not waiting, in order) and the calls waiting; each call
    either answered, in its place, or waiting, never both, never neither."""
    waiting = {request.call_id for request in waits}
    rest = list(completed)
    answers = []
    for index, spec in enumerate(run.specs):
        rejected = run.rejected(index)
        head = rest[0] if rest else None
        if (
            head is not None
            and head.item.local_id == spec.call_id
            and isinstance(head.item, toolwire.RejectedCall) == rejected
        ):
            answers.append((index, rest.pop(0).result))
            continue
        check(
            not rejected and spec.call_id in waiting,
            f"{run!r}: call {index} ({spec}) is neither answered in its place nor waiting "
            f"(answers: {[(o.item.local_id, said(o.result)) for o in completed]}, "
            f"waiting: {sorted(waiting)})",
        )
        waiting.discard(spec.call_id)
    check(not rest, f"{run!r}: answers to calls it does not have: {rest}")
    check(not waiting, f"{run!r}: waits for calls it does not have: {waiting}")
    return answers


def check_results(outcome: Any) -> None:
    """The provider-shaped answers: one per call, in order, each naming its own call and
    carrying its call's answer."""
    check(
        len(outcome.results) == len(outcome.calls),
        f"{len(outcome.results)} answers for {len(outcome.calls)} calls",
    )
    for answer, call in zip(outcome.results, outcome.calls, strict=True):
        check(
            answered_id(answer) == call.item.local_id,
            f"the answer {answer} is sent for call {call.item.local_id!r}",
        )
        if not call.result.is_error:
            check(call.result.text in answer_text(answer), f"{answer} is not {call.result.text}")


class Machine:
    """What every machine holds: its event loop and its stores (two connections to one)."""

    def __init__(self, stores: Stores) -> None:
        self.steps = Steps()
        self.stack = AsyncExitStack()
        self.served = ExitStack()
        """What runs in tasks of its own on the loop while the machine lives (servers)."""
        try:
            self.store, self.other_store = self.steps(stores.open, self.stack)
        except BaseException:
            self.steps.close()
            raise

    def serve(self, context: AbstractAsyncContextManager[T]) -> T:
        """Enter ``context`` on the loop, in a task of its own, until the machine closes."""
        return self.served.enter_context(self.steps.portal.wrap_async_context_manager(context))

    def close(self) -> None:
        try:
            self.served.close()
            self.steps(self.stack.aclose)
        finally:
            self.steps.close()

    def clock(self) -> float:
        return self.steps(clock_of, self.store)


class RunMachine(RuleBasedStateMachine):
    """A machine driving turns of runs through one surface, against the model: the rules every
    such surface shares (a person deciding a call, requests expiring) and the invariant on
    what the tools ran. A surface's machine adds how it runs a turn."""

    runs = Bundle("runs")
    model_of: type[Model] = Model
    stores: Stores
    """Where its runs are kept (see [`on`][])."""

    def __init__(self) -> None:
        super().__init__()
        self.on = Machine(self.stores)
        self.tools = Counted()
        self.model = self.model_of()
        self.ttl: float | None = None

    def teardown(self) -> None:
        self.on.close()

    def step(self, step: Callable[..., Awaitable[T]], *args: Any) -> T:
        return self.on.steps(step, *args)

    def both_workers(self, act: Callable[[int], Awaitable[T]]) -> tuple[list[T], Clock]:
        """``act`` by each worker at once, in one step: what each got, and the step's clock."""
        before = self.on.clock()
        got: list[Any] = [None, None]

        async def both() -> None:
            async def one(worker: int) -> None:
                got[worker] = await act(worker)

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(one, 0)
                tasks.start_soon(one, 1)

        self.step(both)
        return got, Clock(before, self.on.clock())

    @invariant()
    def nothing_ran_twice_nothing_denied_ran_and_each_gated_run_was_allowed(self) -> None:
        self.model.check_ran(self.in_runs())

    def in_runs(self) -> list[Ran]:
        """The tools' runs made in runs of the model."""
        return self.tools.ran

    @rule(run=runs, choice=st.integers(0, 7), decision=DECISIONS)
    def a_person_decides(self, run: Run, choice: int, decision: Decision) -> None:
        """Decide a call that waits (mostly), or any call of the run (a decision refused)."""
        waiting = [
            index
            for index, spec in enumerate(run.specs)
            if (call := run.call_at(index)) is not None and call.asked and call.kept is None
        ]
        index = waiting[choice % len(waiting)] if waiting and choice < 6 else choice
        index %= len(run.specs)
        spec = run.specs[index]
        assert run.run_id is not None  # (only runs with an id are in the bundle)
        before = self.on.clock()
        try:
            self.step(
                functools.partial(
                    toolwire.decide,
                    run.run_id,
                    spec.call_id,
                    decision,
                    store=self.on.store,
                    by="ops",
                )
            )
            done = "recorded"
        except toolwire.ToolwireError:
            done = "refused"
        possible = self.model.decision_outcome(run, index, decision, Clock(before, self.on.clock()))
        if done == "recorded" and "recorded" not in possible:
            done = "kept"
        check(
            done in possible,
            f"{run!r}: deciding call {index} ({spec}) {decision} was {done}; it may be "
            f"{sorted(possible)}",
        )
        if done == "recorded":
            self.model.decided(run, index, decision)
        else:
            run.told(f"{spec.call_id}: {decision.kind} {done}")

    @precondition(lambda self: self.ttl is not None)
    @rule(run=runs)
    def its_requests_expire(self, run: Run) -> None:
        deadlines = [
            max(call.deadlines)
            for call in run.calls.values()
            if call.asked and call.decision is None and call.deadlines
        ]
        if deadlines:
            self.step(until_past, self.on.store, max(deadlines))
            run.told(f"expired at {self.on.clock()}")


M = TypeVar("M", bound=RuleBasedStateMachine)


def on(machine: type[M], stores: Stores) -> type[M]:
    """``machine`` keeping its runs in ``stores`` (a machine of that name, as its failing
    sequences print it)."""
    return type(machine.__name__, (machine,), {"stores": stores})
