"""The gateway's approval form: the yes/no question a client that answers forms
(elicitation) is asked about a call the policy asks about, and the decision its answer
carries."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolwire._text import hides, json_hides, visible, visible_json
from toolwire.approval import ApprovalRequest, Decision, allow, deny
from toolwire.errors import ConfigurationError, ToolwireError
from toolwire.runs import ledger

__all__ = [
    "FORM_SCHEMA",
    "Console",
    "decide_by_form",
    "decision_of",
    "fits_a_form",
    "form_message",
    "takes_urls",
    "task_form",
    "waits_for_approval",
]

FORM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "Run this call (true) or refuse it (false).",
        }
    },
    "required": ["approve"],
}


def decision_of(answer: types.ElicitResult) -> Decision | None:
    """The decision the client's form answer carries; None when it dismissed the form."""
    if answer.action == "accept":
        approved = (answer.content or {}).get("approve")
        return allow() if approved is True else deny("the MCP client refused the call")
    if answer.action == "decline":
        return deny("the MCP client declined the call")
    return None


FORM_ARGUMENTS = 2000
"""Most characters of arguments (as shown, escapes included) an approval form shows."""


def fits_a_form(request: ApprovalRequest) -> bool:
    """Whether an approval form can show the call's arguments whole. A form never shows them
    cut: two calls alike up to the cut would look the same, and an approval approves the
    whole. Longer ones are decided where they are shown whole (``toolwire pending``, the
    inbox)."""
    return len(visible_json(dict(request.arguments))) <= FORM_ARGUMENTS


def form_message(request: ApprovalRequest) -> str:
    """What the client's approval form says: the call, its arguments (whole: see
    [`fits_a_form`][]) and the policy's reason, hidden characters shown as escapes, with a
    warning first when some were."""
    arguments = dict(request.arguments)
    shown = visible_json(arguments)
    why = f" ({visible(request.reason)})" if request.reason else ""
    message = f"Allow the call {visible(request.exposed_name)} {shown}?{why}"
    hiding = [
        what
        for what, hidden in (
            ("the tool's name", hides(request.exposed_name)),
            ("the arguments", json_hides(arguments)),
            ("the reason", hides(request.reason or "")),
        )
        if hidden
    ]
    if not hiding:
        return message
    return (
        f"Warning: {' and '.join(hiding)} hold hidden characters (controls, bidi or zero-width "
        "characters, unusual spaces), shown as escapes such as \\u202e; the call gets the "
        f"characters themselves. {message}"
    )


def task_form(request: ApprovalRequest, *, asks: bool) -> dict[str, Any] | None:
    """The approval form of a task waiting for a decision, as an ``elicitation/create``
    request (None when the gateway ``asks`` no forms, or the call is too long to show)."""
    if not asks or not fits_a_form(request):
        return None
    params = {"mode": "form", "message": form_message(request), "requestedSchema": FORM_SCHEMA}
    return {"method": "elicitation/create", "params": params}


async def decide_by_form(store: Any, request: ApprovalRequest, value: Any, by: Any) -> None:
    """Record in ``store`` a task's approval form's answer (``tasks/update``), as given ``by``.

    Raises:
        ToolwireError: the answer is no elicitation result.
    """
    try:
        answer = types.ElicitResult.model_validate(value)
    except ValueError:
        raise ToolwireError("the approval form's answer is not an elicitation result") from None
    decision = decision_of(answer)
    if decision is not None:
        with contextlib.suppress(ToolwireError):  # decided meanwhile: the run knows
            await ledger.decide(store, request.run_id, request.call_id, decision, by=by)


def waits_for_approval(
    request: ApprovalRequest, subject: str, again: str, *, shared_store: bool, no_form: str | None
) -> str:
    """What a client is told of ``subject`` (``"The call x"``) left waiting for ``request``'s
    decision: only ways to decide it that can work (a store in the gateway's memory is out of
    reach of ``toolwire decide``), and then ``again`` (``"make the same call again"``).
    ``no_form``: why this client cannot approve it in a form, or None when it can."""
    why = f" ({visible(request.reason)})" if request.reason else ""
    run, call = request.run_id, request.call_id
    text = f"{subject} waits for approval{why}. Run id: {run}; call id: {call}. "
    if shared_store:
        return text + (
            f"Decide it with toolwire.decide({run!r}, {call!r}, toolwire.allow() or "
            f"toolwire.deny(...), store=...) or `toolwire decide {run} {call} allow --store "
            f"URL` (the inbox), then {again} with the same arguments to learn the decision: "
            "it runs once allowed."
        )
    memory = (
        "It is kept in the gateway's memory (no shared run store), which `toolwire decide` and "
        "the inbox cannot reach"
    )
    if no_form is None:
        return text + (
            f"{memory}: {again} with the same arguments and approve it in the form this client "
            "is asked."
        )
    return text + (
        f"{memory}, and {no_form}, so it cannot be approved from outside the gateway's process. "
        "A gateway served with a shared run store (`--store sqlite:///runs.db`, or `store=`) "
        "lets such calls be decided from outside it."
    )


@dataclass(frozen=True)
class Console:
    """The approval console (``toolwire inbox`` on the gateway's store) at ``url``: where a
    person decides a waiting call. Its page for a call is sent to the client that made it (a
    URL to follow, by URL-mode elicitation where the client declared it, else in the text of
    its answer); following it approves nothing by itself, since the console asks who decides.

    Raises:
        ConfigurationError: ``url`` is not an http(s) URL.
    """

    url: str

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigurationError(f"the console is an http(s) URL, not {self.url!r}")
        if parts.query or parts.fragment or "?" in self.url or "#" in self.url:
            raise ConfigurationError(
                f"the console's URL has no query or fragment (its pages go after its path), "
                f"not {self.url!r}"
            )

    def page(self, request: ApprovalRequest) -> str:
        """The console's page of ``request``'s call."""
        run, call = quote(request.run_id, safe=""), quote(request.call_id, safe="")
        return f"{self.url.rstrip('/')}/runs/{run}/calls/{call}"

    def said(self, request: ApprovalRequest) -> str:
        """What an answer's text says of it."""
        return f" Approve or deny it in the console: {self.page(request)} (it asks who decides)."

    def elicitation(self, request: ApprovalRequest, subject: str) -> types.ElicitRequestURLParams:
        """The URL-mode elicitation sending a client to the console's page of ``request``."""
        return types.ElicitRequestURLParams(
            mode="url",
            message=f"{subject} waits for a person's approval in the console.",
            url=self.page(request),
            elicitation_id=f"{request.run_id}/{request.call_id}",
        )

    def required(self, request: ApprovalRequest, subject: str) -> MCPError:
        """The error telling a handshake-era client that declared URL-mode elicitation to
        send its user to the console, then call again (``URL_ELICITATION_REQUIRED``)."""
        elicitation = self.elicitation(request, subject)
        data = types.ElicitationRequiredErrorData(elicitations=[elicitation])
        return MCPError(
            code=types.URL_ELICITATION_REQUIRED,
            message=elicitation.message + self.said(request),
            data=data.model_dump(by_alias=True, mode="json", exclude_none=True),
        )


def takes_urls(capabilities: Any) -> bool:
    """Whether a client's declared capabilities take URL-mode elicitation."""
    elicitation = getattr(capabilities, "elicitation", None)
    return elicitation is not None and getattr(elicitation, "url", None) is not None
