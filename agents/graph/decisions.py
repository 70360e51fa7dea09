"""Questions for a person, asked at the parent graph: a refund to approve, a complaint to
review. Asked here rather than inside the specialist, so that the question is in the
conversation's own state: a customer message arriving while one waits is refused and the
question asked again (never dropped, as LangGraph drops an interrupt a new input passes),
and an answer that does not fit is refused and the question asked again.

A node that calls `interrupt()` runs again from its start on resume, so the question is two
nodes: `ask_decision` records it (once), `await_decision` pauses and then acts. An answer
that cannot be carried out, or that does not answer the question, never leaves the node by
an exception: LangGraph would keep that answer and hand it to the node again on the next
resume, whatever the person says then. It goes back to `await_decision` instead, a new
interrupt for the same question.

The interrupt's value carries LangChain's human-in-the-loop request shape
(`action_requests`, `review_configs`) beside ShopBot's fields, and an answer may be
ShopBot's option (`"approve"`, `{"decision": ..., "request_id": ...}`) or a HITL response
(`{"decisions": [{"type": "approve"}]}`).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import sqlite3
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langchain_core.messages.tool import ToolCall
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from agents.events import (
    COMPLAINT_OPTIONS,
    REFUND_OPTIONS,
    AgentChanged,
    DecisionRefused,
    Escalated,
    HandedOff,
    MessageRefused,
    RefundNotCarriedOut,
    RefundPaid,
    ReplyDone,
    StepChanged,
)
from agents.graph.admission import RunRefused, answer_in
from agents.graph.context import ShopContext
from agents.graph.history import latest_customer_words, tool_answer
from agents.graph.replies import COMPLAINT_DECISIONS, COMPLAINT_HANDED_BACK, REFUND_DECISIONS
from agents.graph.reporting import close_turn, decided_by, pause_for, report
from agents.graph.services import Turn, turn
from agents.graph.state import ShopState
from agents.graph.tools.domain import pay_refund
from agents.names import DEFAULT_AGENT
from agents.safety.redaction import redact
from agents.store.sqlite import StorageError
from gates import needs_senior, order_ids_meant

log = logging.getLogger("shopbot.engine")

ASK_DECISION = "ask_decision"
AWAIT_DECISION = "await_decision"
DECISION_WAITS = "decision_waits"
# Payload entries that are bookkeeping or repeat the rest, not for the audit summary.
NOT_FOR_REVIEWERS = ("gates", "tool_call_id", "action_requests", "review_configs")
REQUEST_ID_BYTES = 6


def _request_id() -> str:
    # Ours, not LangGraph's interrupt id: the same question asked again keeps it.
    return secrets.token_hex(REQUEST_ID_BYTES)


def refund_approval_payload(
    call: ToolCall, validated: Mapping[str, Any], checks: list[dict[str, Any]], customer: str | None
) -> dict[str, Any]:
    """What the approver sees: the validated refund, never the model's own arguments."""
    owner = validated.get("customer") or customer
    args = {
        "order_id": validated["order_id"],
        "amount": validated["amount"],
        "reason": validated["reason"],
    }
    senior = needs_senior(Decimal(str(validated["amount"])))
    return {
        "kind": "refund_approval",
        "message": (
            "Refund approval required: above the auto-refund limit, a reviewer whose refund "
            "limit covers it decides"
            if senior
            else "Refund approval required"
        ),
        # The least refund limit of who may decide it (only said when above the standard).
        **({"needs_limit": validated["amount"]} if senior else {}),
        "request_id": _request_id(),
        "agent": "refund_agent",
        "order_id": validated["order_id"],
        "customer": owner,
        "product": validated.get("product"),
        "amount": validated["amount"],
        "reason": validated["reason"],
        "gates": checks,
        "options": list(REFUND_OPTIONS),
        "tool_call_id": call["id"],
        "action_requests": [
            {
                "name": "process_refund",
                "args": args,
                "description": (
                    f"Refund {validated['order_id']} ({validated.get('product')}) for "
                    f"${validated['amount']} to {owner}: {validated['reason']}"
                ),
            }
        ],
        "review_configs": [
            {"action_name": "process_refund", "allowed_decisions": ["approve", "reject", "respond"]}
        ],
    }


