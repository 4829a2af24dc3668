"""The console's routes: who asks (authorize, CSRF), what the ledger says, and decisions
recorded only for calls still waiting."""

from __future__ import annotations

import base64
import hashlib
import hmac
import inspect
import json
import math
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from toolwire import _jsonfile
from toolwire._json import NotJson, load_json
from toolwire._jsonfile import RepeatedKey
from toolwire.approval import ApprovalRequest, Decision, allow, deny, halt
from toolwire.calls import canonical_json, has_lone_surrogate
from toolwire.errors import ConfigurationError, InvalidArguments, StoreUnavailable, ToolwireError
from toolwire.inbox import _html
from toolwire.inbox._types import Listed, Problem
from toolwire.inputs import accept, cancel, decline
from toolwire.runs import Keep, ledger, update
from toolwire.runs.store import CallRecord, DamagedRecord, QueuePlace, RunStore
from toolwire.tool import Tool

__all__ = ["API_HEADER", "Problem", "build"]

API_HEADER = "X-Toolwire-Inbox"
"""The header a JSON ``POST`` must carry: a cross-site page cannot send a custom header
without a CORS preflight, which the console never grants."""

MAX_PAGE = 200
_SCAN = 10_000  # the most pending requests one filtered page reads
_MAX_BODY = 1_000_000

SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        b"img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),  # the CLI's token may be in the URL
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Console:
    store: RunStore
    authorize: Callable[[Request], Any]
    secret: bytes
    title: str
    poll_seconds: float
    page_size: int

    async def identity(self, request: Request) -> Any:
        """Who makes ``request``, as kept with a decision; raises a 401 for nobody: None, a
        boolean, an empty or blank string, 0, an empty container (see
        [`ledger.identity_json`][toolwire.ledger.identity_json])."""
        who = self.authorize(request)
        if inspect.isawaitable(who):
            who = await who
        identity = ledger.identity_json(who)
        if identity is None:
            raise Problem(401, "unauthorized", "sign in to use the approval console")
        return identity

    def csrf(self, identity: Any) -> str:
        """The form token of ``identity``: it changes with who is signed in."""
        message = canonical_json(identity).encode("utf-8", "surrogatepass")
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()


def build(
    store: RunStore,
    *,
    authorize: Any,
    secret: bytes | None,
    title: str,
    poll_seconds: float,
    page_size: int,
) -> Any:
    if not callable(authorize):
        raise ConfigurationError("authorize is a function: request -> approver identity or None")
    if page_size.__class__ is not int or not 1 <= page_size <= MAX_PAGE:
        raise ConfigurationError(f"page_size is an integer from 1 to {MAX_PAGE}")
    if not poll_seconds > 0:
        raise ConfigurationError("poll_seconds is a positive number")
    console = Console(
        store=store,
        authorize=authorize,
        secret=secret if secret is not None else os.urandom(32),
        title=title,
        poll_seconds=float(poll_seconds),
        page_size=page_size,
    )

    def page(handler: Callable[[Console, Request, Any], Awaitable[Response]]) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                identity = await console.identity(request)
                return await handler(console, request, identity)
            except StoreUnavailable as exc:
                problem = _unavailable(exc)
                body = _html.problem_page(console.title, _base(request), problem)
                return HTMLResponse(body, status_code=problem.status)
            except Problem as problem:
                body = _html.problem_page(console.title, _base(request), problem)
                return HTMLResponse(body, status_code=problem.status)

        return endpoint

    def api(handler: Callable[[Console, Request, Any], Awaitable[Any]]) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                identity = await console.identity(request)
                return _JSONResponse(await handler(console, request, identity))
            except StoreUnavailable as exc:
                problem = _unavailable(exc)
                return JSONResponse(problem.to_dict(), status_code=problem.status)
            except Problem as problem:
                return JSONResponse(problem.to_dict(), status_code=problem.status)

        return endpoint

    routes = [
        Route("/", page(_list_page)),
        Route("/fragments/pending", page(_list_fragment)),
        Route("/runs/{run_id}", page(_history_page)),
        Route("/runs/{run_id}/calls/{call_id}", page(_request_page)),
        Route("/runs/{run_id}/calls/{call_id}", page(_decide_form), methods=["POST"]),
        Route("/api/pending", api(_api_pending)),
        Route("/api/runs/{run_id}", api(_api_run)),
        Route("/api/runs/{run_id}/calls/{call_id}/decision", api(_api_decide), methods=["POST"]),
        Route("/api/runs/{run_id}/calls/{call_id}/answer", api(_api_answer), methods=["POST"]),
        Route("/static/inbox.css", _static("text/css", _html.CSS)),
        Route("/static/inbox.js", _static("text/javascript", _html.SCRIPT)),
    ]
    return _Secured(Starlette(routes=routes))


