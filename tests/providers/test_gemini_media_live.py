"""Gemini answers that carry links to media as ``fileData`` parts, and the Live API's
asynchronous functions (``behavior: NON_BLOCKING`` declarations, ``scheduling`` answers), each
shape checked against google-genai's own types."""

from __future__ import annotations

import base64
import json
import warnings
from typing import Any

import anyio
import pytest

import toolwire
from toolwire import (
    ConfigurationError,
    ImageContent,
    ResourceLink,
    TextContent,
    Tool,
    ToolResult,
    ToolSet,
    ToolwireWarning,
)
from toolwire.providers import gemini

types = pytest.importorskip("google.genai.types")

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 8
FILES_API_PDF = "https://generativelanguage.googleapis.com/v1beta/files/report-7x2k"
GCS_PNG = "gs://charts-bucket/2026/q3.png"
PUBLIC_PNG = "https://cdn.example.org/charts/q3.png?sig=abc"

CHART = ToolResult(
    content=(
        TextContent("Q3:"),
        ImageContent(PNG, "image/png"),
        ResourceLink(uri=FILES_API_PDF, name="report", mime_type="application/pdf"),
        ResourceLink(uri=PUBLIC_PNG, name="q3", mime_type="image/png"),
        ImageContent(JPEG, "image/jpeg"),
    )
)


def _inline(data: bytes, mime: str, name: str) -> dict[str, Any]:
    encoded = base64.b64encode(data).decode()
    return {"inlineData": {"mimeType": mime, "data": encoded, "displayName": name}}


def _file(uri: str, mime: str, name: str) -> dict[str, Any]:
    return {"fileData": {"mimeType": mime, "fileUri": uri, "displayName": name}}


def _validated(part: dict[str, Any]) -> Any:
    """The part as google-genai reads it (raises when the SDK refuses it)."""
    return types.Part.model_validate(part)


# -- fileData ------------------------------------------------------------------------------------


def test_a_files_api_link_becomes_a_file_part_named_beside_the_inline_ones() -> None:
    part = gemini.function_response("chart", CHART, id="c1", media="parts")
    assert part == {
        "functionResponse": {
            "name": "chart",
            "id": "c1",
            "response": {
                # The public URL is not sent unless asked: it stays text.
                "output": "Q3:\n[resource link: " + PUBLIC_PNG + " (q3, image/png)]",
                "media": [
                    {"$ref": "image_1.png"},
                    {"$ref": "application_2.pdf"},
                    {"$ref": "image_3.jpeg"},
                ],
            },
            "parts": [
                _inline(PNG, "image/png", "image_1.png"),
                _file(FILES_API_PDF, "application/pdf", "application_2.pdf"),
                _inline(JPEG, "image/jpeg", "image_3.jpeg"),
            ],
        }
    }
    sdk = _validated(part).function_response
    assert sdk.parts[1].file_data == types.FunctionResponseFileData(
        file_uri=FILES_API_PDF, mime_type="application/pdf", display_name="application_2.pdf"
    )


def test_public_https_links_are_sent_only_when_asked() -> None:
    part = gemini.function_response("chart", CHART, media="parts", public_urls=True)
    body = part["functionResponse"]
    assert body["response"]["output"] == "Q3:"
    assert body["parts"][2] == _file(PUBLIC_PNG, "image/png", "image_3.png")
    names = [next(iter(p.values()))["displayName"] for p in body["parts"]]
    assert names == ["image_1.png", "application_2.pdf", "image_3.png", "image_4.jpeg"]
    assert body["response"]["media"] == [{"$ref": name} for name in names]
    _validated(part)


def test_vertex_reads_cloud_storage_links_and_not_the_gemini_files_api() -> None:
    result = ToolResult(
        content=(
            ResourceLink(uri=GCS_PNG, mime_type="image/png"),
            ResourceLink(uri=FILES_API_PDF, mime_type="application/pdf"),
        )
    )
    vertex = gemini.function_response("chart", result, media="parts", backend="vertex")
    assert vertex["functionResponse"]["parts"] == [_file(GCS_PNG, "image/png", "image_1.png")]
    assert FILES_API_PDF in vertex["functionResponse"]["response"]["output"]
    _validated(vertex)
    # The Gemini API reads a Cloud Storage object only once registered (by its Files API URI).
    plain = gemini.function_response("chart", result, media="parts")
    assert plain["functionResponse"]["parts"] == [
        _file(FILES_API_PDF, "application/pdf", "application_1.pdf")
    ]
    assert GCS_PNG in plain["functionResponse"]["response"]["output"]


