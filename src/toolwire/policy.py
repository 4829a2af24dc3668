"""Which calls may run: ordered glob rules over a tool's names, with ``deny`` winning.

```python
policy = Policy(
    # no payments once web output is in the model's context
    Rule("deny", "payments/*", when=tainted_by("web")),
    Rule("allow", "github/get_*"),
    Rule("ask", "github/*"),
    default="allow",
)
```

Evaluation: if any matching rule says ``deny``, the call is denied; otherwise the first matching
``allow`` or ``ask`` rule decides; otherwise ``default``. Annotations, and a definition that is
new or changed since it was approved, may then only tighten the result, never loosen it.

Matching fails closed:

- ``allow`` matches a tool's canonical identity only: ``server/tool`` with the server's own tool
  name for a server's tool, the bare name for a tool without a server. The pattern is split at
  its first ``/``: ``github/get_*`` matches the tools of server ``github`` named ``get_*``;
  ``*/search`` any server's ``search``; ``*/*`` every server's tools. A pattern without ``/``
  matches tools without a server only, so ``get_weather`` (or ``*``) never allows a server's
  ``evil/get_weather``. Exposed names (``files__read``) are not identities: an allow rule
  written that way matches nothing.
- ``deny`` and ``ask`` match any name a tool goes by: its canonical identity, its bare name,
  its exposed form (``server__tool``) and the exposed name the model used, and each of these
  spelt portably (``delete.file`` → ``delete_file``), with invisible characters removed and
  NFKC applied, and case-folded, so ``files/delete_file`` also catches a server's
  ``delete\\u200bfile`` and ``Delete_File``.
- A rule's ``when`` that raises counts as matching for ``deny`` and ``ask``, and as not
  matching for ``allow``; [`Policy.evaluate`][] never raises.
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from toolwire._text import strip_invisible
from toolwire.calls import DIRECT, Caller, printable
from toolwire.errors import ConfigurationError
from toolwire.provenance import NO_ORIGINS, Origins
from toolwire.tool import CallerKind, Entity, Tool, _warn_caller, exposed_name_for

__all__ = [
    "Effect",
    "Policy",
    "PolicyContext",
    "RequestKind",
    "RequestRule",
    "Rule",
    "called_by",
    "from_untrusted",
    "tainted_by",
]

Effect = Literal["allow", "ask", "deny"]
_EFFECTS = ("allow", "ask", "deny")


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyContext:
    """What a rule's ``when`` sees about a call."""

    tool: Tool
    arguments: Mapping[str, Any]
    principal: Any
    """Who the turn runs for, as the caller passed it (a user id, a dict, ...)."""
    taint: frozenset[str]
    """Servers (or other sources) whose output is already in the model's context."""
    exposed_name: str | None = None
    """The name the model called the tool by, when known (``deny``/``ask`` rules match it)."""
    caller: Caller = DIRECT
    """Who made the call: the model (``kind == "direct"``) or code it wrote in the
    provider's code-execution container (``kind == "code"``, programmatic tool calling)."""
    origins: Origins = NO_ORIGINS
    """Which arguments carry a value from untrusted output and from no trusted input (see
    [`toolwire.provenance`][]); none when the turn keeps no provenance."""

    @property
    def qualified_name(self) -> str:
        return self.tool.qualified_name


def _plain(name: str) -> str:
    """``name`` without invisible characters, NFKC-normalized (fullwidth letters become ASCII)."""
    return unicodedata.normalize("NFKC", strip_invisible(name))


def _spellings(name: str) -> set[str]:
    """``name``, its plain form, and both made portable as exposed names are."""
    forms = {name, _plain(name)}
    return forms | {exposed_name_for(form) for form in forms}


def _names_of(tool: Tool, exposed_name: str | None = None) -> frozenset[str]:
    """Every name ``deny`` and ``ask`` rules match for ``tool`` (see the module docstring)."""
    spellings = _spellings(tool.name)
    names = set(spellings)
    server = tool.server_id
    if server:
        names.update(f"{server}/{form}" for form in spellings)
        names.update(exposed_name_for(form, server) for form in spellings)
    if exposed_name:
        names.update((exposed_name, _plain(exposed_name)))
    names.update([name.casefold() for name in names])  # `Delete_File` is still delete_file
    return frozenset(names)


