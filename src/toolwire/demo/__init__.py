"""``toolwire demo``: a whole multi-turn tool-calling loop on bundled tools.

With a provider's API key set it talks to the real model through the official SDK
([`toolwire.demo.live`][]); without one it runs against a scripted model
([`toolwire.demo.scripted`][]) and says so. ``--mcp`` adds the bundled MCP server
([`toolwire.demo.server`][]) over stdio.
"""

from toolwire.demo.loop import run_demo

__all__ = ["run_demo"]
