"""A full tool loop with the OpenAI Responses API (needs OPENAI_API_KEY).

pip install 'toolwire[openai]' && python examples/openai_responses_loop.py
"""

from __future__ import annotations

import asyncio

import openai
from weather_tools import Forecasts, toolset

import toolwire


async def main() -> None:
    client = openai.AsyncOpenAI()
    listing = toolwire.tools(toolset, "openai-responses")
    items: list[object] = [{"role": "user", "content": "Weather in Lisbon and Oslo?"}]
    while True:
        response = await client.responses.create(
            model="gpt-4.1-mini", input=items, tools=listing.tools
        )
        outcome = await toolwire.execute_tool_calls(listing, response, deps=Forecasts())
        if not outcome.results:
            print(response.output_text)
            return
        items += outcome.followup(response)  # the output items, then the function_call_outputs


if __name__ == "__main__":
    asyncio.run(main())