def complaint_order(state: Mapping[str, Any], named: str | None = None) -> str | None:
    """The order a complaint is about, for its reviewer: `named`, the first the complaint
    names that the conversation may see (the tool looked it up), else the one the
    conversation is on, else the first the complaint names as written (only a person reads
    it)."""
    if known := named or state.get("order_id"):
        return str(known)
    written = order_ids_meant(latest_customer_words(state["messages"]))
    return written[0] if written else None


def complaint_review_payload(
    call: ToolCall,
    validated: Mapping[str, Any],
    checks: list[dict[str, Any]],
    customer: str | None,
    order_id: str | None = None,
) -> dict[str, Any]:
    options = [o for o in COMPLAINT_OPTIONS if customer or o != "provide_compensation"]
    return {
        "kind": "complaint_review",
        "message": "An angry or frustrated customer: a person reviews the complaint",
        "request_id": _request_id(),
        "agent": "complaints_agent",
        "issue_summary": validated.get("issue_summary", ""),
        "sentiment": validated.get("sentiment", ""),
        "customer": customer,
        "order_id": order_id,
        "gates": checks,
        # Compensation is money too: only for a known customer (see gates/order_id.py).
        "options": options,
        **({} if customer else {"no_compensation": "no customer is identified"}),
        "tool_call_id": call["id"],
        "action_requests": [
            {
                "name": "file_complaint",
                "args": {
                    "issue_summary": validated.get("issue_summary", ""),
                    "sentiment": validated.get("sentiment", ""),
                },
                "description": f"Review {_with_article(str(validated.get('sentiment')))} "
                f"complaint: {validated.get('issue_summary')} (answer with one of: "
                f"{', '.join(options)})",
            }
        ],
        "review_configs": [{"action_name": "file_complaint", "allowed_decisions": ["respond"]}],
    }


def _with_article(word: str) -> str:
    """`word` after its article: "an angry", "a frustrated"."""
    return f"{'an' if word[:1].lower() in tuple('aeiou') else 'a'} {word}"


# --- asking ------------------------------------------------------------------------------


def _summary(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k not in NOT_FOR_REVIEWERS}


async def ask_decision(state: ShopState, runtime: Runtime[ShopContext]) -> dict[str, Any]:
    """Record the question (once: the pause itself is the next node)."""
    payload = dict(state.get("awaiting") or {})
    assert payload, "ask_decision runs only after a question was staged"
    agent = str(payload.get("agent") or DEFAULT_AGENT)
    if payload["kind"] == "refund_approval":
        payload["decided_before"] = await _decided_before(runtime, str(payload["order_id"]))
    report(runtime, StepChanged(agent=agent, step="waiting_for_approval"))
    report(runtime, kind="approval_requested", agent=agent, detail=_summary(payload))
    pause_for(runtime, payload)
    return {"awaiting": payload}


async def _decided_before(runtime: Runtime[ShopContext], order_id: str) -> list[dict[str, str]]:
    """Earlier decisions on this refund, for the approver (none when they cannot be read: the
    question is still asked, it only lacks that history)."""
    try:
        return await asyncio.to_thread(turn(runtime.context).decisions_on, order_id)
    except Exception:
        log.exception("reading earlier decisions on %s failed", order_id)
        return []


