"""OpenTelemetry spans for tool executions, read back with the SDK's in-memory exporter."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from toolwire import Executor, MemoryStore, ToolSet, make_call, tool

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("boom")


@tool(timeout=0.05)
async def stall() -> str:
    """Never answers in time."""
    await anyio.sleep(30)
    return "late"


TOOLS = ToolSet([add, explode, stall])


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    traces = TracerProvider()
    traces.add_span_processor(SimpleSpanProcessor(exporter))
    return traces


async def test_one_execute_tool_span_per_call_that_runs(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    executor = Executor(TOOLS, tracer_provider=provider, store=MemoryStore())
    calls = [
        make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="c1"),
        make_call(TOOLS, "explode", {}, call_id="c2"),
        make_call(TOOLS, "stall", {}, call_id="c3"),
        make_call(TOOLS, "add", {"a": "not a number", "b": 2}, call_id="c4"),  # never runs
    ]
    outcomes = await executor.run(calls, run_id="r1")
    assert [o.result.error_kind for o in outcomes] == [
        None,
        "failed",
        "timeout",
        "invalid_arguments",
    ]

    spans = {span.attributes["gen_ai.tool.call.id"]: span for span in exporter.get_finished_spans()}
    assert sorted(spans) == ["c1", "c2", "c3"]
    ok = spans["c1"]
    assert ok.name == "execute_tool add"
    assert ok.kind is SpanKind.INTERNAL
    assert dict(ok.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Adds two numbers.",
        "toolwire.run_id": "r1",
    }
    assert ok.status.status_code is StatusCode.UNSET

    failed = spans["c2"]
    assert failed.attributes["error.type"] == "failed"
    assert failed.status.status_code is StatusCode.ERROR
    assert "boom" in (failed.status.description or "")
    [event] = failed.events
    assert event.name == "exception"
    assert event.attributes["exception.type"] == "RuntimeError"

    timed_out = spans["c3"]
    assert timed_out.attributes["error.type"] == "timeout"
    assert timed_out.status.status_code is StatusCode.ERROR


async def test_spans_nest_under_the_callers_span_and_answers_from_the_store_make_none(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    executor = Executor(TOOLS, tracer_provider=provider, store=MemoryStore())
    calls = [make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="c1")]
    with provider.get_tracer("app").start_as_current_span("agent turn") as parent:
        await executor.run(calls, run_id="r")
        await executor.run(calls, run_id="r")  # answered from the store: nothing executes
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith("execute_tool")]
    assert len(spans) == 1
    assert spans[0].parent is not None
    assert spans[0].parent.span_id == parent.get_span_context().span_id


async def test_without_a_tracer_provider_the_global_one_is_used(
    exporter: InMemorySpanExporter,
) -> None:
    # the API's default global provider records nothing: calls still run, spans are no-ops
    executor = Executor(TOOLS)
    [outcome] = await executor.run([make_call(TOOLS, "add", {"a": 2, "b": 2})])
    assert outcome.result.text == "4"
    assert exporter.get_finished_spans() == ()


def test_toolwire_runs_without_opentelemetry_installed() -> None:
    program = textwrap.dedent(
        """
        import sys
        sys.modules["opentelemetry"] = None  # as if the extra were not installed
        import anyio
        from toolwire import Executor, ToolSet, make_call, tool
        from toolwire._tracing import make_tracer

        @tool
        def add(a: int, b: int) -> int:
            return a + b

        tools = ToolSet([add])
        assert make_tracer() is None
        [outcome] = anyio.run(Executor(tools).run, [make_call(tools, "add", {"a": 1, "b": 2})])
        print(outcome.result.text)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3"


def test_a_global_provider_installed_after_the_executor_is_used() -> None:
    program = textwrap.dedent(
        """
        import anyio
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from toolwire import Executor, ToolSet, make_call, tool

        @tool
        def add(a: int, b: int) -> int:
            return a + b

        tools = ToolSet([add])
        executor = Executor(tools)  # made while only the API's no-op provider exists
        anyio.run(executor.run, [make_call(tools, "add", {"a": 1, "b": 2})])
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        anyio.run(executor.run, [make_call(tools, "add", {"a": 1, "b": 2})])
        print([span.name for span in exporter.get_finished_spans()])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['execute_tool add']"
