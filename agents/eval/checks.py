"""Whether a conversation ended as its flow expects: each step's reply and what waits after
it, then the shop's state at the end (refunds paid, escalation, what is pending, who answers)
and the facts the last reply must hold. Each failure is one line saying what differed."""

from __future__ import annotations

from agents.eval.flow import Flow
from agents.eval.observed import Observed, holds


def _reply_failures(
    where: str, reply: str, contains: tuple[str, ...], lacks: tuple[str, ...]
) -> list[str]:
    missing = [fact for fact in contains if not holds(reply, fact)]
    shown = [fact for fact in lacks if holds(reply, fact)]
    return [f"{where}: the reply lacks {fact!r}" for fact in missing] + [
        f"{where}: the reply shows {fact!r}" for fact in shown
    ]


def expectation_failures(flow: Flow, seen: Observed) -> list[str]:
    """What differs from the flow's expectations (empty: the conversation passed them)."""
    failures: list[str] = []
    for expected, record in zip(flow.turns, seen.turns, strict=False):
        where = f"turn {record.step}"
        failures += _reply_failures(
            where, record.reply, expected.reply_contains, expected.reply_lacks
        )
        if expected.pending is not None and record.pending != expected.pending:
            failures.append(
                f"{where}: {_waits(record.pending)}, expected {_waits(expected.pending)}"
            )
    if seen.stopped is not None:
        # What the end would say is beside the point: the script never reached it.
        return [*failures, seen.stopped]
    end = flow.expect
    paid = tuple(sorted({refund.order_id for refund in seen.refunds}))
    if paid != end.refunds:
        failures.append(f"end: refunds paid {_orders(paid)}, expected {_orders(end.refunds)}")
    if seen.escalated != end.escalated:
        said = "escalated to a person" if seen.escalated else "not escalated"
        failures.append(f"end: {said}, expected {'' if end.escalated else 'not '}escalated")
    if seen.pending != end.pending:
        failures.append(f"end: {_waits(seen.pending)}, expected {_waits(end.pending)}")
    if end.agent is not None and seen.agent != end.agent:
        failures.append(f"end: {seen.agent or 'no agent'} answers, expected {end.agent}")
    failures += _reply_failures("end", seen.last_reply, end.reply_contains, end.reply_lacks)
    return failures


def _waits(pending: str) -> str:
    return "nothing pending" if pending == "none" else f"{pending.replace('_', ' ')} pending"


def _orders(order_ids: tuple[str, ...]) -> str:
    return ", ".join(order_ids) if order_ids else "none"
