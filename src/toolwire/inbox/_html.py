"""The console's pages, as escaped HTML (every value from a run goes through ``_e``), and the
one stylesheet and script they load from the app itself.

What a human reads to decide (the tool, its arguments and their keys, the principal, the
reason, who decided) is shown so that it cannot pass for another value: hidden characters
(controls, bidi controls, zero-width and other invisible characters, unusual spaces) are shown
as escapes (``\\u202e``) and the page says which fields hold some (see ``toolwire._text``). The
stored value is unchanged: an approval approves the value itself.
"""

from __future__ import annotations

import datetime
import html
import math
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from toolwire._text import hides, json_hides, visible, visible_json, visible_json_text
from toolwire.approval import ApprovalRequest
from toolwire.inbox._types import Listed, Problem
from toolwire.runs.ledger import CallTrail
from toolwire.runs.store import CallRecord

__all__ = [
    "CSS",
    "SCRIPT",
    "history_page",
    "list_page",
    "pending_region",
    "problem_page",
    "quoted",
    "request_page",
    "shown",
]

_SHORT = 240  # characters of arguments the list shows


def _e(value: Any) -> str:
    # A hidden character that reached here (an approver's own edit, an id in a message) is
    # shown as a JSON escape: inside a JSON string it reads back as itself.
    return html.escape(visible_json_text(str(value)), quote=True)


def quoted(value: str) -> str:
    """An id as one path segment. A segment of dots alone is written ``%2E``: as ``.`` or
    ``..`` a browser (or any HTTP client) would resolve it away before sending the link."""
    segment = quote(value, safe="")
    return segment.replace(".", "%2E") if segment in (".", "..") else segment


def shown(value: Any) -> str:
    """A JSON value for people: strings as text, the rest as JSON, hidden characters as
    escapes either way."""
    return visible(value) if isinstance(value, str) else visible_json(value)


def _pretty(value: Any) -> str:
    return visible_json(value, indent=2)


class _Read:
    """Values a human reads to decide, made visible, noting which held hidden characters."""

    def __init__(self) -> None:
        self.hiding: list[str] = []

    def _note(self, what: str) -> None:
        if what not in self.hiding:
            self.hiding.append(what)

    def text(self, value: str, what: str) -> str:
        if hides(value):
            self._note(what)
        return visible(value)

    def json(self, value: Any, what: str, *, indent: int | None = None) -> str:
        if json_hides(value):
            self._note(what)
        return visible_json(value, indent=indent)

    def value(self, value: Any, what: str) -> str:
        """As [`shown`][]: a string as text, anything else as JSON."""
        return self.text(value, what) if isinstance(value, str) else self.json(value, what)

    def warning(self) -> str:
        """The notice a page shows when a field held hidden characters ("" when none did)."""
        if not self.hiding:
            return ""
        fields = ", ".join(self.hiding)
        return (
            f'<div class="hidden-chars" role="alert" data-fields="{_e(fields)}">'
            f"<strong>Hidden characters in {_e(fields)}.</strong> They hold characters that "
            "do not show as themselves (controls, bidi or zero-width characters, unusual "
            "spaces), shown here as escapes such as <code>\\u202e</code>, with backslashes "
            "doubled in text. The call gets the characters themselves, not the escapes.</div>"
        )

    def badge(self) -> str:
        """The mark a row of the list carries when a field held hidden characters."""
        if not self.hiding:
            return ""
        fields = ", ".join(self.hiding)
        return (
            f' <span class="hidden-chars" title="hidden characters in {_e(fields)}, '
            f'shown as escapes">hidden characters: {_e(fields)}</span>'
        )


def _moment(at: Any) -> float | None:
    """A stored time that is one: a finite number of seconds (a record may claim anything)."""
    if isinstance(at, int | float) and not isinstance(at, bool) and math.isfinite(at):
        return float(at)
    return None


