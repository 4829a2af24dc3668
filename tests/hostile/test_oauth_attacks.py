"""The hub's OAuth attacked from the servers' side: metadata pointing elsewhere, plain http,
hanging and oversized answers, tokens in URLs, errors quoting the request. Each gives one
typed line (``AuthorizationError`` with its ``reason``), nothing is sent where it should not
go, and no token, secret or code shows in the error, the logs or the spans."""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from toolwire import AuthorizationError, make_call

pytest.importorskip("mcp")
sys.path.insert(0, str(Path(__file__).parent.parent / "mcp_hub"))
from oauth_servers import AuthServer, follow_authorization, oauth_pair, serving

from toolwire._scrub import scrub
from toolwire.mcp import HttpServer, Hub, MemoryTokenStore, OAuth
from toolwire.mcp.client._oauth import callback_result

pytestmark = pytest.mark.anyio

SECRET = "pre-registered-secret-0123456789"


def authorizing(url: str, **options: Any) -> HttpServer:
    options.setdefault("authorize", follow_authorization)
    options.setdefault("store", MemoryTokenStore())
    return HttpServer(url=url, auth=OAuth(**options))


async def refused(spec: HttpServer, auth: AuthServer, logs: pytest.LogCaptureFixture) -> Any:
    """The AuthorizationError the hub's connection fails with, checked for leaks."""
    with anyio.fail_after(30):
        async with Hub({"g": spec}) as hub:
            errors = hub.authorization_errors
            status = hub.status["g"] or ""
    assert list(errors) == ["g"], status
    error = errors["g"]
    assert isinstance(error, AuthorizationError)
    assert error.server == "g"
    text = str(error)
    assert "\n" not in text
    assert text.startswith("OAuth for g: ")
    shown = text + repr(error) + status + logs.text
    assert [secret for secret in [*auth.issued, SECRET] if secret in shown] == []
    return error


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    return caplog


async def test_protected_resource_metadata_naming_another_server_is_refused(
    logs: pytest.LogCaptureFixture,
) -> None:
    with oauth_pair() as (auth, protected):
        protected.prm_overrides["resource"] = "https://elsewhere.example/mcp"
        error = await refused(authorizing(protected.url), auth, logs)
    assert error.reason == "resource_mismatch"
    assert (auth.registrations, auth.token_requests) == (0, [])


async def test_authorization_server_metadata_naming_another_issuer_is_refused(
    logs: pytest.LogCaptureFixture,
) -> None:
    with oauth_pair() as (auth, protected):
        auth.metadata_overrides["issuer"] = "https://elsewhere.example"
        error = await refused(authorizing(protected.url), auth, logs)
    assert error.reason == "issuer_mismatch"
    assert (auth.registrations, auth.token_requests) == (0, [])


async def test_a_server_naming_another_authorization_server_than_the_configured_one(
    logs: pytest.LogCaptureFixture,
) -> None:
    with oauth_pair() as (auth, protected):
        auth.register("pre", SECRET, ["http://127.0.0.1:9/callback"])
        spec = authorizing(
            protected.url,
            client_id="pre",
            client_secret=SECRET,
            redirect_uri="http://127.0.0.1:9/callback",
            issuer="https://login.example.com",
        )
        error = await refused(spec, auth, logs)
    assert error.reason == "issuer_mismatch"
    assert "nothing was sent" in str(error)
    # Not even its metadata was asked for; the secret never left.
    assert (auth.metadata_requests, auth.token_requests) == (0, [])


async def test_endpoints_on_plain_http_off_loopback_are_never_contacted(
    logs: pytest.LogCaptureFixture,
) -> None:
    with oauth_pair() as (auth, protected):
        auth.metadata_overrides["registration_endpoint"] = "http://auth.example.com/register"
        auth.metadata_overrides["token_endpoint"] = "http://auth.example.com/token"
        error = await refused(authorizing(protected.url), auth, logs)
    assert error.reason == "insecure_endpoint"
    assert "http://auth.example.com/register" in str(error)


