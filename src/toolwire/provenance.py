"""Where a call's arguments came from: the values tools' output put in the model's context,
against what the application says is trusted input (the user's words, its own values).

A prompt injection works by making the model copy what it read into a call it was never
asked to make: the attacker's address into ``send_email``, their account into
``send_money``, their URL into ``fetch``. A [`Provenance`][] keeps, for a conversation, the
values each tool's output brought into the model's context and the values of its trusted
inputs, as keyed digests (never the text). For each call, [`Provenance.origins`][] says
which arguments carry a value that came from untrusted output and from no trusted input,
and from which tools' output: what ``toolwire.policy.from_untrusted`` and
``Policy(provenance=...)`` decide by.

What is matched (a "unit", normalized: case-folded, whitespace collapsed, outer quotes and
punctuation stripped):

- **names**: tokens inside any text that name something: URLs (with and without their
  scheme, and their host), e-mail addresses, domain names, and identifiers holding a digit
  (account numbers, IBANs, ids, phone numbers) of at least 5 characters; dates and times
  are not names.
- **whole values**: every string (and number) of a structured output, whole (a text that is
  JSON counts as the values it holds), and every argument, whole.
- **phrases**: inside an output's text, each run of one to four words that neither starts
  nor ends with a common word (``Riverside View Hotel`` in "book the Riverside View Hotel
  now"). An argument is matched whole and by the names inside it, never by its phrases: a
  sentence the model writes shares words with everything it read.
- **quotes**: what a text puts in quotes (``delete the file '13'``), however short.

Units shorter than 4 characters, common words, numbers of fewer than 5 digits and dates
never match unless quoted (they would match everything): an output's short ids and amounts
shown whole are no units, and only a quote makes one of them an injection's.

Each unit from output remembers whether it was found inside a text (a name, a phrase, a
quote: where an injection writes the values it wants copied) or only as a whole field (a
channel, a file id in a listing): [`Origins.in_text`][] says which arguments carry the
former, so a tool that acts only inside the user's data may be spared a choice among the
fields it was shown.

What it cannot see: a value the model composes rather than copies (a sum it computed, an
address it spelt out from a description, a name it translated), an injection that needs no
argument at all (an answer it words), and a choice among values the task legitimately shows
steered by an injection ("book the most expensive hotel").

Bounded: an output is scanned up to [`MAX_TEXT`][] characters and gives at most
[`MAX_UNITS_PER_OUTPUT`][] units; a conversation keeps at most [`MAX_UNITS`][]. Past any
bound the provenance is ``full``: it can no longer say a value is clean, so every argument
of every later call counts as untrusted (the stricter rule; never an allow).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pydantic_core

from toolwire.errors import ConfigurationError

__all__ = [
    "IN_TEXT",
    "MAX_TEXT",
    "MAX_UNITS",
    "MAX_UNITS_PER_OUTPUT",
    "NO_ORIGINS",
    "UNKNOWN_ORIGINS",
    "WHERE",
    "Origins",
    "Provenance",
    "units_of_argument",
    "units_of_output",
    "user_texts",
]

MAX_TEXT = 1_000_000
"""Characters of one output (or trusted input) scanned; past it, the provenance is full."""
MAX_UNITS_PER_OUTPUT = 50_000
"""Units one output may give; past it, the provenance is full."""
MAX_UNITS = 500_000
"""Units a conversation keeps (trusted and untrusted together); past it, it is full."""
MIN_LENGTH = 4
"""Units shorter than this never match."""
_MAX_PHRASE_WORDS = 4
_MAX_TRUSTED_TEXT = 100_000
"""A trusted string longer than this (media in base64, a pasted dump) is left out: trusting
less is the stricter rule, and the user's own words are shorter."""
_MAX_ARGUMENT_LEAVES = 10_000
_MAX_DEPTH = 64

