"""Closing a turn that did not finish (failed, cut off, killed), so that nothing is lost.

Pure functions over the thread's stored state; the engine applies what they return.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from agents.events import ApprovalRequest
from agents.graph.history import CUSTOMER_LINE_PREFIX, repair_tail
from agents.runner.approval_now import as_it_stands
from agents.runner.thread_state import unfinished_work
from agents.store.shop import ShopData
from agents.store.sqlite import is_busy, is_full
from agents.store.threads import ChatLine


def customer_message(line: ChatLine) -> HumanMessage:
    """A customer's message for the graph, named after its transcript line: whether the
    conversation has it is then a question of ids, not of text (which may repeat)."""
    return HumanMessage(content=line.text, id=f"{CUSTOMER_LINE_PREFIX}{line.id}")


def lost_message(said: ChatLine | None, state: Any) -> ChatLine | None:
    """`said` (the customer's last transcript line) when the stored conversation does not
    have it: a run saves when it stops, and a process killed mid-run saved nothing."""
    if said is None:
        return None
    stored = [m for m in state.values.get("messages", []) if isinstance(m, HumanMessage)]
    if not stored:
        return said
    last = stored[-1]
    if (last.id or "").startswith(CUSTOMER_LINE_PREFIX):
        return None if last.id == customer_message(said).id else said
    return None if last.text == said.text else said  # stored before messages had line ids


def closing_messages(
    state: Any, note: str, *, say_it: bool = False, then: Sequence[BaseMessage] = ()
) -> list[BaseMessage]:
    """What to add so the thread's history holds the unfinished specialist's work and ends
    where Mistral accepts the next message (unanswered calls refused, no tool answer last).
    `say_it` ends it on `note` even when nothing needed mending (a brake's reply)."""
    carried = unfinished_work(state)
    closing = [*carried, *repair_tail([*state.values.get("messages", []), *carried], note)]
    if say_it and not any(isinstance(m, AIMessage) and m.text == note for m in closing):
        closing.append(AIMessage(content=note))
    closing.extend(then)
    return closing


def with_ledger(pending: ApprovalRequest | None, shop: ShopData) -> ApprovalRequest | None:
    """A pending refund the ledger already holds (paid by a run that stopped before it was
    saved) says so: nobody should decide on it as if no money had moved."""
    if pending is None or pending.kind != "refund_approval":
        return pending
    paid = shop.refund_for(str(pending.payload.get("order_id")))
    if paid is None:
        return pending
    return as_it_stands(pending, paid_reference=paid.reference)


def turn_failure_text(exc: Exception) -> str:
    """What a person reads when the turn broke inside ShopBot: what to do, no internals."""
    if isinstance(exc, sqlite3.DatabaseError):
        if is_full(exc):
            return (
                f"A ShopBot database could not be written: the disk is full ({exc}); your "
                "message is saved. Free some space on it, then carry on."
            )
        why = "is locked by another program" if is_busy(exc) else f"could not be used ({exc})"
        return (
            f"A ShopBot database {why}; your message is saved. Close other ShopBot windows "
            "or commands and try again (shopbot.log has the details)."
        )
    return f"Something went wrong inside ShopBot ({type(exc).__name__})."