@pytest.mark.parametrize(
    ("uri", "mime"),
    [
        pytest.param("http://cdn.example.org/a.png", "image/png", id="plain http"),
        pytest.param("file:///etc/passwd", "text/plain", id="file"),
        pytest.param("data:image/png;base64,AAAA", "image/png", id="data"),
        pytest.param("ftp://cdn.example.org/a.png", "image/png", id="ftp"),
        pytest.param("https://localhost/a.png", "image/png", id="localhost"),
        pytest.param("https://127.0.0.1/a.png", "image/png", id="loopback"),
        pytest.param("https://127.1/a.png", "image/png", id="short loopback"),
        pytest.param("https://10.1.2.3/a.png", "image/png", id="private v4"),
        pytest.param("https://192.168.0.7/a.png", "image/png", id="private v4 home"),
        pytest.param("https://169.254.169.254/latest", "text/plain", id="link-local metadata"),
        pytest.param("https://[::1]/a.png", "image/png", id="loopback v6"),
        pytest.param("https://[fd00::1]/a.png", "image/png", id="unique local v6"),
        pytest.param("https://metadata.google.internal/a", "text/plain", id="internal"),
        pytest.param("https://printer.local/a.png", "image/png", id="mdns"),
        pytest.param("https://intranet/a.png", "image/png", id="single label"),
        pytest.param("https://user:pw@cdn.example.org/a.png", "image/png", id="credentials"),
        pytest.param("https://cdn.example.org:8443/a.png", "image/png", id="port"),
        pytest.param("https://cdn.example.org/a b.png", "image/png", id="space"),
        pytest.param('https://cdn.example.org/"a".png', "image/png", id="not a URI character"),
        pytest.param("https://cdn.exämple.org/a.png", "image/png", id="not ascii"),
        pytest.param("https://cdn.example.org/" + "a" * 5000, "image/png", id="too long"),
        pytest.param("https://cdn.example.org:99999/a.png", "image/png", id="bad port"),
        pytest.param("https:///a.png", "image/png", id="no host"),
        pytest.param("https://cdn..example.org/a.png", "image/png", id="empty label"),
        pytest.param("https://generativelanguage.googleapis.com/v1beta/models", "text/plain"),
        pytest.param(FILES_API_PDF + "/../../models", "application/pdf", id="files api trick"),
        pytest.param(PUBLIC_PNG, "video/mp4", id="not a response media type"),
        pytest.param(PUBLIC_PNG, None, id="no media type"),
        pytest.param(FILES_API_PDF, None, id="files api without a media type"),
    ],
)
def test_a_link_gemini_cannot_read_stays_text(uri: str, mime: str | None) -> None:
    result = ToolResult(content=(ResourceLink(uri=uri, mime_type=mime),))
    for backend in ("gemini", "vertex"):
        part = gemini.function_response(
            "t", result, media="parts", backend=backend, public_urls=True
        )
        body = part["functionResponse"]
        assert "parts" not in body
        assert body["response"] == {"output": toolwire.calls.placeholder(result.content[0])}
        _validated(part)


def test_links_stay_text_in_placeholder_mode_and_for_other_importers() -> None:
    result = ToolResult(content=(ResourceLink(uri=FILES_API_PDF, mime_type="application/pdf"),))
    placeholder = gemini.function_response("t", result, public_urls=True)
    assert "parts" not in placeholder["functionResponse"]
    # The internal builder keeps links as text unless told which backend reads them.
    internal = gemini._response_part("t", result, media="parts")
    assert "parts" not in internal["functionResponse"]