def _identity_matches(pattern: str, tool: Tool) -> bool:
    """Whether ``pattern`` matches ``tool``'s canonical identity (what ``allow`` matches)."""
    server_pattern, slash, tool_pattern = pattern.partition("/")
    if not slash:
        return not tool.server_id and fnmatch.fnmatchcase(tool.name, pattern)
    return (
        bool(tool.server_id)
        and fnmatch.fnmatchcase(tool.server_id or "", server_pattern)
        and fnmatch.fnmatchcase(tool.name, tool_pattern)
    )


@dataclass(frozen=True, slots=True)
class Rule:
    """``effect`` for calls whose tool ``pattern`` matches (a glob; see the module docstring
    for which names each effect matches), when ``when(context)`` is true (always, without
    ``when``)."""

    effect: Effect
    pattern: str
    when: Callable[[PolicyContext], bool] | None = field(default=None, kw_only=True)
    reason: str | None = field(default=None, kw_only=True)
    """What a denied call's answer says; a default names the rule."""
    kind: Entity = field(default="tool", kw_only=True)
    """What the rule is about: tool calls, or, served by the MCP gateway, reads of servers'
    resources (``"resource"``: the pattern's server part matches the server, the rest its
    URI, so ``docs/file:///private/*``) or gets of their prompts (``"prompt"``). A rule
    matches only calls of its kind: the default policy decides the others."""

    def __post_init__(self) -> None:
        if self.effect not in _EFFECTS:
            raise ConfigurationError(f"a rule's effect is allow, ask or deny, not {self.effect!r}")
        if self.kind not in get_args(Entity):
            raise ConfigurationError(
                f"a rule's kind is 'tool', 'resource' or 'prompt', not {self.kind!r}"
            )
        if not isinstance(self.pattern, str):
            raise ConfigurationError(f"a rule's pattern is a string, not {self.pattern!r}")
        if self.when is not None and not callable(self.when):
            raise ConfigurationError(f"a rule's when is a callable, not {self.when!r}")

    def matches(self, context: PolicyContext) -> bool:
        """Whether the rule applies to the call; never raises (see [`Policy.evaluate`][])."""
        names = _names_of(context.tool, context.exposed_name) if self.effect != "allow" else None
        return self._match(context, names)[0]

    def _names_match(self, tool: Tool, names: frozenset[str] | None) -> bool:
        """Whether the pattern matches the tool: its identity for allow, any of ``names`` (see
        [`_names_of`][]) for deny and ask."""
        if tool.entity != self.kind:
            return False
        if self.effect == "allow":
            return _identity_matches(self.pattern, tool)
        return any(
            fnmatch.fnmatchcase(name, pattern)
            for pattern in (self.pattern, self.pattern.casefold())
            for name in names or ()
        )

    def _match(
        self, context: PolicyContext, names: frozenset[str] | None
    ) -> tuple[bool, str | None]:
        """Whether the rule applies, and a note when its ``when`` raised; ``names`` are the
        tool's names (see [`_names_of`][]), needed by deny and ask rules."""
        if not self._names_match(context.tool, names):
            return False, None
        if self.when is None:
            return True, None
        try:
            return bool(self.when(context)), None
        except Exception as exc:  # a broken condition fails closed, whatever it raised
            note = f"its condition raised {type(exc).__name__}"
            return self.effect != "allow", note


def tainted_by(*sources: str) -> Callable[[PolicyContext], bool]:
    """A ``when`` that holds once output from any of ``sources`` is in the model's context."""
    wanted = frozenset(sources)
    return lambda context: bool(wanted & context.taint)


def from_untrusted(*arguments: str) -> Callable[[PolicyContext], bool]:
    """A ``when`` that holds when any of the call's ``arguments`` (any argument, without
    names) carries a value that came from a tool's untrusted output and from no trusted
    input (see [`toolwire.provenance`][]), or when the conversation's provenance is full::

        Rule("ask", "send_money", when=from_untrusted("recipient"))
    """
    for name in arguments:
        if not isinstance(name, str):
            raise ConfigurationError(f"from_untrusted takes argument names, not {name!r}")
    return lambda context: context.origins.untrusted(*arguments)


