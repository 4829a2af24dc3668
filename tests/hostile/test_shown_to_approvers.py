"""What a human approves is shown so that it cannot pass for another value.

Reproduction (issue 27, item 5): an argument holding U+202E (right-to-left override) showed as
``/srv/app/logs/old.log`` for a path that is something else, on the console's list and request
pages and in the gateway's approval form. Bidi controls, zero-width and other invisible
characters, controls and unusual spaces now reach the approver as escapes (``\\u202e``), with
a warning naming the fields that hold some; in the tool's name, the argument keys, the
principal, the reason and who decided as much as in the argument values. The stored value is
unchanged, and it is what an approval approves.
"""

from __future__ import annotations

import ast
import html
import json
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from served_console import API, RAN, TOOLS, pause, resume, run, serving

from toolwire import MemoryStore, Policy, Rule, SQLiteStore
from toolwire._text import hides, json_hides, visible, visible_json, visible_json_text
from toolwire.approval import ApprovalRequest
from toolwire.cli import main
from toolwire.inbox import app

mcp = pytest.importorskip("mcp")
mcp_types = pytest.importorskip("mcp_types")

from toolwire.mcp import Gateway  # noqa: E402  (after the extra's check)
from toolwire.mcp.server._forms import form_message as _form_message  # noqa: E402

RLO = "\u202e"
# Shows as /srv/app/logs/old.log: the override reverses "gol.dlo".
SPOOFED = "/srv/app/logs/" + RLO + "gol.dlo"

# -- what counts as hidden, written out independently of toolwire's own table -----------------

HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
# Default_Ignorable_Code_Point characters that are printable (variation selectors, fillers, the
# combining grapheme joiner), and the blank Braille pattern, which draws nothing.
PRINTABLE_IGNORABLE = (
    {chr(c) for c in range(0xFE00, 0xFE10)}
    | {chr(c) for c in range(0xE0100, 0xE01F0)}
    | {chr(c) for c in (0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F)}
    | {"\u3164", "\uffa0", "\u2800"}
)


def is_hidden(char: str) -> bool:
    category = unicodedata.category(char)
    return (
        category in HIDDEN_CATEGORIES
        or (category == "Zs" and char != " ")
        or char in PRINTABLE_IGNORABLE
    )


SAMPLES = [
    RLO, "\u202a", "\u202b", "\u202c", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069",
    "\u200e", "\u200f", "\u061c", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad",
    "\u180e", "\U000e0001", "\U000e0041", "\U000e007f", "\ufe0f", "\U000e0100", "\u034f",
    "\u115f", "\u3164", "\uffa0", "\u2800", "\x00", "\x1b", "\x7f", "\x85", "\x9b", "\n", "\t",
    "\r", "\u2028", "\u2029", "\u00a0", "\u2003", "\u3000", "\ue000", "\U0010fffd", "\u0378",
]  # fmt: skip
assert all(is_hidden(char) for char in SAMPLES)

PIECE = st.one_of(
    st.text(max_size=6),
    st.sampled_from(SAMPLES),
    st.characters(categories=["Cc", "Cf", "Co", "Cn", "Zs", "Zl", "Zp", "Mn"]),
    st.sampled_from(["\\", "\\u202e", "\\n", "\\\\", "old.log"]),  # text that looks like escapes
)
HIDING_TEXT = st.lists(PIECE, max_size=10).map("".join)
WITH_SURROGATES = st.lists(PIECE | st.characters(categories=["Cs"]), max_size=10).map("".join)
JSON_OF = st.recursive(
    st.none() | st.booleans() | st.integers() | HIDING_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(HIDING_TEXT, inner, max_size=3),
    max_leaves=8,
)

_ESCAPE = re.compile(r"\\(u[0-9a-f]{4}|U[0-9a-f]{8}|n|t|r|\\)")
_SHORT = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}


def read_back(shown: str) -> str:
    """The text ``visible`` showed, read back from its escapes."""
    return _ESCAPE.sub(lambda m: _SHORT.get(m[1]) or chr(int(m[1][1:], 16)), shown)


def raw_hidden(text: str, *, but: str = "") -> list[str]:
    return [char for char in text if is_hidden(char) and char not in but]


# -- the escapes: hypothesis -------------------------------------------------------------------


@settings(max_examples=500)
@given(text=WITH_SURROGATES)
def test_shown_text_never_holds_a_hidden_character_and_reads_back(text: str) -> None:
    shown = visible(text)
    assert raw_hidden(shown) == []
    assert read_back(shown) == text  # so no two texts are shown alike
    assert hides(text) == bool(raw_hidden(text))


@settings(max_examples=500)
@given(value=JSON_OF)
def test_shown_json_never_holds_a_hidden_character_and_is_the_same_json(value: Any) -> None:
    for indent in (None, 2):
        shown = visible_json(value, indent=indent)
        assert raw_hidden(shown, but="\n") == []  # a newline between tokens is layout
        assert json.loads(shown) == value
    assert json_hides(value) == bool(raw_hidden(json.dumps(value, ensure_ascii=False)))


