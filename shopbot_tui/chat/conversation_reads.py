"""What the chat's workers read of a stored thread: its history to show, its transcript to
export. The registry is SQLite, so its reads run off the event loop; each function returns
the message its worker posts, a failure included (the chat stays usable)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import TYPE_CHECKING

from agents.backend import DEFAULT_AGENT, redact
from shopbot_tui.chat.export import export_chat
from shopbot_tui.chat.messages import ChatExported, ThreadLoaded

if TYPE_CHECKING:
    from agents.backend import Backend, ChatLine, Settings, ThreadInfo

# Mounting thousands of widgets would make opening an old thread slow; the
# export (ctrl+s) always has the whole transcript.
HISTORY_LINES = 200


async def read_stored(backend: Backend, thread_id: str) -> tuple[ThreadInfo | None, list[ChatLine]]:
    """The thread's record (None for a thread never used) and its whole transcript."""
    return await backend.thread(thread_id), await backend.transcript(thread_id)


async def read_history(backend: Backend, thread_id: str) -> ThreadLoaded:
    """The thread as the chat opens it: its last HISTORY_LINES lines and its graph state."""
    info: ThreadInfo | None = None
    lines: list[ChatLine] = []
    new_draft = False
    try:
        info, lines = await read_stored(backend, thread_id)
        # Read apart from the transcript: a state that cannot be read still shows what was
        # said (with why the conversation cannot go on).
        agent = await backend.active_agent(thread_id)
        pending = await backend.pending_decision(thread_id)
        elsewhere = await backend.answering_elsewhere(thread_id)
        draft = await backend.draft(thread_id)
        if not draft and (info is None or info.turns == 0):
            # A new conversation: it takes what was typed in the last one and not sent.
            draft = await backend.draft(None)
            new_draft = bool(draft)
    except Exception as exc:
        problem = await backend.describe_failure(exc)
        shown = lines[-HISTORY_LINES:]
        agent = info.active_agent if info else DEFAULT_AGENT
        return ThreadLoaded(thread_id, info, shown, len(lines) - len(shown), agent, None, problem)
    shown = lines[-HISTORY_LINES:]
    return ThreadLoaded(
        thread_id,
        info,
        shown,
        len(lines) - len(shown),
        agent,
        pending,
        answering_elsewhere=elsewhere,
        draft=draft,
        new_draft=new_draft,
    )


async def export_transcript(backend: Backend, settings: Settings, thread_id: str) -> ChatExported:
    """Write the whole stored conversation under the home (see chat/export.py)."""
    try:
        info, lines = await read_stored(backend, thread_id)
        if not lines:
            return ChatExported(error="Nothing to export yet: send a message.")
        path = await asyncio.to_thread(
            export_chat, settings.home, thread_id, info, lines, now=datetime.now().astimezone()
        )
    except Exception as exc:  # a full disk or a locked store: say so, keep the chat
        problem = await backend.describe_failure(exc)
        return ChatExported(error=f"Could not export: {redact(problem)}")
    return ChatExported(path=str(path))
