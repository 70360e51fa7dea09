"""What a newcomer naturally types, through the real engine with the offline demo model.

Each case is one conversation: the earlier messages set the scene, the last one is judged
on the substance of its reply and on which tools ran (a tool where none should run is as
wrong as a wrong answer).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from gates import AUTO_REFUND_LIMIT
from tests.support.engine import audit_of, decide, kinds, open_engine, say, tools_run


@dataclass(frozen=True)
class Case:
    name: str
    customer: str | None
    said: tuple[str, ...]
    # Every one of these is in the last reply (case-insensitive); none of `absent` is.
    present: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    # The tools the last message ran, with their arguments: () when none should run.
    tools: tuple[tuple[str, str], ...] = ()
    agent: str | None = None


NOT_ON_ACCOUNT = "couldn't find"
CASES = (
    Case(
        "a policy question after a refused order is answered, not looked up again",
        "Jordan",
        ("I want my money back for order ord-002", "what is your return policy?"),
        present=("delivered", f"${AUTO_REFUND_LIMIT:.2f}", "approves", "senior colleague"),
        absent=(NOT_ON_ACCOUNT, "ORD-002"),
    ),
    Case(
        "a refused order is named back as the customer wrote it, and nothing more",
        "Jordan",
        ("I want my money back for order ord-002",),
        present=("ORD-002", NOT_ON_ACCOUNT, "double-check"),
        absent=("Phone Case", "In Transit", "Sam"),
    ),
    Case(
        "a refused order is not asked about again by a later bare request",
        "Jordan",
        ("I want my money back for order ord-002", "refund"),
        present=("order number",),
        absent=(NOT_ON_ACCOUNT,),
    ),
    Case(
        "cancelling: said plainly it cannot, with the status and what it can do",
        "Jordan",
        (
            "I want my money back for order ord-002",
            "what is your return policy?",
            "can I cancel ORD-003?",
        ),
        present=("can't cancel", "Processing", "refund", "complaint"),
        tools=(("lookup_order", "ORD-003"),),
        agent="order_agent",
    ),
    Case(
        "cancelling an order cancelled already says so, and offers no refund once delivered",
        "Alex",
        ("Can I cancel ORD-007?",),
        present=("can't cancel", "Cancelled", "already been cancelled"),
        absent=("Once it is delivered",),
        tools=(("lookup_order", "ORD-007"),),
    ),
    Case(
        "cancelling a delivered order offers the refund straight away",
        "Alex",
        ("please cancel ORD-001",),
        present=("can't cancel", "Delivered", "already been delivered", "refund"),
        tools=(("lookup_order", "ORD-001"),),
    ),
    Case(
        "cancelling without a number asks for it, and pretends nothing",
        "Jordan",
        ("I want to cancel my order",),
        present=("can't cancel", "order number"),
    ),
    Case(
        "cancel it: the order the conversation is about",
        "Jordan",
        ("where is ORD-003?", "can I cancel it?"),
        present=("can't cancel", "Processing"),
        tools=(("lookup_order", "ORD-003"),),
    ),
    Case(
        "a product with no order number asks for the number (no tool lists orders)",
        "Jordan",
        ("where's my laptop stand",),
        present=("order number",),
    ),
    Case(
        "no after anything-else closes, without looking anything up",
        "Jordan",
        ("ORD-003", "thanks", "no"),
        present=("all right",),
        absent=("Laptop Stand",),
    ),
    Case(
        "ok after an answer is not a new request",
        "Alex",
        ("where is ORD-001?", "ok"),
        present=("anything else",),
        absent=("Wireless Headphones",),
    ),
    Case(
        "yes after the policy answer asks for the order number",
        "Alex",
        ("how do returns work?", "yes"),
        present=("order number",),
    ),
    Case(
        "a greeting mid-conversation is a greeting",
        "Jordan",
        ("where is ORD-003?", "hello again"),
        present=("Hello Jordan",),
    ),
    Case(
        "an order id alone is looked up",
        "Jordan",
        ("ORD-003",),
        present=("Processing",),
        tools=(("lookup_order", "ORD-003"),),
    ),
    Case(
        "ord 003",
        "Jordan",
        ("ord 003",),
        present=("Processing",),
        tools=(("lookup_order", "ORD-003"),),
    ),
    Case(
        "ORD003",
        "Jordan",
        ("ORD003",),
        present=("Processing",),
        tools=(("lookup_order", "ORD-003"),),
    ),
    Case(
        "order #3 (read again by the correction loop)",
        "Jordan",
        ("where is order #3?",),
        present=("Processing",),
        tools=(("lookup_order", "ORD-003"),),
    ),
    Case(
        "'my order is late' holds no order number",
        "Alex",
        ("my order is late",),
        present=("order number",),
        absent=("escalat",),
    ),
    Case(
        "two ids: the first written looked up, the other named for next time",
        "Alex",
        ("where are ORD-004 and ORD-001?",),
        present=("4K Monitor", "You also mentioned ORD-001"),
        absent=("Wireless Headphones",),
        tools=(("lookup_order", "ORD-004"),),
    ),
    Case(
        "two ids, the first a stranger's: it is refused, the customer's own named back",
        "Alex",
        ("Where are ORD-002 and ORD-001?",),
        present=(f"{NOT_ON_ACCOUNT} order ORD-002", "You also mentioned ORD-001"),
        absent=("Wireless Headphones", "Phone Case", "In Transit", "Sam"),
    ),
    Case(
        "a misread first id is corrected, the second named back",
        "Alex",
        ("Where are ORD-0O1 and ORD-004?",),
        present=("Wireless Headphones", "You also mentioned ORD-004"),
        tools=(("lookup_order", "ORD-001"),),
    ),
    Case(
        "a correction in one message: the id settled on is looked up",
        "Alex",
        ("Where is ORD-004, sorry, I meant ORD-001",),
        present=("Wireless Headphones",),
        tools=(("lookup_order", "ORD-001"),),
    ),
    Case(
        "not this one but that one",
        "Alex",
        ("not ORD-004 but ORD-001: where is it?",),
        present=("Wireless Headphones",),
        tools=(("lookup_order", "ORD-001"),),
    ),
    Case(
        "sorry before the ids is politeness, not a correction",
        "Alex",
        ("Sorry to bother you, where are ORD-001 and ORD-004?",),
        present=("Wireless Headphones", "You also mentioned ORD-004"),
        tools=(("lookup_order", "ORD-001"),),
    ),
    Case(
        "a refund then a status question hands back to the order agent",
        "Jordan",
        ("I'd like to return ORD-006", "where is ORD-003?"),
        present=("Processing",),
        tools=(("lookup_order", "ORD-003"),),
        agent="order_agent",
    ),
    Case(
        "an unrelated order question in the refund agent is no refund request",
        "Sam",
        ("refund ORD-005", "what did I order in ORD-002?"),
        present=("Phone Case",),
        tools=(("lookup_order", "ORD-002"),),
        agent="order_agent",
    ),
    Case(
        "is it refunded: looked up, not asked for again",
        "Alex",
        ("where is ORD-001?", "has it been refunded?"),
        present=("no refund has been paid",),
        absent=("why you'd like",),
        tools=(("lookup_order", "ORD-001"),),
    ),
    Case(
        "a complaint without details asks for them",
        "Alex",
        ("I want to complain",),
        present=("tell me a little more",),
        agent="complaints_agent",
    ),
    Case(
        "the details asked for are filed as the complaint, not looked up",
        "Alex",
        ("I want to complain", "ORD-001 arrived with a broken left earcup and a torn box"),
        present=("recorded your complaint", "broken left earcup"),
    ),
    Case(
        "no to the complaint files nothing",
        "Alex",
        ("I want to complain", "no"),
        present=("won't file",),
        absent=("recorded",),
    ),
    Case(
        "an order question in another language reaches the order agent",
        "Alex",
        ("I want to complain", "no", "¿Dónde está mi pedido ORD-001?"),
        present=("Wireless Headphones",),
        absent=("recorded your complaint",),
        tools=(("lookup_order", "ORD-001"),),
        agent="order_agent",
    ),
    Case(
        "CJK around an order id",
        "Alex",
        ("我的订单ORD-001在哪里",),
        present=("Wireless Headphones",),
        tools=(("lookup_order", "ORD-001"),),
    ),
    Case(
        "a message the demo cannot read says so",
        "Alex",
        ("Привет, как дела?",),
        present=("only reads English",),
    ),
    Case("very short", "Alex", ("?",), present=("I can check an order",)),
    Case(
        "a fault with no request asks what they want",
        "Alex",
        ("My headphones stopped charging after two days",),
        present=("refund", "complaint", "order number"),
    ),
    Case(
        "no refund, just where it is: the status, no refund started",
        "Sam",
        ("I don't want a refund, just tell me where ORD-005 is",),
        present=("Bluetooth Speaker", "Delivered"),
        absent=("why you'd like",),
        tools=(("lookup_order", "ORD-005"),),
        agent="order_agent",
    ),
    Case(
        "cancelling a refund never asked for: nothing in progress, nothing refunded",
        "Sam",
        ("Please cancel my refund request for ORD-005, I changed my mind and will keep it",),
        present=("no refund in progress", "nothing will be refunded"),
        tools=(("lookup_order", "ORD-005"),),
    ),
    Case(
        "no refund needed, just the delivery date",
        "Alex",
        ("No refund needed for ORD-001, just checking the delivery date",),
        present=("2025-06-10",),
        tools=(("lookup_order", "ORD-001"),),
    ),
    Case(
        "don't refund one order, where is another: the other is looked up",
        "Sam",
        ("Don't refund ORD-005, I'm happy with it. Where is ORD-002?",),
        present=("Phone Case", "In Transit"),
        tools=(("lookup_order", "ORD-002"),),
    ),
    Case(
        "no refund wanted, no order named: said so, nothing looked up",
        "Sam",
        ("I don't want a refund",),
        present=("nothing will be refunded",),
        absent=("order number",),
    ),
    Case(
        "a cancelled order is not refundable 'yet': it will never be delivered",
        "Alex",
        ("I want a refund for ORD-007, I never used it at all",),
        present=("ORD-007", "cancelled"),
        absent=("yet", "once an order has been delivered"),
    ),
    Case(
        "no customer given: greeted without a name",
        None,
        ("hi",),
        present=("Hello!", "offline demo"),
    ),
)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_a_newcomer_phrasing(tmp_path: Path, case: Case) -> None:
    async with open_engine(tmp_path) as engine:
        for text in case.said[:-1]:
            await say(engine, "p", text, case.customer)
        before = len(tools_run(audit_of(engine, "p")))
        turn = await say(engine, "p", case.said[-1], case.customer)
        ran = tools_run(audit_of(engine, "p"))[before:]
    result = turn.result
    assert result.status == "done"
    reply = result.reply.lower()
    assert [p for p in case.present if p.lower() not in reply] == [], result.reply
    assert [a for a in case.absent if a.lower() in reply] == [], result.reply
    orders = [(tool, args["order_id"]) for tool, args in ran if "order_id" in args]
    assert orders == list(case.tools)
    if case.agent:
        assert result.active_agent == case.agent


async def test_a_fault_told_first_is_the_reason_of_the_refund_asked_next(tmp_path: Path) -> None:
    async with open_engine(tmp_path) as engine:
        await say(engine, "r", "My headphones stopped charging after two days", "Alex")
        turn = await say(engine, "r", "I want a refund for ORD-001", "Alex")
    assert turn.result.pending is not None
    assert turn.result.pending.payload["reason"] == "My headphones stopped charging after two days"


async def test_an_earlier_question_is_no_refund_reason(tmp_path: Path) -> None:
    async with open_engine(tmp_path) as engine:
        await say(engine, "q", "Hi, where is my order ORD-001?", "Alex")
        turn = await say(engine, "q", "refund it please", "Alex")
    # Asked why, rather than shown to a person with "Hi where is my order" as the reason.
    assert turn.result.status == "done"
    assert "why you'd like to return it" in turn.result.reply


@pytest.mark.parametrize("question", ["what can you do?", "help", "Who are you?"])
async def test_what_it_can_do_is_said_when_asked(tmp_path: Path, question: str) -> None:
    async with open_engine(tmp_path) as engine:
        # After the greeting, whose reply mentions the order number: not "I need the order
        # number" as if the question had been an answer to it.
        await say(engine, "h", "hi", "Alex")
        turn = await say(engine, "h", question, "Alex")
        ran = tools_run(audit_of(engine, "h"))
    reply = turn.result.reply
    for does in ("order's status", "refund", "complaint"):
        assert does in reply, reply
    assert "need the order number" not in reply and ran == []


async def test_a_reason_too_short_is_asked_about_again_not_the_same_question(
    tmp_path: Path,
) -> None:
    async with open_engine(tmp_path) as engine:
        await say(engine, "w", "I want a refund for ORD-001", "Alex")
        short = await say(engine, "w", "it broke", "Alex")
        # The gate judged what the customer said (as with a language model), and the reply
        # asks for more, not "why?" again as if the answer had not been heard.
        failed = [e for e in audit_of(engine, "w") if e.kind == "gate_failed"]
        assert "'it broke' is too short" in failed[-1].detail["detail"]
        assert "a little more about what went wrong" in short.result.reply
        assert "why you'd like to return it" not in short.result.reply
        enough = await say(engine, "w", "it stopped charging after a week", "Alex")
    assert enough.result.pending is not None
    assert enough.result.pending.payload["reason"] == "it stopped charging after a week"


@pytest.mark.parametrize(
    "answer",
    [
        "refund ORD-001 please",
        "ORD-001 please",
        "just refund it please",
        "I want my money back",
        "I'd like a refund please",
    ],
)
async def test_asking_again_is_no_reason(tmp_path: Path, answer: str) -> None:
    async with open_engine(tmp_path) as engine:
        await say(engine, "n", "I want a refund for ORD-001", "Alex")
        turn = await say(engine, "n", answer, "Alex")
    # Not staged for a person with the request itself as its reason: asked why, again.
    assert turn.result.pending is None
    assert "why you'd like to return it" in turn.result.reply


async def test_a_reason_that_starts_with_a_question_is_still_the_reason(tmp_path: Path) -> None:
    async with open_engine(tmp_path) as engine:
        await say(engine, "q", "I want a refund for ORD-001", "Alex")
        turn = await say(engine, "q", "what is this? it broke after one day", "Alex")
    assert turn.result.pending is not None
    assert "it broke after one day" in turn.result.pending.payload["reason"]


async def test_a_complaint_that_asks_what_they_will_do_is_not_the_introduction(
    tmp_path: Path,
) -> None:
    text = "what are you going to do about my broken headphones?"
    async with open_engine(tmp_path) as engine:
        turn = await say(engine, "c", text, "Alex")
    assert "running as an offline demo" not in turn.result.reply


async def test_a_sloppy_id_once_looked_up_is_refunded_by_its_real_number(tmp_path: Path) -> None:
    async with open_engine(tmp_path) as engine:
        await say(engine, "s", "ord 5", "Sam")
        turn = await say(engine, "s", "refund it please, it crackles badly at any volume", "Sam")
    assert turn.result.pending is not None
    assert turn.result.pending.payload["order_id"] == "ORD-005"


async def test_an_angry_complaint_about_a_rejected_refund_is_a_complaint(tmp_path: Path) -> None:
    async with open_engine(tmp_path) as engine:
        await say(engine, "a", "I want a refund for ORD-006 because the keys stick", "Jordan")
        await decide(engine, "a", "reject")
        before = kinds(audit_of(engine, "a")).count("approval_requested")
        turn = await say(
            engine,
            "a",
            "This is ridiculous!!! I am furious, you rejected my refund for no reason at all",
            "Jordan",
        )
        after = kinds(audit_of(engine, "a")).count("approval_requested")
    pending = turn.result.pending
    # Held for a person as an angry complaint, not put up as a refund again.
    assert pending is not None and pending.kind == "complaint_review", pending
    assert pending.payload["sentiment"] == "angry"
    assert turn.result.active_agent == "complaints_agent"
    assert after == before + 1


async def _refund_then_ask(
    tmp_path: Path, customer: str, asked: str, decision: str | None, question: str
) -> tuple[str, list[str]]:
    """The reply to `question`, and the audit kinds it added, after the refund `asked` for
    and its `decision` (None: the shop's rules escalated it, no person was asked)."""
    async with open_engine(tmp_path) as engine:
        await say(engine, "u", asked, customer)
        if decision:
            await decide(engine, "u", decision)
        before = len(audit_of(engine, "u"))
        turn = await say(engine, "u", question, customer)
        added = kinds(audit_of(engine, "u")[before:])
    assert turn.result.status == "done" and turn.result.pending is None
    return turn.result.reply, added


@pytest.mark.parametrize(
    ("customer", "asked", "decision", "question", "stands"),
    [
        (
            "Alex",
            "I want a refund for ORD-004, the screen has dead pixels",
            None,  # over the limit: escalated by the shop's rules
            "any news on my refund for ORD-004?",
            "with a senior colleague",
        ),
        (
            "Sam",
            "I want a refund for ORD-005, it crackles at any volume",
            "escalate",
            "what's happening with my refund?",
            "with a senior colleague",
        ),
        (
            "Sam",
            "I want a refund for ORD-005, it crackles at any volume",
            "approve",
            "Any update on my refund for ORD-005?",
            "REF-ORD-005-",
        ),
        (
            "Jordan",
            "I want a refund for ORD-006 because the keys stick",
            "reject",
            "status of my refund",
            "couldn't approve",
        ),
    ],
)
async def test_asking_how_a_refund_stands_starts_no_new_one(
    tmp_path: Path, customer: str, asked: str, decision: str | None, question: str, stands: str
) -> None:
    reply, added = await _refund_then_ask(tmp_path, customer, asked, decision, question)
    assert stands in reply, reply
    # A lookup: no new approval, no new escalation, no refund gate.
    assert "tool_called" in added
    assert not {"approval_requested", "escalated", "gate_failed"} & set(added), added


async def test_a_complaint_is_quoted_literally_not_as_markdown(tmp_path: Path) -> None:
    typed = (
        "I am very disappointed with the delivery, it took ages. **Call 555-0100 now** see "
        "[support portal](http://evil.example/login) `code`"
    )
    async with open_engine(tmp_path) as engine:
        turn = await say(engine, "m", typed, "Alex")
    reply = turn.result.reply
    html = MarkdownIt().render(reply)  # as the chat renders a reply: Markdown
    for markup in ("<strong>", "<a ", "<code>"):
        assert markup not in html, html
    assert typed in html, html  # every character the customer typed, none dropped
    assert "experience about this" not in reply  # said in plain English