# Words too common to say where a value came from: a phrase never starts or ends with one,
# and a unit that is one never matches.
COMMON_WORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each else
    few for from further had has have having he her here hers him his how i if in into is
    it its just me more most my no nor not now of off on once only or other our ours out
    over own same she should so some such than that the their theirs them then there these
    they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yes please thanks thank hello hi dear
    best regards new file files send sent email emails message messages user users name
    date time today tomorrow yesterday none null true false http https www com org net
    subject body content title description text value data info information amount
    number id ids list item items page pages note notes""".split()  # noqa: SIM905 (a word list)
)

_URL = re.compile(r"(?:[a-z][a-z0-9+.-]*://|www\.)[^\s<>\"'`()\[\]{}|\\^]+", re.IGNORECASE)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_DOMAIN = re.compile(
    r"(?<![\w@.-])(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,24}(?![\w@-])", re.IGNORECASE
)
_IDENTIFIER = re.compile(r"(?<![\w+-])[+]?[\w][\w\-]{3,}")
_DATE_OR_TIME = re.compile(
    r"\d{4}-\d{1,2}-\d{1,2}(?:[ t]\d{1,2}:\d{2}(?::\d{2})?)?|\d{1,2}:\d{2}(?::\d{2})?|"
    r"\d{1,2}[/.]\d{1,2}[/.]\d{2,4}"
)
_QUOTED = re.compile(
    r"(?<!\w)['\"\u2018\u201c]([^'\"\u2018\u2019\u201c\u201d\n]{1,200})['\"\u2019\u201d](?!\w)"
)
_WORD = re.compile(r"[^\W_](?:[\w'&.-]*[^\W_])?")
_TRAILING = ".,;:!?)]}>'\"`"
_SPACES = re.compile(r"\s+")


def _normal(text: str) -> str:
    return (
        _SPACES.sub(" ", unicodedata.normalize("NFKC", text))
        .strip()
        .strip(_TRAILING)
        .strip("\"'`([{<")
        .casefold()
    )


def _meaningful(unit: str, short: bool) -> bool:
    """Whether ``unit`` can say where a value came from: not a common word, at least
    [`MIN_LENGTH`][] long, and no number of fewer than 5 digits; with ``short`` (a value
    someone quoted, which they meant as one), 2 characters and any number will do."""
    if unit in COMMON_WORDS:
        return False
    if short:
        return len(unit) >= 2
    if len(unit) < MIN_LENGTH or _DATE_OR_TIME.fullmatch(unit):
        return False
    digits = unit.replace(".", "").replace(",", "").replace("-", "").lstrip("+")
    return not (digits.isdigit() and len(digits) < 5)


def _names(text: str) -> Iterator[tuple[str, bool]]:
    """The names inside ``text`` (see the module docstring), each with whether it says where
    to go (a URL, a host, an address)."""
    for match in _URL.finditer(text):
        url = match.group().rstrip(_TRAILING)
        yield url, True
        bare = url.split("://", 1)[-1]
        yield bare, True
        yield bare.rstrip("/"), True
        host = bare.split("/", 1)[0].split("?", 1)[0].split(":", 1)[0]
        yield host, True
        if host.startswith("www."):
            yield host[4:], True
    for match in _EMAIL.finditer(text):
        yield match.group(), True
    for match in _DOMAIN.finditer(text):
        yield match.group(), True
    for match in _IDENTIFIER.finditer(text):
        token = match.group().strip("-")
        has_digit = any(c.isdigit() for c in token)
        if len(token) >= 5 and has_digit and not _DATE_OR_TIME.fullmatch(token):
            yield token, False


def _phrases(text: str) -> Iterator[str]:
    words = _WORD.findall(text)
    folded = [word.casefold() for word in words]
    for start, first in enumerate(folded):
        if first in COMMON_WORDS:
            continue
        for size in range(1, _MAX_PHRASE_WORDS + 1):
            end = start + size
            if end > len(folded):
                break
            if folded[end - 1] not in COMMON_WORDS:
                yield " ".join(folded[start:end])


def _leaves(value: Any, depth: int = 0) -> Iterator[str | None]:
    """The strings and numbers inside a JSON value, as text; None for one that cannot be
    said (a number past Python's conversion limit, a value nested past ``_MAX_DEPTH``),
    which makes what is found of it ``full``: what cannot be read is never called clean."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        try:
            yield str(value)
        except ValueError:  # an integer of more digits than str() converts
            yield None
    elif isinstance(value, Mapping | list | tuple):
        if depth >= _MAX_DEPTH:
            yield None
            return
        for item in value.values() if isinstance(value, Mapping) else value:
            yield from _leaves(item, depth + 1)


WHERE = 1
"""A unit's flag: it says where to go (a URL, a host, an address)."""
IN_TEXT = 2
"""A unit's flag: it was found inside a longer text (a name, a phrase, a quote), not only as
a value whole (a field of a structured output): where an injection's values are."""


@dataclass(frozen=True, slots=True)
class _Units:
    """The units of one output or input, each with its flags ([`WHERE`][], [`IN_TEXT`][]),
    and whether a bound was reached while finding them."""

    found: dict[str, int]
    full: bool = False


def _collect(
    texts: Iterable[str | None], *, phrases: bool, limit: int, short_wholes: bool = False
) -> _Units:
    """The units of ``texts``: each whole (a value as given), the names inside it, and, with
    ``phrases`` (text someone wrote: an output, a trusted input), its phrases and what it
    quotes. A short value whole (a field's ``13``, ``10.0``) is a unit only with
    ``short_wholes`` (an argument's, looked up; a trusted input's): an output's ids, amounts
    and dates say too little alone, and only a quote makes one of them the injection's."""
    found: dict[str, int] = {}
    budget = MAX_TEXT
    for text in texts:
        if text is None or len(text) > budget:
            return _Units(found, full=True)
        budget -= len(text)
        candidates: list[tuple[str, int, bool]] = [(text, 0, short_wholes)]
        candidates += [
            (name, IN_TEXT | (WHERE if where else 0), False) for name, where in _names(text)
        ]
        if phrases:
            candidates += [(phrase, IN_TEXT, False) for phrase in _phrases(text)]
            candidates += [(match.group(1), IN_TEXT, True) for match in _QUOTED.finditer(text)]
        itself = _normal(text)
        for raw, flags, short in candidates:
            unit = _normal(raw)
            if unit == itself:
                flags &= ~IN_TEXT  # (the whole value, found again as a name of itself)
            if not _meaningful(unit, short=short):
                continue
            found[unit] = found.get(unit, 0) | flags
            if len(found) > limit:
                return _Units(found, full=True)
    return _Units(found)


def units_of_output(value: Any) -> _Units:
    """The units a tool's output (any JSON value, or text) brings into the model's context."""
    return _collect(_leaves(value), phrases=True, limit=MAX_UNITS_PER_OUTPUT)


def units_of_argument(value: Any) -> _Units:
    """The units of one argument: its values whole, and the names inside them."""
    leaves = []
    for count, leaf in enumerate(_leaves(value)):
        if count >= _MAX_ARGUMENT_LEAVES:
            return _Units({}, full=True)
        leaves.append(leaf)
    return _collect(leaves, phrases=False, limit=MAX_UNITS_PER_OUTPUT, short_wholes=True)


@dataclass(frozen=True, slots=True)
class Origins:
    """Where one call's arguments came from: what a policy's condition reads."""

    arguments: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """For each argument carrying a value that came from untrusted output and from no
    trusted input, the sources (tools) whose output it came from."""
    steering: frozenset[str] = frozenset()
    """The arguments among them whose untrusted value says where to go (a URL, a host, an
    address)."""
    in_text: frozenset[str] = frozenset()
    """The arguments among them whose untrusted value was found inside a longer text (a
    name, a phrase, a quote in a message, a page, a file: where an injection puts the
    values it wants copied), not only as a whole field of a structured output."""
    full: bool = False
    """The conversation's provenance reached its bound, or none is kept: every argument
    counts as untrusted."""
    kept: bool = True
    """False when the turn keeps no provenance (then ``full``): nothing can show an argument
    clean, so a rule asking where one came from holds (it fails closed)."""

    def untrusted(self, *names: str, in_text: bool = False) -> bool:
        """Whether any of the arguments ``names`` (any argument, without names) carries an
        untrusted value (with ``in_text``, one found inside a longer text); always true when
        the provenance is full."""
        if self.full:
            return True
        flagged = self.in_text if in_text else self.arguments.keys()
        if not names:
            return bool(flagged)
        return any(name in flagged for name in names)

    def steered(self, *names: str) -> bool:
        """Whether any of the arguments ``names`` (any, without names) says where to go with a
        value from untrusted output; always true when the provenance is full."""
        if self.full:
            return True
        return bool(self.steering if not names else self.steering & set(names))

    def describe(self) -> str:
        """What an approver is told: which argument came from which output."""
        if not self.kept:
            return (
                "the turn keeps no provenance (pass provenance= or trusted=), so no argument "
                "can be shown to come from trusted input"
            )
        if self.full:
            return (
                "the conversation's provenance is full (past its bound), so no argument can "
                "be shown to come from trusted input"
            )
        parts = [
            f"argument {name!r} came from the output of {', '.join(sources)}"
            for name, sources in sorted(self.arguments.items())
        ]
        return "; ".join(parts) + ", and from no trusted input"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (what a ticket carries)."""
        return {
            "arguments": {name: list(sources) for name, sources in self.arguments.items()},
            "steering": sorted(self.steering),
            "in_text": sorted(self.in_text),
            "full": self.full,
        }

    @classmethod
    def from_dict(cls, form: Mapping[str, Any]) -> Origins:
        """The origins ``to_dict`` gave.

        Raises:
            ConfigurationError: ``form`` is not such a form.
        """
        try:
            arguments = {
                str(name): tuple(str(source) for source in sources)
                for name, sources in form["arguments"].items()
            }
            steering = frozenset(str(name) for name in form["steering"])
            in_text = frozenset(str(name) for name in form["in_text"])
            full = form["full"]
            if not isinstance(full, bool):
                raise TypeError("full is a boolean")
        except (KeyError, TypeError, AttributeError) as exc:
            raise ConfigurationError(f"not a call's origins: {exc}") from None
        return cls(arguments, steering, in_text, full)


NO_ORIGINS = Origins()
"""A call whose arguments carry nothing from untrusted output."""
UNKNOWN_ORIGINS = Origins(full=True, kept=False)
"""A call of a turn that keeps no provenance: every argument counts as untrusted."""


_DEFAULT_KEY = b"toolwire provenance, v1"


def _digest(key: bytes, unit: str) -> int:
    raw = hashlib.blake2b(unit.encode("utf-8", "surrogatepass"), digest_size=8, key=key)
    return int.from_bytes(raw.digest(), "big")


@dataclass(frozen=True, slots=True, eq=False)
class Provenance:
    """What a conversation's model has read, and what it was trustingly told: keyed digests
    of the units (see the module docstring) of each tool's output, by the source that gave
    them, and of the trusted inputs. A value, like a turn's ``taint``: each
    [`Outcome`][toolwire.Outcome] carries the next one (``outcome.provenance``), and the
    next turn takes it (``execute_tool_calls(..., provenance=outcome.provenance)``);
    [`toolwire.loop`][] carries it itself.

    Make one with [`start`][], or [`Provenance.of`][] from trusted texts and values.
    """

    key: bytes
    """The digests' key (see [`start`][])."""
    trusted: frozenset[int] = frozenset()
    untrusted: Mapping[int, tuple[str, int]] = field(default_factory=dict)
    """For each unit from untrusted output: the first source it came from, and its flags
    ([`WHERE`][], [`IN_TEXT`][]) as every output gave them."""
    full: bool = False
    """A bound was reached: no argument can be shown clean any more."""

    @classmethod
    def start(cls, *, key: bytes | None = None) -> Provenance:
        """An empty provenance, its digests keyed with ``key``.

        Without a key, toolwire's own: the same inputs then give the same provenance in
        every process, so a retried or resumed turn (a run is bound to its provenance's
        fingerprint), another worker and an engine's replay agree, and the ledger keeps only
        that fingerprint. Give a secret key (8 to 64 bytes, the same wherever the
        conversation goes on: ``secrets.token_bytes(16)`` kept with it) when the provenance
        itself is kept where others read it (an engine's workflow inputs): its digests of
        short values then say nothing to whoever lacks the key."""
        if key is None:
            key = _DEFAULT_KEY
        if not isinstance(key, bytes) or not 8 <= len(key) <= 64:
            raise ConfigurationError("a provenance key is 8 to 64 bytes")
        return cls(key)

    @classmethod
    def of(cls, *trusted: Any) -> Provenance:
        """A fresh provenance trusting ``trusted``: texts (the user's words) or any JSON
        values (the application's own)."""
        return cls.start().trusting(*trusted)

    def trusting(self, *values: Any) -> Provenance:
        """This provenance, also trusting ``values`` (texts or JSON values): a unit any
        trusted input holds never makes an argument untrusted. Past the bound, the rest is
        left out (trusting less is the stricter rule)."""
        texts = (
            leaf
            for leaf in _leaves(list(values))
            if leaf is not None and len(leaf) <= _MAX_TRUSTED_TEXT
        )
        units = _collect(texts, phrases=True, limit=MAX_UNITS_PER_OUTPUT, short_wholes=True)
        room = MAX_UNITS - len(self.trusted) - len(self.untrusted)
        digests = [_digest(self.key, unit) for unit in units.found][: max(room, 0)]
        if not digests:
            return self
        return Provenance(self.key, self.trusted | frozenset(digests), self.untrusted, self.full)

    def reading(self, source: str, output: Any) -> Provenance:
        """This provenance, after the model read ``output`` (a JSON value, or text) from
        ``source`` (the tool's name)."""
        if self.full:
            return self
        units = units_of_output(output)
        new: dict[int, tuple[str, int]] = {}
        for unit, flags in units.found.items():
            digest = _digest(self.key, unit)
            seen = self.untrusted.get(digest)
            if seen is None:
                new[digest] = (source, flags)
            elif seen[1] | flags != seen[1]:
                new[digest] = (seen[0], seen[1] | flags)
        full = units.full or len(self.trusted) + len(self.untrusted) + len(new) > MAX_UNITS
        if not new and not full:
            return self
        return Provenance(self.key, self.trusted, {**self.untrusted, **new}, full)

    def origins(self, arguments: Mapping[str, Any]) -> Origins:
        """Which of ``arguments`` carry a value from untrusted output and from no trusted
        input, and from which sources."""
        if self.full:
            return Origins(full=True)
        if not self.untrusted:
            return NO_ORIGINS
        found: dict[str, tuple[str, ...]] = {}
        steering: set[str] = set()
        in_text: set[str] = set()
        for name, value in arguments.items():
            units = units_of_argument(value)
            if units.full:
                return Origins(full=True)
            sources: list[str] = []
            for unit, _ in units.found.items():
                digest = _digest(self.key, unit)
                seen = self.untrusted.get(digest)
                if seen is None or digest in self.trusted:
                    continue
                if seen[0] not in sources:
                    sources.append(seen[0])
                if seen[1] & WHERE:
                    steering.add(name)
                if seen[1] & IN_TEXT:
                    in_text.add(name)
            if sources:
                found[name] = tuple(sources)
        if not found:
            return NO_ORIGINS
        return Origins(found, frozenset(steering), frozenset(in_text))

    def fingerprint(self) -> str:
        """A digest of the whole provenance: what a run is bound to, so a resume under
        another provenance is refused."""
        body = hashlib.sha256(self.key)
        body.update(b"full" if self.full else b"open")
        for digest in sorted(self.trusted):
            body.update(digest.to_bytes(8, "big"))
        body.update(b"|")
        for digest, (source, flags) in sorted(self.untrusted.items()):
            body.update(digest.to_bytes(8, "big") + source.encode("utf-8", "surrogatepass"))
            body.update(bytes((flags,)))
        return body.hexdigest()[:32]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (an engine's workflow argument): the key and the digests, no text."""
        sources: dict[str, int] = {}
        untrusted = []
        for digest, (source, flags) in self.untrusted.items():
            index = sources.setdefault(source, len(sources))
            untrusted.append([f"{digest:016x}", index, flags])
        return {
            "key": self.key.hex(),
            "trusted": [f"{digest:016x}" for digest in self.trusted],
            "sources": list(sources),
            "untrusted": untrusted,
            "full": self.full,
        }

    @classmethod
    def from_dict(cls, form: Mapping[str, Any]) -> Provenance:
        """The provenance ``to_dict`` gave.

        Raises:
            ConfigurationError: ``form`` is not such a form, or past the bound.
        """
        try:
            sources = [str(source) for source in form["sources"]]
            trusted = frozenset(int(digest, 16) for digest in form["trusted"])
            untrusted = {
                int(digest, 16): (sources[index], int(flags) & (WHERE | IN_TEXT))
                for digest, index, flags in form["untrusted"]
            }
            full = form["full"]
            if not isinstance(full, bool):
                raise TypeError("full is a boolean")
            provenance = cls(bytes.fromhex(form["key"]), trusted, untrusted, full)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise ConfigurationError(f"not a provenance: {exc}") from None
        if len(trusted) + len(untrusted) > MAX_UNITS:
            raise ConfigurationError(f"a provenance keeps at most {MAX_UNITS} units")
        return provenance


_TRUSTED_ROLES = frozenset({"user", "system", "developer"})
_TOOL_OUTPUT_KEYS = frozenset({"functionResponse", "function_response", "toolResult"})
_TOOL_OUTPUT_TYPES = frozenset({"tool_result", "function_call_output", "function_result"})


def user_texts(messages: Any) -> list[str]:
    """The texts of a conversation's user, system and developer messages, in any provider's
    shape (dicts or SDK objects): what ``toolwire.loop`` trusts by default. Tool outputs
    inside them (Gemini's ``functionResponse`` parts, Anthropic's ``tool_result`` blocks,
    OpenAI's ``function_call_output`` items) are left out: they stay untrusted."""
    try:
        plain = pydantic_core.to_jsonable_python(messages, fallback=str, bytes_mode="base64")
    except (ValueError, TypeError, RecursionError):  # nested past saying: trust none of it
        return []
    found: list[str] = []
    for message in plain if isinstance(plain, list) else [plain]:
        if isinstance(message, Mapping) and message.get("role") in _TRUSTED_ROLES:
            _texts_of(message, found, 0)
    return found


def _texts_of(value: Any, found: list[str], depth: int) -> None:
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, Mapping):
        if value.get("type") in _TOOL_OUTPUT_TYPES:
            return
        for key, item in value.items():
            if key not in _TOOL_OUTPUT_KEYS and key not in ("role", "type"):
                _texts_of(item, found, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _texts_of(item, found, depth + 1)


def result_output(result: Any) -> Any:
    """What of a ``ToolResult`` the model reads: its texts (a text that is JSON, such as a
    list or an object rendered, as the values it holds: its strings are fields, not prose),
    structured content and value."""
    texts = [getattr(part, "text", None) for part in getattr(result, "content", ())]
    return [
        [_as_json(text) for text in texts if isinstance(text, str)],
        getattr(result, "structured_content", None),  # (JSON values: ToolResult checks them)
        getattr(result, "value", None),
    ]


def _as_json(text: str) -> Any:
    if text[:1] not in ("{", "[") or len(text) > MAX_TEXT:
        return text
    try:
        return pydantic_core.from_json(text)
    except ValueError:
        return text