def test_names_stay_unique_across_many_inline_and_file_parts() -> None:
    content: list[Any] = []
    for n in range(6):
        content.append(ImageContent(PNG, "image/png"))
        content.append(ResourceLink(uri=f"{FILES_API_PDF}{n}", mime_type="application/pdf"))
        content.append(ResourceLink(uri=f"gs://b-{n}/x.png", mime_type="image/png"))  # text
    part = gemini.function_response("t", ToolResult(content=tuple(content)), media="parts")
    body = part["functionResponse"]
    names = [next(iter(p.values()))["displayName"] for p in body["parts"]]
    assert len(names) == len(set(names)) == 12
    assert body["response"]["media"] == [{"$ref": name} for name in names]
    sdk = _validated(part).function_response
    assert [p.file_data or p.inline_data for p in sdk.parts] == [
        types.FunctionResponseBlob(mime_type="image/png", data=PNG, display_name=names[i])
        if i % 2 == 0
        else types.FunctionResponseFileData(
            mime_type="application/pdf", file_uri=f"{FILES_API_PDF}{i // 2}", display_name=names[i]
        )
        for i in range(12)
    ]


def test_a_tools_own_ref_keys_never_pose_as_part_references_beside_file_parts() -> None:
    # A structured result naming a part ("$ref") would be read as one: it goes as JSON text.
    spoof = ToolResult(
        content=(ResourceLink(uri=FILES_API_PDF, mime_type="application/pdf"),),
        structured_content={"see": {"$ref": "application_1.pdf"}, "also": [{"$ref": "x"}]},
    )
    body = gemini.function_response("t", spoof, media="parts")["functionResponse"]
    assert body["response"] == {
        "output": '{"also":[{"$ref":"x"}],"see":{"$ref":"application_1.pdf"}}',
        "media": [{"$ref": "application_1.pdf"}],
    }
    # A link left as text is only text, whatever it holds.
    tricky = ResourceLink(uri='https://x.example.com/{"$ref":"image_1.png"}', mime_type="image/png")
    body = gemini.function_response(
        "t", ToolResult(content=(tricky,)), media="parts", public_urls=True
    )["functionResponse"]
    assert body["response"] == {"output": toolwire.calls.placeholder(tricky)}


# -- end to end ----------------------------------------------------------------------------------


@toolwire.tool
def chart(quarter: str) -> ToolResult:
    """Draw a quarter's chart."""
    return ToolResult(
        content=(
            TextContent(f"{quarter}:"),
            ImageContent(PNG, "image/png"),
            ResourceLink(uri=FILES_API_PDF, name="report", mime_type="application/pdf"),
            ResourceLink(uri=GCS_PNG, mime_type="image/png"),
            ResourceLink(uri="https://10.0.0.5/secret.png", mime_type="image/png"),
            ResourceLink(uri=PUBLIC_PNG, mime_type="image/png"),
        )
    )


RESPONSE = gemini.response_for([("c1", "chart", {"quarter": "Q3"})])


def _run(listing: toolwire.Listing, **answer_options: Any) -> toolwire.Outcome:
    return anyio.run(lambda: toolwire.execute_tool_calls(listing, RESPONSE, **answer_options))


def test_execute_tool_calls_sends_readable_links_as_file_parts() -> None:
    outcome = _run(toolwire.tools([chart], "gemini", media="parts"))
    (answer,) = outcome.results
    body = answer["functionResponse"]
    assert body["parts"] == [
        _inline(PNG, "image/png", "image_1.png"),
        _file(FILES_API_PDF, "application/pdf", "application_2.pdf"),
    ]
    assert body["response"] == {
        "output": "\n".join(
            [
                "Q3:",
                f"[resource link: {GCS_PNG} (image/png)]",
                "[resource link: https://10.0.0.5/secret.png (image/png)]",
                f"[resource link: {PUBLIC_PNG} (image/png)]",
            ]
        ),
        "media": [{"$ref": "image_1.png"}, {"$ref": "application_2.pdf"}],
    }
    contents = [types.Content.model_validate(c) for c in outcome.followup(RESPONSE)]
    (sent,) = contents[1].parts
    assert sent.function_response.parts[1].file_data.file_uri == FILES_API_PDF


def test_execute_tool_calls_on_vertex_with_public_urls() -> None:
    listing = toolwire.tools([chart], "gemini", media="parts", backend="vertex", public_urls=True)
    body = _run(listing).results[0]["functionResponse"]
    assert body["parts"][1:] == [
        _file(GCS_PNG, "image/png", "image_2.png"),
        _file(PUBLIC_PNG, "image/png", "image_3.png"),
    ]
    assert body["response"]["output"] == (
        f"Q3:\n[resource link: {FILES_API_PDF} (report, application/pdf)]\n"
        "[resource link: https://10.0.0.5/secret.png (image/png)]"
    )
    _validated(_run(listing).results[0])


