"""MCP servers that ask for input during a call, written with the SDK's own MCPServer: its
resolvers (``Resolve`` returning ``Elicit``) ask in an ``InputRequiredResult`` on a 2026-07-28
connection and by ``elicitation/create`` on older ones.

Run as a script (``python input_servers.py``) it serves over stdio, sealing its
``request_state`` with the key in ``INPUT_STATE_KEY`` when set (so a call paused with one
server process can be resumed with another), else with a key of its own process. Each time a
tool's body runs, it appends a line to the file ``INPUT_LOG`` names, when set.
"""

from __future__ import annotations

import os
from typing import Annotated, Literal

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Elicit,
    ElicitationResult,
    MCPServer,
    RequestStateSecurity,
    Resolve,
)
from pydantic import BaseModel


class Confirm(BaseModel):
    confirm: bool
    note: str = ""


class Seat(BaseModel):
    seat: str


class Meal(BaseModel):
    meal: Literal["veg", "fish"]


def _ran(line: str) -> None:
    log = os.environ.get("INPUT_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(line + "\n")


def ask_confirm(path: str) -> Elicit[Confirm]:
    return Elicit(f"Delete {path}?", Confirm)


def ask_seat(flight: str) -> Elicit[Seat]:
    return Elicit(f"Which seat on {flight}?", Seat)


def ask_meal(flight: str) -> Elicit[Meal]:
    return Elicit(f"Which meal on {flight}?", Meal)


def asking(state_key: str | None = None) -> MCPServer:
    security = RequestStateSecurity(keys=[state_key]) if state_key else None
    server = MCPServer("asking", request_state_security=security)

    @server.tool(description="Delete a file, once the user confirms.")
    def delete(
        path: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)]
    ) -> str:
        _ran(f"delete {path} {answer.action}")
        if not isinstance(answer, AcceptedElicitation):
            return f"kept {path}: the user answered {answer.action}"
        if not answer.data.confirm:
            return f"kept {path}: {answer.data.note or 'not confirmed'}"
        return f"deleted {path}"

    @server.tool(description="Book a flight: asks for a seat and a meal.")
    def book(
        flight: str,
        seat: Annotated[Seat, Resolve(ask_seat)],
        meal: Annotated[Meal, Resolve(ask_meal)],
    ) -> str:
        _ran(f"book {flight}")
        return f"booked {flight}, seat {seat.seat}, {meal.meal} meal"

    @server.tool(description="Add two integers (asks nothing).")
    def add(a: int, b: int) -> int:
        return a + b

    return server


if __name__ == "__main__":
    asking(os.environ.get("INPUT_STATE_KEY")).run(transport="stdio")
