"""Authority gate: may this person decide this refund?

A refund request is decided (approved or rejected) only by someone whose refund limit covers
its amount. Everyone has the standard limit, the auto-refund limit; a shop's reviewers file
names the few with more (or less).
"""

from __future__ import annotations

from decimal import Decimal

from gates.rules import AUTO_REFUND_LIMIT


def needs_senior(amount: Decimal) -> bool:
    """Whether a refund of `amount` is above what anyone decides by default."""
    return amount > AUTO_REFUND_LIMIT


def authority_problem(amount: Decimal, reviewer: str, limit: Decimal) -> str | None:
    """None when `reviewer`, whose refund limit is `limit`, may decide a refund of `amount`;
    else why not, in one sentence for that person."""
    if amount <= limit:
        return None
    return (
        f"A refund of ${amount:.2f} is decided by a reviewer whose refund limit covers it; "
        f"{reviewer}'s limit is ${limit:.2f}."
    )