async def test_a_token_endpoint_that_hangs_is_given_up_after_the_timeout(
    logs: pytest.LogCaptureFixture,
) -> None:
    with oauth_pair() as (auth, protected):
        auth.hang_token = True
        error = await refused(authorizing(protected.url, timeout=1.0), auth, logs)
    assert error.reason == "timeout"
    assert "token request" in str(error)
    assert "within 1 s" in str(error)


@pytest.mark.parametrize("where", ["metadata", "token"])
async def test_an_oversized_answer_is_cut_off(where: str, logs: pytest.LogCaptureFixture) -> None:
    with oauth_pair() as (auth, protected):
        auth.oversized.add(where)
        error = await refused(authorizing(protected.url), auth, logs)
    assert error.reason == "oversized"
    assert "over 1024 KiB" in str(error)


async def test_a_compressed_answer_is_refused(logs: pytest.LogCaptureFixture) -> None:
    with oauth_pair() as (auth, protected):
        auth.compressed.add("token")
        error = await refused(authorizing(protected.url), auth, logs)
    assert error.reason == "oversized"
    assert "compressed (gzip)" in str(error)


async def test_a_token_in_the_redirect_url_is_refused_and_not_used(
    logs: pytest.LogCaptureFixture,
) -> None:
    with oauth_pair() as (auth, protected):
        auth.token_in_url = True
        error = await refused(authorizing(protected.url), auth, logs)
        assert all(seen is None for seen in protected.seen)
    assert error.reason == "callback"
    assert "implicit grant" in str(error)


async def test_a_token_error_quoting_the_request_is_not_repeated(
    logs: pytest.LogCaptureFixture,
) -> None:
    with oauth_pair() as (auth, protected):
        auth.echo_errors = True  # its error_description is the whole form: code, verifier...
        error = await refused(authorizing(protected.url), auth, logs)
    assert error.reason == "token_refused"
    assert str(error).endswith("failed (400: invalid_grant)")


async def test_a_malformed_token_answer_carrying_a_refresh_token_is_not_repeated(
    logs: pytest.LogCaptureFixture,
) -> None:
    with oauth_pair() as (auth, protected):
        auth.malformed_token = True
        error = await refused(authorizing(protected.url), auth, logs)
    assert error.reason in ("token_refused", "metadata")


async def test_a_metadata_redirect_to_another_host_is_not_followed(
    logs: pytest.LogCaptureFixture,
) -> None:
    elsewhere = AuthServer()
    with serving(elsewhere) as url, oauth_pair() as (auth, protected):
        elsewhere.url = url
        auth.redirect_metadata = f"{url}/.well-known/oauth-authorization-server"
        error = await refused(authorizing(protected.url), auth, logs)
    assert elsewhere.metadata_requests == 0
    assert error.reason in ("registration", "metadata", "flow")


async def test_a_pre_registered_secret_never_shows_when_its_token_request_fails(
    logs: pytest.LogCaptureFixture,
) -> None:
    with oauth_pair() as (auth, protected):
        auth.register("pre", "another-secret-0123456789", ["http://127.0.0.1:9/callback"])
        spec = authorizing(
            protected.url,
            client_id="pre",
            client_secret=SECRET,  # not the one registered: refused
            redirect_uri="http://127.0.0.1:9/callback",
            issuer=auth.url,
        )
        error = await refused(spec, auth, logs)
    assert error.reason == "token_refused"
    assert str(error).endswith("(401: invalid_client)")


async def test_no_token_reaches_a_span(logs: pytest.LogCaptureFixture) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = MemoryTokenStore()
    with oauth_pair() as (auth, protected):
        with anyio.fail_after(30):
            async with Hub({"g": authorizing(protected.url, store=store)}) as hub:
                tools = hub.as_toolset()
                executor = toolwire.Executor(tools, tracer_provider=provider)
                auth.expire_access()  # refreshed on the way
                first = await executor.run([make_call(tools, "g__add", {"a": 1, "b": 2})])
                auth.revoke_all()  # then refused: authorized anew (the authorizer is there)
                second = await executor.run([make_call(tools, "g__add", {"a": 1, "b": 2})])
        assert first[0].result.structured_content == {"result": 3}
        assert second[0].result.structured_content == {"result": 3}
        assert [r["grant_type"] for r in auth.token_requests] == [
            "authorization_code",
            "refresh_token",
            "refresh_token",
            "authorization_code",
        ]
        spans = exporter.get_finished_spans()
        assert spans
        shown = " ".join(
            f"{span.name} {dict(span.attributes or {})} {span.status.description} "
            + " ".join(f"{event.name} {dict(event.attributes or {})}" for event in span.events)
            for span in spans
        )
        assert [secret for secret in auth.issued if secret in shown + logs.text] == []