def untrusted_reason(tool: Tool, origins: Origins) -> str | None:
    """Why ``Policy(provenance=...)`` governs a call of ``tool`` with these ``origins``, or
    None. A tool may act unless its annotations promise it only reads (``readOnlyHint``),
    and may reach outside unless they say ``openWorldHint: false`` (MCP's defaults):

    - a call that may act and reach outside, with any argument from untrusted output;
    - a call that may act inside only, with an argument whose untrusted value was found
      inside a longer text (where an injection puts what it wants copied), not only as a
      whole field it was shown (a choice among the channels, files, events listed);
    - a read that may reach outside, whose argument saying where to go (a URL, a host, an
      address) came from untrusted output.
    """
    if not origins.untrusted():
        return None
    if not _declared_read_only(tool):
        if _reaches_outside(tool) or origins.untrusted(in_text=True):
            return origins.describe()
        return None  # a choice among the fields it was shown, by a tool that stays inside
    if _reaches_outside(tool) and origins.steered():
        return f"it reaches outside, and {origins.describe()}"
    return None


def _declared_read_only(tool: Tool) -> bool:
    """Whether ``tool``'s annotations promise it only reads (``readOnlyHint``, and no
    ``destructiveHint`` beside it): a tool that says nothing may act."""
    hints = tool.annotations if isinstance(tool.annotations, Mapping) else {}
    return hints.get("readOnlyHint") is True and hints.get("destructiveHint") is not True


def _reaches_outside(tool: Tool) -> bool:
    """Whether ``tool`` may reach outside: MCP's default, unless ``openWorldHint`` is false."""
    hints = tool.annotations if isinstance(tool.annotations, Mapping) else {}
    return hints.get("openWorldHint") is not False


def called_by(*kinds: CallerKind) -> Callable[[PolicyContext], bool]:
    """A ``when`` that holds for calls made by one of ``kinds`` of caller: ``"code"`` (code the
    model wrote, programmatic tool calling) or ``"direct"`` (the model itself)::

        Rule("deny", "*", when=called_by("code"))   # code calls nothing destructive...
    """
    wanted = frozenset(kinds)
    if not wanted or not wanted <= frozenset(get_args(CallerKind)):
        raise ConfigurationError(f"called_by takes 'direct' and/or 'code', not {kinds!r}")
    return lambda context: context.caller.kind in wanted


RequestKind = Literal["elicitation", "sampling", "roots"]
"""What an MCP server may ask of a client within a call."""


@dataclass(frozen=True, slots=True)
class RequestRule:
    """Whether an MCP server's requests of kind ``elicitation``, ``sampling`` or ``roots`` pass
    on to the client the gateway serves: ``effect`` (allow or deny) for the requests whose
    ``server/kind`` the glob ``pattern`` matches (``"*/sampling"``: sampling from every
    server), for ``principals`` (every principal when None)."""

    effect: Literal["allow", "deny"]
    pattern: str
    principals: frozenset[str] | None = field(default=None, kw_only=True)
    reason: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.effect not in ("allow", "deny"):
            raise ConfigurationError(f"a request rule is allow or deny, not {self.effect!r}")
        if not isinstance(self.pattern, str):
            raise ConfigurationError(f"a request rule's pattern is a string, not {self.pattern!r}")

    def matches(self, server: str, kind: str, principal: Any) -> bool:
        if self.principals is not None and str(principal) not in self.principals:
            return False
        return fnmatch.fnmatchcase(f"{server}/{kind}", self.pattern)


@dataclass(frozen=True, slots=True)
class Verdict:
    """A policy's answer for one call."""

    effect: Effect
    reason: str | None = None


_SAFETY_HINTS = ("readOnlyHint", "destructiveHint")


