"""MCP clients' config files (``mcp.json`` and its kin) read into the hub's server specs.

What is read, and how, is described on [`Hub.from_config`][toolwire.mcp.Hub.from_config], the
entry point. The clients disagree on a few things; the choices made here:

- ``timeout`` is in seconds (Cline's unit). Gemini CLI writes milliseconds: a value over an
  hour is taken as written, with a warning saying so. One longer than the hub's default
  ``max_total_timeout`` raises that cap to it: a client's timeout is for a whole call.
- A ``url`` without a ``type`` is streamable HTTP (what Cursor tries first), unless its path
  ends in ``/sse``, the SDKs' SSE endpoint (Cline and Gemini CLI read a bare ``url`` as SSE).
- ``${NAME}`` is expanded, ``$NAME`` is not (Gemini CLI's bare form collides with text such as
  shell arguments; it is warned about in ``env`` and ``headers``, where it is likely meant).
- A variable that is not set is an error, not an empty string or the literal text.
- A remote server authorizes with OAuth (tokens from ``toolwire mcp login``), as Claude Code,
  Cursor and VS Code do on a server's 401, unless its ``headers`` send an ``Authorization`` or
  its ``oauth`` is false. An ``oauth`` object says how (Claude Code's and Gemini CLI's keys).
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from toolwire import _jsonfile
from toolwire.errors import ConfigurationError, ToolwireWarning
from toolwire.mcp.client._specs import (
    ClientCredentials,
    HttpServer,
    OAuth,
    ServerSpec,
    SseServer,
    StdioServer,
)

__all__ = ["is_mcp_config", "read_config"]

_TRANSPORTS = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamablehttp": "http",  # Cline's "streamableHttp"
    "sse": "sse",
}
"""``type`` values (compared in lower case) → the transport."""
_READ = {
    "stdio": {"command", "args", "env", "cwd"},
    "http": {"url", "serverUrl", "httpUrl", "headers", "oauth"},
    "sse": {"url", "serverUrl", "headers", "oauth"},
}
"""Keys read per transport, besides those read for every server."""
_READ_ALWAYS = {"type", "transportType", "disabled", "timeout"}
_FILTERS = (("include", "includeTools"), ("exclude", "excludeTools"))
"""Tool filters: toolwire's key, and Gemini CLI's (exact names: globs without wildcards)."""
_OAUTH_KEYS = {
    "enabled",
    "clientId",
    "clientSecret",
    "scopes",
    "scope",
    "redirectUri",
    "callbackPort",
    "clientMetadataUrl",
    "issuer",
    "grantType",
    "privateKeyFile",
    "signingAlgorithm",
    "tokenEndpointAuthMethod",
    "timeout",
}
"""The keys of an ``oauth`` object read here."""
_HINTS = {
    "autoApprove": "approval is up to toolwire's policies",
    "alwaysAllow": "approval is up to toolwire's policies",
    "trust": "approval is up to toolwire's policies",
    "envFile": "env files are not loaded; set the variables in the environment",
}
"""Why a key some client reads is not read here, for the warning that names it."""
_LONG_TIMEOUT = 3600.0
"""Seconds above which a ``timeout`` probably is milliseconds (Cline's maximum is an hour)."""
_SHOWN = 60
"""Characters of a config's own text (a key, a value) quoted in a message."""

_REFERENCE = re.compile(r"\$\$\{|\$\{([^{}]*)\}|\$\{")
_VARIABLE = re.compile(r"(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?", re.DOTALL)
_BARE = re.compile(r"(?<!\$)\$[A-Za-z_]")
_STRING = r'"(?:[^"\\]|\\.)*"'
_COMMENT = re.compile(_STRING + r"|//[^\n]*|/\*.*?(?:\*/|\Z)", re.DOTALL)
_TRAILING_COMMA = re.compile(_STRING + r"|,(?=\s*[}\]])", re.DOTALL)


def read_config(config: Mapping[str, Any] | str | Path) -> dict[str, ServerSpec]:
    """The servers of an MCP config (a dict, or the path of a JSON file), by name; disabled
    ones are left out. Keys not read are warned about (``ToolwireWarning``).

    Raises:
        ConfigurationError: the file cannot be read, or a server's entry is malformed or uses a
            variable that cannot be expanded (the message names the server and the key).
    """
    if isinstance(config, str | Path):
        path = Path(config)
        data = _load(path)
        workspace: Callable[[], Path] = lambda: _workspace_of(path)  # noqa: E731
    else:
        data, workspace = config, Path.cwd
    servers = _servers_of(data)
    if servers is None:
        raise ConfigurationError(
            "an MCP config needs an mcpServers object (Claude, Cursor, Cline, Windsurf, "
            "Gemini CLI) or a servers object (VS Code)"
        )
    notes: list[str] = []
    specs: dict[str, ServerSpec] = {}
    for name, entry in servers.items():
        spec = _Entry(name, entry, workspace, notes).spec()
        if spec is not None:
            specs[name] = spec
    for note in notes:
        warnings.warn(note, ToolwireWarning, stacklevel=3)  # at the caller of from_config
    if not specs:
        raise ConfigurationError(
            "the MCP config lists no servers"
            if not servers
            else "every server of the MCP config is disabled"
        )
    return specs


def is_mcp_config(path: Path) -> bool:
    """Whether the JSON file at ``path`` is an MCP config (has a servers object, well formed
    or not); False when it cannot be read as JSON."""
    try:
        data = _load(path)
    except ConfigurationError:
        return False
    try:
        return _servers_of(data) is not None
    except ConfigurationError:  # an MCP config, malformed: reading it says how
        return True


def _load(path: Path) -> Any:
    """The JSON of the file at ``path``; comments and trailing commas are taken as VS Code
    takes them in its ``mcp.json``. A key given twice in one object is refused: a server, its
    ``disabled``, ``command`` or tool filters given twice would be a guess between two.

    Raises:
        ConfigurationError: the file cannot be read, is not JSON, or repeats a key.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: a byte-order mark some editors write
    except (OSError, ValueError) as exc:  # ValueError: not UTF-8
        raise ConfigurationError(f"cannot read MCP config {path}: {exc}") from None
    try:
        return _jsonfile.loads(text)
    except RecursionError:
        raise ConfigurationError(f"cannot read MCP config {path}: nested too deeply") from None
    except _jsonfile.RepeatedKey as exc:
        raise exc.of(f"MCP config {path}") from None
    except ValueError as exc:
        try:
            return _jsonfile.loads(_plain_json(text))
        except _jsonfile.RepeatedKey as repeated:
            raise repeated.of(f"MCP config {path}") from None
        except (ValueError, RecursionError):
            pass
        raise ConfigurationError(f"cannot read MCP config {path}: {exc}") from None


def _plain_json(text: str) -> str:
    """JSON with comments (``//``, ``/* */``) and trailing commas as plain JSON; strings are
    kept as they are."""

    def keep_strings(replacement: str) -> Callable[[re.Match[str]], str]:
        return lambda match: match[0] if match[0].startswith('"') else replacement

    text = _COMMENT.sub(keep_strings(" "), text)
    return _TRAILING_COMMA.sub(keep_strings(""), text)


def _servers_of(data: Any) -> Mapping[Any, Any] | None:
    """The servers object of a config, or None when it has none.

    Raises:
        ConfigurationError: it has one, but not as an object, or has two.
    """
    if not isinstance(data, Mapping):
        return None
    if "mcpServers" in data and "servers" in data:
        raise ConfigurationError("an MCP config has both mcpServers and servers: keep one")
    for key in ("mcpServers", "servers"):
        if key in data:
            servers = data[key]
            if not isinstance(servers, Mapping):
                raise ConfigurationError(f"an MCP config's {key} must be an object, name → server")
            return servers
    nested = data.get("mcp")  # VS Code's settings.json: {"mcp": {"servers": ..., "inputs": ...}}
    if isinstance(nested, Mapping) and ("servers" in nested or "mcpServers" in nested):
        return _servers_of(nested)
    return None


def _workspace_of(path: Path) -> Path:
    """The folder ``${workspaceFolder}`` is for a config file: the one holding its ``.vscode``
    or ``.cursor`` folder, else the file's own."""
    folder = path.absolute().parent
    return folder.parent if folder.name in (".vscode", ".cursor") else folder


class _Entry:
    """One server's entry, read into a spec."""

    def __init__(
        self, name: Any, entry: Any, workspace: Callable[[], Path], notes: list[str]
    ) -> None:
        self.name = name
        self.entry = entry
        self.workspace = workspace
        self.notes = notes
        self.read = set(_READ_ALWAYS)

    def spec(self) -> ServerSpec | None:
        """The server's spec, or None when it is disabled."""
        entry = self.entry
        if not isinstance(entry, Mapping):
            raise self.error(None, "must be an object")
        disabled = entry.get("disabled", False)
        if not isinstance(disabled, bool):
            raise self.error("disabled", "must be true or false")
        if disabled:  # before anything else: a disabled entry may well be unfinished
            return None
        transport = self.transport()
        self.read |= _READ[transport]
        options = self.options()
        spec: ServerSpec
        if transport == "stdio":
            env = self.env()
            spec = StdioServer(
                command=self.command(env),
                args=self.args(env),
                env=env,
                cwd=self.cwd(env),
                **options,
            )
        else:
            kind = HttpServer if transport == "http" else SseServer
            headers = self.headers()
            spec = kind(
                url=self.url(transport), headers=headers, auth=self.oauth(headers), **options
            )
        self.note_unread()
        return spec

    # -- what kind of server --------------------------------------------------------------------

    def transport(self) -> str:
        entry = self.entry
        kind = entry.get("type", entry.get("transportType"))  # transportType: Cline's older key
        if kind is not None:
            if not isinstance(kind, str) or kind.lower() not in _TRANSPORTS:
                raise self.error(
                    "type", f"must be stdio, http, streamable-http or sse, not {_shown(kind)}"
                )
            return _TRANSPORTS[kind.lower()]
        if "command" in entry:
            return "stdio"
        if "httpUrl" in entry:  # Gemini CLI's key for streamable HTTP
            return "http"
        url = entry.get("url", entry.get("serverUrl"))
        if isinstance(url, str):
            path = url.split("#", 1)[0].split("?", 1)[0].rstrip("/")
            return "sse" if path.endswith("/sse") else "http"
        if "url" in entry or "serverUrl" in entry:
            return "http"  # a url that is not a string: said by url()
        raise self.error(None, "needs a command (a stdio server) or a url (an HTTP server)")

    def options(self) -> dict[str, Any]:
        """The options every spec takes: timeout and tool filters."""
        options: dict[str, Any] = {}
        timeout = self.entry.get("timeout")
        if timeout is not None:
            options["timeout"] = seconds = self.seconds(timeout)
            cap = _default_of("max_total_timeout")
            if cap is not None and seconds > cap:
                options["max_total_timeout"] = seconds
        for key, alias in _FILTERS:
            present = [k for k in (key, alias) if k in self.entry]
            self.read.update(present)
            if len(present) == 2:
                raise self.error(alias, f"and {key} are the same filter: give one")
            if present:
                options[key] = self.patterns(present[0])
        return options

    def seconds(self, value: Any) -> float:
        problem = "must be a positive number of seconds"
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error("timeout", problem)
        try:
            seconds = float(value)
        except OverflowError:
            raise self.error("timeout", problem) from None
        if not math.isfinite(seconds) or seconds <= 0:
            raise self.error("timeout", problem)
        if seconds > _LONG_TIMEOUT:
            self.notes.append(
                f"server {_shown(self.name)}: timeout {seconds:g} is read as seconds (over an "
                "hour); if it is milliseconds, as Gemini CLI writes them, divide it by 1000"
            )
        return seconds

    def patterns(self, key: str) -> tuple[str, ...]:
        value = self.entry[key]
        if not isinstance(value, list | tuple) or not all(isinstance(p, str) for p in value):
            raise self.error(key, "must be a list of tool names or glob patterns")
        return tuple(value)

    # -- stdio ------------------------------------------------------------------------------------

    def env(self) -> dict[str, str] | None:
        """``env``, expanded from the process environment; a null value leaves the variable
        out (as VS Code reads it)."""
        value = self.entry.get("env")
        if value is None:
            return None
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise self.error("env", "must be an object of strings")
        env = {}
        for key, item in value.items():
            if item is not None:
                where = f"env.{_shown_key(key)}"
                env[key] = self.expand(self.text(item, where), where, bare_warned=True)
        return env

    def command(self, env: Mapping[str, str] | None) -> str:
        command = self.entry.get("command")
        if not isinstance(command, str):
            raise self.error("command", "must be a string")
        command = self.expand(command, "command", env)
        if not command.strip():
            raise self.error("command", "is empty")
        return command

    def args(self, env: Mapping[str, str] | None) -> tuple[str, ...]:
        value = self.entry.get("args")
        if value is None:
            return ()
        if not isinstance(value, list | tuple):
            raise self.error("args", "must be a list of strings")
        return tuple(
            self.expand(self.text(item, f"args[{i}]"), f"args[{i}]", env)
            for i, item in enumerate(value)
        )

    def cwd(self, env: Mapping[str, str] | None) -> str | None:
        value = self.entry.get("cwd")
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.error("cwd", "must be a string")
        return self.expand(value, "cwd", env)

    # -- HTTP and SSE -----------------------------------------------------------------------------

    def url(self, transport: str) -> str:
        keys = [k for k in ("url", "serverUrl", "httpUrl") if k in self.entry]
        if transport == "sse" and "httpUrl" in keys:
            raise self.error("httpUrl", "is a streamable HTTP endpoint, but the type is sse")
        if not keys:
            raise self.error("url", "is missing")
        if len(keys) > 1:
            raise self.error(keys[1], f"and {keys[0]} both give the server's url: keep one")
        key = keys[0]
        value = self.entry[key]
        if not isinstance(value, str):
            raise self.error(key, "must be a string")
        url = self.expand(value, key, None)
        try:
            scheme = urlsplit(url).scheme
        except ValueError:
            scheme = ""
        if scheme not in ("http", "https"):
            raise self.error(key, "must be an http:// or https:// URL")
        return url

    def headers(self) -> dict[str, str] | None:
        value = self.entry.get("headers")
        if value is None:
            return None
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise self.error("headers", "must be an object of strings")
        headers = {}
        for key, item in value.items():
            where = f"headers.{_shown_key(key)}"
            headers[key] = self.expand(self.text(item, where), where, bare_warned=True)
        return headers

    def oauth(self, headers: Mapping[str, str] | None) -> OAuth | ClientCredentials | None:
        """How the server authorizes: OAuth unless ``headers`` send an ``Authorization`` or
        ``oauth`` is false; an ``oauth`` object says how."""
        value = self.entry.get("oauth")
        sent = any(key.lower() == "authorization" for key in headers or {})
        if value is None:
            return None if sent else OAuth()
        if isinstance(value, Mapping):
            enabled = value.get("enabled", True)
            if not isinstance(enabled, bool):
                raise self.error("oauth.enabled", "must be true or false")
            value = value if enabled else False
        elif not isinstance(value, bool):
            raise self.error("oauth", "must be true, false or an object")
        if value is False:
            return None
        if sent:
            raise self.error("oauth", "and an Authorization header both authorize: keep one")
        if value is True:
            return OAuth()
        unread = [key for key in value if key not in _OAUTH_KEYS]
        if unread:
            shown = ", ".join(_shown_key(key) for key in unread[:10])
            self.notes.append(f"server {_shown(self.name)}: oauth: ignoring {shown}")
        read = _OAuthEntry(self, value)
        grant = read.text("grantType") or "authorization_code"
        if grant == "client_credentials":
            return read.client_credentials()
        if grant != "authorization_code":
            raise self.error("oauth.grantType", "must be authorization_code or client_credentials")
        return read.authorization_code()

    # -- values -----------------------------------------------------------------------------------

    def text(self, value: Any, where: str) -> str:
        """A string as it is; a number or a boolean written out as JSON writes it (as the
        JavaScript clients pass them)."""
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            try:
                return str(value)
            except ValueError:  # an int too long to write out
                pass
        raise self.error(where, "must be a string")

    def expand(
        self,
        text: str,
        where: str,
        own_env: Mapping[str, str] | None = None,
        *,
        bare_warned: bool = False,
    ) -> str:
        """``text`` with its ``${...}`` references replaced; a name is looked up in
        ``own_env`` (the server's own env, for what its process reads: command, args, cwd)
        first, then in the process environment.

        Raises:
            ConfigurationError: a reference is not closed, not supported, or names a variable
                that is not set.
        """
        if bare_warned and _BARE.search(text):
            self.notes.append(
                f"server {_shown(self.name)}: {where} holds a $NAME reference, passed as "
                "written (toolwire expands ${NAME} and ${env:NAME})"
            )

        def replace(match: re.Match[str]) -> str:
            if match[0] == "$${":
                return "${"
            if match[1] is None:
                raise self.error(where, "has a ${ that is not closed (or holds another ${)")
            return self.resolve(match[1], where, own_env)

        return _REFERENCE.sub(replace, text)

    def resolve(self, body: str, where: str, own_env: Mapping[str, str] | None) -> str:
        """The value of ``${body}``."""
        predefined = _PREDEFINED.get(body)
        if predefined is not None:
            try:
                return predefined(self.workspace)
            except (OSError, RuntimeError) as exc:  # no home, or no current directory
                raise self.error(
                    where, f"uses ${{{body}}}, which has no value here: {exc}"
                ) from None
        if body.startswith("input:"):
            raise self.error(
                where,
                f"uses ${{{_cut(body)}}}, an input VS Code prompts for: toolwire cannot "
                "prompt; put the value in an environment variable and write ${env:NAME}",
            )
        match = _VARIABLE.fullmatch(body)
        if match is None:
            raise self.error(
                where,
                f"uses ${{{_cut(body)}}}, which toolwire does not expand (it expands "
                "${NAME}, ${env:NAME}, ${NAME:-default}, ${userHome} and ${workspaceFolder})",
            )
        name, default = match[1], match[2]
        value = own_env[name] if own_env is not None and name in own_env else os.environ.get(name)
        if default is not None and not value:  # as the shell's ${NAME:-default}: unset or empty
            return default
        if value is None:
            raise self.error(
                where, f"uses ${{{_cut(body)}}}, but {name} is not set in the environment"
            )
        return value

    # -- reporting --------------------------------------------------------------------------------

    def note_unread(self) -> None:
        unread = [key for key in self.entry if key not in self.read]
        if not unread:
            return
        shown = ", ".join(_shown_key(key) for key in unread[:10])
        if len(unread) > 10:
            shown += f" and {len(unread) - 10} more"
        hints = sorted({_HINTS[key] for key in unread if key in _HINTS})
        why = f" ({'; '.join(hints)})" if hints else ""
        self.notes.append(
            f"server {_shown(self.name)}: ignoring {shown}: not read by toolwire{why}"
        )

    def error(self, key: str | None, problem: str) -> ConfigurationError:
        where = f" {key}" if key is not None else ""
        return ConfigurationError(f"MCP config, server {_shown(self.name)}:{where} {problem}")


class _OAuthEntry:
    """A server's ``oauth`` object, read into an ``OAuth`` or a ``ClientCredentials``."""

    def __init__(self, entry: _Entry, value: Mapping[str, Any]) -> None:
        self.entry = entry
        self.value = value

    def text(self, key: str) -> str | None:
        item = self.value.get(key)
        if item is None:
            return None
        where = f"oauth.{key}"
        if not isinstance(item, str):
            raise self.entry.error(where, "must be a string")
        return self.entry.expand(item, where)

    def scope(self) -> str | None:
        scopes = self.value.get("scopes")
        if scopes is not None and "scope" in self.value:
            raise self.entry.error("oauth.scopes", "and oauth.scope are the same: give one")
        if scopes is None:
            return self.text("scope")
        if not isinstance(scopes, list | tuple) or not all(isinstance(s, str) for s in scopes):
            raise self.entry.error("oauth.scopes", "must be a list of strings")
        return " ".join(self.entry.expand(s, "oauth.scopes") for s in scopes) or None

    def timeout(self) -> float:
        seconds = self.value.get("timeout", _OAUTH_TIMEOUT)
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
            raise self.entry.error("oauth.timeout", "must be a positive number of seconds")
        return float(seconds)

    def authorization_code(self) -> OAuth:
        redirect = self.text("redirectUri")
        port = self.value.get("callbackPort")
        if port is not None:
            if redirect is not None:
                raise self.entry.error("oauth.callbackPort", "and oauth.redirectUri: give one")
            if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
                raise self.entry.error("oauth.callbackPort", "must be a port number")
            redirect = f"http://127.0.0.1:{port}/callback"
        return OAuth(
            scope=self.scope(),
            client_id=self.text("clientId"),
            client_secret=self.text("clientSecret"),
            client_metadata_url=self.text("clientMetadataUrl"),
            redirect_uri=redirect,
            issuer=self.text("issuer"),
            timeout=self.timeout(),
        )

    def client_credentials(self) -> ClientCredentials:
        client_id = self.text("clientId")
        if client_id is None:
            raise self.entry.error("oauth.clientId", "is needed for client_credentials")
        secret, key_file = self.text("clientSecret"), self.text("privateKeyFile")
        if (secret is None) == (key_file is None):
            raise self.entry.error(
                "oauth", "client_credentials needs clientSecret or privateKeyFile (one of them)"
            )
        key = None
        if key_file is not None:
            try:
                key = Path(key_file).expanduser().read_text(encoding="utf-8")
            except (OSError, ValueError) as exc:
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "unreadable"
                raise self.entry.error("oauth.privateKeyFile", f"cannot be read: {why}") from None
        method = self.text("tokenEndpointAuthMethod") or "client_secret_basic"
        if method not in ("client_secret_basic", "client_secret_post"):
            raise self.entry.error(
                "oauth.tokenEndpointAuthMethod", "must be client_secret_basic or client_secret_post"
            )
        return ClientCredentials(
            client_id=client_id,
            client_secret=secret,
            private_key=key,
            signing_algorithm=self.text("signingAlgorithm") or "RS256",
            token_endpoint_auth_method=method,  # type: ignore[arg-type]
            issuer=self.text("issuer"),
            scope=self.scope(),
            timeout=self.timeout(),
        )


_OAUTH_TIMEOUT = next(f.default for f in dataclasses.fields(OAuth) if f.name == "timeout")

_PREDEFINED: dict[str, Callable[[Callable[[], Path]], str]] = {
    "userHome": lambda workspace: str(Path.home()),
    "workspaceFolder": lambda workspace: str(workspace()),
    "workspaceFolderBasename": lambda workspace: workspace().name,
    "pathSeparator": lambda workspace: os.sep,
    "/": lambda workspace: os.sep,
}
"""The variables VS Code and Cursor predefine that mean something outside an editor."""


def _default_of(option: str) -> Any:
    """The default of a server option, as the spec classes declare it."""
    return next(f.default for f in dataclasses.fields(StdioServer) if f.name == option)


def _cut(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _shown(value: Any) -> str:
    """A value of the config (a name, a type), quoted and cut short, for a message."""
    return _cut(repr(value))


def _shown_key(key: Any) -> str:
    return _cut(key if isinstance(key, str) else repr(key))
