"""What never leaves: the credentials an OAuth flow handles, scrubbed from text (messages, log
records of the SDK and of the HTTP client), and URLs as messages show them."""

from __future__ import annotations

import ipaddress
import logging
import re
import threading
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

__all__ = ["KNOWN", "is_loopback", "scrub", "server_key", "shown_url"]

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
    r"|password|code|token)"
    r"(\\?[\"']?\s*[:=]\s*\\?[\"']?)([^\"'&\s,;}\\]+)"
)
_SCHEME = re.compile(r"(?i)\b(bearer|basic|dpop)(\s+)[A-Za-z0-9._~+/=-]+")
_QUERY = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s?#\"'<>]*)\?[^\s#\"'<>]*")


def scrub(text: str) -> str:
    """``text`` without credentials: values of fields named like one (``access_token=``,
    ``"refresh_token": ``, ``client_secret``, ``code``...), ``Bearer``/``Basic`` values, URL
    queries, and every credential this process has handled, replaced by ``***``."""
    for value in sorted(KNOWN, key=len, reverse=True):
        if value in text:
            text = text.replace(value, "***")
    text = _FIELD.sub(r"\1\2***", text)
    text = _SCHEME.sub(r"\1\2***", text)
    return _QUERY.sub(r"\1?***", text)


class _Scrubbing(logging.Filter):
    """Cleans each record of the loggers that may carry a credential (the SDK's auth flow logs
    its exceptions, which can quote an authorization server's answer).

    ``quiet``: the record is one toolwire raises or answers itself, as an
    ``AuthorizationError`` (the SDK's "OAuth flow error" with its traceback, "Token refresh
    failed"): shown only to a logger set to DEBUG, as DEBUG, not on stderr as a foreign
    traceback."""

    def __init__(self, *, quiet: bool) -> None:
        super().__init__()
        self.quiet = quiet

    def filter(self, record: logging.LogRecord) -> bool:
        if self.quiet:
            if not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
                return False
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments don't fit its message: keep it as text
            message = str(record.msg)
        record.msg, record.args = scrub(message), None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = scrub(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        elif record.exc_text:
            record.exc_text = scrub(record.exc_text)
        return True


_QUIETED = (
    "mcp.client.auth.oauth2",
    "mcp.client.auth.extensions.client_credentials",
    "mcp.client.auth.extensions.identity_assertion",
)
"""The SDK's auth flow: what it logs, toolwire raises as an ``AuthorizationError``."""
_SCRUBBED = (
    "mcp.client.auth.utils",
    "mcp.client.streamable_http",
    "mcp.client.sse",
    "httpx2",  # request URLs
    "httpcore2.http11",  # at DEBUG, the answers' headers (a Location with a code)
    "httpcore2.http2",
    "httpcore2.proxy",
)
for _names, _filter in ((_QUIETED, _Scrubbing(quiet=True)), (_SCRUBBED, _Scrubbing(quiet=False))):
    for _name in _names:
        _logger = logging.getLogger(_name)
        if not any(isinstance(f, _Scrubbing) for f in _logger.filters):
            _logger.addFilter(_filter)


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
