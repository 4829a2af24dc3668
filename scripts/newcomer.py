"""A newcomer's first program, as the docs tell it: write a tool, run ``toolwire.loop`` over
google-genai against a model (the scripted one, on 127.0.0.1), have a call wait for a human,
decide it from the command line in another process, and resume.

Run from a checkout, in the environment the README's test command makes:

    .venv/bin/python scripts/newcomer.py

It prints what happens, and exits non-zero (saying why) when any step does not go as the
docs say.
"""

from __future__ import annotations

import asyncio
import functools
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the scripted model the docs' tests talk to

TOOL = '''
import toolwire


@toolwire.tool
def book_table(restaurant: str, people: int = 2) -> dict:
    """Book a table.

    Args:
        restaurant: Where.
        people: How many.
    """
    return {"booked": restaurant, "people": people}
'''


def toolwire_command(*args: str) -> subprocess.CompletedProcess[str]:
    """``toolwire ...`` in another process, as a person at a terminal would run it."""
    command = [str(Path(sys.executable).with_name("toolwire")), *args]
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)


def fail(why: str) -> NoReturn:
    print(f"newcomer: FAILED: {why}", file=sys.stderr)
    raise SystemExit(1)


async def main() -> None:
    from google import genai

    import toolwire
    from docs_support.model import serve_model  # type: ignore[import-not-found]

    work = Path(tempfile.mkdtemp(prefix="toolwire-newcomer-"))
    (work / "my_tools.py").write_text(textwrap.dedent(TOOL), encoding="utf-8")
    sys.path.insert(0, str(work))
    from my_tools import book_table  # type: ignore[import-not-found]

    store_url = f"sqlite:///{work / 'runs.db'}"
    store = toolwire.store.from_url(store_url)
    policy = toolwire.Policy(toolwire.Rule("ask", "book_table", reason="it books for real"))
    listing = toolwire.tools([book_table], "gemini", policy=policy)
    server = serve_model()
    model = next(server)
    try:
        client = genai.Client(api_key="test-key", http_options={"base_url": model.base_url})
        send = functools.partial(client.aio.models.generate_content, model="gemini-2.5-flash")
        contents = [{"role": "user", "parts": [{"text": "A table at Tasca for two?"}]}]
        options: dict[str, Any] = {"store": store, "approver": toolwire.DeferredApproval()}

        result = await toolwire.loop(send, listing, contents, run_id="dinner", **options)
        paused = result.pending
        if paused is None:
            fail(f"the call did not wait for a decision: {result}")
        [request] = paused.pending
        print(f"waiting: {request.exposed_name}({json.dumps(dict(request.arguments))})")

        listed = toolwire_command("pending", "--store", store_url, "--json")
        if listed.returncode != 0 or request.call_id not in listed.stdout:
            fail(f"toolwire pending did not list the call: {listed.stderr or listed.stdout}")
        decided = toolwire_command(
            "decide", paused.run_id, request.call_id, "allow",
            "--store", store_url, "--by", "newcomer",
        )  # fmt: skip
        if decided.returncode != 0:
            fail(f"toolwire decide failed: {decided.stderr}")
        print(f"decided from the command line: {decided.stdout.strip()}")

        result = await toolwire.loop(send, listing, result, run_id="dinner", **options)
        if not result.done:
            fail(f"the resumed loop did not finish: {result}")
        print(f"the model answered: {result.text}")
        if '"booked"' not in result.text:
            fail("the model's answer does not quote the booking")
        trail = toolwire_command("history", result.outcomes[0].run_id or "", "--store", store_url)
        if trail.returncode != 0 or '"decided"' not in trail.stdout:
            fail(f"toolwire history does not show the decision: {trail.stderr}")
        print("newcomer: every step went as the docs say")
    finally:
        server.close()


if __name__ == "__main__":
    asyncio.run(main())
