"""What each thread's running turn has written so far of the reply it is writing.

A thread opened again mid-reply (from the thread list, or back from another thread) starts
that reply with all of this text, not with the next piece to arrive.
"""

from __future__ import annotations

from shopbot_tui.chat.messages import ReplyChunk


class RepliesSoFar:
    """The streamed text of each thread's current reply: one agent's, until it is done."""

    def __init__(self) -> None:
        self._replies: dict[str, tuple[str, list[str]]] = {}

    def add(self, chunk: ReplyChunk) -> None:
        reply = self._replies.get(chunk.thread_id)
        if reply is None or reply[0] != chunk.agent:
            # Another agent writes now: what the last one wrote stays only if it is confirmed
            # (ReplyComplete), and then it is in the thread's transcript.
            reply = self._replies[chunk.thread_id] = (chunk.agent, [])
        reply[1].append(chunk.text)

    def forget(self, thread_id: str) -> None:
        """The reply is done (or thrown away, or the turn is over)."""
        self._replies.pop(thread_id, None)

    def chunk(self, thread_id: str) -> ReplyChunk | None:
        """Everything written so far of `thread_id`'s reply, as one chunk."""
        reply = self._replies.get(thread_id)
        if reply is None:
            return None
        agent, parts = reply
        parts[:] = ["".join(parts)]  # joined once: the next ask joins only what came since
        return ReplyChunk(thread_id, agent=agent, text=parts[0])