def _when(at: Any) -> str:
    moment = _moment(at)
    if moment is None:
        return "-"
    try:
        shown = datetime.datetime.fromtimestamp(moment, datetime.UTC)
    except (OverflowError, OSError, ValueError):  # no date: before year 1 or after 9999
        return "-"
    return shown.strftime("%Y-%m-%d %H:%M:%S UTC")


def _span(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def _age(at: Any, now: float) -> str:
    moment = _moment(at)
    return f"{_span(now - moment)} ago" if moment is not None else "-"


def _expiry(at: Any, now: float) -> str:
    if at is None:
        return "never"
    moment = _moment(at)
    if moment is None:  # a time that is no time: not "never", which would read as safe
        return "-"
    return f"in {_span(moment - now)}" if moment > now else "expired"


def _tool_label(request: ApprovalRequest, read: _Read) -> str:
    if request.server is not None and request.tool_name is not None:
        tool = read.text(request.tool_name, "the tool's name")
        return f"{tool} on {read.text(request.server, 'the server')}"
    return read.text(request.tool_name or request.exposed_name, "the tool's name")


def _layout(title: str, base: str, heading: str, body: str, *, identity: Any = None) -> str:
    who = f'<span class="who">signed in as {_e(shown(identity))}</span>' if identity else ""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(heading)} - {_e(title)}</title>"
        f'<link rel="stylesheet" href="{_e(base)}/static/inbox.css">'
        f'<script src="{_e(base)}/static/inbox.js" defer></script>'
        "</head><body>"
        f'<header><a class="home" href="{_e(base)}/">{_e(title)}</a>{who}</header>'
        f"<main><h1>{_e(heading)}</h1>{body}</main></body></html>"
    )


def _request_url(base: str, run_id: str, call_id: str) -> str:
    return f"{base}/runs/{quoted(run_id)}/calls/{quoted(call_id)}"


# -- the list ----------------------------------------------------------------------------------


def list_page(
    title: str,
    base: str,
    listed: Listed,
    filters: Mapping[str, str],
    *,
    identity: Any,
    now: float,
    poll_seconds: float,
) -> str:
    principal, tool = filters.get("principal", ""), filters.get("tool", "")
    form = (
        f'<form class="filters" method="get" action="{_e(base)}/">'
        f'<label>Principal <input name="principal" value="{_e(principal)}"></label>'
        f'<label>Tool <input name="tool" value="{_e(tool)}"></label>'
        '<button type="submit">Filter</button>'
        f'<a href="{_e(base)}/">Clear</a></form>'
    )
    poll = f"{base}/fragments/pending"
    if filters:
        poll += "?" + urlencode(filters)
    region = (
        f'<div id="pending" data-poll="{_e(poll)}" data-seconds="{poll_seconds:g}" '
        f'aria-live="polite">{pending_region(base, listed, filters, now)}</div>'
    )
    return _layout(title, base, "Waiting for a decision", form + region, identity=identity)


def pending_region(base: str, listed: Listed, filters: Mapping[str, str], now: float) -> str:
    """The table of pending requests and its pager (what the page's script refreshes)."""
    if not listed.items:
        rows = '<p class="empty">Nothing waits for a decision.</p>'
    else:
        body = "".join(_pending_row(base, request, now) for request in listed.items)
        rows = (
            '<table class="pending"><thead><tr><th>Tool</th><th>Arguments</th>'
            "<th>Principal</th><th>Why</th><th>Asked</th><th>Expires</th><th>Run</th>"
            f"</tr></thead><tbody>{body}</tbody></table>"
        )
    shown = "newest first" if listed.after is None else "older"
    pager = [f'<span class="count">{len(listed.items)} shown, {shown}</span>']
    for label, after in (
        ("Newest", "" if listed.after is not None else None),
        ("Older", listed.next),
    ):
        if after is not None:
            kept = {name: value for name, value in filters.items() if name != "after"}
            query = urlencode({**kept, **({"after": after} if after else {})})
            pager.append(f'<a class="page" href="{_e(base)}/?{_e(query)}">{label}</a>')
    return _damaged_box(listed) + rows + f'<nav class="pager">{" ".join(pager)}</nav>'


