"""The open thread's reply as it streams into the chat log, and what stays of it.

Streamed text shows at once, but only a reply the engine confirms (ReplyDone, posted as
ReplyComplete) stays, as in the stored transcript: a reply another agent cuts into is parked
until then, and the tokens of a failed attempt are dropped.
"""

from __future__ import annotations

from collections.abc import Callable

from shopbot_tui.widgets.conversation import ChatLog, ReplyWriter


class LiveReply:
    """Streams replies into the chat log that `log` returns (it is composed after this)."""

    def __init__(self, log: Callable[[], ChatLog]) -> None:
        self._log = log
        self._writer: ReplyWriter | None = None
        # Replies that stopped streaming before ReplyDone confirmed them.
        self._parked: list[ReplyWriter] = []

    async def write(self, agent: str, text: str) -> None:
        """A streamed piece of `agent`'s reply."""
        if self._writer is not None and self._writer.agent != agent:
            self._park()
        if self._writer is None:
            self._writer = ReplyWriter(self._log(), agent)
        await self._writer.write(text)

    async def finish(self, agent: str, text: str) -> None:
        """`agent`'s reply is done and `text` is exactly what the engine recorded."""
        if self._writer is None or self._writer.agent != agent:
            self._park()
            self._writer = ReplyWriter(self._log(), agent)
        await self._writer.finish(text)
        self._writer = None
        await self._drop_parked()

    async def drop_unconfirmed(self) -> None:
        """Drop whatever was streamed that no ReplyDone confirmed."""
        self._park()
        await self._drop_parked()

    def _park(self) -> None:
        """Stop streaming into the current reply; it stays only if ReplyDone confirms it."""
        if self._writer is not None:
            self._writer.pause()
            self._parked.append(self._writer)
            self._writer = None

    async def _drop_parked(self) -> None:
        parked, self._parked = self._parked, []
        for writer in parked:
            await writer.discard()