def destructive_by_annotations(tool: Tool) -> str | None:
    """Why ``tool`` may be destructive by its annotations, or None when they promise it is not,
    whoever wrote it.

    The MCP defaults apply: ``readOnlyHint`` false and ``destructiveHint`` true unless said
    otherwise, so a tool without annotations may be destructive. A promise counts only as the
    boolean itself, and ``readOnlyHint: true`` never outweighs ``destructiveHint: true`` (a
    contradiction tightens). What ``Policy(destructive="ask")`` asks about, except that it
    spares a tool without a server and without annotations (the developer's own code).
    """
    hints = tool.annotations if isinstance(tool.annotations, Mapping) else {}
    read_only, destructive = (hints.get(key) for key in _SAFETY_HINTS)
    if destructive is False:
        return None
    if read_only is True:
        if destructive is None:
            return None
        return "its annotations say both readOnlyHint and destructiveHint"
    if tool.server_id:
        return "the server does not declare this tool read-only"
    return "its annotations do not declare it read-only or non-destructive"


DESTRUCTIVE_WORDS = frozenset(
    {
        "delete", "remove", "rm", "drop", "truncate", "destroy", "purge", "wipe", "erase",
        "kill", "terminate", "transfer", "pay", "send",
    }
)  # fmt: skip
"""Words of a tool's name that say a call may destroy data or act outside (send, pay): what
[`destructive_by_name`][] looks for."""
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")


def destructive_by_name(tool: Tool) -> str | None:
    """The word of ``tool``'s own name (``delete_file``, ``dropTable``, ``users.remove``) that
    is one of [`DESTRUCTIVE_WORDS`][], when its annotations do not declare it read-only or
    non-destructive; None otherwise. A hint for warnings only: a policy never decides by it."""
    if destructive_by_annotations(tool) is None:
        return None
    # Read with its invisible characters as separators and without them (``de\u200blete``).
    spellings = (unicodedata.normalize("NFKC", tool.name), _plain(tool.name))
    words = (word.lower() for form in spellings for word in _WORD.findall(form))
    return next((word for word in words if word in DESTRUCTIVE_WORDS), None)


def _destructive_reason(tool: Tool) -> str | None:
    """What ``Policy(destructive="ask")`` asks about: [`destructive_by_annotations`][], but
    None for a tool without a server and without annotations (the developer's own code)."""
    if not tool.server_id and not tool.annotations:
        return None
    return destructive_by_annotations(tool)


