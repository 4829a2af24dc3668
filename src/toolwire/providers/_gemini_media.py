"""Media in a Gemini function response (``functionResponse.parts``, Gemini 3+): which images,
PDFs and links to them Gemini takes there, and which link URIs it reads itself (judged from
the text alone: toolwire never fetches a link)."""

from __future__ import annotations

import base64
import ipaddress
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from toolwire.calls import AudioContent, ImageContent, ResourceLink
from toolwire.schema.gemini import Backend

__all__ = ["add_native_part", "display_name", "files_api_uri"]

# Media Gemini 3 takes inside functionResponse.parts; anything else stays a placeholder
# ("Multimodal function responses", https://ai.google.dev/gemini-api/docs/function-calling).
_NATIVE_RESPONSE_MIME_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain"}
)


def display_name(part: Mapping[str, Any]) -> str:
    """The ``displayName`` [`add_native_part`][] gave a media part."""
    (data,) = part.values()  # the part's inlineData or fileData
    return str(data["displayName"])


def add_native_part(
    part: Any,
    native: list[dict[str, Any]],
    *,
    file_backend: Backend | None = None,
    public_urls: bool = False,
) -> bool:
    """Append ``part`` to ``native`` as a media part when Gemini takes it there (True), named
    by its place among them, so inline and file parts never share a name.

    A [`ResourceLink`][toolwire.calls.ResourceLink] counts only with a ``file_backend``, and only
    when that backend reads its URI (see
    [`function_response`][toolwire.providers.gemini.function_response]); it is never fetched
    here."""
    if isinstance(part, ImageContent | AudioContent):
        if part.mime_type not in _NATIVE_RESPONSE_MIME_TYPES:
            return False
        blob = {"mimeType": part.mime_type, "data": base64.b64encode(part.data).decode("ascii")}
        native.append({"inlineData": {**blob, "displayName": _next_name(part.mime_type, native)}})
        return True
    if isinstance(part, ResourceLink) and file_backend is not None:
        mime = part.mime_type
        if mime not in _NATIVE_RESPONSE_MIME_TYPES or not _readable_uri(
            part.uri, file_backend, public_urls
        ):
            return False
        file = {"mimeType": mime, "fileUri": part.uri}
        native.append({"fileData": {**file, "displayName": _next_name(mime, native)}})
        return True
    return False


def _next_name(mime_type: str, native: Sequence[Any]) -> str:
    kind, _, subtype = mime_type.partition("/")
    return f"{kind}_{len(native) + 1}.{subtype}"


# The URIs fileData takes, by who reads them: the Gemini API reads its Files API's files and
# public or signed https URLs (https://ai.google.dev/gemini-api/docs/file-input-methods),
# Vertex AI reads Cloud Storage objects and public URLs
# (https://cloud.google.com/vertex-ai/generative-ai/docs/multimodal/function-calling).
# A Files API file: "files/" and up to 40 lowercase letters, digits or dashes.
_FILES_API_URI = re.compile(
    r"https://generativelanguage\.googleapis\.com/v1(?:beta|alpha)?/files/[a-z0-9-]{1,40}"
)
# A Cloud Storage object: a bucket name, then an object name (no spaces or control characters).
_GCS_URI = re.compile(r"gs://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]/[^\x00-\x20\x7f]{1,1024}")
_MAX_URL = 4096  # long enough for signed URLs
_URL_TEXT = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")  # RFC 3986's characters
_HOST_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
# Names that resolve only inside a network (RFC 6761, RFC 6762, ICANN's .internal, common use).
_PRIVATE_SUFFIXES = frozenset(
    {
        "localhost",
        "localdomain",
        "local",
        "internal",
        "intranet",
        "lan",
        "home",
        "corp",
        "private",
        "test",
        "invalid",
        "example",
        "onion",
        "arpa",
    }
)


def files_api_uri(uri: str) -> bool:
    """True for the URI of a file in the Gemini API's Files API (which Gemini reads itself)."""
    return _FILES_API_URI.fullmatch(uri) is not None


def _readable_uri(uri: str, backend: Backend, public_urls: bool) -> bool:
    """True when the backend reads ``uri`` as a function response's ``fileData``."""
    if backend == "gemini" and files_api_uri(uri):
        return True
    if backend == "vertex" and _GCS_URI.fullmatch(uri):
        return True
    return public_urls and _public_https(uri)


def _public_https(uri: str) -> bool:
    """True for an ``https`` URL (RFC 3986 characters only, sent as it is) on a host anyone
    can reach, judged from the text alone (nothing is resolved or fetched)."""
    if len(uri) > _MAX_URL or not _URL_TEXT.fullmatch(uri):
        return False
    try:
        url = urlsplit(uri)
        port = url.port
    except ValueError:
        return False
    host = url.hostname
    if url.scheme != "https" or not host or url.username is not None or port not in (None, 443):
        return False
    if "generativelanguage" in host and host.endswith(".googleapis.com"):
        return False  # the Gemini API itself: its files are read as Files API URIs only
    try:
        return ipaddress.ip_address(host).is_global
    except ValueError:
        pass
    labels = host.split(".")
    return (
        len(labels) > 1
        and all(_HOST_LABEL.fullmatch(label) for label in labels)
        and not labels[-1].isdigit()  # a number, not a top-level domain ("127.1")
        and labels[-1] not in _PRIVATE_SUFFIXES
    )
