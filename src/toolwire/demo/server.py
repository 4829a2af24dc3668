"""The demo's MCP server (``python -m toolwire.demo.server``), served over stdio.

A notes service: one read-only tool and one destructive one, so the demo shows MCP annotations
tightening the policy.
"""

from __future__ import annotations


def build() -> object:
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("notes")
    notes = {"lisbon": "Ferry at 9:10.", "oslo": "Pack boots.", "old": "Obsolete."}

    @server.tool(
        description="Find travel notes mentioning a word.",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    def find_notes(word: str) -> list[str]:
        return [f"{key}: {text}" for key, text in notes.items() if word.lower() in key + text]

    @server.tool(
        description="Delete a travel note.",
        annotations=ToolAnnotations(destructive_hint=True),
    )
    def delete_note(key: str) -> str:
        if notes.pop(key, None) is None:
            raise ValueError(f"no note {key!r}")
        return f"deleted {key}"

    return server


if __name__ == "__main__":
    build().run(transport="stdio")  # type: ignore[attr-defined]