class Policy:
    """Ordered rules, a default, and how far annotations may tighten.

    Args:
        rules: [`Rule`][] objects, in order.
        default: the effect when no rule matches.
        destructive: ``"ask"`` makes a tool that may be destructive by its annotations need
            approval at least. The MCP defaults apply (``readOnlyHint`` false,
            ``destructiveHint`` true): a tool is spared only by ``destructiveHint: false``, or
            by ``readOnlyHint: true`` with no ``destructiveHint`` (beside
            ``destructiveHint: true`` it is a contradiction, which tightens). This holds for
            a server's tool (without annotations it may be destructive) and for a Python
            tool with annotations (``@tool(annotations={"destructiveHint": True})`` needs
            approval); a Python tool without annotations is the developer's own code and is
            not affected. ``"ignore"`` (the default) leaves annotations out of it.
            Annotations can only ever tighten.
        requests: [`RequestRule`][] objects, in order: which requests of MCP servers
            (elicitation, sampling, roots) the gateway passes on to its client. The first
            that matches decides; without one, they pass (when the client can answer them).
        provenance: ``"ask"`` or ``"deny"`` at least for a call that may act (its
            annotations do not declare it read-only) with an argument whose value came from
            a tool's untrusted output and from no trusted input, and for a call that reaches
            outside (``openWorldHint``), even a read, whose argument saying where to go (a
            URL, a host, an address) came so (see [`toolwire.provenance`][]). An ask tells
            the approver which argument came from which output. ``"ignore"`` (the default)
            leaves provenance to the rules (``from_untrusted``).
    """

    def __init__(
        self,
        *rules: Rule,
        default: Effect = "allow",
        destructive: Literal["ask", "ignore"] = "ignore",
        requests: Iterable[RequestRule] = (),
        provenance: Effect | Literal["ignore"] = "ignore",
    ) -> None:
        if default not in _EFFECTS:
            raise ConfigurationError(f"default is allow, ask or deny, not {default!r}")
        if destructive not in ("ask", "ignore"):
            raise ConfigurationError(f"destructive is 'ask' or 'ignore', not {destructive!r}")
        for rule in rules:
            if not isinstance(rule, Rule):
                raise ConfigurationError(f"not a Rule: {rule!r}")
        self.rules = tuple(rules)
        self.requests = tuple(requests)
        for request in self.requests:
            if not isinstance(request, RequestRule):
                raise ConfigurationError(f"not a RequestRule: {request!r}")
        self._matches_names = any(rule.effect != "allow" for rule in self.rules)
        self.default: Effect = default
        self.destructive = destructive
        if provenance not in ("ask", "deny", "ignore"):
            raise ConfigurationError(f"provenance is ask, deny or ignore, not {provenance!r}")
        self.provenance = provenance
        self.allows_everything = (
            not self.rules
            and default == "allow"
            and destructive == "ignore"
            and provenance == "ignore"
        )
        """True when no call can be asked or denied (the executor then skips evaluation, unless
        the tool itself needs approval)."""

    @classmethod
    def of(
        cls,
        *,
        allow: Iterable[str] = (),
        ask: Iterable[str] = (),
        deny: Iterable[str] = (),
        default: Effect = "allow",
    ) -> Policy:
        """A policy from pattern lists; allow rules are tried before ask rules."""
        rules = [Rule("deny", p) for p in deny]
        rules += [Rule("allow", p) for p in allow]
        rules += [Rule("ask", p) for p in ask]
        return cls(*rules, default=default)

    @classmethod
    def all_of(cls, *policies: Policy) -> Policy:
        """One policy applying every one of ``policies`` together: a call any of them denies
        is denied (with the first such one's reason), else a call any of them asks about is
        asked about (the first one's reason), else it is allowed. A tool any of them denies
        outright is denied outright (left out of listings).

        With one policy, that policy; with none, a policy that allows every call.

        Raises:
            ConfigurationError: for anything that is not a [`Policy`][].
        """
        for policy in policies:
            if not isinstance(policy, Policy):
                raise ConfigurationError(f"not a Policy: {policy!r}")
        if len(policies) == 1:
            return policies[0]
        return _AllOf(policies)

    def denies_outright(
        self, tool: Tool, *, principal: Any = None, exposed_name: str | None = None
    ) -> str | None:
        """Why every call of ``tool`` by ``principal`` is denied, whatever its arguments and
        taint, or None (see [`denies_outright`][]): what a listing leaves out."""
        return _denied_by_rules(self, tool, principal=principal, exposed_name=exposed_name)

    def may_ask(
        self, tool: Tool, *, principal: Any = None, exposed_name: str | None = None
    ) -> str | None:
        """Why some call of ``tool`` by ``principal`` may need approval, or None when no call
        can (see [`may_ask`][])."""
        return _asked_by_rules(self, tool, principal=principal, exposed_name=exposed_name)

    def refuses_request(self, server: str, kind: str, *, principal: Any = None) -> str | None:
        """Why requests of ``kind`` (``elicitation``, ``sampling``, ``roots``) from MCP server
        ``server`` must not reach ``principal``'s client, or None when they may (see
        ``requests``)."""
        for rule in self.requests:
            if rule.matches(server, kind, principal):
                if rule.effect == "allow":
                    return None
                return rule.reason or f"a rule refuses {rule.pattern}"
        return None

    def evaluate(self, context: PolicyContext) -> Verdict:
        """The effect for one call. Never raises: a rule's ``when`` that raises fails closed."""
        decided: Verdict | None = None
        names = _names_of(context.tool, context.exposed_name) if self._matches_names else None
        for rule in self.rules:
            matched, note = rule._match(context, names)
            if not matched:
                continue
            if rule.effect == "deny":
                return _verdict(rule, note, f"denied by policy rule {rule.pattern!r}")
            if decided is None:
                decided = _verdict(rule, note, f"policy rule {rule.pattern!r} asks")
        verdict = decided or Verdict(self.default)
        if verdict.effect == "deny":
            return Verdict("deny", verdict.reason or "denied by the default policy")
        if verdict.effect == "allow" and context.tool.needs_approval:
            return Verdict("ask", "the tool is new or its definition changed since it was approved")
        if verdict.effect == "allow" and self.destructive == "ask":
            why = _destructive_reason(context.tool)
            if why is not None:
                verdict = Verdict("ask", why)
        if self.provenance != "ignore" and verdict.effect != "deny":
            why = untrusted_reason(context.tool, context.origins)
            if why is not None and (self.provenance == "deny" or verdict.effect == "allow"):
                return Verdict(self.provenance, why)
            if why is not None:  # already asked: the approver is told where it came from
                return Verdict("ask", f"{verdict.reason}; {why}" if verdict.reason else why)
        return verdict