class _JSONResponse(JSONResponse):
    """Strict JSON: a number JSON cannot hold (NaN or an infinity, which a record edited in
    the store can claim for a time) is written as null rather than failing the answer."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except ValueError:  # out-of-range floats
            return super().render(_finite(content))


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _unavailable(exc: StoreUnavailable) -> Problem:
    """A 503 saying what the store could not give (it names a damaged record's call)."""
    return Problem(503, "store_unavailable", str(exc))


class _Secured:
    """Adds the security headers (a strict CSP among them) to every response, and keeps an
    id's encoded slash (``%2F``) inside its path segment."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        raw = scope.get("raw_path")
        if isinstance(raw, bytes) and b"%2f" in raw.lower():
            scope = {**scope, "path": _segments_kept(raw)}

        async def secured_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        await self.inner(scope, receive, secured_send)


# A slash inside a segment (``%2F``) and a NUL (``%00``) stand as two-character codes while
# the router splits the path; a NUL comes back as one, which no valid id holds (a 400).
_SLASH, _NUL = "\x00s", "\x00n"


def _segments_kept(raw: bytes) -> str:
    path = raw.decode("latin-1").partition("?")[0]
    return "/".join(
        unquote(segment, errors="replace").replace("\x00", _NUL).replace("/", _SLASH)
        for segment in path.split("/")
    )


def _param(request: Request, name: str) -> str:
    return str(request.path_params[name]).replace(_SLASH, "/").replace(_NUL, "\x00")


def _static(media_type: str, text: str) -> Any:
    async def endpoint(request: Request) -> Response:
        return Response(text, media_type=media_type)

    return endpoint


def _base(request: Request) -> str:
    """Where the app is mounted (links are made under it)."""
    return str(request.scope.get("root_path", "")).rstrip("/")


# -- reading the ledger --------------------------------------------------------------------------


def _int(params: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    text = params.get(name)
    if text is None or text == "":
        return default
    # ASCII digits only ("²" is a digit to str.isdigit), and few enough for int()
    if not (text.isascii() and text.isdigit() and len(text) <= 12) or not low <= int(text) <= high:
        raise Problem(400, "bad_query", f"{name} is an integer from {low} to {high}")
    return int(text)


def _principal(text: str) -> Any:
    """A principal in a query: JSON, or else the text itself (as the CLI reads it)."""
    principal = load_json(text)
    if isinstance(principal, NotJson):
        return text
    try:
        ledger.principal_key(principal)  # NaN or infinities are no principal anyone has
    except (RecursionError, ConfigurationError):  # RecursionError: nested past the stack
        return text
    return principal


def _matches_tool(request: ApprovalRequest, wanted: str) -> bool:
    names = {request.exposed_name, request.tool_name}
    if request.server is not None:
        names.add(f"{request.server}/{request.tool_name}")
    return wanted in names


async def _listed(console: Console, params: Mapping[str, str]) -> Listed:
    """One page of the queue, newest first, after the place the ``after`` token names: one
    range of the store's index however deep the page (with ``tool``, pages are read until
    the page is full, up to ``_SCAN`` requests)."""
    limit = _int(params, "limit", console.page_size, 1, MAX_PAGE)
    after = params.get("after") or None
    place = _place(after) if after is not None else None
    principal = params.get("principal") or None
    tool = params.get("tool") or None
    run_id = params.get("run_id") or None
    if run_id is not None and not ledger.valid_id(run_id):
        raise Problem(400, "bad_query", "run_id is not a valid run id")
    items: list[ApprovalRequest] = []
    damaged: list[DamagedRecord] = []
    read = 0
    while True:
        page = await ledger.waiting(
            console.store,
            principal=_principal(principal) if principal is not None else None,
            run_id=run_id,
            limit=limit,
            newest_first=True,
            after=place,
        )
        read += limit
        damaged += page.damaged
        for request in page.requests:
            if tool is None or _matches_tool(request, tool):
                items.append(request)
                place = QueuePlace.of(request)
                if len(items) == limit:
                    break
        if len(items) == limit or page.next is None or read >= _SCAN:
            if len(items) < limit and page.next is not None:
                place = page.next  # a filtered page cut short by the scan: go on from there
            more = page.next is not None or len(items) == limit
            return Listed(
                items=items,
                limit=limit,
                after=after,
                next=_token(place) if more and place is not None else None,
                damaged=damaged,
            )
        place = page.next


def _token(place: QueuePlace) -> str:
    """A place in the queue as a token for a link (what ``_place`` reads back)."""
    raw = json.dumps([place.since, place.run_id, place.call_id], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode("utf-8", "surrogatepass")).decode("ascii")


def _place(token: str) -> QueuePlace:
    """The place a token of ``_token`` names; any other text (a forged token: not base64,
    not JSON, nested past the stack, a number no time is) is a 400 naming ``after``."""
    refused = Problem(400, "bad_query", "after is a token the console gave")
    try:
        raw = base64.urlsafe_b64decode(token.encode("ascii"))
    except (ValueError, UnicodeError):  # binascii.Error is a ValueError
        raise refused from None
    found = load_json(raw)  # never raises: a NotJson is no list
    if found.__class__ is not list or len(found) != 3:
        raise refused
    since, run_id, call_id = found
    if since.__class__ not in (int, float) or not ledger.valid_id(run_id):
        raise refused
    try:
        at = float(since)  # an integer past a float's range is no time
    except OverflowError:
        raise refused from None
    if not math.isfinite(at) or not ledger.valid_id(call_id):
        raise refused
    return QueuePlace(at, run_id, call_id)


def _request_json(request: ApprovalRequest, now: float) -> dict[str, Any]:
    body = request.to_dict()
    at = request.requested_at
    body["age"] = max(0.0, now - at) if at is not None else None
    return body


async def _record(console: Console, run_id: str, call_id: str) -> CallRecord:
    for value in (run_id, call_id):
        if not ledger.valid_id(value):
            raise Problem(400, "bad_id", "run and call ids are valid Unicode text without NUL")
    record = await ledger.record(console.store, run_id, call_id)
    if record is None:
        raise Problem(404, "no_call", f"run {run_id!r} has no call {call_id!r}")
    return record


async def _trails(console: Console, run_id: str) -> list[ledger.CallTrail]:
    if not ledger.valid_id(run_id):
        raise Problem(400, "bad_id", "a run id is valid Unicode text without NUL")
    trails = await ledger.history(console.store, run_id)
    if not trails:
        raise Problem(404, "no_run", f"no run {run_id!r} in the store")
    return trails


# -- deciding --------------------------------------------------------------------------------------


async def decide(
    console: Console,
    run_id: str,
    call_id: str,
    decision: Decision,
    *,
    by: Any,
    version: int | None = None,
) -> CallRecord:
    """Record ``decision`` for a call that is still ``pending`` (at ``version``, when given).

    Stricter than ``toolwire.decide``, which lets a decided call be decided again until it
    runs: a human clicks on what the page showed, so anything that changed since is a 409.
    """
    record = await _record(console, run_id, call_id)
    now = await ledger.store_time(console.store)  # the request's deadline is in store time
    _still_waiting(run_id, record, version, now)
    if decision.allowed and ledger.awaits_input(record):
        # An allow would take it off the waiting list with its server's question unanswered.
        raise Problem(
            409,
            "waits_for_input",
            f"call {call_id!r} of run {run_id!r} waits for input its server asked for, not for "
            "approval: answer its question (POST .../answer, or toolwire.respond; a deny or "
            "halt stops it)",
        )
    if decision.arguments is not None:
        _check_edited(record, decision.arguments)
    changed = record.with_(
        state="approved" if decision.allowed else "denied",
        decision=decision,
        decided_by=by,
        decided_at=now,  # in the store's time, as the request and the claim are
    )

    def over_what_was_shown(current: CallRecord | None) -> CallRecord | Keep[None]:
        if current is record:
            return changed
        # Another approver (or the executor) wrote it in between: say what, or that it changed.
        if current is None:
            raise Problem(404, "no_call", f"run {run_id!r} has no call {call_id!r}")
        _still_waiting(run_id, current, record.version, now)
        raise Problem(409, "changed", f"call {call_id!r} changed while deciding; reload it")

    stored = await update(console.store, run_id, call_id, over_what_was_shown, current=record)
    assert not isinstance(stored, Keep)  # (the change never keeps)
    await ledger.wake(stored, run_id)  # a workflow an engine holds waits for it
    return stored


def _still_waiting(run_id: str, record: CallRecord, version: int | None, now: float) -> None:
    call_id = record.call_id
    if record.state != "pending":
        if record.decision is not None:
            by = record.decided_by
            raise Problem(
                409,
                "already_decided",
                f"call {call_id!r} of run {run_id!r} is already decided ({record.decision.kind}"
                + (f", by {_html.shown(by)}" if by is not None else "")
                + ")",
            )
        raise Problem(
            409, "not_pending", f"call {call_id!r} of run {run_id!r} is {record.state}, not pending"
        )
    if ledger.expired(record, now):
        raise Problem(409, "expired", f"the approval request of call {call_id!r} expired")
    if version is not None and record.version != version:
        raise Problem(
            409,
            "changed",
            f"call {call_id!r} was asked about again since this page was loaded; reload it",
        )


def _check_edited(record: CallRecord, arguments: Any) -> None:
    if not isinstance(arguments, Mapping):
        raise Problem(422, "invalid_arguments", "edited arguments are a JSON object", [("$", "")])
    schema = (record.request or {}).get("input_schema")
    if not isinstance(schema, Mapping):
        raise Problem(409, "no_schema", "this request keeps no schema to check edits against")
    try:
        Tool(name=record.tool, input_schema=schema).validate_arguments(arguments)
    except InvalidArguments as exc:
        raise Problem(
            422, "invalid_arguments", f"the edited arguments do not fit {record.tool}", exc.errors
        ) from None
    except ConfigurationError as exc:
        raise Problem(422, "invalid_arguments", str(exc)) from None


def _decision(kind: Any, reason: Any, arguments: Any) -> Decision:
    if reason is not None and (not isinstance(reason, str) or has_lone_surrogate(reason)):
        raise Problem(400, "bad_decision", "reason is a string of valid Unicode text")
    reason = reason.strip() or None if isinstance(reason, str) else None
    if kind == "allow":
        if arguments is not None and not isinstance(arguments, Mapping):
            raise Problem(
                422, "invalid_arguments", "edited arguments are a JSON object", [("$", "")]
            )
        return allow(arguments=arguments)
    if arguments is not None:
        raise Problem(400, "bad_decision", "only an allow takes arguments")
    if kind == "deny":
        return deny(reason)
    if kind == "halt":
        return halt(reason)
    raise Problem(400, "bad_decision", "decision is allow, deny or halt")


async def _halt_rest(console: Console, run_id: str, reason: str | None, by: Any) -> None:
    """Halt the run: its other calls still waiting are halted too."""
    for request in await ledger.pending(console.store, run_id=run_id, limit=_SCAN):
        try:
            await decide(console, run_id, request.call_id, halt(reason), by=by)
        except Problem:
            continue  # decided meanwhile: a decision is final


def _decided_json(run_id: str, record: CallRecord) -> dict[str, Any]:
    decision = record.decision
    assert decision is not None
    return {
        "run_id": run_id,
        "call_id": record.call_id,
        "state": record.state,
        "decision": {
            "kind": decision.kind,
            "reason": decision.reason,
            "arguments": dict(decision.arguments) if decision.arguments is not None else None,
        },
        "by": record.decided_by,
        "at": record.decided_at,
    }


# -- the JSON API ----------------------------------------------------------------------------------


async def _api_pending(console: Console, request: Request, identity: Any) -> Any:
    listed = await _listed(console, request.query_params)
    now = time.time()
    return {
        "items": [_request_json(item, now) for item in listed.items],
        "limit": listed.limit,
        "after": listed.after,
        "next": listed.next,
        "damaged": [
            {"run_id": damaged.run_id, "call_id": damaged.call_id, "problem": damaged.problem}
            for damaged in listed.damaged
        ],
    }


async def _api_run(console: Console, request: Request, identity: Any) -> Any:
    run_id = _param(request, "run_id")
    trails = await _trails(console, run_id)
    params = request.query_params
    limit = _int(params, "limit", MAX_PAGE, 1, MAX_PAGE)
    offset = _int(params, "offset", 0, 0, 1_000_000)
    state = params.get("state") or None
    if state is not None:
        trails = [trail for trail in trails if trail.state == state]
    following = offset + limit
    return {
        "run_id": run_id,
        "calls": [trail.to_dict() for trail in trails[offset:following]],
        "total": len(trails),
        "offset": offset,
        "limit": limit,
        "next_offset": following if following < len(trails) else None,
    }


async def _api_decide(console: Console, request: Request, identity: Any) -> Any:
    if API_HEADER.lower() not in request.headers:
        raise Problem(403, "csrf", f"a decision through the API needs the {API_HEADER} header")
    body = await _body(request)
    try:
        payload = _jsonfile.loads(body.decode())  # a repeated key: a guess at what was meant
    except RepeatedKey as exc:
        raise Problem(400, "bad_json", str(exc)) from None
    except (ValueError, RecursionError):  # RecursionError: nested past Python's stack
        raise Problem(400, "bad_json", "the body is not JSON") from None
    if not isinstance(payload, dict):
        raise Problem(400, "bad_decision", "the body is a JSON object")
    version = payload.get("version")
    if version is not None and version.__class__ is not int:
        raise Problem(400, "bad_decision", "version is an integer")
    decision = _decision(payload.get("decision"), payload.get("reason"), payload.get("arguments"))
    run_id, call_id = _param(request, "run_id"), _param(request, "call_id")
    record = await decide(console, run_id, call_id, decision, by=identity, version=version)
    if decision.kind == "halt" and payload.get("whole_run"):
        await _halt_rest(console, run_id, decision.reason, identity)
    return _decided_json(run_id, record)


async def _api_answer(console: Console, request: Request, identity: Any) -> Any:
    """Answer a question the server of a waiting call asked (what ``toolwire.respond``
    does): ``{"key": ..., "round": ..., "action": "accept" | "decline" | "cancel",
    "content": {...}}``, ``key`` and ``round`` as the request shows them. The answer is kept
    with who gave it; once every question is answered, the call goes on at its next resume
    (a gateway's task: at its next ``tasks/get``)."""
    if API_HEADER.lower() not in request.headers:
        raise Problem(403, "csrf", f"an answer through the API needs the {API_HEADER} header")
    try:
        payload = _jsonfile.loads((await _body(request)).decode())
    except RepeatedKey as exc:
        raise Problem(400, "bad_json", str(exc)) from None
    except (ValueError, RecursionError):
        raise Problem(400, "bad_json", "the body is not JSON") from None
    if not isinstance(payload, dict):
        raise Problem(400, "bad_answer", "the body is a JSON object")
    key, round, content = payload.get("key"), payload.get("round"), payload.get("content")
    action = payload.get("action")
    if any(v is not None and not isinstance(v, str) for v in (key, round)):
        raise Problem(400, "bad_answer", "key and round are strings")
    if action == "accept" and (content is None or isinstance(content, dict)):
        answer = accept(content)
    elif action in ("decline", "cancel") and content is None:
        answer = decline() if action == "decline" else cancel()
    else:
        raise Problem(
            400, "bad_answer", "action is accept (with an object of content), decline or cancel"
        )
    run_id, call_id = _param(request, "run_id"), _param(request, "call_id")
    try:
        await ledger.respond(
            console.store, run_id, call_id, answer, key=key, round=round, by=identity
        )
    except (ConfigurationError, InvalidArguments) as exc:
        raise Problem(400, "bad_answer", str(exc)[:500]) from None
    except StoreUnavailable:
        raise
    except ToolwireError as exc:  # answered otherwise, expired, or not waiting
        raise Problem(409, "not_waiting", str(exc)[:500]) from None
    return {"run_id": run_id, "call_id": call_id, "answered": key, "action": action}


async def _body(request: Request) -> bytes:
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > _MAX_BODY:
            raise Problem(413, "too_large", "the body is too large")
    return body


# -- the pages ---------------------------------------------------------------------------------


def _filters(request: Request) -> dict[str, str]:
    return {
        name: request.query_params[name]
        for name in ("principal", "tool", "limit", "after")
        if request.query_params.get(name)
    }


async def _list_page(console: Console, request: Request, identity: Any) -> Response:
    listed = await _listed(console, request.query_params)
    body = _html.list_page(
        console.title,
        _base(request),
        listed,
        _filters(request),
        identity=identity,
        now=time.time(),
        poll_seconds=console.poll_seconds,
    )
    return HTMLResponse(body)


async def _list_fragment(console: Console, request: Request, identity: Any) -> Response:
    listed = await _listed(console, request.query_params)
    return HTMLResponse(
        _html.pending_region(_base(request), listed, _filters(request), time.time())
    )


async def _history_page(console: Console, request: Request, identity: Any) -> Response:
    run_id = _param(request, "run_id")
    trails = await _trails(console, run_id)
    return HTMLResponse(_html.history_page(console.title, _base(request), run_id, trails))


async def _request_page(
    console: Console,
    request: Request,
    identity: Any,
    *,
    problem: Problem | None = None,
    edited: str | None = None,
) -> Response:
    run_id, call_id = _param(request, "run_id"), _param(request, "call_id")
    record = await _record(console, run_id, call_id)
    if record.request is None:
        raise Problem(
            404, "no_request", f"call {call_id!r} of run {run_id!r} was never asked about"
        )
    body = _html.request_page(
        console.title,
        _base(request),
        run_id,
        record,
        ledger.request_of(run_id, record),
        csrf=console.csrf(identity),
        identity=identity,
        now=time.time(),
        problem=problem,
        edited=edited,
    )
    return HTMLResponse(body, status_code=problem.status if problem is not None else 200)


async def _decide_form(console: Console, request: Request, identity: Any) -> Response:
    _same_origin(request)
    text = (await _body(request)).decode("utf-8", "replace")
    form = dict(parse_qsl(text, keep_blank_values=True))
    if not hmac.compare_digest(form.get("csrf", ""), console.csrf(identity)):
        raise Problem(403, "csrf", "the form's CSRF token is missing or stale; reload the page")
    run_id, call_id = _param(request, "run_id"), _param(request, "call_id")
    action = form.get("action")
    version_text = form.get("version", "")
    version = (
        int(version_text)
        if version_text.isascii() and version_text.isdigit() and len(version_text) <= 12
        else None
    )
    edited_text = form.get("arguments", "") if action == "edit" else None
    try:
        arguments = None
        if edited_text is not None:  # an edit without arguments is refused, never a plain allow
            try:
                arguments = _jsonfile.loads(edited_text)
            except (ValueError, RecursionError) as exc:  # a repeated key included
                raise Problem(
                    422, "invalid_json", "the edited arguments are not JSON", [("$", str(exc))]
                ) from None
            if not isinstance(arguments, dict):
                raise Problem(
                    422, "invalid_arguments", "edited arguments are a JSON object", [("$", "")]
                )
        kind = "allow" if action in ("allow", "edit") else action
        decision = _decision(kind, form.get("reason"), arguments)
        await decide(console, run_id, call_id, decision, by=identity, version=version)
        if decision.kind == "halt":
            await _halt_rest(console, run_id, decision.reason, identity)
    except Problem as problem:
        if problem.status not in (409, 422):
            raise
        return await _request_page(console, request, identity, problem=problem, edited=edited_text)
    return RedirectResponse(f"{_base(request)}/runs/{_html.quoted(run_id)}", status_code=303)


def _same_origin(request: Request) -> None:
    """A form posted from another site is refused even before its token is checked."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return
    if urlsplit(origin).netloc != request.headers.get("host"):
        raise Problem(403, "csrf", "the form was posted from another site")