# -- what comes back from the browser ---------------------------------------------------------

REDIRECT = "http://127.0.0.1:8123/callback"


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("http://127.0.0.1:8123/callback#access_token=tok-123456&state=s", "implicit grant"),
        ("http://127.0.0.1:8123/callback?token=tok-123456&state=s", "implicit grant"),
        ("http://127.0.0.1:8123/callback?code=a&code=b&state=s", "twice"),
        ("http://127.0.0.1:8124/callback?code=tok-123456&state=s", "redirect URI"),
        ("https://evil.example/callback?code=tok-123456&state=s", "redirect URI"),
        ("http://127.0.0.1:8123/callback?error=access_denied&state=s", "refused (access_denied)"),
        ("http://127.0.0.1:8123/callback?error=%3Cscript%3E&state=s", "an unnamed error"),
        ("http://127.0.0.1:8123/callback?state=s", "no code"),
        ("not a url at all", "redirect URI"),
    ],
)
def test_a_bad_authorization_answer_is_refused_without_repeating_it(answer: str, why: str) -> None:
    with pytest.raises(AuthorizationError, match=re.escape(why)) as raised:
        callback_result(answer, REDIRECT, "g")
    assert raised.value.reason == "callback"
    assert "tok-123456" not in str(raised.value)
    assert "<script>" not in str(raised.value)


def test_a_good_answer_gives_its_code_state_and_issuer() -> None:
    result = callback_result(f"{REDIRECT}?code=c0de&state=s7&iss=https%3A%2F%2Fas", REDIRECT, "g")
    assert (result.code, result.state, result.iss) == ("c0de", "s7", "https://as")


@pytest.mark.parametrize(
    "text",
    [
        '{"access_token": "tok-123456", "token_type": "Bearer"}',
        "refresh_token=tok-123456&grant_type=refresh_token",
        "Authorization: Bearer tok-123456",
        "Basic tok-123456",
        "https://as.example/cb?code=tok-123456&state=x",
        "client_secret='tok-123456'",
        "input_value={'refresh_token': 'tok-123456'}",
    ],
)
def test_scrub_takes_credentials_out_of_text(text: str) -> None:
    assert "tok-123456" not in scrub(text)


_TOKEN = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~",
    min_size=8,
    max_size=64,
)


@settings(max_examples=200, deadline=None)
@given(
    token=_TOKEN,
    name=st.sampled_from(
        ["access_token", "refresh_token", "id_token", "client_secret", "code_verifier", "code"]
    ),
    shape=st.sampled_from(
        [
            '{{"{name}": "{token}"}}',
            "{name}={token}&x=1",
            "{{'{name}': '{token}'}}",
            "{name}: {token}",
        ]
    ),
    around=st.text(max_size=40),
)
def test_scrub_takes_any_credential_field_out(
    token: str, name: str, shape: str, around: str
) -> None:
    text = around + shape.format(name=name, token=token) + around
    assert token not in scrub(text) or token in around


@settings(max_examples=200, deadline=None)
@given(
    secret=_TOKEN,
    key=st.sampled_from(["access_token", "token", "id_token", "error", "code", "state", "other"]),
    where=st.sampled_from(["?", "#"]),
    port=st.sampled_from([8123, 8124]),
)
def test_no_authorization_answer_error_repeats_what_came_back(
    secret: str, key: str, where: str, port: int
) -> None:
    answer = f"http://127.0.0.1:{port}/callback{where}{key}={secret}&state=s"
    message = ""
    try:
        callback_result(answer, REDIRECT, "g")
    except AuthorizationError as error:
        message = str(error)
    assert secret not in message