class _CallDependent(Exception):
    """A rule's condition looked at what only a call has (its arguments, the taint)."""


class _UnknownArguments(Mapping[str, Any]):
    """The arguments of a call not made yet: reading them raises [`_CallDependent`][]."""

    def __getitem__(self, key: str) -> Any:
        raise _CallDependent

    def __iter__(self) -> Any:
        raise _CallDependent

    def __len__(self) -> int:
        raise _CallDependent


class _UnknownCaller:
    """The caller of a call not made yet, for a tool code may call: reading it raises
    [`_CallDependent`][]."""

    def __getattr__(self, name: str) -> Any:
        raise _CallDependent

    def __eq__(self, other: object) -> bool:
        raise _CallDependent

    __hash__ = object.__hash__


class _UnknownTaint(frozenset[str]):
    """The taint of a call not made yet: every use of it raises [`_CallDependent`][]
    (operators, containment, iteration, truth)."""

    def _unknown(self, *_: Any) -> Any:
        raise _CallDependent

    __and__ = __rand__ = __or__ = __ror__ = __sub__ = __rsub__ = __xor__ = __rxor__ = _unknown
    __contains__ = __iter__ = __len__ = __bool__ = __eq__ = __le__ = __lt__ = _unknown
    __ge__ = __gt__ = isdisjoint = issubset = issuperset = intersection = union = _unknown
    difference = symmetric_difference = copy = _unknown
    __hash__ = frozenset.__hash__


class _UnknownOrigins(Origins):
    """The origins of a call not made yet: reading them raises [`_CallDependent`][]."""

    def untrusted(self, *names: str, in_text: bool = False) -> bool:
        raise _CallDependent

    def steered(self, *names: str) -> bool:
        raise _CallDependent


def denies_outright(
    policy: Policy, tool: Tool, *, principal: Any = None, exposed_name: str | None = None
) -> str | None:
    """Why ``policy`` denies every call of ``tool`` by ``principal``, whatever its arguments
    and taint, or None when some call might run (or be asked about).

    A rule's condition that reads the arguments or the taint, or raises, makes the rule
    uncertain: an uncertain deny denies nothing outright, and an uncertain allow or ask may
    let a call through. Only certainty leaves a tool out of a listing; every call still goes
    through [`Policy.evaluate`][].
    """
    return policy.denies_outright(tool, principal=principal, exposed_name=exposed_name)


def _before_any_call(tool: Tool, principal: Any, exposed_name: str | None) -> PolicyContext:
    """What a rule sees of a call not made yet: its arguments and the taint unknown (a rule
    that reads them cannot be certain)."""
    return PolicyContext(
        tool=tool,
        arguments=_UnknownArguments(),
        principal=principal,
        taint=_UnknownTaint(),
        origins=_UnknownOrigins(),
        exposed_name=exposed_name,
        # a tool only the model calls has a known caller
        caller=DIRECT if tool.callers == {"direct"} else _UnknownCaller(),  # type: ignore[arg-type]
    )


def _denied_by_rules(
    policy: Policy, tool: Tool, *, principal: Any = None, exposed_name: str | None = None
) -> str | None:
    """[`denies_outright`][] for a policy of rules, a default and annotations."""
    context = _before_any_call(tool, principal, exposed_name)
    names = _names_of(tool, exposed_name)
    may_pass = False
    for rule in policy.rules:
        certain = _certainly(rule, context, names)
        if rule.effect == "deny" and certain is True:
            return rule.reason or f"denied by policy rule {rule.pattern!r}"
        if rule.effect != "deny" and certain is not False:
            may_pass = True
    if may_pass or policy.default != "deny":
        return None
    return "denied by the default policy"


