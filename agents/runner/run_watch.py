"""What a turn's events have said so far: who answers, the reply, a question asked, a
failure. The in-process engine and the remote backend read a run's stream the same way."""

from __future__ import annotations

from agents.events import (
    AgentChanged,
    ApprovalRequest,
    EngineEvent,
    RefundNotCarriedOut,
    ReplyDone,
    StepChanged,
    TurnFailed,
    TurnResult,
    TurnStatus,
)


class RunWatch:
    """What a run's events have said so far: who answers, the reply, a question asked."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.done: ReplyDone | None = None
        self.failure: TurnFailed | None = None
        self.failure_streamed = False  # (the graph's own TurnFailed, passed on as it came)
        # The approval nodes announce a pause just before they call interrupt().
        self.paused = False

    def result(
        self,
        thread_id: str,
        *,
        agent: str,
        pending: ApprovalRequest | None,
        failure: TurnFailed | None = None,
    ) -> TurnResult:
        """How the turn ended: its reply, the question left waiting, the failure said (or
        `failure`, one the run's events did not say). A failure is one even when a question
        waits (a decision that could not be carried out is asked again)."""
        failure = failure or self.failure
        status: TurnStatus
        if failure is not None:
            status = "error"
        else:
            status = "awaiting_approval" if pending is not None else "done"
        return TurnResult(
            thread_id=thread_id,
            status=status,
            reply=self.done.text if self.done else "",
            active_agent=agent,
            pending=pending,
            error=failure.message if failure else None,
            failed=failure.kind if failure else None,
        )

    def sees(self, event: EngineEvent) -> bool:
        """Take `event` in; True once the reply is whole or a question asked."""
        if isinstance(event, AgentChanged):
            self.agent = event.agent
        elif isinstance(event, ReplyDone):
            self.done = event
        elif isinstance(event, StepChanged) and event.step == "waiting_for_approval":
            self.paused = True
        if (said := failure_said(event)) is not None:
            self.failure, self.failure_streamed = said, said is event
        return self.done is not None or self.paused


def failure_said(event: EngineEvent) -> TurnFailed | None:
    """A failure the graph reports and closes the turn on: the model provider down for good,
    or a person's decision on a refund that could not be carried out (nothing paid, the
    question asked again)."""
    if isinstance(event, RefundNotCarriedOut):
        return TurnFailed(kind="storage" if event.storage else "internal", message=event.message)
    return event if isinstance(event, TurnFailed) else None