async def decision_waits(state: ShopState, runtime: Runtime[ShopContext]) -> Command[str]:
    """A customer message arrived while a question waits (a runtime that did not refuse it at
    the door): it is taken back out of the conversation, said, and the question asked again."""
    payload = state.get("awaiting") or {}
    agent = str(payload.get("agent") or DEFAULT_AGENT)
    latest = next((m for m in reversed(state["messages"]) if isinstance(m, HumanMessage)), None)
    what = str(payload.get("kind", "decision")).replace("_", " ")
    said = (
        f"A decision waits first ({what}, request {payload.get('request_id')}): the message "
        "was not sent. Answer the decision, then send it again."
    )
    report(
        runtime,
        MessageRefused(agent, said),
        kind="message_refused",
        agent=agent,
        detail={"request_id": payload.get("request_id"), "reason": "a decision waits"},
    )
    report(runtime, StepChanged(agent=agent, step="waiting_for_approval"))
    pause_for(runtime, payload)
    removed = [RemoveMessage(id=latest.id)] if latest is not None and latest.id else []
    return Command(goto=AWAIT_DECISION, update={"messages": removed})


# --- answering ---------------------------------------------------------------------------


def read_answer(value: object, payload: Mapping[str, Any]) -> tuple[str | None, str]:
    """(the decision among the payload's options, "") or (None, why the answer is refused):
    read as the run-creation check reads it (admission.py), for a runtime that did not ask
    that check first."""
    try:
        answer = answer_in(value)
    except RunRefused as exc:
        return None, _as_clause(str(exc))
    request = answer.request_id
    if request is not None and request != payload.get("request_id"):
        return None, f"it answers request {request}, and request {payload.get('request_id')} waits"
    choice = answer.choice.strip().lower()
    options = [str(o) for o in payload.get("options", ())]
    if choice not in options:
        return None, f"{redact(answer.choice.strip())[:80]!r} is not one of: {', '.join(options)}"
    return choice, ""


def _as_clause(sentence: str) -> str:
    """ "A decision is ...." as the end of another sentence: "a decision is ..."."""
    return (sentence[:1].lower() + sentence[1:]).rstrip(".")


def _ask_again(
    runtime: Runtime[ShopContext],
    payload: Mapping[str, Any],
    kind: str,
    detail: dict[str, Any],
    event: object,
) -> Command[str]:
    agent = str(payload.get("agent") or DEFAULT_AGENT)
    report(runtime, event, kind=kind, agent=agent, detail=detail)  # type: ignore[arg-type]
    report(runtime, StepChanged(agent=agent, step="waiting_for_approval"))
    pause_for(runtime, payload)
    return Command(goto=AWAIT_DECISION, update={"awaiting": dict(payload)})


async def await_decision(state: ShopState, runtime: Runtime[ShopContext]) -> Command[str]:
    payload = state.get("awaiting") or {}
    assert payload, "await_decision runs only while a question waits"
    agent = str(payload.get("agent") or DEFAULT_AGENT)
    choice, refused = read_answer(interrupt(payload), payload)
    if choice is None:
        said = f"The answer was refused, nothing was decided: {refused}."
        return _ask_again(
            runtime,
            payload,
            "decision_refused",
            {"request_id": payload.get("request_id"), "reason": refused},
            DecisionRefused(agent, said),
        )
    this = turn(runtime.context)
    if problem := _without_authority(this, payload):
        said = f"The answer was refused, nothing was decided: {problem}"
        return _ask_again(
            runtime,
            payload,
            "decision_refused",
            {
                "request_id": payload.get("request_id"),
                "reason": problem,
                "decision": choice,
                **(this.reviewer.audit_detail() if this.reviewer else {}),
            },
            DecisionRefused(agent, said),
        )
    try:
        if payload["kind"] == "refund_approval":
            return await _refund_decided(state, runtime, this, payload, choice)
        return _complaint_decided(state, runtime, this, payload, choice)
    except (GraphBubbleUp, asyncio.CancelledError):
        raise
    except Exception as exc:
        return _not_carried_out(runtime, this, payload, choice, exc)


def _without_authority(this: Turn, payload: Mapping[str, Any]) -> str | None:
    """Why who answers may not decide this question (a refund above their limit)."""
    return this.limits.may_not_decide(payload, this.reviewer.name if this.reviewer else None)