def may_ask(
    policy: Policy, tool: Tool, *, principal: Any = None, exposed_name: str | None = None
) -> str | None:
    """Why some call of ``tool`` by ``principal`` may need approval under ``policy`` (an
    ``ask`` rule that may apply, an ``ask`` default, annotations under
    ``destructive="ask"``, a definition that is new or changed), or None when no call can.

    Judged before any call, as [`denies_outright`][] is: a rule's condition that reads the
    arguments or the taint may hold, so an ``ask`` behind it counts. None is a promise (no
    call will ever be asked about); a reason may be a false alarm.
    """
    return policy.may_ask(tool, principal=principal, exposed_name=exposed_name)


def _asked_by_rules(
    policy: Policy, tool: Tool, *, principal: Any = None, exposed_name: str | None = None
) -> str | None:
    """[`may_ask`][] for a policy of rules, a default and annotations."""
    if policy.denies_outright(tool, principal=principal, exposed_name=exposed_name) is not None:
        return None
    if tool.needs_approval:
        return "the tool is new or its definition changed since it was approved"
    context = _before_any_call(tool, principal, exposed_name)
    names = _names_of(tool, exposed_name)
    for rule in policy.rules:
        if rule.effect == "deny":
            continue  # a deny never asks; one that may not apply lets the rest decide
        certain = _certainly(rule, context, names)
        if certain is False:
            continue
        if rule.effect == "ask":
            return rule.reason or f"policy rule {rule.pattern!r} asks"
        if certain is True:
            break  # an allow for every call: no later rule, nor the default, is reached
    else:
        if policy.default == "ask":
            return "the policy's default asks"
    if policy.destructive == "ask" and (why := _destructive_reason(tool)) is not None:
        return why
    if policy.provenance == "ask" and (not _declared_read_only(tool) or _reaches_outside(tool)):
        return "a call's arguments may come from untrusted output"
    return None


def _certainly(rule: Rule, context: PolicyContext, names: frozenset[str]) -> bool | None:
    """Whether ``rule`` applies to every call of the context's tool (True), to none (False),
    or that depends on the call (None)."""
    if not rule._names_match(context.tool, names):
        return False
    if rule.when is None:
        return True
    try:
        return bool(rule.when(context))
    except Exception:  # reads the call (or fails): not known before the call
        return None


def _verdict(rule: Rule, note: str | None, fallback: str) -> Verdict:
    """``rule``'s verdict; its reason says when the rule's condition raised (``note``)."""
    if note is None:
        return Verdict(rule.effect, rule.reason or (fallback if rule.effect == "deny" else None))
    return Verdict(rule.effect, f"{rule.reason or fallback} ({note})")


class _AllOf(Policy):
    """Several policies applied together (see [`Policy.all_of`][])."""

    def __init__(self, policies: tuple[Policy, ...]) -> None:
        super().__init__()
        self.policies = policies
        self.allows_everything = all(policy.allows_everything for policy in policies)

    def evaluate(self, context: PolicyContext) -> Verdict:
        asked: Verdict | None = None
        for policy in self.policies:
            verdict = policy.evaluate(context)
            if verdict.effect == "deny":
                return verdict
            if verdict.effect == "ask" and asked is None:
                asked = verdict
        return asked or Verdict("allow")

    def denies_outright(
        self, tool: Tool, *, principal: Any = None, exposed_name: str | None = None
    ) -> str | None:
        for policy in self.policies:
            why = policy.denies_outright(tool, principal=principal, exposed_name=exposed_name)
            if why is not None:
                return why
        return None

    def refuses_request(self, server: str, kind: str, *, principal: Any = None) -> str | None:
        for policy in self.policies:
            why = policy.refuses_request(server, kind, principal=principal)
            if why is not None:
                return why
        return None

    def may_ask(
        self, tool: Tool, *, principal: Any = None, exposed_name: str | None = None
    ) -> str | None:
        if self.denies_outright(tool, principal=principal, exposed_name=exposed_name) is not None:
            return None
        for policy in self.policies:
            why = policy.may_ask(tool, principal=principal, exposed_name=exposed_name)
            if why is not None:
                return why
        return None


