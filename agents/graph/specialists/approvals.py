"""Human decisions: a refund waits for approval, an upset customer's complaint for review.

A node that calls `interrupt()` runs again from its start on resume, so each pause is two
nodes: `request_*` records the request (once), `await_*` pauses and then acts (idempotently).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.messages.tool import ToolCall
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from agents.events import (
    COMPLAINT_OPTIONS,
    REFUND_OPTIONS,
    Escalated,
    RefundNotCarriedOut,
    RefundPaid,
    ReplyDone,
    StepChanged,
)
from agents.graph.context import ShopContext
from agents.graph.history import latest_customer_words, tool_answer
from agents.graph.replies import COMPLAINT_DECISIONS, REFUND_DECISIONS
from agents.graph.reporting import report
from agents.graph.specialists.endings import close_complaint
from agents.graph.specialists.spec import SpecialistSpec
from agents.graph.specialists.tool_runner import run_tool
from agents.graph.state import SpecialistState
from agents.graph.tools.domain import process_refund
from agents.safety.redaction import redact
from agents.store.sqlite import StorageError
from gates import order_ids_meant

log = logging.getLogger("shopbot.engine")

# Interrupt payload entries that are engine bookkeeping or detail, not for the audit summary.
NOT_FOR_REVIEWERS = ("gates", "tool_call_id")


def refund_approval_payload(
    call: ToolCall, validated: dict[str, Any], checks: list[dict[str, Any]], customer: str | None
) -> dict[str, Any]:
    """What the approver sees: the validated refund, never the model's own arguments."""
    return {
        "kind": "refund_approval",
        "message": "Refund approval required",
        "order_id": validated["order_id"],
        "customer": validated.get("customer") or customer,
        "product": validated.get("product"),
        "amount": validated["amount"],
        "reason": validated["reason"],
        "gates": checks,
        "options": list(REFUND_OPTIONS),
        "tool_call_id": call["id"],
    }


def _decide(payload: dict[str, Any]) -> str:
    """Pause until a decision among the payload's options arrives; anything else asks again."""
    decision = interrupt(payload)
    while decision not in payload["options"]:
        decision = interrupt(payload)
    return str(decision)


def _record_request(
    spec: SpecialistSpec, runtime: Runtime[ShopContext], payload: dict[str, Any]
) -> None:
    summary = {k: v for k, v in payload.items() if k not in NOT_FOR_REVIEWERS}
    report(runtime, StepChanged(agent=spec.name, step="waiting_for_approval"))
    report(runtime, kind="approval_requested", agent=spec.name, detail=summary)


def _decided_by(runtime: Runtime[ShopContext]) -> dict[str, str]:
    reviewer = runtime.context.reviewer
    return reviewer.audit_detail() if reviewer is not None else {}


def _record_decision(
    spec: SpecialistSpec,
    runtime: Runtime[ShopContext],
    payload: dict[str, Any],
    decision: str,
    **facts: str,
) -> None:
    detail = {"kind": payload["kind"], "decision": decision, "order_id": payload.get("order_id")}
    report(
        runtime,
        kind="approval_decided",
        agent=spec.name,
        detail={**detail, **_decided_by(runtime), **facts},
    )
    # A refund already paid has nothing left to escalate: the answer only closes the request.
    if decision.startswith("escalate") and "already_refunded" not in facts:
        reason = f"{payload['kind'].replace('_', ' ')}: escalated by the reviewer"
        report(
            runtime,
            Escalated(spec.name, reason),
            kind="escalated",
            agent=spec.name,
            detail={"reason": reason},
        )


async def _decided_before(
    runtime: Runtime[ShopContext], payload: dict[str, Any]
) -> list[dict[str, str]]:
    """Earlier decisions on this refund, for the approver (none when they cannot be read: the
    request is still asked, it only lacks that history)."""
    try:
        return await asyncio.to_thread(runtime.context.decisions_on, payload["order_id"])
    except Exception:
        log.exception("reading earlier decisions on %s failed", payload["order_id"])
        return []


def make_request_approval(spec: SpecialistSpec) -> Any:
    async def request_approval(
        state: SpecialistState, runtime: Runtime[ShopContext]
    ) -> dict[str, Any]:
        payload = state.get("approval")
        assert payload is not None, "request_approval runs only after a refund was staged"
        payload = {**payload, "decided_before": await _decided_before(runtime, payload)}
        _record_request(spec, runtime, payload)
        return {"approval": payload}

    return request_approval


def make_await_approval(spec: SpecialistSpec) -> Any:
    async def await_approval(state: SpecialistState, runtime: Runtime[ShopContext]) -> Command[str]:
        payload = state.get("approval")
        assert payload is not None
        decision = _decide(payload)
        try:
            update = await _apply_refund_decision(spec, state, runtime, payload, decision)
        except (GraphBubbleUp, asyncio.CancelledError):
            raise
        except Exception as exc:
            # Not guidance for the model ("a colleague will follow up": nobody would), and
            # not an exception out of this node either: LangGraph keeps a failed node's
            # resume value, and the next answer, whatever it said, would be read as this
            # one. The question is asked again, as a new interrupt, with what went wrong.
            return _ask_again_after_failure(spec, runtime, payload, decision, exc)
        return Command(goto="respond", update=update)

    return await_approval