def _record_decision(
    runtime: Runtime[ShopContext],
    this: Turn,
    payload: Mapping[str, Any],
    decision: str,
    **facts: str,
) -> None:
    agent = str(payload.get("agent") or DEFAULT_AGENT)
    detail = {
        "kind": payload["kind"],
        "decision": decision,
        "order_id": payload.get("order_id"),
        "request_id": payload.get("request_id"),
    }
    by = this.reviewer.audit_detail() if this.reviewer is not None else {}
    report(
        runtime,
        decided_by(this, str(payload["kind"]), decision),
        kind="approval_decided",
        agent=agent,
        detail={**detail, **by, **facts},
    )
    # What leaves a person something to do waits in the escalation queue until someone marks
    # it handled: an escalation, and compensation promised to the customer (nothing pays it
    # here). A refund already paid has nothing left to escalate: the answer only closes it.
    what = str(payload["kind"]).replace("_", " ")
    reason = None
    if decision.startswith("escalate") and "already_refunded" not in facts:
        reason = f"{what}: escalated by the reviewer"
    elif decision == "provide_compensation":
        reason = f"{what}: compensation promised within 24 hours"
    if reason is not None:
        report(
            runtime,
            Escalated(agent, reason),
            kind="escalated",
            agent=agent,
            detail={"reason": reason},
        )


async def _refund_decided(
    state: ShopState,
    runtime: Runtime[ShopContext],
    this: Turn,
    payload: Mapping[str, Any],
    decision: str,
) -> Command[str]:
    """What `decision` does: a refund paid once (approve), or the customer told (the rest).
    Raises when it could not be carried out (the ledger cannot be read or written): nothing
    was paid then, and the question is asked again."""
    call = ToolCall(name="process_refund", args={}, id=str(payload["tool_call_id"]))
    agent = str(payload.get("agent") or DEFAULT_AGENT)
    # The decision stands for the rest of the turn: the model cannot ask for it again.
    decisions = {**(state.get("refund_decisions") or {}), str(payload["order_id"]): decision}
    closed = {"awaiting": None, "refund_decisions": decisions, "active_agent": agent}
    paid = await asyncio.to_thread(this.shop.refund_for, str(payload["order_id"]))
    if paid is not None:
        # Paid already: by this node on an earlier run that stopped before the turn was
        # saved, or elsewhere. Money that moved is not undone by a later "reject".
        _record_decision(runtime, this, payload, decision, already_refunded=paid.reference)
        await asyncio.to_thread(this.audit.flush)
        text = (
            f"Order {paid.order_id} has already been refunded (reference {paid.reference}). "
            "Tell the customer; nothing else needs doing."
        )
        return Command(goto=agent, update={"messages": [tool_answer(call, text)], **closed})
    _record_decision(runtime, this, payload, decision)
    if decision != "approve":
        await asyncio.to_thread(this.audit.flush)
        answer = tool_answer(call, REFUND_DECISIONS[decision])
        return Command(goto=agent, update={"messages": [answer], **closed})
    report(runtime, StepChanged(agent=agent, step="calling_tool", detail="process_refund"))
    # What the writer holds goes first: the refund's own event is written with its ledger
    # row (in one transaction), and must not come before the decision that let it through.
    await asyncio.to_thread(this.audit.flush)
    # No stop while money moves, and a cancelled run does not cut it in half: the payment
    # runs to its end in its worker, its event with it, whatever happens to this task.
    with this.unstoppable():
        paying = asyncio.ensure_future(asyncio.to_thread(pay_refund, this, payload))
        try:
            text, outcome = await asyncio.shield(paying)
        except asyncio.CancelledError:
            await paying  # (the ledger's transaction finishes; then the cancellation stands)
            raise
    if outcome.get("created"):
        report(
            runtime,
            RefundPaid(agent, outcome["order_id"], outcome["reference"], outcome["amount"]),
        )
    elif reason := outcome.get("escalate"):
        # "A colleague will review it" is a promise: a person is told, in the queue.
        report(
            runtime,
            Escalated(agent, str(reason)),
            kind="escalated",
            agent=agent,
            detail={"reason": str(reason)},
        )
    # (What it ran on: the refund the person was shown.)
    args = {"order_id": payload["order_id"], "reason": payload["reason"]}
    report(
        runtime,
        kind="tool_called",
        agent=agent,
        detail={"tool": "process_refund", "args": args, "result": text[:500]},
    )
    await asyncio.to_thread(this.audit.flush)
    return Command(goto=agent, update={"messages": [tool_answer(call, text)], **closed})