ALLOW_ALL = Policy()
"""Every call may run; what an executor without a policy uses."""


_GLOB = re.compile(r"[*?\[]")
_NAMES_SHOWN = 5
"""How many tools a note about a rule that matches none names."""


def warn_unmatched_rules(
    policy: Policy, tools: Iterable[tuple[str | None, Tool]], where: str
) -> None:
    """Warn ([`ToolwireWarning`][toolwire.errors.ToolwireWarning], at the caller's code) once
    per rule of ``policy`` whose pattern matches none of ``tools`` (exposed name and tool:
    what a listing or a gateway has), naming them; nothing for no tools at all (a source not
    open yet). An ``allow`` rule that names a tool by another name than its canonical
    identity (``read_file`` for ``files/read_file``) says which identity was probably meant:
    it still matches nothing, as allow never matches other names."""
    for note in unmatched_rules(policy, tools, where):
        _warn_caller(note)


def unmatched_rules(
    policy: Policy, tools: Iterable[tuple[str | None, Tool]], where: str
) -> list[str]:
    """A note per rule of ``policy`` (every policy of an ``all_of``) whose pattern matches
    none of ``tools``; see [`warn_unmatched_rules`][]."""
    named = [(tool, _names_of(tool, name)) for name, tool in tools]
    if not named:
        return []
    notes: list[str] = []
    seen: set[tuple[str, str]] = set()
    for rule in _rules_of(policy):
        if rule.kind != "tool":  # what a server offers besides tools is read when asked for
            continue
        if (rule.effect, rule.pattern) in seen:
            continue
        seen.add((rule.effect, rule.pattern))
        if any(rule._names_match(tool, names) for tool, names in named):
            continue
        notes.append(_unmatched_note(rule, named, where))
    return notes


def _rules_of(policy: Policy) -> list[Rule]:
    """The rules of ``policy``, and of each policy an ``all_of`` applies."""
    if isinstance(policy, _AllOf):
        return [rule for each in policy.policies for rule in _rules_of(each)]
    return list(policy.rules)


def _unmatched_note(rule: Rule, named: Sequence[tuple[Tool, frozenset[str]]], where: str) -> str:
    """What to say of ``rule``, which matches none of the tools ``named``."""
    pattern = printable(rule.pattern[:100])
    said = f"policy rule {rule.effect} {pattern!r} matches no tool of the {where}"
    if rule.effect == "allow":
        # What a deny of the same pattern would match: tools it names by another name.
        other = [
            tool for tool, names in named if Rule("deny", rule.pattern)._names_match(tool, names)
        ]
        if other:
            meant = _meant(rule.pattern, other)
            return (
                f"{said}: an allow rule matches only a tool's canonical identity (server/tool "
                f"for a server's tool), and {pattern!r} names {_listed(other)} by another name; "
                f"did you mean {' or '.join(repr(printable(m[:200])) for m in meant[:5])}?"
            )
    return f"{said} (its tools: {_listed([tool for tool, _ in named])})"


def _meant(pattern: str, tools: Sequence[Tool]) -> list[str]:
    """The allow patterns that name ``tools`` by their identity: ``server/pattern`` for a
    bare glob each of them matches by its own name (``get_*`` → ``weather/get_*``), else
    each one's identity."""
    if (
        _GLOB.search(pattern)
        and "/" not in pattern
        and all(tool.server_id and fnmatch.fnmatchcase(tool.name, pattern) for tool in tools)
    ):
        return sorted({f"{tool.server_id}/{pattern}" for tool in tools})
    return list(dict.fromkeys(tool.qualified_name for tool in tools))


def _listed(tools: Sequence[Tool]) -> str:
    """Some of ``tools`` by identity, and how many more."""
    names = list(dict.fromkeys(tool.qualified_name for tool in tools))
    more = len(names) - _NAMES_SHOWN
    shown = ", ".join(repr(printable(name[:100])) for name in names[:_NAMES_SHOWN])
    return shown + (f" and {more} more" if more > 0 else "")
