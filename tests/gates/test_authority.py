"""The authority gate and the refund gate's limit: who may decide a refund above the
auto-refund limit, and when such a refund is escalated instead."""

from __future__ import annotations

from decimal import Decimal

from gates import AUTO_REFUND_LIMIT, authority_problem, needs_senior, validate_refund_request

MONITOR = {"status": "Delivered", "amount": 649.00}
ASKED = {"order_id": "ORD-004", "reason": "The monitor arrived with dead pixels"}


def test_a_limit_that_covers_the_amount_lets_its_reviewer_decide() -> None:
    assert authority_problem(Decimal("649.00"), "dana", Decimal("2000.00")) is None
    assert authority_problem(Decimal("500.00"), "sam", AUTO_REFUND_LIMIT) is None


def test_a_limit_below_the_amount_says_whose_and_how_much() -> None:
    problem = authority_problem(Decimal("649.00"), "sam", AUTO_REFUND_LIMIT)
    assert problem is not None
    assert "$649.00" in problem and "sam's limit is $500.00" in problem


def test_only_an_amount_above_the_auto_refund_limit_needs_a_senior() -> None:
    assert not needs_senior(AUTO_REFUND_LIMIT)
    assert needs_senior(AUTO_REFUND_LIMIT + Decimal("0.01"))


def test_without_a_senior_a_refund_over_the_limit_is_escalated_as_always() -> None:
    ok, error = validate_refund_request(ASKED, MONITOR)
    assert not ok
    assert "refund.over_limit" in error.codes and "auto-refund limit of $500.00" in error


def test_with_a_senior_whose_limit_covers_it_the_refund_passes_for_their_decision() -> None:
    ok, cleaned = validate_refund_request(ASKED, MONITOR, Decimal("2000.00"))
    assert ok
    assert cleaned["amount"] == "649.00" and cleaned["order_id"] == "ORD-004"


def test_above_every_reviewers_limit_the_refund_is_escalated_and_says_so() -> None:
    ok, error = validate_refund_request(ASKED, MONITOR, Decimal("600.00"))
    assert not ok
    assert "refund.over_limit" in error.codes and "at most $600.00" in error
