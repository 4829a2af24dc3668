"""What never leaves: credentials scrubbed from text (messages, and every log record of the
loggers toolwire's code paths write through), and URLs as messages show them.

The filter goes on those loggers when ``toolwire`` is imported (see ``scrub_logs``), before
any of its surfaces (the hub, the gateway, the console, the command line) sends a request or
writes a record, whether or not OAuth is used."""

from __future__ import annotations

import ipaddress
import logging
import re
import threading
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "KNOWN",
    "LOGGERS",
    "Scrubbing",
    "is_loopback",
    "quiet_logs",
    "scrub",
    "scrub_logs",
    "server_key",
    "shown_url",
]

_SHOWN = 200
"""Characters of a URL put in a message."""


class _Known:
    """The credentials this process has handled lately, scrubbed from text wherever they
    appear (kept in memory only, where they are anyway)."""

    def __init__(self, cap: int = 512) -> None:
        self._values: OrderedDict[str, None] = OrderedDict()
        self._cap = cap
        self._lock = threading.Lock()  # log records are filtered on any thread

    def add(self, *values: str | None) -> None:
        with self._lock:
            for value in values:
                if value and len(value) >= 6:
                    self._values[value] = None
                    self._values.move_to_end(value)
                    while len(self._values) > self._cap:
                        self._values.popitem(last=False)

    def __iter__(self) -> Any:
        with self._lock:
            return iter(list(self._values))


KNOWN = _Known()

_FIELD = re.compile(
    r"(?i)((?:access|refresh|id)_token|client_secret|code_verifier|client_assertion|assertion"
    r"|password|passwd|secret|api[_-]?key|\bkey|code|token)"
    r"(\\?[\"']?\s*[:=]\s*\\?[\"']?)([^\"'&\s,;}\\]+)"
)
_SCHEME = re.compile(r"(?i)\b(bearer|basic|dpop)(\s+)[A-Za-z0-9._~+/=-]+")
_STARTS_URL = r"[a-z][a-z0-9+.-]{0,31}://"
"""A URL's scheme (at most 32 characters, so each place in a text is tried briefly)."""
_URL = re.compile(rf"(?i){_STARTS_URL}")
_USERINFO = re.compile(rf"(?i)({_STARTS_URL})[^\s/?#@\"'<>]*@")
_WORD = re.compile(r"[^\s\"'<>]+")
"""A run of text a URL can be part of."""
_MARK = re.compile(r"[?#]")


def _without_queries(match: re.Match[str]) -> str:
    """A run of text with the query of each URL in it replaced by ``***`` (a fragment kept);
    each character looked at once or twice, whatever the run's length."""
    run, kept, at, look = match.group(), [], 0, 0
    while (start := _URL.search(run, look)) is not None and (
        mark := _MARK.search(run, start.end())
    ) is not None:
        look = mark.end()
        if mark.group() == "?":
            kept.append(run[at : mark.start()] + "?***")
            fragment = run.find("#", look)
            at = look = len(run) if fragment < 0 else fragment
    kept.append(run[at:])
    return "".join(kept)


def scrub(text: str) -> str:
    """``text`` without credentials: values of fields named like one (``access_token=``,
    ``"refresh_token": ``, ``client_secret``, ``api_key``, ``password``, ``code``...),
    ``Bearer``/``Basic`` values, URLs' user info and queries, and every credential this
    process has handled, replaced by ``***``."""
    for value in sorted(KNOWN, key=len, reverse=True):
        if value in text:
            text = text.replace(value, "***")
    text = _FIELD.sub(r"\1\2***", text)
    text = _SCHEME.sub(r"\1\2***", text)
    text = _USERINFO.sub(r"\1***@", text)
    return _WORD.sub(_without_queries, text)


class Scrubbing(logging.Filter):
    """Takes the credentials out of each record before any handler sees it: its message (with
    its arguments) and its traceback. A record holding none is left as it came, arguments and
    all, for the application's own formatters."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # arguments that don't fit: dropped (a handler would print them)
            record.msg, record.args = scrub(str(record.msg)), None
            message = record.msg
        clean = scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            shown = scrub(text)
            if shown != text:  # the formatted text stands for the exception, which is dropped
                record.exc_text, record.exc_info = shown, None
        elif record.exc_text:
            record.exc_text = scrub(record.exc_text)
        return True


class _Quieting(logging.Filter):
    """A record of what toolwire raises itself (the SDK's "OAuth flow error" with its
    traceback, "Token refresh failed"): shown only to a logger set to DEBUG, as DEBUG, not on
    stderr as a foreign traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
            return False
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


def quiet_logs(*names: str) -> None:
    """Quiet the loggers ``names`` (once): their records show only at DEBUG, scrubbed."""
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(each, _Quieting) for each in logger.filters):
            logger.addFilter(_Quieting())


_MCP_MODULES = (
    "client.auth.extensions.client_credentials",
    "client.auth.extensions.identity_assertion",
    "client.auth.oauth2",
    "client.auth.utils",
    "client.caching",
    "client.client",
    "client.sse",
    "client.stdio",
    "client.streamable_http",
    "os.posix.utilities",
    "os.win32.utilities",
    "server._streamable_http_modern",
    "server.auth.handlers.authorize",
    "server.auth.middleware.bearer_auth",
    "server.connection",
    "server.context",
    "server.lowlevel.server",
    "server.mcpserver.prompts.manager",
    "server.mcpserver.resolve",
    "server.mcpserver.resources.resource_manager",
    "server.mcpserver.server",
    "server.mcpserver.tools.tool_manager",
    "server.mcpserver.utilities.func_metadata",
    "server.request_state",
    "server.runner",
    "server.session",
    "server.sse",
    "server.streamable_http",
    "server.streamable_http_manager",
    "server.subscriptions",
    "server.transport_security",
    "shared.direct_dispatcher",
    "shared.dispatcher",
    "shared.jsonrpc_dispatcher",
    "shared.tool_name_validation",
)
LOGGERS = (
    "toolwire",
    "httpx2",  # request URLs, at INFO
    "httpcore2.connection",
    "httpcore2.http11",  # at DEBUG, the answers' headers (a Location with a code)
    "httpcore2.http2",
    "httpcore2.proxy",
    "httpcore2.socks",
    "client",  # the SDK's client session logs under this name
    *(f"mcp.{module}" for module in _MCP_MODULES),
)
"""The loggers toolwire's code paths write through: its own, the HTTP client's and the
``mcp`` SDK's, by their exact names (a logger's filter sees only the records made on it, not
its children's)."""
_FILTER = Scrubbing()


def scrub_logs() -> None:
    """Put the scrubbing filter on each of ``LOGGERS`` (once). Nothing else of the logging
    configuration changes: no level, handler or propagation; a logger made here is the one its
    library gets when it asks for it by name later."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(each, Scrubbing) for each in logger.filters):
            logger.addFilter(_FILTER)


def shown_url(url: str) -> str:
    """A URL fit for a message: without user info, query or fragment, cut short."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port is not None else ""
        text = f"{parts.scheme}://{host}{port}{parts.path}" if parts.scheme else parts.path
    except ValueError:
        text = "(a malformed URL)"
    text = scrub(text)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def server_key(url: str) -> str:
    """What a server's tokens are kept under: its URL in lower-case scheme and host, without
    user info, query or fragment (a query may hold a key of its own)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{parts.scheme.lower()}://{host}{port}{parts.path}"


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` names this machine (127.0.0.0/8, ::1, localhost)."""
    if not host:
        return False
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