@settings(max_examples=300)
@given(text=HIDING_TEXT)
def test_json_someone_typed_stays_the_same_json_once_shown(text: str) -> None:
    typed = json.dumps({"path": text}, ensure_ascii=False, indent=1)
    shown = visible_json_text(typed)
    assert raw_hidden(shown, but="\n") == []
    assert json.loads(shown) == {"path": text}


# -- the console, served over real HTTP ---------------------------------------------------------


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Any]]:
    """A client of one console served for the module (signed in as a name with a bidi
    control), and its store."""
    store = SQLiteStore(tmp_path_factory.mktemp("console") / "runs.db")
    try:
        with (
            serving(app(store, authorize=lambda request: "mallory" + RLO + "eci")) as url,
            httpx.Client(base_url=url, headers=API, timeout=30) as http,
        ):
            yield http, store
    finally:
        store.close()


def textarea_of(page: str) -> str:
    found = re.search(r'<textarea id="edited"[^>]*>(.*?)</textarea>', page, re.DOTALL)
    assert found is not None, page
    return html.unescape(found.group(1))


def pre_of(page: str) -> str:
    found = re.search(r'<pre class="arguments" id="arguments">(.*?)</pre>', page, re.DOTALL)
    assert found is not None, page
    return html.unescape(found.group(1))


def form_fields(page: str) -> dict[str, str]:
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    version = re.search(r'name="version" value="(\d+)"', page)
    assert csrf is not None, page
    assert version is not None, page
    return {"csrf": csrf.group(1), "version": version.group(1)}


def test_a_bidi_path_is_shown_escaped_and_flagged_on_every_page(
    console: tuple[httpx.Client, Any],
) -> None:
    http, store = console
    RAN.clear()
    run(pause, store, "spoof", {"path": SPOOFED})
    listed = http.get("/", params={"tool": "move_file"})
    region = http.get("/fragments/pending")
    url = "/runs/spoof/calls/c1"
    page = http.get(url)
    for answer in (listed, region, page):
        assert answer.status_code == 200
        assert raw_hidden(answer.text, but="\n") == [], answer.request.url
        assert "/srv/app/logs/\\u202egol.dlo" in html.unescape(answer.text)
    # flagged: the row carries a mark, the page a warning naming the field
    row = re.search(r'<tr class="request" data-hidden="([^"]*)">(?:(?!</tr>).)*spoof', listed.text)
    assert row is not None
    assert row.group(1) == "the arguments"
    assert '<span class="hidden-chars"' in region.text
    assert re.search(
        r'<div class="hidden-chars" role="alert" data-fields="the arguments">', page.text
    )
    assert "signed in as mallory\\u202eeci" in page.text  # who the console thinks you are
    # the arguments as shown are the same JSON: approving as edited, untouched, approves the value
    assert json.loads(pre_of(page.text)) == {"path": SPOOFED}
    edited = textarea_of(page.text)
    assert json.loads(edited) == {"path": SPOOFED}
    posted = http.post(url, data={**form_fields(page.text), "action": "edit", "arguments": edited})
    assert posted.status_code == 303
    run(resume, store, "spoof", {"path": SPOOFED})
    assert RAN == [{"path": SPOOFED, "destination": "/srv/trash"}]  # the stored value ran
    history = http.get("/runs/spoof")
    assert raw_hidden(history.text, but="\n") == []
    assert "mallory\\u202eeci" in html.unescape(history.text)


def test_keys_tool_principal_and_reason_are_shown_escaped_too(
    console: tuple[httpx.Client, Any],
) -> None:
    http, store = console
    hidden_reason = Policy(Rule("ask", "*", reason="routine\u2066 cleanup\u2069"))
    run(
        pause,
        store,
        "keys",
        {"path": "a", "destination\u200b": "/etc"},  # a key that looks like "destination"
        principal={"team": "ops\u200d"},
        policy=hidden_reason,
    )
    page = http.get("/runs/keys/calls/c1")
    assert page.status_code == 200
    assert raw_hidden(page.text, but="\n") == []
    shown = html.unescape(page.text)
    assert '"destination\\u200b": "/etc"' in shown
    assert '{"team": "ops\\u200d"}' in shown
    assert "routine\\u2066 cleanup\\u2069" in shown
    warning = re.search(r'<div class="hidden-chars" role="alert" data-fields="([^"]*)">', page.text)
    assert warning is not None
    assert warning.group(1).split(", ") == ["the principal", "the reason", "the arguments"]
    listed = http.get("/", params={"principal": json.dumps({"team": "ops\u200d"})})
    assert raw_hidden(listed.text, but="\n") == []
    row = re.search(r'data-hidden="([^"]*)"', listed.text)
    assert row is not None
    assert row.group(1).split(", ") == ["the arguments", "the principal", "the reason"]


