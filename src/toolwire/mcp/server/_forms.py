"""The gateway's approval form: the yes/no question a client that answers forms
(elicitation) is asked about a call the policy asks about, and the decision its answer
carries."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from toolwire._text import hides, json_hides, visible, visible_json
from toolwire.approval import ApprovalRequest, Decision, allow, deny

__all__ = ["FORM_SCHEMA", "decision_of", "fits_a_form", "form_message"]

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