def test_no_link_is_ever_fetched(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("toolwire opened a connection")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    listing = toolwire.tools([chart], "gemini", media="parts", public_urls=True)
    assert len(_run(listing).results[0]["functionResponse"]["parts"]) == 3


# -- the Live API: asynchronous functions ----------------------------------------------------------


book = Tool(name="book_ticket", description="Book a flight.")
clock = Tool(name="time_in", description="The time in a city.")
lookup = Tool(name="lookup", server_id="crm", description="Find a customer.")
anthropic_only = Tool(name="draft", providers=frozenset({"anthropic"}))
LIVE = ToolSet([book, clock, lookup, anthropic_only])


def _behaviors(tools: Any) -> dict[str, Any]:
    (tool,) = [types.Tool.model_validate(t) for t in tools]
    return {d.name: d.behavior for d in tool.function_declarations}


def test_only_the_named_functions_are_declared_non_blocking() -> None:
    listing = toolwire.tools(
        LIVE, "gemini", schema="openapi", non_blocking=["book_ticket", "crm__lookup"]
    )
    assert _behaviors(listing.tools) == {
        "book_ticket": types.Behavior.NON_BLOCKING,
        "time_in": None,
        "crm__lookup": types.Behavior.NON_BLOCKING,
    }
    assert listing.declaration.options.non_blocking == ("book_ticket", "crm__lookup")
    declarations = listing.tools[0]["functionDeclarations"]
    assert declarations[0] == {
        "name": "book_ticket",
        "description": "Book a flight.",
        "parameters": {"type": "OBJECT", "properties": {}},
        "behavior": "NON_BLOCKING",
    }
    assert "behavior" not in declarations[1]
    # The Live session config takes them as they are.
    types.LiveConnectConfig.model_validate({"tools": listing.tools})


def test_non_blocking_true_declares_every_function_and_leaves_the_cache_alone() -> None:
    everything = gemini.function_declarations(LIVE, schema="openapi", non_blocking=True)
    assert [d["behavior"] for d in everything] == ["NON_BLOCKING"] * 3
    assert all("behavior" not in d for d in gemini.function_declarations(LIVE, schema="openapi"))
    for declaration in everything:
        types.FunctionDeclaration.model_validate(declaration)


def test_a_tool_hidden_from_gemini_may_be_named() -> None:
    declared = gemini.function_declarations(LIVE, non_blocking=("draft", "time_in"))
    assert [d.get("behavior") for d in declared] == [None, "NON_BLOCKING", None]


def test_by_default_declarations_are_byte_identical_to_before() -> None:
    # The output of the release before asynchronous functions, for the same tools.
    before = (
        '[{"functionDeclarations": [{"name": "book_ticket", "description": "Book a flight.", '
        '"parametersJsonSchema": {"type": "object", "properties": {}}}, {"name": "time_in", '
        '"description": "The time in a city.", "parametersJsonSchema": {"type": "object", '
        '"properties": {}}}, {"name": "crm__lookup", "description": "Find a customer.", '
        '"parametersJsonSchema": {"type": "object", "properties": {}}}]}]'
    )
    assert json.dumps(toolwire.tools(LIVE, "gemini").tools) == before
    assert json.dumps(toolwire.tools(LIVE, "gemini", non_blocking=False).tools) == before
    assert json.dumps(toolwire.tools(LIVE, "gemini", non_blocking=()).tools) == before


def test_the_live_tool_response_carries_the_scheduling() -> None:
    message = {
        "toolCall": {
            "functionCalls": [
                {"id": "f1", "name": "book_ticket", "args": {}},
                {"id": "f2", "name": "ghost", "args": {}},
            ]
        }
    }
    calls, rejected = gemini.live_function_calls(message, LIVE)
    answers = [gemini.answer(c, ToolResult.from_value("booked")) for c in calls]
    reply = gemini.live_tool_response([*answers, *rejected], scheduling="INTERRUPT")
    assert [r["scheduling"] for r in reply["toolResponse"]["functionResponses"]] == [
        "INTERRUPT",
        "INTERRUPT",
    ]
    assert reply["toolResponse"]["functionResponses"][0] == {
        "name": "book_ticket",
        "id": "f1",
        "response": {"output": "booked"},
        "scheduling": "INTERRUPT",
    }
    sdk = types.LiveClientToolResponse.model_validate(reply["toolResponse"])
    assert {r.scheduling for r in sdk.function_responses} == {
        types.FunctionResponseScheduling.INTERRUPT
    }
    # The answers themselves are not changed; without scheduling each keeps its own.
    assert "scheduling" not in answers[0]["functionResponse"]
    assert gemini.live_tool_response(answers) == {
        "toolResponse": {"functionResponses": [answers[0]["functionResponse"]]}
    }


def test_answers_carry_the_scheduling_option() -> None:
    silent = gemini.function_response("book_ticket", "booked", id="f1", scheduling="SILENT")
    assert silent == {
        "functionResponse": {
            "name": "book_ticket",
            "id": "f1",
            "response": {"output": "booked"},
            "scheduling": "SILENT",
        }
    }
    assert _validated(silent).function_response.scheduling == "SILENT"
    listing = toolwire.tools(LIVE, "gemini", schema="openapi", non_blocking=True)
    response = gemini.response_for([("f1", "book_ticket", {})])
    outcome = anyio.run(
        lambda: toolwire.execute_tool_calls(listing, response, scheduling="WHEN_IDLE")
    )
    reply = gemini.live_tool_response(outcome.results)
    (sent,) = types.LiveClientToolResponse.model_validate(reply["toolResponse"]).function_responses
    assert sent.scheduling == types.FunctionResponseScheduling.WHEN_IDLE
    assert types.FunctionResponse.model_validate(outcome.results[0]["functionResponse"]) == sent
    # By default no answer carries one.
    default = anyio.run(toolwire.execute_tool_calls, listing, response)
    assert "scheduling" not in default.results[0]["functionResponse"]


# -- options refused -----------------------------------------------------------------------------


def test_a_non_blocking_name_no_tool_has_is_warned_about_naming_the_declared_ones() -> None:
    # Warned, not refused: a listing must not fail because a server with that tool is down.
    with pytest.warns(ToolwireWarning, match=r"'book'.*declared: book_ticket, time_in"):
        listing = toolwire.tools(LIVE, "gemini", non_blocking=["book"])
    assert not any("behavior" in d for d in listing.tools[0]["functionDeclarations"])
    with pytest.warns(ToolwireWarning, match="'book'"):
        gemini.function_declarations(LIVE, non_blocking=("book",))


def test_a_non_blocking_name_a_policy_hides_is_let_be() -> None:
    policy = toolwire.Policy(toolwire.Rule("deny", "book_ticket"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        listing = toolwire.tools(LIVE, "gemini", non_blocking=["book_ticket"], policy=policy)
    names = [d["name"] for d in listing.tools[0]["functionDeclarations"]]
    assert "book_ticket" not in names


@pytest.mark.parametrize(
    ("options", "named"),
    [
        pytest.param({"non_blocking": "book_ticket"}, "'non_blocking'", id="a string"),
        pytest.param({"non_blocking": None}, "'non_blocking'", id="none"),
        pytest.param({"non_blocking": [1]}, "exposed name, not 1", id="not a name"),
        pytest.param({"scheduling": "NOW"}, "'scheduling'", id="scheduling"),
        pytest.param({"scheduling": "interrupt"}, "'scheduling'", id="scheduling case"),
        pytest.param({"public_urls": "yes"}, "'public_urls'", id="public urls"),
    ],
)
def test_options_of_the_wrong_kind_are_refused(options: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        toolwire.tools(LIVE, "gemini", **options)


def test_a_scheduling_gemini_does_not_take_is_refused_everywhere() -> None:
    with pytest.raises(ConfigurationError, match="INTERRUPT"):
        gemini.function_response("t", "x", scheduling="LATER")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="INTERRUPT"):
        gemini.live_tool_response([], scheduling="LATER")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="INTERRUPT"):
        gemini.GeminiOptions(scheduling="LATER")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="'gemini' or 'vertex'"):
        gemini.function_response("t", "x", backend="aws")  # type: ignore[arg-type]


def test_non_blocking_is_fixed_when_the_tools_are_declared() -> None:
    listing = toolwire.tools(LIVE, "gemini")
    response = gemini.response_for([("f1", "book_ticket", {})])
    with pytest.raises(ConfigurationError, match="non_blocking: fixed when the tools were"):
        anyio.run(lambda: toolwire.execute_tool_calls(listing, response, non_blocking=True))
