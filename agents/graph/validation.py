"""Each specialist's chain of gates over what the model extracted, fed from the shop's records."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from agents.graph.services import Turn
from gates import (
    GateError,
    GateResult,
    Remedy,
    clean_query_type,
    needs_senior,
    validate_complaint,
    validate_customer_known,
    validate_order_id,
    validate_ownership,
    validate_refund_request,
)

# A failed verdict's fact: the customer's own order it was about (see `_Chain.fail`).
ABOUT_ORDER = "about_order"


@dataclass(frozen=True)
class GateCheck:
    """One gate's verdict, as the audit log and the approval payload show it."""

    gate: str
    ok: bool
    detail: str
    codes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"gate": self.gate, "ok": self.ok, "detail": self.detail, "codes": list(self.codes)}


@dataclass(frozen=True)
class GateVerdict:
    """The chain's outcome: cleaned data when every gate passed, else the first failure."""

    checks: tuple[GateCheck, ...]
    cleaned: dict[str, Any] | None = None
    error: GateError | None = None
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        """Plain data, as a tool's artifact carries it to the node that acts on it."""
        error = self.error
        return {
            "checks": [check.to_json() for check in self.checks],
            "cleaned": self.cleaned,
            "facts": self.facts,
            "error": None
            if error is None
            else {"text": str(error), "remedy": int(error.remedy), "codes": list(error.codes)},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GateVerdict:
        checks = tuple(
            GateCheck(c["gate"], bool(c["ok"]), str(c["detail"]), tuple(c.get("codes", ())))
            for c in data.get("checks", ())
        )
        wrong = data.get("error")
        error = (
            None
            if not wrong
            else GateError(str(wrong["text"]), Remedy(int(wrong["remedy"])), tuple(wrong["codes"]))
        )
        return cls(checks, data.get("cleaned"), error, dict(data.get("facts") or {}))


class _Chain:
    """Runs gates in order, stopping at the first that fails."""

    def __init__(self) -> None:
        self.checks: list[GateCheck] = []

    def run(self, gate: str, result: GateResult, passed_detail: str) -> dict[str, Any] | GateError:
        ok, value = result
        if ok and isinstance(value, dict):
            self.checks.append(GateCheck(gate, True, passed_detail))
            return value
        assert isinstance(value, GateError)
        self.checks.append(GateCheck(gate, False, str(value), value.codes))
        return value

    def fail(self, error: GateError, *, about: str | None = None) -> GateVerdict:
        """The failure; `about`: the customer's own order it concerns, when the order gates
        passed before a later gate failed (the conversation is on that order now)."""
        return GateVerdict(
            tuple(self.checks), error=error, facts={ABOUT_ORDER: about} if about else {}
        )

    def succeed(self, cleaned: dict[str, Any], **facts: Any) -> GateVerdict:
        return GateVerdict(tuple(self.checks), cleaned=cleaned, facts=facts)


def _order_gates(
    chain: _Chain,
    extracted: Mapping[str, Any],
    context: Turn,
    said: str,
    *,
    moves_money: bool = False,
) -> dict[str, Any] | GateError:
    """The order id, then whose it is. `moves_money`: only for a known customer who owns it;
    otherwise a conversation without a customer may look orders up (and no ownership check
    is listed: one that did not run must not read as passed)."""
    shop = context.shop
    found = chain.run(
        "order_id",
        validate_order_id(extracted, shop.known_ids(), said),
        f"order id {extracted.get('order_id')!r} is well-formed and exists",
    )
    if isinstance(found, GateError):
        return found
    if not context.customer:
        if not moves_money:
            return found
        unknown = chain.run("ownership", validate_customer_known(context.customer), "")
        assert isinstance(unknown, GateError)
        return unknown
    order = shop.get_order(found["order_id"])
    owned, error = validate_ownership(
        found["order_id"], order.customer if order else None, context.customer, said
    )
    if not owned:
        assert isinstance(error, GateError)
        # Reported exactly as a missing order, under the same gate: a customer (or the
        # screen behind their shoulder) must not learn that someone else's order exists.
        # Only the audit code says "not owned".
        chain.checks[-1] = GateCheck("order_id", False, str(error), error.codes)
        return error
    chain.checks.append(GateCheck("ownership", True, "order belongs to the customer"))
    return found


def with_check(
    verdict: GateVerdict, gate: str, result: GateResult, passed_detail: str
) -> GateVerdict:
    """`verdict` with one more gate after it (its cleaned data kept when that one passes); a
    failed verdict stays as it failed."""
    if not verdict.ok:
        return verdict
    ok, value = result
    if ok:
        check = GateCheck(gate, True, passed_detail)
        return GateVerdict((*verdict.checks, check), verdict.cleaned, None, verdict.facts)
    assert isinstance(value, GateError)
    check = GateCheck(gate, False, str(value), value.codes)
    return GateVerdict((*verdict.checks, check), None, value, verdict.facts)


def check_order_request(extracted: Mapping[str, Any], context: Turn, said: str = "") -> GateVerdict:
    """Order agent: a real order id that belongs to this customer (`said`: the customer's
    own words, see `validate_order_id`)."""
    chain = _Chain()
    found = _order_gates(chain, extracted, context, said)
    if isinstance(found, GateError):
        return chain.fail(found)
    return chain.succeed(
        {"order_id": found["order_id"], "query_type": clean_query_type(found.get("query_type"))}
    )


def check_refund_request(
    extracted: Mapping[str, Any], context: Turn, said: str = ""
) -> GateVerdict:
    """Refund agent: the order gates, then the refund rules (delivered, limit, reason)."""
    chain = _Chain()
    found = _order_gates(chain, extracted, context, said, moves_money=True)
    if isinstance(found, GateError):
        return chain.fail(found)
    order = context.shop.get_order(found["order_id"])
    record = order.as_record() if order else None
    senior = needs_senior(Decimal(order.amount)) if order else False
    refund = chain.run(
        "refund",
        validate_refund_request(found, record, context.limits.highest),
        "delivered, above the auto-refund limit: a reviewer whose limit covers it decides, "
        "reason given"
        if senior
        else "delivered, within the auto-refund limit, reason given",
    )
    if isinstance(refund, GateError):
        return chain.fail(refund, about=found["order_id"])
    assert order is not None
    return chain.succeed(
        {"order_id": refund["order_id"], "reason": refund["reason"], "amount": refund["amount"]},
        product=order.product,
        customer=order.customer,
    )


def check_complaint(extracted: Mapping[str, Any], context: Turn, said: str = "") -> GateVerdict:
    """Complaints agent: a summary with substance and a known sentiment."""
    del said  # a complaint names no order the gates look up
    chain = _Chain()
    result = chain.run(
        "complaint", validate_complaint(extracted), "summary is specific, sentiment is known"
    )
    if isinstance(result, GateError):
        return chain.fail(result)
    return chain.succeed(
        {"issue_summary": result["issue_summary"], "sentiment": result["sentiment"]}
    )


# (what the model extracted, the run's context, what the customer wrote) -> the verdict
GateChain = Callable[[Mapping[str, Any], Turn, str], GateVerdict]
