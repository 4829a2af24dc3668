"""Grammars that a custom tool's free-text input must match.

OpenAI's custom tools (GPT-5 and later) take free text, optionally constrained by a grammar in
one of two syntaxes, and the model samples only text the grammar accepts. toolwire checks the
text against the grammar before every call, whatever the provider: Gemini and Anthropic get
such a tool as a function with one string parameter and enforce nothing, and an edited or
replayed call passes the same check.

- ``regex``: the Rust ``regex`` crate's syntax (what OpenAI documents), matched against the
  whole text, in time linear in its length (pydantic-core's Rust engine, no extra needed).
- ``lark``: the Lark dialect of LLGuidance, the engine OpenAI samples with; checked by
  LLGuidance itself (``pip install 'toolwire[lark]'``), so a grammar OpenAI takes is read the
  same way and a text it could sample is accepted. Its lexer is linear-time and its parser
  runs under LLGuidance's own limits (a text past them is refused, never waited on).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pydantic_core
from pydantic_core import core_schema

from toolwire._values import has_lone_surrogate
from toolwire.errors import ConfigurationError, MissingDependency

__all__ = ["Grammar", "GrammarSyntax", "grammar_from_format"]

GrammarSyntax = Literal["lark", "regex"]
_SYNTAXES = ("lark", "regex")
_SHOWN = 200
"""Characters of a regular expression quoted to the model when its text does not match."""


@dataclass(frozen=True, slots=True)
class Grammar:
    """A grammar in OpenAI's custom-tool sense: text is valid when the grammar derives all of it.

    Compiled when made, so a grammar that does not compile fails where it is written.

    Raises:
        ConfigurationError: for an unknown syntax, a definition that is not a string, or one
            that does not compile (the message says where and why).
        MissingDependency: for a Lark grammar without LLGuidance (``toolwire[lark]``).
    """

    syntax: GrammarSyntax
    """``"lark"`` or ``"regex"``."""
    definition: str
    """The grammar's text: a Lark grammar with a ``start`` rule, or a regular expression."""
    _check: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.syntax not in _SYNTAXES:
            raise ConfigurationError(
                f"a grammar's syntax is 'lark' or 'regex', not {self.syntax!r}"
            )
        if not isinstance(self.definition, str):
            raise ConfigurationError(
                f"a grammar's definition is a string, not {type(self.definition).__name__}"
            )
        compile_ = _compile_lark if self.syntax == "lark" else _compile_regex
        object.__setattr__(self, "_check", compile_(self.definition))

    @classmethod
    def lark(cls, definition: str) -> Grammar:
        """A Lark grammar (LLGuidance's dialect, as OpenAI reads it)."""
        return cls(syntax="lark", definition=definition)

    @classmethod
    def regex(cls, definition: str) -> Grammar:
        """A regular expression in the Rust ``regex`` crate's syntax, matched in full."""
        return cls(syntax="regex", definition=definition)

    def problem(self, text: str) -> str | None:
        """Why ``text`` is not in the grammar's language, for the model; None when it is.

        Never raises for any string: a text that cannot be checked is refused, saying why.
        """
        given: object = text  # typed str, but a caller's value may be anything
        if not isinstance(given, str):
            return f"expected text, got {type(given).__name__}"
        if has_lone_surrogate(text):
            return "the text is not valid Unicode (it holds a lone surrogate)"
        reason: str | None = self._check(text)
        return reason

    def matches(self, text: str) -> bool:
        """True when the grammar derives all of ``text``."""
        return self.problem(text) is None

    def as_format(self) -> dict[str, str]:
        """The grammar as the Responses API's custom tool ``format``."""
        return {"type": "grammar", "syntax": self.syntax, "definition": self.definition}


def grammar_from_format(value: Grammar | Mapping[str, Any] | None) -> Grammar | None:
    """The grammar a custom tool's format names: None for free text (``None`` or
    ``{"type": "text"}``); a [`Grammar`][], or the OpenAI shapes ``{"type": "grammar",
    "syntax", "definition"}`` (Responses) and ``{"type": "grammar", "grammar": {"syntax",
    "definition"}}`` (Chat Completions).

    Raises:
        ConfigurationError: for any other value, or a grammar that does not compile.
        MissingDependency: for a Lark grammar without LLGuidance.
    """
    if value is None or isinstance(value, Grammar):
        return value
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            "a custom tool's format is a Grammar, {'type': 'text'} or {'type': 'grammar', "
            f"...}}, not {type(value).__name__}"
        )
    kind = value.get("type")
    if kind == "text":
        return None
    inner = value.get("grammar")
    body = inner if isinstance(inner, Mapping) else value
    if kind != "grammar" or "syntax" not in body or "definition" not in body:
        raise ConfigurationError(
            "a custom tool's format is {'type': 'text'} or {'type': 'grammar', 'syntax': "
            f"'lark' | 'regex', 'definition': ...}}, not {dict(value)!r:.200}"
        )
    return Grammar(syntax=body["syntax"], definition=body["definition"])


