"""The sub-commands that read or mark what ShopBot stores, no engine started: `threads`,
`show`, `audit` and `handled` (a backend answers them before it runs any turn)."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from agents.backend import Settings, quoted, safe_json, visible
from shopbot_tui.cli.parser import UsageError

if TYPE_CHECKING:
    from agents.backend import Backend

T = TypeVar("T")


def unknown_thread(thread_id: str) -> UsageError:
    return UsageError(f"Unknown thread {quoted(thread_id)}: `shopbot threads` lists them.")


def _with_backend(settings: Settings, work: Callable[[Backend], Awaitable[T]]) -> T:
    """`work` on the command line's backend (not started: nothing here runs a turn)."""
    from agents.backend import open_backend

    async def run() -> T:
        backend = open_backend(settings, via="command line")
        try:
            return await work(backend)
        finally:
            await backend.close()

    return asyncio.run(run())


def print_threads(settings: Settings, only: str | None, as_json: bool) -> None:
    """Every conversation, most recent first; `only`: those waiting for a decision (the one
    left alone longest first) or escalated to a person (the oldest escalation first), the
    app's views of what needs a person."""

    async def read(backend: Backend) -> None:
        escalated = {e.thread_id: e for e in await backend.escalations()}
        if only == "waiting":
            listed = await backend.waiting_for_decision()
        elif only == "escalated":
            listed = await backend.threads(limit=None, among=list(escalated))
            listed.sort(key=lambda info: escalated[info.thread_id].since)
        else:
            listed = await backend.threads(limit=None)
        for info in listed:
            escalation = escalated.get(info.thread_id)
            if as_json:
                shown = escalation.to_json() if escalation else None
                if shown:
                    del shown["thread_id"]
                print(safe_json({**info.to_json(), "escalation": shown}))
            else:
                who = info.customer or "-"
                turns = f"{info.turns} turn" if info.turns == 1 else f"{info.turns} turns"
                # Escalated and otherwise at rest: what waits on it is a person (the app's ▲).
                status = "escalated" if escalation and info.status == "idle" else info.status
                print(
                    visible(
                        f"{info.thread_id}\t{status}\t{info.active_agent}\t{who}\t"
                        f"{turns}\t{info.updated_at}\t{info.title}"
                    )
                )

    _with_backend(settings, read)


def print_audit(settings: Settings, args: argparse.Namespace) -> None:
    from agents.backend import AUDIT_KINDS, AuditQuery, normalise_ts

    # `is not None`: an empty `--kind ""` (a script's unset variable) is no kind, not "any".
    if args.kind is not None and args.kind not in AUDIT_KINDS:
        raise UsageError(
            f"unknown kind {quoted(args.kind)}; kinds: {', '.join(sorted(AUDIT_KINDS))}"
        )
    if args.since and args.until and normalise_ts(args.since) >= normalise_ts(args.until):
        raise UsageError(
            f"--since {quoted(args.since)} is not before --until {quoted(args.until)}: "
            "no event could match; swap them?"
        )
    query = AuditQuery(
        thread_id=args.audit_thread,
        kinds=(args.kind,) if args.kind is not None else (),
        since=args.since,
        until=args.until,
        text=args.text,
    )

    async def read(backend: Backend) -> None:
        printed = 0
        for event in await backend.audit_page(query, limit=args.limit):
            printed += 1
            if args.json:
                print(safe_json(event.to_json()))
            else:
                line = f"{event.ts}  {event.thread_id or '-'}  {event.agent or '-'}  {event.kind}"
                print(visible(f"{line}  {event.summary(100)}"))
        if not printed and args.audit_thread and await backend.thread(args.audit_thread) is None:
            # A mistyped thread printed nothing and exited 0, as a thread with no such event
            # does. (Events of a thread the registry has lost still print, above.)
            raise unknown_thread(args.audit_thread)

    _with_backend(settings, read)


def close_escalation(settings: Settings, thread_id: str, as_json: bool) -> None:
    """Close the thread's escalation in this person's name."""

    async def close(backend: Backend) -> None:
        if await backend.thread(thread_id) is None:
            raise unknown_thread(thread_id)
        closed = await backend.mark_handled(thread_id)
        if closed is None:
            raise UsageError(
                f"Thread {quoted(thread_id)} is not escalated (or was marked handled already); "
                "nothing changed."
            )
        if as_json:
            print(safe_json(closed.to_json()))
        else:
            print(
                visible(f"{thread_id}: escalation handled ({closed.reason}, since {closed.since})")
            )

    _with_backend(settings, close)


def print_conversation(
    settings: Settings, thread_id: str, limit: int | None, as_json: bool
) -> None:
    """The conversation's transcript, as it stands."""
    from dataclasses import asdict

    from shopbot_tui.chat.export import escape_markdown, transcript_markdown
    from shopbot_tui.cli.markdown import print_markdown

    async def read(backend: Backend) -> None:
        # As a list shows it: a turn whose process is gone reads `cut_off`.
        listed = await backend.threads(limit=None, among=[thread_id])
        if not listed:
            raise unknown_thread(thread_id)
        info = listed[0]
        lines = await backend.transcript(thread_id, limit=limit)
        escalation = next(
            (e for e in await backend.escalations() if e.thread_id == thread_id), None
        )
        if as_json:
            for line in lines:
                print(safe_json(asdict(line)))
            return
        # What a person checks before `resume` or `handled`.
        if info.status == "awaiting_approval":
            status = f"waiting for a decision (`shopbot resume {thread_id} DECISION`)"
        elif escalation is not None:
            status = (
                f"escalated to a person since {escalation.since}: "
                f"{escape_markdown(escalation.reason)} "
                f"(`shopbot handled {thread_id}` once handled)"
            )
        else:
            status = {
                "error": "its last turn failed",
                "cut_off": "its last turn was cut off (its process is gone)",
            }.get(info.status, info.status)
        print_markdown(transcript_markdown(thread_id, info, lines, exported_at=None, status=status))

    _with_backend(settings, read)
