"""The tools the gateway tests serve (loaded by `toolwire serve` as a .py SOURCE)."""

from __future__ import annotations

from toolwire import tool


@tool(annotations={"readOnlyHint": True})
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


@tool(annotations={"readOnlyHint": True})
def weather(city: str) -> dict[str, object]:
    """Today's weather in a city, as structured content."""
    return {"city": city, "celsius": 21}


@tool(annotations={"destructiveHint": True})
def delete_file(path: str) -> str:
    """Delete a file (pretends to: nothing is deleted)."""
    return f"deleted {path}"


@tool
def format_disk(device: str) -> str:
    """Never allowed by the test policy."""
    return f"formatted {device}"


tools = [add, weather, delete_file, format_disk]
