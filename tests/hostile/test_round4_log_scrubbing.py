"""Credentials out of every log record toolwire's code paths can cause, whichever surface
makes it and whether or not OAuth is used: a server URL's user info or query (under any
name), a static header at DEBUG, an exception toolwire logs, a record whose arguments do not
fit its message, and the filter in place from ``import toolwire`` on, before anything else
is imported. A record without a credential is left as it came."""

from __future__ import annotations

import ast
import importlib.util
import logging
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import toolwire
from toolwire._scrub import LOGGERS, Scrubbing, scrub

pytest.importorskip("mcp")
sys.path.insert(0, str(Path(__file__).parent.parent / "mcp_hub"))
from mcp_servers import catalogue
from oauth_servers import serving

from toolwire.mcp import HttpServer, Hub

pytestmark = pytest.mark.anyio


def add_call(server: str) -> list[dict[str, Any]]:
    return [{"functionCall": {"name": f"{server}__add", "args": {"a": 2, "b": 3}, "id": "c1"}}]


def shown(caplog: pytest.LogCaptureFixture) -> str:
    """Everything the captured records show: as formatted, and each message and argument."""
    parts = [caplog.text]
    for record in caplog.records:
        parts.append(record.getMessage())
        parts.append(repr(record.args))
        parts.append(record.exc_text or "")
    return "\n".join(parts)


@pytest.fixture
def plain_server() -> Iterator[str]:
    """An MCP server with no authorization, over streamable HTTP on 127.0.0.1."""
    with serving(catalogue().streamable_http_app()) as base:
        yield f"{base}/mcp"


async def test_user_info_and_a_static_header_show_in_no_record_even_at_debug(
    plain_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url = plain_server.replace("http://", "http://reader:userinfo-secret-42@")
    spec = HttpServer(url=url, headers={"Authorization": "Bearer header-secret-42"})
    with anyio.fail_after(30):
        async with Hub({"p": spec}) as hub:
            outcome = await toolwire.execute_tool_calls(hub, "gemini", add_call("p"))
    assert outcome.calls[0].result.text == "5"
    text = shown(caplog)
    assert "userinfo-secret-42" not in text
    assert "header-secret-42" not in text
    assert "http://***@127.0.0.1" in text  # the request was logged, without the user info


async def test_a_credential_under_any_query_name_shows_in_no_record(
    plain_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    names = ["token", "key", "password", "api_key", "apikey", "secret", "sig", "X-Api-Key", "x"]
    secrets = {name: f"query-secret-{index:02d}-abcdef" for index, name in enumerate(names)}
    specs = {
        f"s{index}": HttpServer(url=f"{plain_server}?{name}={secrets[name]}&region=eu")
        for index, name in enumerate(names)
    }
    with anyio.fail_after(60):
        async with Hub(specs) as hub:
            assert set(hub.status.values()) == {None}
            outcome = await toolwire.execute_tool_calls(hub, "gemini", add_call("s3"))
    assert outcome.calls[0].result.text == "5"
    text = shown(caplog)
    assert [name for name, secret in secrets.items() if secret in text] == []
    assert text.count("/mcp?***") >= len(names)


async def test_a_credential_in_an_exception_toolwire_logs_shows_in_no_record(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)

    @toolwire.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    def fetching_hook(context: toolwire.CallContext) -> None:
        raise ConnectionError(
            "cannot reach https://user:exc-pass-0123@api.example/v1?api_key=exc-key-0123 "
            "(password=exc-word-0123)"
        )

    outcome = await toolwire.execute_tool_calls(
        [add],
        "gemini",
        [{"functionCall": {"name": "add", "args": {"a": 1, "b": 2}, "id": "c1"}}],
        before_call=[fetching_hook],
    )
    assert outcome.calls[0].result.is_error
    [record] = [r for r in caplog.records if r.name == "toolwire"]
    assert "before-call hook failed" in record.getMessage()
    text = shown(caplog)
    for secret in ("exc-pass-0123", "exc-key-0123", "exc-word-0123"):
        assert secret not in text
    assert "ConnectionError" in text  # the traceback is kept, cleaned
    assert record.exc_info is None  # a formatter of the application cannot format it again


def test_a_record_without_a_credential_is_left_as_it_came(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    log = logging.getLogger("toolwire")
    try:
        raise ValueError("nothing secret here")
    except ValueError:
        log.warning("run %s waits for %d calls", "run-1", 2, exc_info=True)
    [record] = caplog.records
    assert (record.msg, record.args) == ("run %s waits for %d calls", ("run-1", 2))
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], ValueError)


def test_a_record_whose_arguments_do_not_fit_shows_none_of_them(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    # A handler that cannot format a record prints its arguments on stderr.
    caplog.set_level(logging.INFO)
    logging.getLogger("httpx2").info("request %s", "a", "http://h.example/?api_key=unfit-0123")
    assert "unfit-0123" not in shown(caplog) + capsys.readouterr().err


def test_the_filter_is_in_place_from_import_toolwire_before_any_other_import() -> None:
    script = textwrap.dedent(
        """
        import logging, sys
        import toolwire
        loaded = [m for m in sys.modules if m.split(".")[0] in ("mcp", "httpx2", "httpcore2")]
        assert loaded == [], loaded
        # The application's logging configuration is its own: nothing but the filter added.
        assert logging.getLogger().handlers == [] and logging.getLogger().level == logging.WARNING
        for name in ("toolwire", "httpx2", "mcp.client.streamable_http", "client"):
            logger = logging.getLogger(name)
            assert (logger.level, logger.propagate, logger.handlers, logger.disabled) == (
                logging.NOTSET, True, [], False
            ), name
        logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(name)s %(message)s")
        secret = "import-secret-0123"
        url = f"http://127.0.0.1:9/mcp?api_key={secret}"
        logging.getLogger("httpx2").info('HTTP Request: POST %s "HTTP/1.1 200 OK"', url)
        import mcp.client.streamable_http as transport  # the SDK's module, imported later
        transport.logger.info("GET stream from http://user:%s@127.0.0.1:9/mcp", secret)
        logging.getLogger("toolwire").warning("failed: %s", RuntimeError(f"token={secret}"))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(" ")[0] for line in lines] == [
        "httpx2",
        "mcp.client.streamable_http",
        "toolwire",
    ]
    assert "import-secret-0123" not in done.stdout + done.stderr
    assert all("***" in line for line in lines)


def _named_loggers(package: str) -> set[str]:
    """The loggers the installed ``package``'s modules make, by name (read from its source):
    ``getLogger(__name__)`` and ``getLogger("name")``, the SDK's ``get_logger`` too."""
    spec = importlib.util.find_spec(package)
    assert spec is not None
    assert spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations)))
    found = set()
    for path in root.rglob("*.py"):
        module = ".".join((package, *path.relative_to(root).with_suffix("").parts))
        module = module.removesuffix(".__init__")
        if module.endswith(".__main__") or module.startswith("mcp.cli"):
            continue  # the SDK's own command line, never on toolwire's paths
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            name = ast.unparse(node.func).rpartition(".")[2]
            if name not in ("getLogger", "get_logger"):
                continue
            argument = node.args[0]
            if isinstance(argument, ast.Name) and argument.id == "__name__":
                found.add(module)
            elif isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                found.add(argument.value)
    return found


