"""``toolwire demo --inbox``: the demo pauses on the call that needs approval, prints the
console's address, and resumes once the call is decided there."""

from __future__ import annotations

import io
import re

import anyio
import httpx
import pytest

from toolwire.demo import run_demo

pytestmark = pytest.mark.anyio


async def test_the_demo_waits_for_the_console_and_resumes_when_approved() -> None:
    out = io.StringIO()
    status: list[int] = []

    async def demo() -> None:
        status.append(await run_demo("gemini", scripted=True, inbox=True, out=out))

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            group.start_soon(demo)
            while "waits for a decision" not in out.getvalue():
                await anyio.sleep(0.05)
            printed = out.getvalue()
            console = re.search(
                r"approval console: (http://127\.0\.0\.1:\d+/)\?token=(\S+)", printed
            )
            waiting = re.search(r"set_alert waits for a decision: (\S+)", printed)
            assert console is not None, printed
            assert waiting is not None, printed
            base, token = console.groups()
            request_url = waiting.group(1)
            assert request_url.startswith(base)
            run_call = request_url.removeprefix(base + "runs/")
            run_id, _, call_id = run_call.partition("/calls/")
            headers = {"Authorization": f"Bearer {token}", "X-Toolwire-Inbox": "1"}
            async with httpx.AsyncClient(headers=headers, timeout=30) as http:
                page = await http.get(request_url)
                assert page.status_code == 200
                decided = await http.post(
                    f"{base}api/runs/{run_id}/calls/{call_id}/decision",
                    json={"decision": "allow"},
                )
                assert decided.status_code == 200, decided.text
    assert status == [0]
    assert "✓ set_alert" in out.getvalue()