async def _apply_refund_decision(
    spec: SpecialistSpec,
    state: SpecialistState,
    runtime: Runtime[ShopContext],
    payload: dict[str, Any],
    decision: str,
) -> dict[str, Any]:
    """What `decision` does: a refund paid once (approve), or the customer told (the rest).
    Raises when the decision could not be carried out (the ledger cannot be read or written):
    nothing was paid then, and the question is asked again."""
    call = ToolCall(name="process_refund", args={}, id=payload["tool_call_id"])
    # The decision stands for the rest of the run: the model cannot ask for it again.
    decisions = {**(state.get("refund_decisions") or {}), payload["order_id"]: decision}
    closed = {"approval": None, "refund_decisions": decisions}
    audit = runtime.context.audit
    paid = runtime.context.shop.refund_for(payload["order_id"])
    if paid is not None:
        # Paid already: by this node on an earlier run that stopped before the turn was
        # saved, or elsewhere. Money that moved is not undone by a later "reject".
        _record_decision(spec, runtime, payload, decision, already_refunded=paid.reference)
        audit.flush()
        text = (
            f"Order {paid.order_id} has already been refunded (reference "
            f"{paid.reference}). Tell the customer; nothing else needs doing."
        )
        return {"messages": [tool_answer(call, text)], **closed}
    _record_decision(spec, runtime, payload, decision)
    if decision != "approve":
        audit.flush()
        return {"messages": [tool_answer(call, REFUND_DECISIONS[decision])], **closed}
    # The refund runs on the validated payload, never on the model's arguments.
    args = {"order_id": payload["order_id"], "reason": payload["reason"]}
    # The refund runs in a worker thread: a stop landing while it runs would leave the
    # money paid and its record unwritten. So no stop until both are done.
    with runtime.context.unstoppable():
        # (Failures raise: a payment that did not happen is never a tool answer.)
        answer = await run_tool(spec.name, process_refund, call, args, state, runtime, strict=True)
        outcome = answer.artifact if isinstance(answer.artifact, dict) else {}
        if outcome.get("created"):
            paid_now = RefundPaid(
                spec.name, outcome["order_id"], outcome["reference"], outcome["amount"]
            )
            # (Who approved it, beside the payment: one event answers "who let this through".)
            detail = {**outcome, **_decided_by(runtime)}
            report(runtime, paid_now, kind="refund_processed", agent=spec.name, detail=detail)
        elif reason := outcome.get("escalate"):
            # "A colleague will review it" is a promise: a person is told, in the queue.
            report(
                runtime,
                Escalated(spec.name, str(reason)),
                kind="escalated",
                agent=spec.name,
                detail={"reason": str(reason)},
            )
        # Events about money are handed to the audit log's writer (and, unless the log
        # cannot take them now, stored) before the turn moves on.
        audit.flush()
    return {"messages": [answer], **closed}


def _ask_again_after_failure(
    spec: SpecialistSpec,
    runtime: Runtime[ShopContext],
    payload: dict[str, Any],
    decision: str,
    exc: Exception,
) -> Command[str]:
    """The decision could not be carried out: said to the person who took it, recorded, and
    the same question asked again (this node, a new interrupt): answered once the store is
    usable, it pays exactly once."""
    log.exception("carrying out the %s of %s failed", decision, payload["order_id"])
    problem = redact(str(exc)).strip() or type(exc).__name__
    if not problem.endswith("."):
        problem += "."
    message = (
        f"The decision ({decision}) on the refund of {payload['order_id']} could not be "
        f"carried out and nothing was paid: {problem} The decision is pending again."
    )
    storage = isinstance(exc, StorageError | sqlite3.DatabaseError)
    report(
        runtime,
        RefundNotCarriedOut(spec.name, payload["order_id"], decision, message, storage),
        kind="refund_failed",
        agent=spec.name,
        detail={
            "order_id": payload["order_id"],
            "decision": decision,
            "error": f"{type(exc).__name__}: {problem}"[:500],
            "outcome": "pending again",
            **_decided_by(runtime),
        },
    )
    asked = {**payload, "failed_before": message}
    _record_request(spec, runtime, asked)
    return Command(goto="await_approval", update={"approval": asked})


def complaint_order(state: SpecialistState) -> str | None:
    """The order a complaint is about, for its reviewer: the one the conversation is on, or
    else the first the complaint names (as written, not looked up: only a person reads it)."""
    named = order_ids_meant(latest_customer_words(state["messages"]))
    return state.get("order_id") or (named[0] if named else None)


def complaint_review_payload(state: SpecialistState, customer: str | None) -> dict[str, Any]:
    validated = state.get("validated") or {}
    return {
        "kind": "complaint_review",
        "message": "An angry or frustrated customer: a person reviews the complaint",
        "issue_summary": validated.get("issue_summary", ""),
        "sentiment": validated.get("sentiment", ""),
        "customer": customer,
        "order_id": complaint_order(state),
        "gates": state.get("gate_checks", []),
        "options": list(COMPLAINT_OPTIONS),
    }


def make_request_review(spec: SpecialistSpec) -> Any:
    async def request_review(
        state: SpecialistState, runtime: Runtime[ShopContext]
    ) -> dict[str, Any]:
        payload = complaint_review_payload(state, runtime.context.customer)
        _record_request(spec, runtime, payload)
        return {"approval": payload}

    return request_review


def make_await_review(spec: SpecialistSpec) -> Any:
    async def await_review(state: SpecialistState, runtime: Runtime[ShopContext]) -> dict[str, Any]:
        payload = state.get("approval")
        assert payload is not None
        decision = _decide(payload)
        _record_decision(spec, runtime, payload, decision)
        text = COMPLAINT_DECISIONS[decision]
        report(runtime, ReplyDone(agent=spec.name, text=text))
        # (Not "handled" after an escalation: a person takes it over.)
        escalated = decision.startswith("escalate")
        reason = "complaint passed on" if escalated else "complaint handled"
        closed = close_complaint(runtime, spec.name, reason)
        return {"messages": [AIMessage(content=text)], "approval": None, **closed}

    return await_review
