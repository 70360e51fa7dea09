"""Reading what a thread's stored graph state says: its pending decision, its active agent,
the work of a run that did not finish."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AnyMessage

from agents.events import ApprovalRequest, request_from_interrupt
from agents.names import DEFAULT_AGENT


def live_interrupts(state: Any) -> list[Any]:
    """Interrupts still waiting for an answer: the parent's question for a person (they are
    asked there, see agents/graph/decisions.py)."""
    return [pending for task in state.tasks for pending in task.interrupts]


def pending_in(thread_id: str, state: Any) -> ApprovalRequest | None:
    for pending in live_interrupts(state):
        if (request := request_from_interrupt(thread_id, pending.value, pending.id)) is not None:
            return request
    return None


def active_in(state: Any) -> str:
    return str(state.values.get("active_agent") or DEFAULT_AGENT)


def unfinished_work(state: Any) -> list[AnyMessage]:
    """Messages a specialist added in a run that did not finish: they reach the parent only
    when the specialist ends. Closing the turn without them would forget what happened (a
    refund paid after an approval, say) from the conversation the model reads next."""
    known = {m.id for m in state.values.get("messages", [])}
    carried: list[AnyMessage] = []
    for task in state.tasks:
        sub = task.state
        if sub is None or not hasattr(sub, "values"):  # not read (subgraphs=False)
            continue
        for message in sub.values.get("messages", []):
            if message.id not in known:
                known.add(message.id)
                carried.append(message)
    return carried
