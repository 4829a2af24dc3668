"""MCP servers as tools: a hub over the bundled demo server (stdio), governed by a policy.

Runs without an API key: it prints the Gemini declarations of the server's tools, then answers
a Gemini-shaped response calling them (the destructive one needs approval and is denied here).

    pip install -e '.[mcp]' && python examples/mcp_hub.py
"""

from __future__ import annotations

import asyncio
import json
import sys

import toolwire
from toolwire.approval import deny
from toolwire.mcp import Hub, StdioServer


async def main() -> None:
    servers = {"notes": StdioServer(command=sys.executable, args=["-m", "toolwire.demo.server"])}
    async with Hub(servers) as hub:
        listing = toolwire.tools(hub, "gemini")
        print(json.dumps(listing.tools, indent=2))
        response = {
            "candidates": [
                {
                    "content": {
                        "parts": [
                            {
                                "functionCall": {
                                    "name": "notes__find_notes",
                                    "args": {"word": "oslo"},
                                }
                            },
                            {
                                "functionCall": {
                                    "name": "notes__delete_note",
                                    "args": {"key": "old"},
                                }
                            },
                        ]
                    }
                }
            ]
        }
        outcome = await toolwire.execute_tool_calls(
            listing,
            response,
            # Tools whose annotations do not promise to be harmless need approval.
            policy=toolwire.Policy(destructive="ask"),
            approver=lambda request: deny("not in this example"),
        )
        print(json.dumps(outcome.results, indent=2))
        # What the conversation gets next: the model's content, then the answers.
        contents = outcome.followup(response)
        print(f"{len(contents)} contents to append; taint now {sorted(outcome.taint)}")


if __name__ == "__main__":
    asyncio.run(main())
