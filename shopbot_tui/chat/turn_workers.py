"""The chat's turn workers: at most one per thread, and what the screen keeps of each.

A worker runs `drive_turn`, which only posts messages to the screen. While it runs its thread
is busy (a second message there is refused, not queued), full garbage collections wait
(collector.py), and what it has written of its reply is kept for a thread opened again
mid-reply (replies_so_far.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from textual.worker import Worker, WorkerState

from agents.backend import TURN_STOPPED_NOTE
from shopbot_tui.chat.messages import NoteAdded, TurnEnded
from shopbot_tui.chat.replies_so_far import RepliesSoFar
from shopbot_tui.collector import CollectorPause

if TYPE_CHECKING:
    from textual.dom import DOMNode

    from agents.backend import Backend, EngineEvent

# A turn worker's group is this and its thread: `exclusive` then cancels only that thread's.
TURN_GROUP = "turn:"


class TurnWorkers:
    """Starts each thread's turn worker on `node` (the chat screen), and ends its turn."""

    def __init__(
        self, node: DOMNode, *, answering: Callable[[frozenset[str]], None] = lambda _t: None
    ) -> None:
        """`answering`: told the threads whose turn runs and is not being stopped, each time
        they change."""
        self._node = node
        self._answering = answering
        # Threads with a turn in flight: a second message there is refused, not queued.
        self.busy: set[str] = set()
        # Threads whose turn a person stopped (esc), until its worker ends.
        self.stopping: set[str] = set()
        self.replies_so_far = RepliesSoFar()
        self._collector = CollectorPause()

    def start(
        self,
        thread_id: str,
        events: Callable[[], AsyncIterator[EngineEvent]],
        *,
        text: str = "",
        decision: str | None = None,
    ) -> None:
        """Start the one turn worker of `thread_id`."""
        # Loaded by now (the engine is running), and not before the first frame: the
        # engine's events are dataclasses that take a while to create.
        from agents.backend import InputError
        from shopbot_tui.chat.turn_stream import drive_turn

        self.busy.add(thread_id)
        self._changed()
        self._collector.hold(thread_id)
        self._node.run_worker(
            drive_turn(
                self._node.post_message,
                thread_id,
                events,
                input_error=InputError,
                text=text,
                decision=decision,
            ),
            name=f"turn {thread_id}",
            group=f"{TURN_GROUP}{thread_id}",
            description="answer a customer message" if decision is None else "resume a decision",
            exclusive=True,
            exit_on_error=False,
        )

    def over(self, thread_id: str) -> None:
        """The turn of `thread_id` ended (or never started)."""
        self.busy.discard(thread_id)
        self.stopping.discard(thread_id)
        self._changed()
        self.replies_so_far.forget(thread_id)
        self._collector.release(thread_id)

    def stop(self, thread_id: str, backend: Backend) -> bool:
        """Stop the running turn of `thread_id`; False when there is none to stop."""
        if thread_id not in self.busy or thread_id in self.stopping:
            return False
        if not backend.stop_reply(thread_id):  # (its graph is done: only recording is left)
            return False
        self.stopping.add(thread_id)
        self._changed()
        return True

    def _changed(self) -> None:
        self._answering(frozenset(self.busy - self.stopping))

    def worker_changed(self, event: Worker.StateChanged) -> None:
        """A cancelled or failed turn worker posts no TurnEnded: its turn is over here. One a
        person stopped ends as the engine recorded it: with its note, then TurnEnded."""
        group = event.worker.group
        # Only turn workers: a failed export must not free a thread that happens to be
        # called "export".
        ended = event.state in (WorkerState.CANCELLED, WorkerState.ERROR)
        if not (ended and group.startswith(TURN_GROUP)):
            return
        thread_id = group.removeprefix(TURN_GROUP)
        stopped = event.state == WorkerState.CANCELLED and thread_id in self.stopping
        self.over(thread_id)
        if stopped:
            self._node.post_message(NoteAdded(thread_id, text=TURN_STOPPED_NOTE))
            self._node.post_message(TurnEnded(thread_id, result=None))

    def release_all(self) -> None:
        """The app may quit mid-turn: the collector must not stay off behind it."""
        self._collector.release_all()
