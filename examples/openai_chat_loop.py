"""A full tool loop with OpenAI Chat Completions, strict schemas (needs OPENAI_API_KEY).

pip install -e '.[openai]' && python examples/openai_chat_loop.py
"""

from __future__ import annotations

import asyncio
import functools

import openai
from weather_tools import Forecasts, toolset

import toolwire


async def main() -> None:
    client = openai.AsyncOpenAI()
    listing = toolwire.tools(toolset, "openai-chat")  # strict where the schema allows
    # toolwire makes no HTTP call: the SDK's method, with the model bound, sends each request.
    send = functools.partial(client.chat.completions.create, model="gpt-4.1-mini")
    messages = [{"role": "user", "content": "Weather in Lisbon and Oslo?"}]
    # Calls are parsed against the listing: the nulls strict mode made the model send are
    # left out before the tools see the arguments.
    result = await toolwire.loop(send, listing, messages, deps=Forecasts())
    print(result.text)


if __name__ == "__main__":
    asyncio.run(main())