def _damaged_box(listed: Listed) -> str:
    """The waiting calls whose stored record cannot be read: named, never offered to decide."""
    if not listed.damaged:
        return ""
    items = "".join(
        f"<li>run <code>{_e(visible(damaged.run_id))}</code>, call "
        f"<code>{_e(visible(damaged.call_id))}</code>: "
        f"{_e(damaged.problem)}</li>"
        for damaged in listed.damaged
    )
    return (
        '<div class="damaged" role="alert"><p>These waiting calls cannot be shown: their '
        "records in the store are damaged. Nothing of them runs; repair or delete them in "
        f"the store.</p><ul>{items}</ul></div>"
    )


def _pending_row(base: str, request: ApprovalRequest, now: float) -> str:
    read = _Read()
    tool = _tool_label(request, read)
    listed = request.to_dict()
    arguments = read.json(listed["arguments"], "the arguments")
    if len(arguments) > _SHORT:  # cut once escaped: the escapes of what is cut are not shown
        arguments = arguments[: _SHORT - 1] + "\u2026"
    principal = read.value(listed["principal"], "the principal")
    reason = read.text(request.reason or "", "the reason")
    run_id = read.text(request.run_id, "the run id")
    url = _request_url(base, request.run_id, request.call_id)
    hidden = f' data-hidden="{_e(", ".join(read.hiding))}"' if read.hiding else ""
    return (
        f'<tr class="request"{hidden}>'
        f'<td><a class="open" href="{_e(url)}">{_e(tool)}</a>{read.badge()}</td>'
        f'<td><code class="arguments">{_e(arguments)}</code></td>'
        f"<td>{_e(principal)}</td>"
        f"<td>{_e(reason)}</td>"
        f'<td title="{_e(_when(request.requested_at))}">{_e(_age(request.requested_at, now))}</td>'
        f'<td title="{_e(_when(request.expires_at))}">{_e(_expiry(request.expires_at, now))}</td>'
        f'<td><a href="{_e(base)}/runs/{_e(quoted(request.run_id))}">{_e(run_id)}</a></td>'
        "</tr>"
    )


# -- one request ---------------------------------------------------------------------------------


def request_page(
    title: str,
    base: str,
    run_id: str,
    record: CallRecord,
    request: ApprovalRequest,
    *,
    csrf: str,
    identity: Any,
    now: float,
    problem: Problem | None,
    edited: str | None,
) -> str:
    read = _Read()
    asked = request.to_dict()
    facts = [
        ("Tool", _tool_label(request, read)),
        ("Called as", read.text(request.exposed_name, "the name it was called as")),
        ("Principal", read.value(asked["principal"], "the principal")),
        ("Why it asks", read.text(request.reason, "the reason") if request.reason else "-"),
        ("Asked", f"{_when(request.requested_at)} ({_age(request.requested_at, now)})"),
        ("Expires", f"{_when(request.expires_at)} ({_expiry(request.expires_at, now)})"),
        ("State", record.state),
    ]
    if record.decision is not None:
        reason = record.decision.reason
        decided = record.decision.kind + (
            f": {read.text(reason, 'the decision')}" if reason else ""
        )
        by = read.value(record.decided_by, "who decided")
        facts.append(("Decided", f"{decided}, by {by} at {_when(record.decided_at)}"))
    table = "".join(f"<tr><th>{_e(name)}</th><td>{_e(value)}</td></tr>" for name, value in facts)
    arguments = read.json(asked["arguments"], "the arguments", indent=2)
    parts = [
        read.warning(),
        f'<table class="facts">{table}</table>',
        f'<h2>Arguments</h2><pre class="arguments" id="arguments">{_e(arguments)}</pre>',
    ]
    if problem is not None:
        parts.append(_problem_box(problem))
    if record.state == "pending":
        parts.append(_forms(base, run_id, record, csrf, edited or arguments))
    else:
        parts.append('<p class="done">This call is no longer waiting for a decision.</p>')
    schema = (record.request or {}).get("input_schema")
    if schema is not None:
        parts.append(
            "<details><summary>The tool's input schema</summary>"
            f'<pre class="schema">{_e(_pretty(schema))}</pre></details>'
        )
    parts.append(f'<p><a href="{_e(base)}/runs/{_e(quoted(run_id))}">The run\'s history</a></p>')
    heading = f"{visible(request.exposed_name)} ({visible(record.call_id)})"
    return _layout(title, base, heading, "".join(parts), identity=identity)