# -- regex -----------------------------------------------------------------------------------------

_RUST_REGEX = core_schema.CoreConfig(regex_engine="rust-regex")


def _rust_pattern(pattern: str) -> pydantic_core.SchemaValidator | str:
    """A validator of strings in which ``pattern`` finds a match, or why it does not compile."""
    try:
        return pydantic_core.SchemaValidator(
            core_schema.str_schema(pattern=pattern), config=_RUST_REGEX
        )
    except pydantic_core.SchemaError as exc:
        return _regex_error(str(exc))


def _regex_error(message: str) -> str:
    """The reason in the Rust engine's message (its ``error:`` line when it has one)."""
    reason = message.rsplit("SchemaError: ", 1)[-1]
    for line in reason.splitlines():
        if line.startswith("error:"):
            return line.removeprefix("error:").strip()
    return reason.splitlines()[0].strip() if reason.strip() else "it does not compile"


def _compile_regex(definition: str) -> Any:
    # Compiled alone first: only a pattern that is whole by itself is wrapped, so the
    # wrapping can never join with it into another pattern.
    alone = _rust_pattern(definition)
    if isinstance(alone, str):
        raise ConfigurationError(f"the regex grammar {definition!r:.200} does not compile: {alone}")
    whole = _rust_pattern(rf"\A(?:{definition})\z")
    if isinstance(whole, str):  # it ends inside a (?x) comment: a newline closes it
        whole = _rust_pattern(f"\\A(?:{definition}\n)\\z")
    if isinstance(whole, str):
        raise ConfigurationError(
            f"the regex grammar {definition!r:.200} cannot be matched in full: {whole}"
        )
    shown = definition if len(definition) <= _SHOWN else definition[:_SHOWN] + "..."
    refusal = f"the text does not match the tool's regular expression {shown!r}"

    def check(text: str) -> str | None:
        return None if whole.isinstance_python(text) else refusal

    return check


# -- lark (LLGuidance) -----------------------------------------------------------------------------


@functools.cache
def _llguidance() -> tuple[Any, Any, Any]:
    """LLGuidance, a byte-level tokenizer (every byte one token, so any text can be fed) and
    its limits with short error messages."""
    try:
        import llguidance
    except ImportError:
        raise MissingDependency("llguidance", "lark") from None

    class Bytes:
        eos_token_id = 256
        bos_token_id = None
        tokens = (*(bytes([b]) for b in range(256)), b"<|end|>")
        special_token_ids = (256,)

        def __call__(self, data: bytes) -> list[int]:
            return list(data)

    tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(Bytes()), slices=[])
    return llguidance, tokenizer, llguidance.LLParserLimits(verbose_errors=False)


LARK_CHECK_SECONDS = 5.0
"""How long one text may take to check against a Lark grammar: past it, the text is refused
(an unambiguous grammar checks 200,000 characters in well under a second)."""
_PIECE = 64  # bytes fed to the parser between looks at the clock


def _compile_lark(definition: str) -> Any:
    llguidance, tokenizer, limits = _llguidance()
    # Given as JSON: a bare definition that starts with "{" would be read as JSON itself.
    spec = json.dumps({"grammars": [{"lark_grammar": definition}]})
    compiled = llguidance.LLMatcher(tokenizer, spec, log_level=0, limits=limits)
    if compiled.is_error():
        reason = compiled.get_error().strip()
        raise ConfigurationError(f"the Lark grammar does not compile: {reason[:1000]}")

    def check(text: str) -> str | None:
        data = text.encode("utf-8")
        matcher = compiled.deep_copy()  # the compiled grammar is shared; a copy is one check's
        # The parser's limits bound each byte's work, not the whole text's: an ambiguous
        # grammar may take minutes. Fed in pieces, a check stops at its time budget.
        deadline = time.monotonic() + LARK_CHECK_SECONDS
        tokens, taken = list(data), 0
        for start in range(0, len(tokens), _PIECE):
            piece = tokens[start : start + _PIECE]
            consumed = matcher.try_consume_tokens(piece)
            taken += consumed
            if consumed < len(piece):
                break
            if time.monotonic() > deadline and taken < len(tokens):
                return (
                    "the text could not be checked against the tool's Lark grammar within "
                    f"{LARK_CHECK_SECONDS:g} s (is the grammar ambiguous?)"
                )
        if taken == len(data):
            if matcher.is_accepting():
                return None
            return "the text does not match the tool's Lark grammar: it ends early"
        at = len(data[:taken].decode("utf-8", "ignore"))
        why = matcher.get_error().split("\n", 1)[0] if matcher.is_error() else ""
        if why and "doesn't satisfy the grammar" not in why:  # a limit of the parser
            return f"the text could not be checked against the tool's Lark grammar: {why}"
        return (
            "the text does not match the tool's Lark grammar: it fails at character "
            f"{at} ({text[at : at + 20]!r})"
        )

    return check