@pytest.mark.parametrize("package", ["toolwire", "mcp", "httpx2", "httpcore2"])
def test_every_logger_on_toolwires_paths_is_scrubbed(package: str) -> None:
    # A logger's filter sees only the records made on it: an SDK release adding a logger
    # fails here instead of leaking.
    named = _named_loggers(package)
    assert named
    missing = sorted(name for name in named if name not in LOGGERS)
    assert missing == []
    unfiltered = [
        name
        for name in named
        if not any(isinstance(each, Scrubbing) for each in logging.getLogger(name).filters)
    ]
    assert unfiltered == []


@pytest.mark.parametrize(
    "size", [400_000, pytest.param(2_000_000, marks=pytest.mark.deep)], ids=["400KB", "2MB"]
)
def test_scrubbing_an_adversarial_text_ends(size: int) -> None:
    # Each text below took seconds at 40 KB (quadratic) in an earlier scrub; at 400 KB that is
    # many minutes, at 2 MB hours. The bound is only a hang detector.
    script = textwrap.dedent(
        f"""
        from toolwire._scrub import scrub
        for piece in ("a://", "http://a@", "http://x/?", "http://x/#?", "a.", "key=", "Bearer "):
            text = piece * ({size} // len(piece))
            assert len(scrub(text)) <= len(text) * 2
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("POST http://u:pw-0123456@h.example/mcp", "pw-0123456"),
        ("redis://:redis-pw-0123@cache:6379/0", "redis-pw-0123"),
        ("x(https://h.example/a?b=q-0123456)y", "q-0123456"),
        ("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxhttp://h/?long-prefix-0123", "long-prefix-0123"),
        ("GET /mcp?api_key=rel-0123456 HTTP/1.1", "rel-0123456"),
        ("X-Api-Key: hdr-0123456", "hdr-0123456"),
        ('{"secret": "js-0123456"}', "js-0123456"),
        ("key=bare-0123456", "bare-0123456"),
        ("http://h/p#frag http://h2/?after-frag-0123", "after-frag-0123"),
    ],
)
def test_scrub_takes_out_user_info_queries_and_key_fields(text: str, secret: str) -> None:
    assert secret not in scrub(text)


def test_scrub_leaves_words_that_only_end_like_a_field_name() -> None:
    assert scrub("monkey=banana, sort_key=name") == "monkey=banana, sort_key=name"
    assert re.search(r"\*\*\*", scrub("https://h.example/p#a?b")) is None  # a fragment's ?
