"""No schema makes toolwire retrieve anything: a ``$ref``, ``$schema``, ``$id`` or
``$dynamicRef`` naming a URL or a file is never fetched or read, by validation, declarations,
``toolwire check`` or the hub. A tool whose schema names another document it was not given is
refused, naming the reference (taken as "any value", it would fail open); the hub leaves such a
server tool out, saying why. Told ``external_refs="unconstrained"``, a tool takes any value
where the reference stands, and every call is answered.

Reproduction (issue 14, item 1): ``{"properties": {"q": {"$ref": "http://127.0.0.1:PORT/x"}}}``
made the Python validator request the URL on every call (and read ``file://`` references into
its error messages, or ``/dev/zero`` until memory ran out).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fetch_targets import SECRET, Target, hostile_schemas, references, serving
from fetching_mcp_server import HERE as MCP_SERVER
from provider_turns import DECLARATION_IDS, DECLARATIONS, PROVIDERS, response_for

import toolwire
from toolwire import ConfigurationError, InvalidArguments, Tool, ToolSet, compat
from toolwire.cli import main
from toolwire.mcp import Hub, StdioServer

NAMES = list(hostile_schemas(Target(port=1, secret_file=Path("/x"))))
# Arguments each schema accepts once what it names accepts any value.
ARGUMENTS: dict[str, dict[str, Any]] = {
    "ref in items": {"q": ["anything"]},
    "ref in patternProperties": {"q": {"x1": [1, 2]}},
}


@pytest.fixture
def target(tmp_path: Path) -> Iterator[Target]:
    with serving(tmp_path) as serving_target:
        yield serving_target
    # Checked after every test, whatever it asserted.
    assert serving_target.connections == []


def arguments_for(name: str) -> dict[str, Any]:
    return ARGUMENTS.get(name, {"q": "anything"})


def lookup(**arguments: Any) -> str:
    return f"looked up {sorted(arguments)}"


def toolset_of(target: Target) -> ToolSet:
    return ToolSet(
        Tool(name=f"t{i}", input_schema=schema, handler=lookup, external_refs="unconstrained")
        for i, schema in enumerate(hostile_schemas(target).values())
    )


async def in_thread(work: Callable[[], Any]) -> Any:
    """``work()`` in a worker thread, so a hang fails the bounded wait instead of the run."""
    return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)


@pytest.mark.parametrize("name", NAMES)
def test_a_tool_naming_another_document_is_refused_naming_the_reference(
    target: Target, name: str
) -> None:
    schema = hostile_schemas(target)[name]
    named = [r for r in references(schema) if not r.startswith("#")]
    if name.startswith("remote $schema"):  # a $schema names a dialect, never a document here
        Tool(name="lookup", input_schema=schema)
        return
    assert named
    with pytest.raises(
        ConfigurationError, match="another document, which is never fetched"
    ) as info:
        Tool(name="lookup", input_schema=schema)
    assert any(repr(reference) in str(info.value) for reference in named)
    assert SECRET not in str(info.value)


@pytest.mark.anyio
@pytest.mark.parametrize("name", NAMES)
async def test_validation_never_fetches_and_accepts_any_value_where_a_reference_leads(
    target: Target, name: str
) -> None:
    subject = Tool(
        name="lookup", input_schema=hostile_schemas(target)[name], external_refs="unconstrained"
    )
    arguments = arguments_for(name)
    with anyio.fail_after(20):
        for _ in range(3):  # every call, not only the first (the validator is compiled once)
            assert await in_thread(lambda: subject.validate_arguments(arguments)) == arguments


@pytest.mark.anyio
async def test_what_the_schema_says_beside_a_dropped_reference_is_still_checked(
    target: Target,
) -> None:
    schema = {
        "type": "object",
        "properties": {"q": {"$ref": f"{target.http}/x.json", "type": "string", "maxLength": 3}},
        "required": ["q"],
    }
    subject = Tool(name="lookup", input_schema=schema, external_refs="unconstrained")
    with anyio.fail_after(20):
        for bad in ({"q": 5}, {"q": "toolong"}, {}):
            with pytest.raises(InvalidArguments) as info:
                await in_thread(lambda bad=bad: subject.validate_arguments(bad))
            assert SECRET not in str(info.value)


@pytest.mark.anyio
async def test_a_dangling_local_reference_is_a_configuration_error_answered_quickly(
    target: Target,
) -> None:
    schema = {
        "$id": f"{target.http}/root.json",
        "type": "object",
        "properties": {"q": {"$ref": "#/$defs/missing"}},
    }
    subject = Tool(name="lookup", server_id="srv", input_schema=schema)
    with anyio.fail_after(20):
        for _ in range(2):
            with pytest.raises(ConfigurationError, match="'srv/lookup'"):
                await in_thread(lambda: subject.validate_arguments({"q": 1}))


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_every_call_is_answered_without_fetching_for_every_provider(
    target: Target, provider: str
) -> None:
    toolset = toolset_of(target)
    calls = [(f"t{i}", arguments_for(name), f"call{i}") for i, name in enumerate(NAMES)]
    with anyio.fail_after(30):
        outcome = await toolwire.execute_tool_calls(
            toolset, provider, response_for(provider, calls)
        )
    assert len(outcome.results) == len(calls)
    assert [o.result.is_error for o in outcome.calls] == [False] * len(calls)
    assert SECRET not in json.dumps(outcome.results)


@pytest.mark.parametrize(("provider", "options"), DECLARATIONS, ids=DECLARATION_IDS)
def test_no_declaration_sends_a_reference_to_another_document(
    target: Target, provider: str, options: dict[str, Any]
) -> None:
    listing = toolwire.tools(toolset_of(target), provider, **options)
    sent = json.dumps(listing.tools)
    assert SECRET not in sent
    assert [r for r in references(listing.tools) if not r.startswith("#")] == []


def test_toolwire_check_notes_each_reference_for_every_provider(target: Target) -> None:
    toolset = toolset_of(target)
    reports = compat.check(toolset)
    schemas = hostile_schemas(target)
    for report, name in zip(reports, NAMES, strict=True):
        named = [r for r in references(schemas[name]) if not r.startswith("#")]
        for verdict in report.verdicts:
            assert verdict.status == "converted", (name, verdict)
            if named:
                assert any("not followed; any value accepted there" in n for n in verdict.notes)
        assert SECRET not in repr(report)


def test_the_check_command_on_a_json_file_reads_nothing_it_names(
    target: Target, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions = tmp_path / "tools.json"
    definitions.write_text(
        json.dumps(
            [
                {"name": f"t{i}", "inputSchema": schema}
                for i, schema in enumerate(hostile_schemas(target).values())
            ]
        )
    )
    status = main(["check", str(definitions), "--json"])
    out = capsys.readouterr().out
    assert status == 1  # the definitions naming other documents are rejected, each reported
    assert SECRET not in out
    verdicts = {r["name"]: r["verdicts"] for r in json.loads(out)}
    assert set(verdicts) == {f"t{i}" for i in range(len(NAMES))}
    notes = json.dumps(verdicts["t0"]["anthropic"]["notes"])
    assert "left out by the file" in notes
    assert "references 'http://127.0.0.1:" in notes
    assert {v["anthropic"]["status"] for v in verdicts.values()} == {"rejected", "converted"}


@pytest.mark.anyio
async def test_an_mcp_server_over_stdio_publishing_such_schemas_has_them_left_out(
    target: Target, tmp_path: Path
) -> None:
    definitions = tmp_path / "tools.json"
    schemas = hostile_schemas(target)
    definitions.write_text(
        json.dumps([{"name": f"t{i}", "inputSchema": s} for i, s in enumerate(schemas.values())])
    )
    offered = [f"t{i}" for i, name in enumerate(NAMES) if name.startswith("remote $schema")]
    server = StdioServer(command=sys.executable, args=[str(MCP_SERVER), str(definitions)])
    with anyio.fail_after(60):
        async with Hub({"srv": server}) as hub:
            assert sorted(tool.name for tool in hub.as_toolset()) == sorted(offered)
            left_out = hub.left_out["srv"]
            assert set(left_out) == {f"t{i}" for i in range(len(NAMES))} - set(offered)
            assert all(
                "another document, which is never fetched" in why for why in left_out.values()
            )
            assert SECRET not in json.dumps(left_out)
            for provider in PROVIDERS:
                listing = toolwire.tools(hub, provider)
                assert [r for r in references(listing.tools) if not r.startswith("#")] == []
                calls = [
                    (f"srv__t{i}", arguments_for(name), f"{provider}-{i}")
                    for i, name in enumerate(NAMES)
                ]
                outcome = await toolwire.execute_tool_calls(
                    hub, provider, response_for(provider, calls)
                )
                texts = {
                    getattr(o.item, "exposed_name", o.item.name): o.result.text
                    for o in outcome.calls
                }
                for name in offered:
                    assert texts[f"srv__{name}"] == f"called {name}", provider
                refused = [
                    o for o in outcome.calls if o.item.name.removeprefix("srv__") not in offered
                ]
                assert all(o.result.is_error for o in refused)  # never run: answered, though
                assert SECRET not in json.dumps(outcome.results)
            reports = compat.check(hub.as_toolset())
            assert not any(report.rejected for report in reports)
