"""The one JSON object `shopbot chat --json` and `shopbot resume --json` print on stdout,
and the error object the other `--json` commands print when they fail.

A script reads stdout whatever happened: a turn that ran (done, awaiting approval, or failed
at the provider) prints its result; a message or decision refused before anything ran (an
empty message, an unknown thread, nothing pending, a decision not among the options, a new
message while a decision is pending, ...) prints `status: "error"` too, with the same line
as stderr in `error` and the thread as it stands, its pending decision still pending and
shown; a command line the parser refused prints it with no thread named. Exit codes and
stderr are the same with and without `--json`.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from agents.backend import safe_json, validate_thread_id

if TYPE_CHECKING:
    from agents.backend import ApprovalRequest, Backend, TurnResult


class JsonOutput:
    """Stdout of one `chat`/`resume --json` run: exactly one object, whatever happens."""

    def __init__(self, thread_id: str) -> None:
        # An id the engine would refuse is not a thread: null, not the argument echoed
        # (it may hold anything; stderr says what was wrong with it).
        try:
            self.thread_id: str | None = validate_thread_id(thread_id)
        except ValueError:
            self.thread_id = None
        self.active_agent: str | None = None
        self.pending: ApprovalRequest | None = None
        self.printed = False

    def print_result(self, result: TurnResult) -> None:
        self._print(result.to_json())

    async def learn_where_the_thread_stands(self, backend: Backend) -> None:
        """The active agent and the pending decision of a thread a refusal left unchanged
        (none for a thread that does not exist yet)."""
        if self.thread_id is None:
            return
        # The refusal is what the run has to say; a store that fails while it is looked at
        # here must not replace it (it is named on the next command that needs it).
        with contextlib.suppress(Exception):
            if (info := await backend.thread(self.thread_id)) is None:
                return
            self.active_agent = info.active_agent
            self.pending = await backend.pending_decision(self.thread_id)

    def learn_the_agent_after_a_stop(self) -> None:
        """After a turn a signal cut off (the engine closed, nothing pending: the turn was
        answering): the thread's agent as the registry keeps it."""
        if self.thread_id is None or self.active_agent is not None:
            return
        from agents.backend import Settings, agent_read_only

        # As above: the stop is what is said, whatever reading the registry runs into. Read
        # only: stopped before the home was checked, a database must not be made in its place.
        with contextlib.suppress(Exception):
            self.active_agent = agent_read_only(Settings.from_env(), self.thread_id)

    def print_failure(self, error: str) -> None:
        """The failure object, unless the run already printed its result (a failure while
        the engine closed after a finished turn must not add a second object)."""
        if self.printed:
            return
        self._print(
            {
                "thread_id": self.thread_id,
                "status": "error",
                "reply": None,
                "active_agent": self.active_agent,
                "pending": self.pending.to_json() if self.pending else None,
                "error": error,
            }
        )

    def _print(self, value: dict[str, Any]) -> None:
        self.printed = True
        print(safe_json(value))


class ErrorJson:
    """`threads`, `show`, `handled` or `audit` with `--json`, failed: one object on stdout
    saying so, `{"status": "error", "error"}` (with the `thread_id` of `show` and `handled`,
    null when it is not a valid one), after whatever lines it printed before it failed. A
    script reading objects then tells an error from an event or a thread by its `status`."""

    def __init__(self, thread_id: str | None, *, names_a_thread: bool) -> None:
        self._names_a_thread = names_a_thread
        try:
            self.thread_id = validate_thread_id(thread_id) if thread_id is not None else None
        except ValueError:
            self.thread_id = None

    def print_failure(self, error: str) -> None:
        shown: dict[str, Any] = {"thread_id": self.thread_id} if self._names_a_thread else {}
        print(safe_json({**shown, "status": "error", "error": error}))
