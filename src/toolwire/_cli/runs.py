"""``toolwire pending``, ``decide``, ``respond`` and ``history``: the runs of a store."""

from __future__ import annotations

import argparse
import sys

import toolwire
from toolwire import _text
from toolwire._cli.common import (
    arguments_option,
    close_store,
    principal_option,
    print_json,
    safe,
    store_at,
)
from toolwire.errors import ConfigurationError, ToolwireError
from toolwire.runs import ledger

__all__ = ["run_decide", "run_history", "run_pending", "run_respond"]


async def run_pending(args: argparse.Namespace) -> int:
    store = store_at(args.store)
    try:
        found = await ledger.waiting(
            store, run_id=args.run_id, principal=principal_option(args.principal), limit=args.limit
        )
    finally:
        await close_store(store)
    requests = found.requests
    for damaged in found.damaged:  # named, so nothing that waits is lost from view
        print(
            safe(f"damaged: {damaged.run_id}  {damaged.call_id}: {damaged.problem}"),
            file=sys.stderr,
        )
    status = 1 if found.damaged else 0
    if args.json:
        print_json([request.to_dict() for request in requests])
        return status
    for request in requests:
        arguments = dict(request.arguments)
        shown = _text.visible_json(arguments)
        print(safe(f"{request.run_id}  {request.call_id}  {request.exposed_name} {shown}"))
        if request.reason:
            print(safe(f"    why: {request.reason}"))
        if (
            _text.hides(request.exposed_name)
            or _text.json_hides(arguments)
            or _text.hides(request.reason or "")
        ):
            print(
                "    careful: hidden characters, shown as escapes (\\u202e); the call gets the "
                "characters themselves"
            )
        for question in request.input:  # it waits for input: `toolwire respond` answers it
            print(safe(f"    asks ({question.key}, round {question.round}): {question.message}"))
    if not requests and not found.damaged:
        print("nothing waits for a decision")
    return status


async def run_decide(args: argparse.Namespace) -> int:
    if args.decision == "allow":
        edited = arguments_option(args.args) if args.args is not None else None
        decision = toolwire.allow(arguments=edited)
    elif args.args is not None:
        raise ConfigurationError("only an allow takes --args")
    else:
        decision = (toolwire.deny if args.decision == "deny" else toolwire.halt)(args.reason)
    store = store_at(args.store)
    try:
        await toolwire.decide(args.run_id, args.call_id, decision, store=store, by=args.by)
    finally:
        await close_store(store)
    print(safe(f"{args.decision}: {args.run_id} {args.call_id}"))
    return 0


async def run_respond(args: argparse.Namespace) -> int:
    content = arguments_option(args.content, "the answer") if args.content is not None else None
    store = store_at(args.store)
    try:
        await toolwire.respond(
            args.run_id,
            args.call_id,
            content,
            action=args.action,
            key=args.key,
            round=args.round,
            store=store,
            by=args.by,
        )
    finally:
        await close_store(store)
    print(safe(f"{args.action}: {args.run_id} {args.call_id}"))
    return 0


async def run_history(args: argparse.Namespace) -> int:
    store = store_at(args.store)
    try:
        trails = await toolwire.history(args.run_id, store=store)
    finally:
        await close_store(store)
    if not trails:  # a run is its calls: none kept, no run (or it expired)
        raise ToolwireError(f"no run {args.run_id!r} in {store!r} (or it expired)")
    print_json([trail.to_dict() for trail in trails])
    return 0
