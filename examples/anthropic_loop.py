"""A full tool loop with Anthropic Messages (needs ANTHROPIC_API_KEY).

pip install 'toolwire[anthropic]' && python examples/anthropic_loop.py
"""

from __future__ import annotations

import asyncio

import anthropic
from weather_tools import Forecasts, toolset

import toolwire


async def main() -> None:
    client = anthropic.AsyncAnthropic()
    listing = toolwire.tools(toolset, "anthropic", cache_control="last")
    messages: list[dict[str, object]] = [{"role": "user", "content": "Weather in Lisbon and Oslo?"}]
    while True:
        response = await client.messages.create(
            model="claude-sonnet-4-6", max_tokens=1024, tools=listing.tools, messages=messages
        )
        outcome = await toolwire.execute_tool_calls(listing, response, deps=Forecasts())
        if not outcome.results:
            print("".join(block.text for block in response.content if block.type == "text"))
            return
        messages += outcome.followup(response)  # the assistant turn, then the tool_result blocks


if __name__ == "__main__":
    asyncio.run(main())