def _forms(base: str, run_id: str, record: CallRecord, csrf: str, edited: str) -> str:
    action = _e(_request_url(base, run_id, record.call_id))
    hidden = (
        f'<input type="hidden" name="csrf" value="{_e(csrf)}">'
        f'<input type="hidden" name="version" value="{record.version}">'
    )

    def form(name: str, inner: str, label: str) -> str:
        return (
            f'<form class="decide {name}" method="post" action="{action}">{hidden}{inner}'
            f'<button type="submit" name="action" value="{name}">{label}</button></form>'
        )

    reason = '<input name="reason" placeholder="reason (the model is told)" maxlength="2000">'
    return (
        '<section class="decisions"><h2>Decide</h2>'
        + form("allow", "", "Approve")
        + form("deny", reason, "Deny")
        + form(
            "edit",
            '<label for="edited">Approve with these arguments (JSON)</label>'
            f'<textarea id="edited" name="arguments" rows="8" spellcheck="false">{_e(edited)}'
            "</textarea>",
            "Approve edited",
        )
        + form("halt", reason, "Halt the run")
        + "</section>"
    )


def _problem_box(problem: Problem) -> str:
    fields = "".join(
        f'<li><code class="path">{_e(path)}</code> {_e(message)}</li>'
        for path, message in problem.fields
    )
    listed = f'<ul class="fields">{fields}</ul>' if fields else ""
    return (
        f'<div class="problem" role="alert" data-code="{_e(problem.code)}">'
        f"<strong>{_e(problem.message)}</strong>{listed}</div>"
    )


# -- a run's history -----------------------------------------------------------------------------


