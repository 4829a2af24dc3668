"""Input a tool's server asks for during a call (MCP elicitation), and how it is answered.

A server may stop in the middle of a call to ask the user something: a form to fill in (a
message and a flat JSON schema) or a page to visit (a URL). The hub hands each request to its
``elicitor`` as an [`InputRequest`][]. The elicitor answers at once with an [`InputAnswer`][]
(or a mapping: the form's content, accepted), or returns None to defer: the executor then
raises [`ApprovalPending`][toolwire.approval.ApprovalPending] with the request in
``ApprovalRequest.input``, the run keeps it, and the application answers later with
[`toolwire.respond`][toolwire.respond] and runs the same calls again with the same run id,
which continues the server's call with the answer.

An answer to a form is checked against the server's requested schema before it is sent.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolwire.errors import ConfigurationError, InvalidArguments, ToolwireError

__all__ = [
    "Elicitor",
    "InputAnswer",
    "InputRequest",
    "accept",
    "cancel",
    "decline",
]

InputAction = Literal["accept", "decline", "cancel"]

_MESSAGE_CAP = 4000
"""Characters of a server's message kept (the rest is cut)."""
_FIELDS_CAP = 100
"""Fields an answer to a form may have."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InputRequest:
    """A question a tool's server asks during a call: what an elicitor, or a human's screen,
    is shown."""

    key: str
    """The server's key for the question; an answer is given for it."""
    message: str
    """What the server asks (cut to 4,000 characters)."""
    mode: Literal["form", "url"] = "form"
    """``form``: answer with content fitting ``requested_schema``; ``url``: the user is asked
    to visit ``url`` (accepting means they agreed to; there is no content)."""
    requested_schema: Mapping[str, Any] | None = None
    """For a form: the JSON schema of the answer (an object of flat properties)."""
    url: str | None = None
    """For ``url`` mode: the page the server asks the user to visit (never fetched)."""
    server: str | None = None
    """The hub's name for the server asking."""
    tool_name: str | None = None
    """The tool the call is to, on its server (None when the server's connection runs several
    calls at once and the revision does not say which one asks)."""
    exposed_name: str | None = None
    """The name the model called the tool by."""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    """The arguments the call was sent with."""
    run_id: str | None = None
    """The run the call belongs to, when the executor runs it in one."""
    call_id: str | None = None
    """The call's id, when the executor runs it."""
    principal: Any = None
    """Who the call runs for, when the executor runs it."""
    deferrable: bool = True
    """False on protocol revisions before 2026-07-28, where the server waits for the answer
    within the call: returning None there cancels the request (the call is answered with an
    error saying so)."""
    round: str | None = None
    """For a question waiting in a run: which time the call paused. A server may ask again,
    with the same key, once the call is resumed: pass it to
    [`toolwire.respond`][toolwire.respond] so that an answer (retried, or late) only ever
    answers the question that was shown."""

    def to_dict(self) -> dict[str, Any]:
        """The question as JSON values, as the run keeps it (without the call's context)."""
        shown = {
            "key": self.key,
            "message": self.message,
            "mode": self.mode,
            "requested_schema": dict(self.requested_schema)
            if self.requested_schema is not None
            else None,
            "url": self.url,
        }
        if self.round is not None:
            shown["round"] = self.round
        return shown

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **context: Any) -> InputRequest:
        """A question from its [`to_dict`][] form, with ``context`` (``server``,
        ``tool_name``...) added.

        Raises:
            ConfigurationError: ``data`` is not such a form.
        """
        try:
            key, message, mode = data["key"], data["message"], data.get("mode", "form")
            schema, url = data.get("requested_schema"), data.get("url")
            if not (isinstance(key, str) and isinstance(message, str) and mode in ("form", "url")):
                raise TypeError("key and message are strings, mode is form or url")
            if schema is not None and not isinstance(schema, Mapping):
                raise TypeError("requested_schema is an object")
            if url is not None and not isinstance(url, str):
                raise TypeError("url is a string")
            shown_round = data.get("round")
            if shown_round is not None and not isinstance(shown_round, str):
                raise TypeError("round is a string")
        except (KeyError, TypeError) as exc:
            raise ConfigurationError(f"not an input request: {exc}") from None
        context.setdefault("round", shown_round)
        return cls(key=key, message=message, mode=mode, requested_schema=schema, url=url, **context)


