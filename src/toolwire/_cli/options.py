"""``declare`` and ``check``'s flags: the registered providers' declaration options, read from
their ``Options`` dataclasses."""

from __future__ import annotations

import argparse
import dataclasses
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import UnionType
from typing import Any, Literal, get_args, get_origin

from toolwire.errors import ConfigurationError
from toolwire.providers import get_provider, provider_names

__all__ = ["OptionFlag", "add_option_flags", "given_options", "option_flags", "options_by_provider"]


@dataclass(frozen=True, slots=True)
class OptionFlag:
    """A ``declare`` flag: one declaration option of the providers' ``Options`` dataclasses."""

    option: str
    """The field's name (``cache_control``)."""
    spelling: Any
    """``bool`` (``--x/--no-x``), ``str`` (any text), ``tuple`` (names, comma-separated), or
    the choices, a tuple of strings."""
    defaults: Mapping[str, Any]
    """Per provider taking the option (its ``Options`` has the field, spelled so), the default."""
    description: str | None = None
    """The field's ``help`` metadata, when its provider gives one."""

    @property
    def flag(self) -> str:
        return "--" + self.option.replace("_", "-")

    @property
    def shown(self) -> str:
        return f"{self.flag}/--no-{self.flag[2:]}" if self.spelling is bool else self.flag

    @property
    def dest(self) -> str:
        return f"option_{self.option}"

    @property
    def help(self) -> str:
        def shown(value: Any) -> str:
            if self.spelling is bool:
                return "on" if value else "off"
            if self.spelling is tuple:
                return ",".join(value) if isinstance(value, tuple) and value else "none"
            return "none" if value is None else str(value)

        labels = " and ".join(get_provider(name).PROFILE.label for name in self.defaults)
        defaults = {name: shown(value) for name, value in self.defaults.items()}
        if len(set(defaults.values())) == 1:
            default = next(iter(defaults.values()))
        else:
            default = ", ".join(f"{name}: {value}" for name, value in defaults.items())
        what = self.description or f"the {self.option!r} option"
        return f"{labels}: {what} (default: {default})".replace("%", "%%")  # argparse's %


def _spelling(hint: Any) -> Any:
    """How the command line spells an option of type ``hint`` (see [`OptionFlag.spelling`][]),
    or None when it cannot (Gemini's tuple of native tools is for code only)."""
    if hint is bool or hint is str:
        return hint
    arms = get_args(hint) if get_origin(hint) in (typing.Union, UnionType) else (hint,)
    if any(get_origin(arm) is tuple and get_args(arm) == (str, ...) for arm in arms):
        return tuple  # names; a union's other arms (True for "all") are for code only
    values: list[Any] = []
    for arm in arms:
        if get_origin(arm) is Literal:
            values.extend(get_args(arm))
        elif arm is not type(None):
            return None
    choices = tuple(v for v in values if v is not None)
    return choices if choices and all(isinstance(v, str) for v in choices) else None


def option_flags() -> list[OptionFlag]:
    """A flag per declaration option (``PROFILE.declared_options``) of the registered providers
    that the command line can spell, read from their ``Options`` dataclasses, so a provider
    added to the registry brings its own. Providers with the same field share its flag (their
    choices pooled); a provider whose field is spelled differently is left out of it."""
    flags: dict[str, OptionFlag] = {}
    for name in provider_names():
        provider = get_provider(name)
        kind: Any = provider.Options
        defaults, hints = kind(), typing.get_type_hints(kind)
        for field in dataclasses.fields(kind):
            spelling = _spelling(hints[field.name])
            if field.name not in provider.PROFILE.declared_options or spelling is None:
                continue
            known = flags.get(field.name)
            if known is not None:
                if isinstance(known.spelling, tuple) and isinstance(spelling, tuple):
                    spelling = known.spelling + tuple(
                        c for c in spelling if c not in known.spelling
                    )
                elif spelling != known.spelling:
                    continue  # the same name with another type: not this flag's to set
            flags[field.name] = OptionFlag(
                field.name,
                spelling,
                {**(known.defaults if known else {}), name: getattr(defaults, field.name)},
                (known and known.description) or field.metadata.get("help"),
            )
    return list(flags.values())


def given_options(args: argparse.Namespace) -> dict[str, Any]:
    """The declaration options given on the command line (only those).

    Raises:
        ConfigurationError: for a flag the chosen provider does not take, naming those it takes.
    """
    flags: list[OptionFlag] = args.option_flags
    given = {flag.option: getattr(args, flag.dest) for flag in flags}
    for flag in flags:
        if given[flag.option] is not None and args.provider not in flag.defaults:
            takes = [f.shown for f in flags if args.provider in f.defaults]
            raise ConfigurationError(
                f"{flag.shown} is not an option of {args.provider}; "
                f"{args.provider} takes {', '.join(takes) if takes else 'none'}"
            )
    return {option: value for option, value in given.items() if value is not None}


def options_by_provider(
    args: argparse.Namespace, providers: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """The declaration options given to ``check``, per chosen provider taking each.

    Raises:
        ConfigurationError: for a flag none of the chosen providers takes.
    """
    chosen: dict[str, dict[str, Any]] = {}
    for flag in args.option_flags:
        value = getattr(args, flag.dest)
        if value is None:
            continue
        takers = [name for name in providers if name in flag.defaults]
        if not takers:
            raise ConfigurationError(f"{flag.shown} is not an option of {', '.join(providers)}")
        for name in takers:
            chosen.setdefault(name, {})[flag.option] = value
    return chosen


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def add_option_flags(parser: argparse.ArgumentParser) -> None:
    """The declaration options' flags (see [`option_flags`][]); each is None unless given."""
    flags = option_flags()
    for flag in flags:
        if flag.spelling is bool:
            kind: dict[str, Any] = {"action": argparse.BooleanOptionalAction}
        elif flag.spelling is str:
            kind = {"metavar": "TEXT"}
        elif flag.spelling is tuple:
            kind = {"metavar": "NAME,...", "type": _names}
        else:
            kind = {"choices": flag.spelling}
        parser.add_argument(flag.flag, dest=flag.dest, default=None, help=flag.help, **kind)
    parser.set_defaults(option_flags=flags)
