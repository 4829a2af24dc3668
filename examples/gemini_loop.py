"""A full tool loop with Gemini through google-genai (needs GEMINI_API_KEY).

pip install -e '.[genai]' && python examples/gemini_loop.py
"""

from __future__ import annotations

import asyncio
import functools

from google import genai
from weather_tools import Forecasts, toolset

import toolwire


async def main() -> None:
    client = genai.Client()  # reads GEMINI_API_KEY
    listing = toolwire.tools(toolset, "gemini")
    # toolwire makes no HTTP call: the SDK's method, with the model bound, sends each request.
    send = functools.partial(client.aio.models.generate_content, model="gemini-2.5-flash")
    contents = [{"role": "user", "parts": [{"text": "Weather in Lisbon and Oslo?"}]}]
    result = await toolwire.loop(send, listing, contents, deps=Forecasts())
    print(result.text)


if __name__ == "__main__":
    asyncio.run(main())