def _complaint_decided(
    state: ShopState,
    runtime: Runtime[ShopContext],
    this: Turn,
    payload: Mapping[str, Any],
    decision: str,
) -> Command[str]:
    agent = str(payload.get("agent") or DEFAULT_AGENT)
    _record_decision(runtime, this, payload, decision)
    call = ToolCall(name="file_complaint", args={}, id=str(payload["tool_call_id"]))
    text = COMPLAINT_DECISIONS[decision]
    report(runtime, ReplyDone(agent=agent, text=text))
    # Back to first contact, so the next message is not read as a new complaint; not
    # "handled" when a person takes it over or owes the customer compensation.
    reason = COMPLAINT_HANDED_BACK[decision]
    report(
        runtime,
        HandedOff(source=agent, target=DEFAULT_AGENT, reason=reason),
        kind="handoff",
        agent=agent,
        detail={"from": agent, "to": DEFAULT_AGENT, "reason": reason},
    )
    report(runtime, AgentChanged(agent=DEFAULT_AGENT, previous=agent))
    close_turn(runtime, agent=DEFAULT_AGENT, status="done")
    answered = tool_answer(call, f"A person reviewed the complaint and decided: {decision}.")
    return Command(
        goto=END,
        update={
            "messages": [answered, AIMessage(content=text)],
            "awaiting": None,
            "active_agent": DEFAULT_AGENT,
        },
    )


def _not_carried_out(
    runtime: Runtime[ShopContext],
    this: Turn,
    payload: Mapping[str, Any],
    decision: str,
    exc: Exception,
) -> Command[str]:
    """The decision could not be carried out: said to the person who took it, recorded, and
    the same question asked again: answered once the store is usable, it pays exactly once."""
    log.exception("carrying out the %s of %s failed", decision, payload.get("order_id"))
    problem = redact(str(exc)).strip() or type(exc).__name__
    if not problem.endswith("."):
        problem += "."
    what = (
        f"the refund of {payload.get('order_id')}"
        if payload["kind"] == "refund_approval"
        else "the complaint"
    )
    message = (
        f"The decision ({decision}) on {what} could not be carried out and nothing was paid: "
        f"{problem} The decision is pending again."
    )
    storage = isinstance(exc, StorageError | sqlite3.DatabaseError)
    agent = str(payload.get("agent") or DEFAULT_AGENT)
    by = this.reviewer.audit_detail() if this.reviewer is not None else {}
    asked = {**payload, "failed_before": message}
    report(
        runtime,
        RefundNotCarriedOut(agent, str(payload.get("order_id") or ""), decision, message, storage),
        kind="refund_failed",
        agent=agent,
        detail={
            "order_id": payload.get("order_id"),
            "request_id": payload.get("request_id"),
            "decision": decision,
            "error": f"{type(exc).__name__}: {problem}"[:500],
            "outcome": "pending again",
            **by,
        },
    )
    report(runtime, StepChanged(agent=agent, step="waiting_for_approval"))
    report(runtime, kind="approval_requested", agent=agent, detail=_summary(asked))
    pause_for(runtime, asked)
    return Command(goto=AWAIT_DECISION, update={"awaiting": asked})


__all__ = [
    "ASK_DECISION",
    "AWAIT_DECISION",
    "DECISION_WAITS",
    "ask_decision",
    "await_decision",
    "complaint_review_payload",
    "decision_waits",
    "read_answer",
    "refund_approval_payload",
]