def test_a_clean_request_carries_no_warning(console: tuple[httpx.Client, Any]) -> None:
    http, store = console
    run(pause, store, "clean", {"path": "/srv/app/logs/old.log"})
    page = http.get("/runs/clean/calls/c1")
    assert 'class="hidden-chars"' not in page.text
    assert '"path": "/srv/app/logs/old.log"' in html.unescape(page.text)


counter = iter(range(10**9))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=HIDING_TEXT, key=HIDING_TEXT)
def test_any_hidden_text_is_shown_escaped_and_reads_back_from_the_page(
    console: tuple[httpx.Client, Any], path: str, key: str
) -> None:
    http, store = console
    run_id = f"any-{next(counter)}"
    arguments = {"path": path, **({key: path} if key not in ("path", "destination") else {})}
    run(pause, store, run_id, arguments)
    page = http.get(f"/runs/{run_id}/calls/c1")
    assert page.status_code == 200
    assert raw_hidden(page.text, but="\n") == []
    assert json.loads(pre_of(page.text)) == arguments
    assert json.loads(textarea_of(page.text)) == arguments
    flagged = 'data-fields="the arguments"' in page.text
    assert flagged == json_hides(arguments)


# -- the gateway's approval form ----------------------------------------------------------------


def request_of(arguments: dict[str, Any], **fields: Any) -> ApprovalRequest:
    return ApprovalRequest(
        run_id="r",
        call_id="c",
        tool=None,
        exposed_name=fields.get("exposed_name", "move_file"),
        arguments=arguments,
        principal=None,
        reason=fields.get("reason", "moving files needs a human"),
    )


def test_the_form_message_escapes_and_warns() -> None:
    message = _form_message(request_of({"path": SPOOFED}))
    assert raw_hidden(message) == []
    assert message.startswith("Warning: the arguments hold hidden characters")
    assert 'Allow the call move_file {"path": "/srv/app/logs/\\u202egol.dlo"}?' in message
    clean = _form_message(request_of({"path": "/srv/app/logs/old.log"}))
    assert clean == (
        'Allow the call move_file {"path": "/srv/app/logs/old.log"}? (moving files needs a human)'
    )


@settings(max_examples=300)
@given(arguments=st.dictionaries(HIDING_TEXT, JSON_OF, max_size=3), reason=HIDING_TEXT)
def test_the_form_message_never_holds_a_hidden_character(
    arguments: dict[str, Any], reason: str
) -> None:
    message = _form_message(request_of(arguments, reason=reason or None))
    assert raw_hidden(message) == []
    assert message.startswith("Warning:") == (json_hides(arguments) or hides(reason))


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_gateway_asks_the_client_with_the_path_escaped(mode: str) -> None:
    """``auto`` negotiates 2026-07-28 (the form rides an InputRequiredResult); ``legacy`` gets
    a pushed ``elicitation/create``."""
    RAN.clear()
    seen: list[str] = []

    async def approve(context: Any, params: Any) -> Any:
        seen.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"approve": True})

    gateway = Gateway(
        TOOLS, policy=Policy(Rule("ask", "*")), store=MemoryStore(), approve_by="client"
    )
    with anyio.fail_after(60):
        async with mcp.Client(gateway.server(), mode=mode, elicitation_callback=approve) as client:
            result = await client.call_tool("move_file", {"path": SPOOFED})
    assert result.is_error is False
    (message,) = seen
    assert raw_hidden(message) == []
    assert message.startswith("Warning: the arguments hold hidden characters")
    assert "/srv/app/logs/\\u202egol.dlo" in message
    assert RAN == [{"path": SPOOFED, "destination": "/srv/trash"}]  # what ran is the value


# -- toolwire pending ---------------------------------------------------------------------------


def test_toolwire_pending_prints_escapes_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "runs.db"
    store = SQLiteStore(database)
    try:
        run(pause, store, "spoof", {"path": SPOOFED})
    finally:
        store.close()
    assert main(["pending", "--store", f"sqlite:///{database}"]) == 0
    printed = capsys.readouterr().out
    assert raw_hidden(printed, but="\n") == []
    assert '{"path": "/srv/app/logs/\\u202egol.dlo"}' in printed
    assert "careful: hidden characters" in printed
    assert main(["pending", "--store", f"sqlite:///{database}", "--json"]) == 0
    printed = capsys.readouterr().out
    assert raw_hidden(printed, but="\n") == []
    assert json.loads(printed)[0]["arguments"] == {"path": SPOOFED}  # the same JSON


def test_the_escapes_are_pythons_own() -> None:
    # a text shown is also the string literal that gives it back
    for text in (SPOOFED, "a\\b\n\U000e0041\u00a0", "\\u202e"):
        assert ast.literal_eval('"' + visible(text) + '"') == text
