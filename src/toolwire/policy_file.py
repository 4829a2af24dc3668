"""Policies written as files: TOML (``.toml``) or JSON (anything else).

```toml
default = "allow"          # allow | ask | deny: when no rule matches (default "allow")
destructive = "ask"        # ask | ignore: what tools that may be destructive by their
                           # annotations (destructiveHint) get at least (default "ignore")
provenance = "ask"         # ask | deny | ignore: what a call that acts with an argument from
                           # untrusted output gets at least (default "ignore"; see
                           # toolwire.provenance)

[[rules]]
tool = "files/delete_*"    # a glob over tool names (see toolwire.policy for which names)
action = "deny"            # allow | ask | deny
reason = "deleting is not for agents"   # optional: what a denied call's answer says

[[rules]]
tool = "*/send_*"
action = "ask"
principals = ["alice"]     # optional: only for these principals (compared as strings)
taint = ["web"]            # optional: only once output from one of these is in the context
callers = ["code"]         # optional: only for calls by these (direct: the model; code: code
                           # the model wrote, programmatic tool calling)
untrusted = ["recipient"]  # optional: only when one of these arguments (any, for []) carries
                           # a value from untrusted output and no trusted input

[[rules]]
resource = "docs/file:///private/*"   # instead of tool: a glob over server/URI of the
action = "deny"                       # resources the MCP gateway serves
                                      # (prompt = "server/name": its prompts)

[[requests]]               # what MCP servers may ask the gateway's client within a call
request = "*/sampling"     # a glob over server/kind (kind: elicitation, sampling or roots)
action = "deny"            # allow | deny
reason = "no server samples our models"   # optional
principals = ["alice"]     # optional, as for rules
```

The JSON form is the same object (``{"default": ..., "rules": [{"tool": ..., ...}]}``).
Rules keep their order (see [`Policy`][toolwire.Policy]: a deny wins, else the first
allow or ask that matches). A key this format doesn't know is an error, never ignored: a typo
in a policy must not silently loosen it. A key given twice in one table or object is an error
too, in JSON as in TOML: ``{"default": "deny", "default": "allow"}`` is refused, never read as
whichever value comes last.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from toolwire import _jsonfile
from toolwire.errors import ConfigurationError
from toolwire.policy import Effect, Policy, PolicyContext, RequestRule, Rule
from toolwire.tool import Entity

__all__ = ["load_policy", "policy_from_dict"]

_TOP_KEYS = frozenset({"default", "destructive", "provenance", "rules", "requests"})
_KINDS = ("tool", "resource", "prompt")
"""The keys a rule names what it matches by, one per kind (see ``Rule.kind``)."""
_RULE_KEYS = frozenset({*_KINDS, "action", "reason", "principals", "taint", "callers", "untrusted"})
_REQUEST_KEYS = frozenset({"request", "action", "reason", "principals"})
_EFFECTS = ("allow", "ask", "deny")


def load_policy(path: str | Path) -> Policy:
    """The [`Policy`][toolwire.Policy] a TOML or JSON file describes.

    Raises:
        ConfigurationError: the file cannot be read or parsed, a key is unknown, repeated or
            has a bad value (the message names the file and the key).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read policy file {path.name}: {exc}") from None
    try:
        data: Any = tomllib.loads(text) if path.suffix == ".toml" else _jsonfile.loads(text)
    except _jsonfile.RepeatedKey as exc:
        raise exc.of(f"policy file {path.name}") from None
    except (tomllib.TOMLDecodeError, ValueError, RecursionError) as exc:
        kind = "TOML" if path.suffix == ".toml" else "JSON"
        raise ConfigurationError(f"policy file {path.name} is not valid {kind}: {exc}") from None
    return policy_from_dict(data, where=path.name)


def policy_from_dict(data: Any, *, where: str = "policy") -> Policy:
    """The [`Policy`][toolwire.Policy] a parsed policy file describes (see the module
    docstring); ``where`` names it in errors.

    Raises:
        ConfigurationError: naming the key that is unknown or wrong.
    """
    if not isinstance(data, Mapping):
        raise ConfigurationError(f"{where}: a policy is an object (a table) at the top")
    _no_unknown(data, _TOP_KEYS, where)
    default = data.get("default", "allow")
    if default not in _EFFECTS:
        raise ConfigurationError(f"{where}: 'default' is allow, ask or deny, not {default!r}")
    destructive = data.get("destructive", "ignore")
    if destructive not in ("ask", "ignore"):
        raise ConfigurationError(f"{where}: 'destructive' is ask or ignore, not {destructive!r}")
    provenance = data.get("provenance", "ignore")
    if provenance not in ("ask", "deny", "ignore"):
        raise ConfigurationError(
            f"{where}: 'provenance' is ask, deny or ignore, not {provenance!r}"
        )
    rules = data.get("rules", [])
    if not isinstance(rules, list):
        raise ConfigurationError(f"{where}: 'rules' is a list of rules")
    built = [_rule(entry, f"{where}: rules[{index}]") for index, entry in enumerate(rules)]
    requests = data.get("requests", [])
    if not isinstance(requests, list):
        raise ConfigurationError(f"{where}: 'requests' is a list of request rules")
    asked = [_request(entry, f"{where}: requests[{n}]") for n, entry in enumerate(requests)]
    return Policy(
        *built,
        default=cast(Effect, default),
        destructive=destructive,
        requests=asked,
        provenance=provenance,
    )


