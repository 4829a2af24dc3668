"""Which calls may run: ordered glob rules over ``server/tool``, with ``deny`` winning.

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
``allow`` or ``ask`` rule decides; otherwise ``default``. MCP annotations may then only tighten
the result (``destructive="ask"``), never loosen it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolwire.errors import ConfigurationError
from toolwire.tool import Tool

__all__ = ["Effect", "Policy", "PolicyContext", "Rule", "tainted_by"]

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

    @property
    def qualified_name(self) -> str:
        return self.tool.qualified_name


@dataclass(frozen=True, slots=True)
class Rule:
    """``effect`` for calls whose ``server/tool`` (or bare tool name) matches ``pattern``,
    when ``when(context)`` is true (always, without ``when``)."""

    effect: Effect
    pattern: str
    when: Callable[[PolicyContext], bool] | None = field(default=None, kw_only=True)
    reason: str | None = field(default=None, kw_only=True)
    """What a denied call's answer says; a default names the rule."""

    def __post_init__(self) -> None:
        if self.effect not in _EFFECTS:
            raise ConfigurationError(f"a rule's effect is allow, ask or deny, not {self.effect!r}")

    def matches(self, context: PolicyContext) -> bool:
        tool = context.tool
        names = (tool.qualified_name, tool.name) if tool.server_id else (tool.name,)
        if not any(fnmatch.fnmatchcase(name, self.pattern) for name in names):
            return False
        return self.when is None or bool(self.when(context))


def tainted_by(*sources: str) -> Callable[[PolicyContext], bool]:
    """A ``when`` that holds once output from any of ``sources`` is in the model's context."""
    wanted = frozenset(sources)
    return lambda context: bool(wanted & context.taint)


@dataclass(frozen=True, slots=True)
class Verdict:
    """A policy's answer for one call."""

    effect: Effect
    reason: str | None = None


class Policy:
    """Ordered rules, a default, and how far MCP annotations may tighten.

    Args:
        rules: :class:`Rule` objects, in order.
        default: the effect when no rule matches.
        destructive: ``"ask"`` makes a server's tool whose annotations do not promise
            ``readOnlyHint: true`` or ``destructiveHint: false`` need approval at least;
            ``"ignore"`` (the default) leaves annotations out of it. Annotations come from
            servers and are untrusted, so they can only ever tighten.
    """

    def __init__(
        self,
        *rules: Rule,
        default: Effect = "allow",
        destructive: Literal["ask", "ignore"] = "ignore",
    ) -> None:
        if default not in _EFFECTS:
            raise ConfigurationError(f"default is allow, ask or deny, not {default!r}")
        if destructive not in ("ask", "ignore"):
            raise ConfigurationError(f"destructive is 'ask' or 'ignore', not {destructive!r}")
        for rule in rules:
            if not isinstance(rule, Rule):
                raise ConfigurationError(f"not a Rule: {rule!r}")
        self.rules = tuple(rules)
        self.default: Effect = default
        self.destructive = destructive
        self.allows_everything = not self.rules and default == "allow" and destructive == "ignore"
        """True when no call can be asked or denied (the executor then skips evaluation)."""

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

    def evaluate(self, context: PolicyContext) -> Verdict:
        """The effect for one call."""
        decided: Verdict | None = None
        for rule in self.rules:
            if not rule.matches(context):
                continue
            if rule.effect == "deny":
                return Verdict("deny", rule.reason or f"denied by policy rule {rule.pattern!r}")
            if decided is None:
                decided = Verdict(rule.effect, rule.reason)
        verdict = decided or Verdict(self.default)
        if verdict.effect == "deny":
            return Verdict("deny", verdict.reason or "denied by the default policy")
        if verdict.effect == "allow" and context.tool.needs_approval:
            return Verdict("ask", "the tool's definition changed since it was approved")
        if verdict.effect == "allow" and self._destructive_needs_approval(context.tool):
            return Verdict("ask", "the server does not declare this tool read-only")
        return verdict

    def _destructive_needs_approval(self, tool: Tool) -> bool:
        if self.destructive != "ask" or tool.server_id is None:
            return False
        hints = tool.annotations or {}
        # MCP defaults: readOnlyHint false, destructiveHint true.
        return not (hints.get("readOnlyHint") is True or hints.get("destructiveHint") is False)


ALLOW_ALL = Policy()
"""Every call may run; what an executor without a policy uses."""
