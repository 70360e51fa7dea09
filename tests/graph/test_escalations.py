"""Escalated conversations wait for a person until one says they are handled, with their name
in the audit log; the queue outlives the process and is shared by every front."""

from __future__ import annotations

from pathlib import Path

from agents.backend import Escalation, Reviewer
from agents.events import COMPLAINT_OPTIONS
from agents.graph.replies import COMPLAINT_DECISIONS, COMPLAINT_HANDED_BACK
from agents.runner.engine import ShopBotEngine
from agents.store.threads import ThreadRegistry
from tests.support.engine import audit_of, decide, kinds, open_engine, say
from tests.support.failing_models import MisreadingDemoModel


def open_escalation(engine: ShopBotEngine, thread_id: str) -> Escalation | None:
    return next((e for e in engine.escalations() if e.thread_id == thread_id), None)


OVER_LIMIT = "Refund ORD-004 please, the monitor has dead pixels"
ANGRY = "This is unacceptable! My parcel is two weeks late and nobody answers my emails!!!"
# Jordan's order, which this model reads as ORD-999 however often it is corrected.
MISREAD = "Where is ORD-003?"


def misreading() -> MisreadingDemoModel:
    return MisreadingDemoModel(misread={"ORD-003": "ORD-999"})


async def test_an_escalation_waits_for_a_person_and_closing_it_names_them(tmp_path: Path) -> None:
    async with open_engine(tmp_path, model=misreading()) as engine:
        await say(engine, "calm", "Where is my order ORD-002?", "Sam")
        await say(engine, "big", OVER_LIMIT, "Alex")
        await say(engine, "typo", MISREAD, "Jordan")  # still misread after corrections
        assert open_escalation(engine, "calm") is None
        queue = engine.escalations()
        assert [(e.thread_id, e.reason) for e in queue] == [
            ("big", "refund above the auto-refund limit"),
            ("typo", "gate still failing after corrections"),
        ]
        assert queue[0].agent == "refund_agent" and queue[0].since < queue[1].since

        closed = engine.close_escalation("big", Reviewer("dana", "app"))
        assert closed == queue[0]
        assert [e.thread_id for e in engine.escalations()] == ["typo"]
        event = audit_of(engine, "big")[-1]
        assert event.kind == "escalation_closed"
        assert event.detail == {
            "reason": "refund above the auto-refund limit",
            "since": queue[0].since,
            "decided_by": "dana",
            "via": "app",
        }
        # Closed already (say, by another window): nothing closes twice, nothing is recorded.
        assert engine.close_escalation("big", Reviewer("sam", "app")) is None
        assert kinds(audit_of(engine, "big")).count("escalation_closed") == 1


async def test_escalated_again_before_it_is_handled_keeps_its_first_time(tmp_path: Path) -> None:
    async with open_engine(tmp_path, model=misreading()) as engine:
        await say(engine, "big", OVER_LIMIT, "Alex")
        first = open_escalation(engine, "big")
        assert first is not None
        await say(engine, "big", MISREAD)
        again = open_escalation(engine, "big")
        assert again is not None
        assert again.since == first.since
        assert again.reason == "gate still failing after corrections"
        assert len(engine.escalations()) == 1


async def test_a_reviewer_escalating_or_promising_compensation_queues_it_and_no_other_answer(
    tmp_path: Path,
) -> None:
    async with open_engine(tmp_path) as engine:
        await say(engine, "angry", ANGRY, "Jordan")
        await decide(engine, "angry", "escalate_to_senior")
        await say(engine, "refund", "I want a refund for ORD-005, the speaker crackles", "Sam")
        await decide(engine, "refund", "reject")
        await say(engine, "closed", ANGRY, "Jordan")
        await decide(engine, "closed", "close_ticket")
        await say(engine, "owed", ANGRY, "Jordan")
        await decide(engine, "owed", "provide_compensation")
        assert [e.thread_id for e in engine.escalations()] == ["angry", "owed"]
        escalation = open_escalation(engine, "angry")
        assert escalation is not None and "escalated by the reviewer" in escalation.reason
        owed = open_escalation(engine, "owed")
        assert owed is not None and "compensation promised" in owed.reason


def test_every_answer_to_a_complaint_has_its_words_and_its_note() -> None:
    """A missing one would fail after the decision was recorded, and ask it again."""
    assert set(COMPLAINT_DECISIONS) == set(COMPLAINT_HANDED_BACK) == set(COMPLAINT_OPTIONS)


async def test_the_queue_outlives_the_process(tmp_path: Path) -> None:
    async with open_engine(tmp_path) as engine:
        await say(engine, "big", OVER_LIMIT, "Alex")
    async with open_engine(tmp_path) as engine:
        assert [e.thread_id for e in engine.escalations()] == ["big"]
    # A registry made before escalations were kept gains the table when it is opened.
    with ThreadRegistry(tmp_path / "shopbot.sqlite") as registry:
        registry._conn.execute("DROP TABLE escalations")
    with ThreadRegistry(tmp_path / "shopbot.sqlite") as registry:
        assert registry.escalations() == []
        registry.escalate("big", agent=None, reason="key sk-abcdefghijklmnopqrstuvwxyz123456")
        stored = next(iter(registry.escalations()), None)
        assert stored is not None and "sk-abcdefghijklmnop" not in stored.reason
