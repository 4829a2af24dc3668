"""The exceptions toolwire raises to its caller.

Outcomes the *model* should see (an unknown tool, invalid arguments, a tool that raised) are not
exceptions: they become error answers. What is raised here is for the program using toolwire.
What toolwire warns about ([`ToolwireWarning`][], a ``UserWarning``) works, but likely not
as meant.

```
ToolwireError
├── ConfigurationError          (also a ValueError) the caller's setup is wrong
│   ├── NameCollisionError      two tools want the same exposed name
│   └── RunBindingConflict      a run id reused for another principal or response
├── SchemaConversionError       a schema cannot be lowered for a provider
├── InvalidArguments            (also a ValueError) a call's arguments fail the tool's schema
├── MalformedResponse           (also a ValueError) a provider response is not shaped as documented
├── ToolNotFound                (also a LookupError) no visible tool has that name
├── StoreUnavailable            (also a ConnectionError) the run store cannot be reached
├── AuthorizationError          OAuth with an MCP server failed (never holds a credential)
│   └── AuthorizationRequired   a server needs a login first (``toolwire mcp login``)
├── InvalidToken                (also a PermissionError) a bearer token proves no identity
├── KeysUnavailable             (also a ConnectionError) an issuer's token keys cannot be had
└── MissingDependency           (also an ImportError) an optional extra is not installed

UserWarning
└── ToolwireWarning             works, but likely not as meant
```
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuthorizationError",
    "AuthorizationRequired",
    "ConfigurationError",
    "InvalidArguments",
    "InvalidToken",
    "KeysUnavailable",
    "MalformedResponse",
    "MissingDependency",
    "NameCollisionError",
    "RunBindingConflict",
    "RunNotFound",
    "SchemaConversionError",
    "StoreUnavailable",
    "ToolNotFound",
    "ToolwireError",
    "ToolwireWarning",
]


class ToolwireError(Exception):
    """Base class of every exception toolwire raises."""


class ConfigurationError(ToolwireError, ValueError):
    """The caller configured something that cannot work (a bad option, a bad tool)."""


class NameCollisionError(ConfigurationError):
    """Two tools resolve to the same exposed name and the toolset was told not to rename."""

    def __init__(self, exposed_name: str, first: str, second: str) -> None:
        self.exposed_name = exposed_name
        self.first = first
        self.second = second
        super().__init__(
            f"tools {first!r} and {second!r} both want the exposed name {exposed_name!r}"
        )


class RunBindingConflict(ConfigurationError):
    """A run id was used for another principal, another model response (other calls) or
    another turn of its conversation (another place): a run is resumed only for what it was
    started for."""


class RunNotFound(ToolwireError, LookupError):
    """A turn resumed a run its store no longer keeps (it expired, was evicted, or is kept in
    another store): the records that prove which of its calls ran are gone, so none is run
    again."""


class SchemaConversionError(ToolwireError):
    """A tool's schema cannot be converted for a provider.

    Attributes:
        tool: the tool's name, when known.
        path: a JSON pointer (``#/properties/x/items``) to the offending node.
        reason: what is wrong, in one sentence.
    """

    def __init__(self, reason: str, *, path: str = "#", tool: str | None = None) -> None:
        self.reason = reason
        self.path = path
        self.tool = tool
        where = f"tool {tool!r}, " if tool else ""
        super().__init__(f"{where}{path}: {reason}")

    def for_tool(self, tool: str) -> SchemaConversionError:
        """The same error, naming ``tool``."""
        return SchemaConversionError(self.reason, path=self.path, tool=tool)


class InvalidArguments(ToolwireError, ValueError):
    """A call's arguments do not match the tool's input schema.

    Attributes:
        tool: the tool's name.
        errors: one ``(path, message)`` pair per problem, ``path`` a JSON path like ``$.a[0]``.
    """

    def __init__(self, tool: str, errors: list[tuple[str, str]]) -> None:
        self.tool = tool
        self.errors = errors
        detail = "; ".join(f"{path}: {message}" for path, message in errors)
        super().__init__(f"invalid arguments for {tool!r}: {detail}")


class MalformedResponse(ToolwireError, ValueError):
    """A provider response does not have the documented structure around its tool calls.

    Individual bad calls inside a well-formed response are not raised: they are answered.
    """


class ToolNotFound(ToolwireError, LookupError):
    """No visible tool answers to ``name``."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"no tool named {name!r}")


class InvalidToken(ToolwireError, PermissionError):
    """A bearer token an authenticating MCP gateway was given proves no identity: malformed,
    badly signed, expired or not valid yet, issued by another issuer or for another audience,
    or unknown. The gateway answers its client 401 and runs nothing.

    Attributes:
        reason: why, in a few words; never the token nor any part of it.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"the bearer token was refused: {reason}")


class KeysUnavailable(ToolwireError, ConnectionError):
    """An issuer's keys cannot be had (its JWKS unreachable, answering an error, oversized or
    malformed), so bearer tokens cannot be checked now, good or not: an authenticating MCP
    gateway answers its client 503 and runs nothing."""


class MissingDependency(ToolwireError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""

    def __init__(self, package: str, extra: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(
            f"{package} is not installed; install it with: pip install 'toolwire[{extra}]' "
            f"(from a checkout: pip install -e '.[{extra}]')"
        )


class StoreUnavailable(ToolwireError, ConnectionError):
    """The run store cannot be reached (a server down, a database file locked or unreadable).

    Raised before any call runs when the store fails on the first read. When it fails later in
    a turn, every call still has its answer: ``outcomes`` holds them (the calls that could not
    be claimed are answered ``unavailable`` and did not run).
    """

    def __init__(self, message: str, *, outcomes: list[Any] | None = None) -> None:
        super().__init__(message)
        self.outcomes = outcomes


class AuthorizationError(ToolwireError):
    """OAuth with an MCP server failed: its metadata, its authorization server, or the
    answers they gave. The message is one line that never holds a token, a secret or an
    authorization code.

    Attributes:
        server: the server's URL (without its query), or what the hub calls it.
        reason: what went wrong, as one of a few words a program can test: ``login_required``,
            ``refresh_failed``, ``metadata``, ``resource_mismatch``, ``issuer_mismatch``,
            ``insecure_endpoint``, ``timeout``, ``oversized``, ``unreachable``,
            ``token_refused``, ``registration``, ``callback``, ``flow``.
    """

    def __init__(self, server: str, reason: str, message: str) -> None:
        self.server = server
        self.reason = reason
        super().__init__(message)

    def __reduce__(self) -> Any:  # pickles (across processes) with its fields
        return (type(self), (self.server, self.reason, str(self)))


class AuthorizationRequired(AuthorizationError):
    """A server asks for an authorization only a person can give (the browser flow) and none
    is stored, or the stored one was refused: run ``toolwire mcp login`` for it.

    Attributes:
        scope: the scopes the server asked for, when it said (None otherwise).
    """

    def __init__(self, server: str, reason: str, message: str, *, scope: str | None = None) -> None:
        super().__init__(server, reason, message)
        self.scope = scope

    def __reduce__(self) -> Any:
        return (_required, (self.server, self.reason, str(self), self.scope))


def _required(server: str, reason: str, message: str, scope: str | None) -> AuthorizationRequired:
    return AuthorizationRequired(server, reason, message, scope=scope)


class ToolwireWarning(UserWarning):
    """Something works but is likely a mistake (a listing above a provider's tool limit, a
    tool the model sees without a description)."""
