"""A full tool loop with OpenAI Chat Completions, strict schemas (needs OPENAI_API_KEY).

pip install 'toolwire[openai]' && python examples/openai_chat_loop.py
"""

from __future__ import annotations

import asyncio

import openai
from weather_tools import Forecasts, toolset

import toolwire


async def main() -> None:
    client = openai.AsyncOpenAI()
    listing = toolwire.tools(toolset, "openai-chat")  # strict where the schema allows
    messages: list[object] = [{"role": "user", "content": "Weather in Lisbon and Oslo?"}]
    while True:
        response = await client.chat.completions.create(
            model="gpt-4.1-mini", messages=messages, tools=listing.tools
        )
        # Parsed against the listing: the nulls strict mode made the model send are left out.
        outcome = await toolwire.execute_tool_calls(listing, response, deps=Forecasts())
        if not outcome.results:
            print(response.choices[0].message.content)
            return
        messages += outcome.followup(response)  # the assistant message, then the tool messages


if __name__ == "__main__":
    asyncio.run(main())
