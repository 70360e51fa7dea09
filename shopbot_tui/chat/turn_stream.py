"""Drive one engine event stream and report it as typed messages: the body of a turn worker.

It never touches a widget: everything it learns goes through `post`, and the screen's
handlers decide what to show. Kept free of Textual widgets so it reads (and tests) alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator

from textual.message import Message

from agents.backend import (
    AgentChanged,
    ApprovalRequest,
    BusyElsewhere,
    EngineEvent,
    GateChecked,
    NothingPending,
    ReplyDone,
    Retrying,
    StepChanged,
    TokenDelta,
    TurnFailed,
    TurnFinished,
    TurnResult,
    note_for,
    redact,
)
from shopbot_tui.chat.messages import (
    AgentSwitched,
    GateReported,
    NoteAdded,
    ProviderRetrying,
    ReplyChunk,
    ReplyComplete,
    StepUpdate,
    TurnAccepted,
    TurnEnded,
    TurnProblem,
    TurnRefused,
)

Post = Callable[[Message], object]
# Tokens are posted at most this often (about a frame): at a few hundred tokens a second,
# a message per token floods the screen's queue and starves its refresh. At the usual
# model speeds a batch is one or two tokens, so the reply still appears token by token.
TOKEN_BATCH_SECONDS = 1 / 60


class TokenBatch:
    """Joins consecutive tokens of one agent into one `ReplyChunk` per interval."""

    def __init__(self, post: Post, thread_id: str, interval: float = TOKEN_BATCH_SECONDS) -> None:
        self._post = post
        self._thread_id = thread_id
        self._interval = interval
        self._agent: str | None = None
        self._parts: list[str] = []
        self._timer: asyncio.TimerHandle | None = None

    def add(self, agent: str, text: str) -> None:
        if self._agent is not None and agent != self._agent:
            self.flush()
        self._agent = agent
        self._parts.append(text)
        if self._timer is None:
            # A timer, not the next event: a model that pauses mid-reply must not hold
            # back what it already wrote.
            self._timer = asyncio.get_running_loop().call_later(self._interval, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._parts and self._agent is not None:
            text, self._parts = "".join(self._parts), []
            self._post(ReplyChunk(self._thread_id, agent=self._agent, text=text))


def translate(thread_id: str, event: EngineEvent) -> Iterator[Message]:
    """The messages one engine event becomes (the quiet note first, as the transcript has it)."""
    if isinstance(event, TokenDelta):
        yield ReplyChunk(thread_id, agent=event.agent, text=event.text)
        return
    if (note := note_for(event)) is not None:
        yield NoteAdded(thread_id, text=note)
    if isinstance(event, AgentChanged):
        yield AgentSwitched(thread_id, agent=event.agent)
    elif isinstance(event, StepChanged):
        yield StepUpdate(
            thread_id,
            agent=event.agent,
            step=event.step,
            detail=event.detail,
            attempt=event.attempt,
        )
    elif isinstance(event, GateChecked):
        yield GateReported(
            thread_id, agent=event.agent, gate=event.gate, ok=event.ok, detail=event.detail
        )
    elif isinstance(event, ReplyDone):
        yield ReplyComplete(thread_id, agent=event.agent, text=event.text)
    elif isinstance(event, Retrying):
        yield ProviderRetrying(
            thread_id, attempt=event.attempt, delay=event.delay, reason=event.reason
        )
    elif isinstance(event, TurnFailed):
        yield TurnProblem(thread_id, kind=event.kind, message=event.message)


async def drive_turn(
    post: Post,
    thread_id: str,
    events: Callable[[], AsyncIterator[EngineEvent]],
    *,
    input_error: type[Exception],
    text: str = "",
    decision: str | None = None,
) -> None:
    """Run `events()` to its end, posting what happens; `input_error` is the backend's
    `InputError` (passed in: this module must not load the events on import). A message refused
    because the thread waits for a decision reports that decision (the refusal's `request`):
    another front (`shopbot chat`) may have asked it, unseen here."""
    result: TurnResult | None = None
    tokens = TokenBatch(post, thread_id)
    stream = events()
    try:
        try:
            first = await anext(stream)
        except input_error as exc:
            request = getattr(exc, "request", None)
            pending = request if isinstance(request, ApprovalRequest) else None
            post(
                TurnRefused(
                    thread_id,
                    text=text,
                    reason=str(exc),
                    decision=decision,
                    pending=pending,
                    busy_elsewhere=isinstance(exc, BusyElsewhere),
                    nothing_pending=isinstance(exc, NothingPending),
                )
            )
            return
        post(TurnAccepted(thread_id, text=text, decision=decision))
        event: EngineEvent | None = first
        while event is not None:
            if isinstance(event, TokenDelta):
                tokens.add(event.agent, event.text)
            elif isinstance(event, TurnFinished):
                # Posted only once the stream is exhausted: until then the engine
                # still holds the thread's lock and would refuse the next message.
                result = event.result
            else:
                tokens.flush()  # what was written comes before what happens next
                for message in translate(thread_id, event):
                    post(message)
            event = await anext(stream, None)
    except Exception as exc:
        # The engine turns model and graph failures into TurnFailed itself; this is a
        # broken store or an engine bug. Say so, and keep the conversation usable.
        post(TurnProblem(thread_id, kind="internal", message=f"ShopBot failed: {redact(str(exc))}"))
    finally:
        tokens.flush()
        # A cancelled worker (the app quitting) closes the engine's generator, and its lock.
        if (aclose := getattr(stream, "aclose", None)) is not None:
            await aclose()
    post(TurnEnded(thread_id, result=result))