@dataclass(frozen=True, slots=True)
class InputAnswer:
    """The answer to an [`InputRequest`][]: ``accept`` (with the form's ``content``),
    ``decline`` (the user said no) or ``cancel`` (dismissed without choosing)."""

    action: InputAction
    content: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The answer as JSON values, as the run keeps it."""
        return {"action": self.action, "content": dict(self.content) if self.content else None}


def accept(content: Mapping[str, Any] | None = None) -> InputAnswer:
    """Answer with ``content`` (a form's fields; None for a ``url`` request)."""
    return InputAnswer("accept", dict(content) if content is not None else None)


def decline() -> InputAnswer:
    """The user refuses to answer; the server is told so."""
    return InputAnswer("decline")


def cancel() -> InputAnswer:
    """The user dismissed the question without choosing; the server is told so."""
    return InputAnswer("cancel")


Elicitor = Callable[
    [InputRequest],
    "InputAnswer | Mapping[str, Any] | Awaitable[InputAnswer | Mapping[str, Any] | None] | None",
]
"""Asked about each input request: an [`InputAnswer`][], a mapping (the form's content,
accepted), or None to defer (sync or async)."""


def answer_of(value: Any) -> InputAnswer | None:
    """What an elicitor returned, as an answer (None: deferred).

    Raises:
        ConfigurationError: for anything else.
    """
    if value is None or isinstance(value, InputAnswer):
        return value
    if isinstance(value, Mapping):
        return accept(value)
    raise ConfigurationError(
        f"an elicitor returns an InputAnswer, a mapping or None, not {type(value).__name__}"
    )


def checked_answer(request: InputRequest, answer: InputAnswer, *, label: str) -> InputAnswer:
    """``answer`` as it may be sent to the server: an accepted form's content fits the
    requested schema and MCP's flat value types; other answers carry no content.

    Raises:
        ConfigurationError: an action that is not accept, decline or cancel.
        InvalidArguments: content that does not fit (``label`` names what was answered).
    """
    if answer.action not in ("accept", "decline", "cancel"):
        raise ConfigurationError(
            f"an input answer is accept, decline or cancel, not {answer.action!r}"
        )
    if answer.action != "accept" or request.mode == "url":
        if answer.content:
            raise InvalidArguments(label, [("$", f"a {answer.action} answer carries no content")])
        return InputAnswer(answer.action)
    content = answer.content if answer.content is not None else {}
    if not isinstance(content, Mapping):
        raise InvalidArguments(label, [("$", "an accepted form's answer is an object")])
    problems = _flat_problems(content)
    if problems:
        raise InvalidArguments(label, problems)
    schema = request.requested_schema
    if schema is not None:
        from toolwire.tool import Tool  # the tools' own validator: linear patterns, no fetching

        try:
            form = Tool(name="input", input_schema=schema)
            form.validate_arguments(content)
        except InvalidArguments as exc:
            raise InvalidArguments(label, exc.errors) from None
        except ToolwireError as exc:  # a schema no validator takes: nothing can fit it
            problem = f"the requested schema is unusable: {exc}"
            raise InvalidArguments(label, [("$", problem)]) from None
    return InputAnswer("accept", dict(content))


def _flat_problems(content: Mapping[Any, Any]) -> list[tuple[str, str]]:
    """MCP's answer values: strings, numbers, booleans, lists of strings, null."""
    if len(content) > _FIELDS_CAP:
        return [("$", f"more than {_FIELDS_CAP} fields")]
    problems = []
    for name, value in content.items():
        if not isinstance(name, str):
            problems.append(("$", f"field names are strings, not {type(name).__name__}"))
        elif isinstance(value, float) and not math.isfinite(value):
            problems.append((f"$.{name}", "not a finite number"))
        elif not (
            value is None
            or isinstance(value, str | int | float | bool)
            or (isinstance(value, list) and all(isinstance(item, str) for item in value))
        ):
            problems.append(
                (f"$.{name}", "a string, number, boolean, list of strings or null is expected")
            )
    return problems


def cut_message(message: Any) -> str:
    text = message if isinstance(message, str) else ""
    return text if len(text) <= _MESSAGE_CAP else text[: _MESSAGE_CAP - 3] + "..."


# -- between the executor and a tool's handler ---------------------------------------------------


class InputDeferred(ToolwireError):
    """Raised by a tool's handler (the hub's) when the elicitor deferred a server's input
    request on a revision that can wait for it: the executor keeps the call waiting in the
    run, with what resuming needs."""

    def __init__(
        self,
        questions: list[InputRequest],
        *,
        answered: Mapping[str, InputAnswer],
        state: str | None,
        protocol: str | None,
        sent: str,
    ) -> None:
        self.sent = sent
        """A digest of the arguments the call was sent with: its answers go with those only."""
        self.questions = questions
        """Every question of the server's round (answered ones included)."""
        self.answered = dict(answered)
        """The answers the elicitor gave at once, by key."""
        self.state = state
        """The server's ``request_state`` for the round."""
        self.protocol = protocol
        super().__init__(
            "the call waits for input: " + ", ".join(repr(q.message[:80]) for q in questions)
        )
