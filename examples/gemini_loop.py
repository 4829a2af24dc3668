"""A full tool loop with Gemini through google-genai (needs GEMINI_API_KEY).

pip install 'toolwire[genai]' && python examples/gemini_loop.py
"""

from __future__ import annotations

import asyncio

from google import genai
from weather_tools import toolset

import toolwire


async def main() -> None:
    client = genai.Client()  # reads GEMINI_API_KEY
    listing = toolwire.tools(toolset, "gemini")
    contents: list[object] = [{"role": "user", "parts": [{"text": "Weather in Lisbon and Oslo?"}]}]
    while True:
        response = await client.aio.models.generate_content(
            model="gemini-2.5-flash", contents=contents, config={"tools": listing.tools}
        )
        outcome = await toolwire.execute_tool_calls(
            toolset, "gemini", response, toolset=listing.toolset
        )
        if not outcome.results:
            print(response.text)
            return
        contents.append(response.candidates[0].content)  # whole: it carries thought signatures
        contents.append({"role": "user", "parts": outcome.results})


if __name__ == "__main__":
    asyncio.run(main())
