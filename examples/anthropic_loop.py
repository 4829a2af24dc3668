"""A full tool loop with Anthropic Messages (needs ANTHROPIC_API_KEY).

pip install -e '.[anthropic]' && python examples/anthropic_loop.py
"""

from __future__ import annotations

import asyncio
import functools

import anthropic
from weather_tools import Forecasts, toolset

import toolwire


async def main() -> None:
    client = anthropic.AsyncAnthropic()
    listing = toolwire.tools(toolset, "anthropic", cache_control="last")
    # toolwire makes no HTTP call: the SDK's method, with the model bound, sends each request.
    send = functools.partial(client.messages.create, model="claude-sonnet-4-6", max_tokens=1024)
    messages = [{"role": "user", "content": "Weather in Lisbon and Oslo?"}]
    result = await toolwire.loop(send, listing, messages, deps=Forecasts())
    print(result.text)


if __name__ == "__main__":
    asyncio.run(main())
