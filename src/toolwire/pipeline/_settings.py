"""An executor's settings: checked once when it is made, and read-only after (its parts are
built from them; ``Executor.replace`` makes another executor with other settings)."""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar, cast, overload

from toolwire.errors import ConfigurationError

__all__ = ["Setting", "check_settings"]

_T = TypeVar("_T")


class _Configured(Protocol):
    _settings: dict[str, Any]


class Setting(Generic[_T]):
    """A setting of an executor, read from what it was made with (its ``_settings``)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, executor: None, owner: type) -> Setting[_T]: ...
    @overload
    def __get__(self, executor: _Configured, owner: type) -> _T: ...
    def __get__(self, executor: _Configured | None, owner: type) -> _T | Setting[_T]:
        if executor is None:
            return self
        return cast(_T, executor._settings[self.name])

    def __set__(self, executor: _Configured, value: _T) -> None:
        raise ConfigurationError(
            f"an executor's {self.name} is fixed when it is made (its parts are built from it): "
            f"executor.replace({self.name}=...) makes one with another"
        )


def check_settings(
    *,
    on_unknown: Any,
    on_interrupted: Any,
    wait_for_running: Any,
    lease: Any,
    approval_ttl: Any,
    **_: Any,
) -> None:
    """Refuse settings no executor can run with.

    Raises:
        ConfigurationError: a setting out of its range, named.
    """
    if on_unknown not in ("answer", "raise"):
        raise ConfigurationError(f"on_unknown is 'answer' or 'raise', not {on_unknown!r}")
    if on_interrupted not in ("error", "rerun_idempotent"):
        raise ConfigurationError(
            f"on_interrupted is 'error' or 'rerun_idempotent', not {on_interrupted!r}"
        )
    if wait_for_running is not None and not wait_for_running >= 0:
        raise ConfigurationError("wait_for_running must be a number of seconds, 0 or more")
    if not lease > 0:
        raise ConfigurationError("lease must be a positive number of seconds")
    if approval_ttl is not None and not approval_ttl > 0:
        raise ConfigurationError("approval_ttl must be a positive number of seconds, or None")
