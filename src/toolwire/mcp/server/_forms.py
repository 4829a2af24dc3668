"""The gateway's approval form: the yes/no question a client that answers forms
(elicitation) is asked about a call the policy asks about, and the decision its answer
carries."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from toolwire._text import hides, json_hides, visible, visible_json
from toolwire.approval import ApprovalRequest, Decision, allow, deny

__all__ = ["FORM_SCHEMA", "decision_of", "fits_a_form", "form_message", "waits_for_approval"]

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
