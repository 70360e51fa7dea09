"""How the offline demo model reads a customer's mood."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.offline.reading import sentiment_of
from tests.engine_support import audit_of, kinds, open_engine, say


@pytest.mark.parametrize(
    ("text", "sentiment"),
    [
        # Order ids and codes are written in capitals; they are not shouting.
        ("Where is ORD-003? I am disappointed, ORD-006 arrived dented.", "disappointed"),
        ("ORD-001 ORD-002 ORD-0O3 ord 4 and ORD 5 please", "neutral"),
        ("My tracking codes are UPS-7781X and DHL-0042", "neutral"),
        ("I'm frustrated: ORD-004 and ORD-007 are still missing", "frustrated"),
        # Capitals that are words still are.
        ("WHERE IS THE parcel? ORD-003 is late", "angry"),
        ("I am FED-UP with WAITING", "angry"),
        ("Really!!! Where is it", "angry"),
        ("USB hub is OK", "neutral"),  # one capitalised word is not shouting
    ],
)
def test_sentiment(text: str, sentiment: str) -> None:
    assert sentiment_of(text) == sentiment


async def test_a_calm_complaint_after_an_order_question_is_not_angry(tmp_path: Path) -> None:
    async with open_engine(tmp_path) as engine:
        await say(engine, "calm", "Where is my order ORD-003?", "Jordan")
        turn = await say(
            engine, "calm", "I am disappointed, ORD-006 arrived with a dented box.", "Jordan"
        )
        # A calm complaint is answered, not held for a review as an angry one would be.
        assert turn.result.status == "done"
        assert "approval_requested" not in kinds(audit_of(engine, "calm"))
        escalations = [e for e in audit_of(engine, "calm") if e.kind == "escalated"]
        assert all(e.detail.get("sentiment") != "angry" for e in escalations)