def history_page(title: str, base: str, run_id: str, trails: Sequence[CallTrail]) -> str:
    rows = "".join(_trail_row(base, run_id, trail) for trail in trails)
    body = (
        '<table class="history"><thead><tr><th>Call</th><th>Tool</th><th>Requested</th>'
        "<th>Decided</th><th>Ran</th><th>Answered</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )
    return _layout(title, base, f"Run {visible(run_id)}", body)


def _trail_row(base: str, run_id: str, trail: CallTrail) -> str:
    requested = decided = ran = answered = "-"
    if trail.requested is not None:
        why = visible(trail.requested.get("reason") or "")
        requested = f"{_when(trail.requested['at'])}: {why}"
    if trail.decided is not None:
        d = trail.decided
        decided = f"{d['kind']}{' (edited)' if d['edited'] else ''} by {shown(d['by'])} at "
        decided += _when(d["at"]) + (f": {visible(d['reason'])}" if d.get("reason") else "")
    if trail.claimed is not None:
        ran = f"{_when(trail.claimed['at'])} by {visible(str(trail.claimed['worker']))}"
    if trail.finished is not None:
        f = trail.finished
        answered = f"{f['state']}{' (' + f['error_kind'] + ')' if f['error_kind'] else ''}"
        answered += f" at {_when(f['at'])}"
    call = _e(visible(trail.call_id))
    if trail.requested is not None:
        call = f'<a href="{_e(_request_url(base, run_id, trail.call_id))}">{call}</a>'
    cells = "".join(f"<td>{_e(text)}</td>" for text in (requested, decided, ran, answered))
    return (
        f'<tr class="call" data-state="{_e(trail.state)}"><td>{call}</td>'
        f"<td>{_e(visible(trail.exposed_name))}</td>{cells}</tr>"
    )


def problem_page(title: str, base: str, problem: Problem) -> str:
    return _layout(title, base, f"{problem.status}", _problem_box(problem))


CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1b1f24; background: #f6f7f9; }
header { display: flex; justify-content: space-between; padding: .6rem 1.2rem;
  background: #1f2a37; color: #fff; }
header a { color: #fff; font-weight: 600; text-decoration: none; }
main { padding: 1rem 1.2rem; max-width: 76rem; }
h1 { font-size: 1.35rem; margin: .4rem 0 1rem; word-break: break-all; }
h2 { font-size: 1.05rem; margin: 1.2rem 0 .5rem; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; vertical-align: top; padding: .4rem .6rem;
  border-bottom: 1px solid #e3e6ea; }
thead th { background: #eef1f4; font-weight: 600; }
table.facts th { width: 9rem; }
code, pre, textarea { font: 13px/1.4 ui-monospace, monospace; }
code.arguments { white-space: pre-wrap; word-break: break-all; }
pre { background: #fff; border: 1px solid #e3e6ea; padding: .6rem; overflow: auto;
  white-space: pre-wrap; word-break: break-all; }
form.filters { display: flex; gap: .8rem; align-items: end; margin-bottom: 1rem; }
form.filters label { display: flex; flex-direction: column; font-size: .85rem; }
section.decisions form { margin: .5rem 0; display: flex; gap: .5rem; flex-wrap: wrap;
  align-items: start; }
section.decisions input[name=reason] { min-width: 22rem; }
section.decisions textarea { width: 100%; }
section.decisions form.edit { flex-direction: column; }
button { padding: .35rem .9rem; border: 1px solid #888; border-radius: 4px; background: #fff;
  cursor: pointer; }
form.allow button, form.edit button { background: #1a7f37; color: #fff; border-color: #1a7f37; }
form.deny button { background: #b35900; color: #fff; border-color: #b35900; }
form.halt button { background: #b42318; color: #fff; border-color: #b42318; }
.problem { background: #fdecea; border: 1px solid #f5c2c0; padding: .6rem .8rem; margin: 1rem 0; }
.problem ul { margin: .4rem 0 0; }
.damaged { background: #fff4e5; border: 1px solid #f0c36d; padding: .6rem .8rem; margin: 0 0 1rem; }
.damaged p, .damaged ul { margin: .2rem 0; }
.pager { margin: .8rem 0; display: flex; gap: 1rem; color: #555; }
.empty, .done { color: #555; }
.hidden-chars { background: #fff4ce; border: 1px solid #e0b400; color: #5c4400; }
div.hidden-chars { padding: .6rem .8rem; margin: 0 0 1rem; }
span.hidden-chars { display: inline-block; margin-left: .4rem; padding: 0 .3rem;
  font-size: .8rem; border-radius: 3px; }
[data-stale] { opacity: .6; }
"""

# Refreshes the list without a reload: the server renders (and escapes) the fragment.
SCRIPT = """
"use strict";
(function () {
  var region = document.querySelector("[data-poll]");
  if (!region) { return; }
  var url = region.getAttribute("data-poll");
  var seconds = Number(region.getAttribute("data-seconds")) || 3;
  function refresh() {
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (!response.ok) { throw new Error(String(response.status)); }
        return response.text();
      })
      .then(function (text) {
        region.innerHTML = text;
        region.removeAttribute("data-stale");
      })
      .catch(function () { region.setAttribute("data-stale", "true"); })
      .then(function () { window.setTimeout(refresh, seconds * 1000); });
  }
  window.setTimeout(refresh, seconds * 1000);
})();
"""
