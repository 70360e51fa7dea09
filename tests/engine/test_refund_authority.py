"""A refund above the auto-refund limit waits for a reviewer whose refund limit covers it
(the home's reviewers.toml): such a reviewer approves (paid once) or rejects it; anyone else
is refused, saying why, and it stays pending; every decision names its reviewer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command

from agents.errors import ConfigurationError, NotAuthorised
from agents.graph.context import ShopContext
from agents.graph.services import REVIEWER_KEY, SERVICES_KEY
from agents.reviewer import Reviewer
from agents.runner.engine import ShopBotEngine
from tests.support.engine import audit_of, kinds, open_engine, say

OVER_LIMIT = "Refund ORD-004 please, the monitor has dead pixels"
DANA = Reviewer("dana", "app")
SAM = Reviewer("sam", "app")


def reviewers_file(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "reviewers.toml").write_text(text, encoding="utf-8")


async def resume_as(engine: ShopBotEngine, thread: str, decision: str, who: Reviewer) -> list[Any]:
    return [event async for event in engine.resume(thread, decision, reviewer=who)]


async def test_without_a_reviewers_file_a_refund_over_the_limit_is_escalated(
    tmp_path: Path,
) -> None:
    async with open_engine(tmp_path) as engine:
        await say(engine, "big", OVER_LIMIT, "Alex")
        assert await engine.pending_approval("big") is None
        assert [e.reason for e in engine.escalations()] == ["refund above the auto-refund limit"]


async def test_a_senior_reviewer_approves_a_refund_over_the_limit_and_it_is_paid_once(
    tmp_path: Path,
) -> None:
    reviewers_file(tmp_path, '[reviewers]\ndana = "2000.00"\n')
    async with open_engine(tmp_path) as engine:
        await say(engine, "big", OVER_LIMIT, "Alex")
        pending = await engine.pending_approval("big")
        assert pending is not None and pending.kind == "refund_approval"
        assert pending.payload["order_id"] == "ORD-004"
        assert pending.payload["needs_limit"] == "649.00"
        assert engine.escalations() == []  # it waits for a decision, not in the dead end
        assert engine.may_not_decide(pending, SAM) is not None
        assert engine.may_not_decide(pending, DANA) is None

        await resume_as(engine, "big", "approve", DANA)
        assert await engine.pending_approval("big") is None
        paid = engine.shop.refund_for("ORD-004")
        assert paid is not None and str(paid.amount) == "649.00"
        assert len(engine.shop.refunds()) == 1
        decided = [e for e in audit_of(engine, "big") if e.kind == "approval_decided"]
        assert [(e.detail["decision"], e.detail["decided_by"]) for e in decided] == [
            ("approve", "dana")
        ]


async def test_someone_whose_limit_does_not_cover_it_is_refused_and_it_stays_pending(
    tmp_path: Path,
) -> None:
    reviewers_file(tmp_path, '[reviewers]\ndana = "2000.00"\n')
    async with open_engine(tmp_path) as engine:
        await say(engine, "big", OVER_LIMIT, "Alex")
        with pytest.raises(NotAuthorised) as refused:
            await resume_as(engine, "big", "approve", SAM)
        assert "sam's limit is $500.00" in str(refused.value)
        assert "Nothing was decided" in str(refused.value)
        with pytest.raises(NotAuthorised):
            await resume_as(engine, "big", "reject", SAM)
        assert engine.shop.refunds() == []
        pending = await engine.pending_approval("big")
        assert pending is not None and pending.payload["order_id"] == "ORD-004"
        # Both tries are in the audit log, with who made them and why they were refused.
        refused_tries = [e.detail for e in audit_of(engine, "big") if e.kind == "decision_refused"]
        assert sorted(d["decision"] for d in refused_tries) == ["approve", "reject"]
        for detail in refused_tries:
            assert (detail["decided_by"], detail["checked"]) == ("sam", "before the run")
            assert "sam's limit is $500.00" in detail["reason"]

        # The one who can still decides it: rejected, the customer is told, nothing paid.
        events = await resume_as(engine, "big", "reject", DANA)
        assert engine.shop.refunds() == []
        assert await engine.pending_approval("big") is None
        assert events  # the turn carried on to its reply
        assert "approval_decided" in kinds(audit_of(engine, "big"))


async def test_the_graph_itself_refuses_a_decision_above_the_reviewers_limit(
    tmp_path: Path,
) -> None:
    """Whatever front resumes the run (a server's client, a runner without the check), the
    graph does not let a reviewer decide above their limit: refused, said, still pending."""
    reviewers_file(tmp_path, '[reviewers]\ndana = "2000.00"\n')
    async with open_engine(tmp_path) as engine:
        await say(engine, "big", OVER_LIMIT, "Alex")
        pending = await engine.pending_approval("big")
        assert pending is not None
        config: dict[str, Any] = {
            "configurable": {
                "thread_id": "big",
                SERVICES_KEY: engine._services,
                REVIEWER_KEY: SAM,
            }
        }
        streamed = [
            wired
            async for _ns, wired in engine.graph.astream(
                Command(resume={"decision": "approve", "request_id": pending.request_id}),
                config,
                context=ShopContext(customer="Alex"),
                stream_mode="custom",
                subgraphs=True,
            )
        ]
        assert any(w.get("type") == "decision_refused" for w in streamed), streamed
        await engine._recorder.aflush()
        assert engine.shop.refunds() == []
        again = await engine.pending_approval("big")
        assert again is not None and again.request_id == pending.request_id
        refused = [e for e in audit_of(engine, "big") if e.kind == "decision_refused"]
        assert refused and refused[-1].detail["decided_by"] == "sam"
        assert "sam's limit is $500.00" in refused[-1].detail["reason"]


async def test_a_refund_above_every_reviewers_limit_is_escalated(tmp_path: Path) -> None:
    reviewers_file(tmp_path, '[reviewers]\ndana = "600.00"\n')
    async with open_engine(tmp_path) as engine:
        await say(engine, "big", OVER_LIMIT, "Alex")
        assert await engine.pending_approval("big") is None
        assert [e.thread_id for e in engine.escalations()] == ["big"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[reviewers\n", "is not valid TOML"),
        ('[reviewers]\ndana = "lots"\n', "must be an amount"),
        ('[reviewers]\ndana = "-5"\n', "from 0 to"),
        ("[reviewers]\ndana = true\n", "must be an amount"),
        ('limit = "9"\n', "holds only a [reviewers] table"),
    ],
)
async def test_a_reviewers_file_that_cannot_be_used_is_named_before_anything_opens(
    tmp_path: Path, text: str, said: str
) -> None:
    reviewers_file(tmp_path, text)
    with pytest.raises(ConfigurationError) as refused:
        async with open_engine(tmp_path):
            pass
    assert str(tmp_path / "reviewers.toml") in str(refused.value) and said in str(refused.value)
    assert not (tmp_path / "shopbot.sqlite").exists()
