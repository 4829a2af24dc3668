"""A full tool loop with the OpenAI Responses API (needs OPENAI_API_KEY).

pip install -e '.[openai]' && python examples/openai_responses_loop.py
"""

from __future__ import annotations

import asyncio
import functools

import openai
from weather_tools import Forecasts, toolset

import toolwire


async def main() -> None:
    client = openai.AsyncOpenAI()
    listing = toolwire.tools(toolset, "openai-responses")
    # toolwire makes no HTTP call: the SDK's method, with the model bound, sends each request.
    send = functools.partial(client.responses.create, model="gpt-4.1-mini")
    items = [{"role": "user", "content": "Weather in Lisbon and Oslo?"}]
    result = await toolwire.loop(send, listing, items, deps=Forecasts())
    print(result.text)


if __name__ == "__main__":
    asyncio.run(main())
