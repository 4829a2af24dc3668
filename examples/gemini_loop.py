"""A full tool loop with Gemini through google-genai (needs GEMINI_API_KEY).

pip install 'toolwire[genai]' && python examples/gemini_loop.py
"""

from __future__ import annotations

import asyncio

from google import genai
from weather_tools import Forecasts, toolset

import toolwire


async def main() -> None:
    client = genai.Client()  # reads GEMINI_API_KEY
    listing = toolwire.tools(toolset, "gemini")
    contents: list[object] = [{"role": "user", "parts": [{"text": "Weather in Lisbon and Oslo?"}]}]
    while True:
        response = await client.aio.models.generate_content(
            model="gemini-2.5-flash", contents=contents, config={"tools": listing.tools}
        )
        outcome = await toolwire.execute_tool_calls(listing, response, deps=Forecasts())
        if not outcome.results:
            print(response.text)
            return
        contents += outcome.followup(response)  # the model's content (thought signatures kept)


if __name__ == "__main__":
    asyncio.run(main())