def _request(entry: Any, where: str) -> RequestRule:
    if not isinstance(entry, Mapping):
        raise ConfigurationError(f"{where}: a request rule is an object (a table)")
    _no_unknown(entry, _REQUEST_KEYS, where)
    for key in ("request", "action"):
        if key not in entry:
            raise ConfigurationError(f"{where}: missing {key!r}")
    pattern, action, reason = entry["request"], entry["action"], entry.get("reason")
    if not isinstance(pattern, str) or not pattern:
        raise ConfigurationError(f"{where}: 'request' is a non-empty glob, not {pattern!r}")
    if action not in ("allow", "deny"):
        raise ConfigurationError(f"{where}: 'action' is allow or deny, not {action!r}")
    if reason is not None and not isinstance(reason, str):
        raise ConfigurationError(f"{where}: 'reason' is a string")
    principals = _strings(entry, "principals", where)
    return RequestRule(action, pattern, principals=principals, reason=reason)


def _rule(entry: Any, where: str) -> Rule:
    if not isinstance(entry, Mapping):
        raise ConfigurationError(f"{where}: a rule is an object (a table)")
    _no_unknown(entry, _RULE_KEYS, where)
    kinds = [key for key in _KINDS if key in entry]
    if not kinds:
        raise ConfigurationError(f"{where}: missing 'tool' (or 'resource', or 'prompt')")
    if len(kinds) > 1:
        raise ConfigurationError(
            f"{where}: a rule names one of 'tool', 'resource' or 'prompt', not {kinds}"
        )
    if "action" not in entry:
        raise ConfigurationError(f"{where}: missing 'action'")
    kind = cast(Entity, kinds[0])
    pattern, action, reason = entry[kind], entry["action"], entry.get("reason")
    if not isinstance(pattern, str) or not pattern:
        raise ConfigurationError(f"{where}: {kind!r} is a non-empty glob, not {pattern!r}")
    if action not in _EFFECTS:
        raise ConfigurationError(f"{where}: 'action' is allow, ask or deny, not {action!r}")
    if reason is not None and not isinstance(reason, str):
        raise ConfigurationError(f"{where}: 'reason' is a string")
    principals = _strings(entry, "principals", where)
    taint = _strings(entry, "taint", where)
    callers = _strings(entry, "callers", where)
    if callers is not None and not (callers and callers <= {"direct", "code"}):
        raise ConfigurationError(f"{where}: 'callers' lists direct and/or code")
    untrusted = _strings(entry, "untrusted", where)
    when = _condition(principals, taint, callers, untrusted)
    return Rule(action, pattern, when=when, reason=reason, kind=kind)


def _strings(entry: Mapping[str, Any], key: str, where: str) -> frozenset[str] | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigurationError(f"{where}: {key!r} is a list of strings")
    return frozenset(value)


def _condition(
    principals: frozenset[str] | None,
    taint: frozenset[str] | None,
    callers: frozenset[str] | None = None,
    untrusted: frozenset[str] | None = None,
) -> Callable[[PolicyContext], bool] | None:
    """The rule's ``when``: every condition the file gave must hold."""
    if principals is None and taint is None and callers is None and untrusted is None:
        return None

    def when(context: PolicyContext) -> bool:
        if principals is not None and str(context.principal) not in principals:
            return False
        if callers is not None and context.caller.kind not in callers:
            return False
        if untrusted is not None and not context.origins.untrusted(*sorted(untrusted)):
            return False
        return taint is None or bool(taint & context.taint)

    return when


def _no_unknown(data: Mapping[str, Any], known: frozenset[str], where: str) -> None:
    unknown = sorted(str(key) for key in data if key not in known)
    if unknown:
        expected = ", ".join(sorted(known))
        raise ConfigurationError(
            f"{where}: unknown key {unknown[0]!r} (expected one of {expected})"
        )
