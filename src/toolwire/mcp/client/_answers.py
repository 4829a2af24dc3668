"""What a server's answer to a call becomes when it is not the call's plain result: a question
that could not be answered, a JSON-RPC error a task keeps, a structured result its output
schema refuses, an answer that fails the protocol."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic

from toolwire._values import describe_exception
from toolwire.calls import ToolResult
from toolwire.mcp._relay import PROTOCOL_ERROR
from toolwire.mcp.client._state import DESCRIBED, ServerState
from toolwire.tool import compile_validator, exposed_name_for

__all__ = ["exposed", "failure_of", "first_error", "keeping_error", "output_problem", "stopped"]


def failure_of(server: ServerState, name: str, exc: Exception) -> ToolResult | None:
    """The answer of a call of tool ``name`` that failed with ``exc`` on a sound connection
    (the server's error, a timeout it reported, a malformed answer), or None when the
    connection broke."""
    import mcp

    while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]  # the SDK's task groups wrap single errors
    if isinstance(exc, mcp.MCPError):
        if exc.code == mcp.types.REQUEST_TIMEOUT:
            return ToolResult.error(
                "timeout", f"Tool {exposed(server, name)!r} timed out on the server."
            )
        if exc.code == mcp.types.CONNECTION_CLOSED:
            return None
        if exc.code == mcp.types.HEADER_MISMATCH:
            # The call was sent for the definition the hub listed, which the server no
            # longer has: re-list (a changed definition then needs approval), don't resend.
            server.wake.set()
            return ToolResult.error(
                "failed",
                f"Tool {exposed(server, name)!r} changed on its server since it was "
                "listed; the hub is listing it again: call it again.",
            )
        message = exc.message if isinstance(exc.message, str) else repr(exc.message)
        return ToolResult.error(
            "failed", f"Tool {exposed(server, name)!r} failed: {message[:DESCRIBED]}"
        )
    if isinstance(exc, RuntimeError):  # e.g. the SDK's output-schema check
        reason = describe_exception(exc, limit=DESCRIBED, named=False)
        return ToolResult.error("failed", f"Tool {exposed(server, name)!r} failed: {reason}")
    if isinstance(exc, pydantic.ValidationError):  # a malformed answer on a sound connection
        return ToolResult.error(
            "failed",
            f"Tool {exposed(server, name)!r} answered with a malformed result: {first_error(exc)}.",
        )
    return None  # the connection broke


def stopped(server: ServerState, name: str, problem: str, said: str | None) -> ToolResult:
    """The answer of a call one of whose server's questions could not be answered: failed,
    saying why, with what the server answered (``said``; None: a JSON-RPC error)."""
    answered = f" The server answered: {said}" if said is not None else ""
    return ToolResult.error(
        "failed", f"Tool {exposed(server, name)!r} stopped: {problem}.{answered}"
    )


def keeping_error(failure: ToolResult, error: Any) -> ToolResult:
    """A task's answer to a call its server answered with a JSON-RPC error: the failure, with
    the error kept (see ``_relay.kept_error``)."""
    kept = {"code": error.code, "message": error.message, "data": error.data}
    return ToolResult(
        content=failure.content,
        structured_content={PROTOCOL_ERROR: {k: v for k, v in kept.items() if v is not None}},
        is_error=True,
        error_kind="failed",
    )


def exposed(server: ServerState, name: str) -> str:
    """The name the model calls a server's tool by (what its messages name)."""
    return exposed_name_for(name, server.name)


def output_problem(server: ServerState, name: str, schema: Any, structured: Any) -> str | None:
    """Why a tool's structured result breaks its output schema, or None: what the SDK checks
    (it must be there, and match), done by jsonschema-rs, in linear time."""
    if structured is None:
        return "it has an output schema but returned no structured content"
    compiled = server.output_validators.get(name)
    if compiled is not None and compiled[0] is schema:
        validator = compiled[1]
    else:  # first use, or the server listed another schema since
        validator = (
            compile_validator(schema)
            if isinstance(schema, Mapping)
            else "the output schema is not an object"
        )
        server.output_validators[name] = (schema, validator)
    if isinstance(validator, str):
        return f"its output schema cannot check results: {validator}"
    try:
        error = next(iter(validator.iter_errors(structured)), None)
    except ValueError as exc:  # not JSON jsonschema-rs reads
        return f"its structured content is not JSON: {describe_exception(exc, limit=DESCRIBED)}"
    if error is None:
        return None
    return f"its structured content does not match its output schema: {error.message[:DESCRIBED]}"


def first_error(exc: pydantic.ValidationError) -> str:
    """Where and how a server's answer fails the protocol, from its first validation error."""
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return "it does not match the protocol"
    where = ".".join(str(part) for part in errors[0]["loc"])
    return f"{where or 'the result'}: {errors[0]['msg']}"
