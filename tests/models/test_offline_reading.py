"""How the offline demo model reads a customer: mood, order ids, intents, the dialogue."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from markdown_it import MarkdownIt

from agents.graph.replies import ESCALATED_OVER_LIMIT
from agents.models.offline.answers import REFUND_DECLINED, markdown_literal, refund_policy
from agents.models.offline.dialogue import read_dialogue
from agents.models.offline.reading import (
    asks_refund,
    find_order_ids,
    intent_of,
    is_bare_order_id,
    order_meant,
    refund_reason_in,
    sentiment_of,
)
from gates import AUTO_REFUND_LIMIT, REFUNDABLE_STATUS
from tests.support.engine import audit_of, kinds, open_engine, say


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


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("ORD-001", ["ORD-001"]),
        ("ord 003", ["ORD-003"]),
        ("ORD003", ["ORD-003"]),
        ("ORD_005", ["ORD-005"]),
        ("where is order #3?", ["ORD-3"]),  # literal first reading; the correction pads it
        ("order number 12", ["ORD-12"]),
        ("order 003", ["ORD-003"]),
        ("ORD-0O1", ["ORD-0O1"]),  # a misread character is copied, for the gate to catch
        ("ORD-001/ORD-002", ["ORD-001", "ORD-002"]),
        ("我的订单ORD-001在哪里", ["ORD-001"]),  # no word boundary before ORD after CJK
        # Words after "order" are not an id, nor is a count of weeks.
        ("my order is late", []),
        ("the order I placed", []),
        ("order on monday", []),
        ("order 2 weeks ago", []),
        ("I ordered it", []),
        ("Lord 1", []),
    ],
)
def test_order_ids(text: str, ids: list[str]) -> None:
    assert find_order_ids(text) == ids


@pytest.mark.parametrize(
    ("text", "meant"),
    [
        ("Where are ORD-004 and ORD-001?", "ORD-004"),  # listed: the first
        ("ORD-002, ORD-001 and ORD-004", "ORD-002"),  # whoever's it is: the words decide
        ("Where is ORD-004, sorry, I meant ORD-001", "ORD-001"),  # corrected: the last
        ("not ORD-004 but ORD-001", "ORD-001"),
        ("ORD-004... oops, ORD-001", "ORD-001"),
        ("ORD-004, or rather ORD-001", "ORD-001"),
        ("Sorry to bother you: ORD-001 and ORD-004?", "ORD-001"),  # politeness, before them
        ("ORD-001 and ORD-004 actually arrived broken, sorry", "ORD-001"),  # after them
        ("Sorry, it's ORD-004.", "ORD-004"),
        # The order whose refund is declined is not the one asked about, unless the only one.
        ("Don't refund ORD-005, I'm happy with it. Where is ORD-002?", "ORD-002"),
        ("No refund needed for ORD-001, just checking the delivery date", "ORD-001"),
        ("where is order #3?", "ORD-3"),  # as typed, like find_order_ids
        ("my order is late", ""),
    ],
)
def test_the_order_a_message_means(text: str, meant: str) -> None:
    assert order_meant(text) == meant


def test_reading_the_dialogue_keeps_the_order_a_message_meant() -> None:
    said = [HumanMessage("Where are ORD-001 and ORD-004?")]
    assert read_dialogue(said).current_order == "ORD-001"
    corrected = [*said, AIMessage("..."), HumanMessage("no wait, not ORD-001, I meant ORD-007")]
    assert read_dialogue(corrected).current_order == "ORD-007"


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("what is your return policy?", "policy"),
        ("How do refunds work?", "policy"),
        ("what is your return policy? I want to return ORD-001", "refund"),  # a request
        ("I want my money back for order ord-002", "refund"),
        ("can I cancel ORD-003?", "cancel"),
        ("has it been refunded?", "order"),  # where a refund stands: a lookup
        ("where's my refund", "order"),
        ("any news on it?", "order"),
        ("¿Dónde está mi pedido?", "order"),
        ("I want to complain", "complaint"),
        ("hello again", "greeting"),
        ("no", "no"),
        ("No thanks!", "no"),
        ("that's all", "no"),
        ("thanks", "thanks"),
        ("Thank you, that's all for today.", "thanks"),
        ("yes", "yes"),
        ("ok", "yes"),
        ("My headphones stopped charging", "other"),
        # A refund declined is never asked for: the rest of the message is what is asked.
        ("I don't want a refund, just tell me where ORD-005 is", "order"),
        ("No refund needed for ORD-001, just checking the delivery date", "order"),
        ("Don't refund ORD-005, I'm happy with it. Where is ORD-002?", "order"),
        ("I'm not asking for a refund, where is ORD-001?", "order"),
        (
            "Please cancel my refund request for ORD-005, I changed my mind and will keep it",
            "no_refund",
        ),
        ("I no longer want a refund for ORD-005", "no_refund"),
        ("I don’t want my money back, thanks", "no_refund"),
        ("I'd like a replacement instead of a refund for ORD-001", "no_refund"),
        ("Can I keep it without a refund?", "no_refund"),
        # A complaint about a refund already asked for is a complaint, not a new request.
        (
            "This is ridiculous!!! I am furious, you rejected my refund for no reason at all",
            "complaint",
        ),
        ("I still haven't received my refund for ORD-005", "complaint"),
        ("My refund request was ignored", "complaint"),
        # Asking how a refund stands is a lookup, not a new request.
        ("any news on my refund for ORD-004?", "order"),
        ("Any update on my refund for ORD-006?", "order"),
        ("what's happening with my refund?", "order"),
        ("status of my refund", "order"),
        ("How is my refund coming along?", "order"),
    ],
)
def test_intent(text: str, intent: str) -> None:
    assert intent_of(text) == intent


# These passed before negations were read: kept so reading them cannot break a request.
@pytest.mark.parametrize(
    "text",
    [
        "I want a refund",
        "can I get my money back",
        "refund ORD-005 please",
        "I don't like it, I want a refund",  # the negation is of something else
        "I don't want it anymore, refund please",
        "I don't care why, I want a refund",
        "I don't want a refund, I want my money back!",  # declines one word, asks the other
        "you rejected my refund, refund ORD-006 again please",  # a complaint, and asks again
    ],
)
def test_a_refund_asked_for_beside_a_negation_is_asked_for(text: str) -> None:
    assert asks_refund(text)
    assert intent_of(text) == "refund"


@pytest.mark.parametrize(
    ("text", "bare"),
    [
        ("ORD-001", True),
        ("it's ORD-001", True),
        ("ORD-001 please", True),
        ("where is ORD-001?", False),
        ("what did I order in ORD-002?", False),
        ("hi", False),
    ],
)
def test_a_bare_order_id(text: str, bare: bool) -> None:
    assert is_bare_order_id(text) is bare


@pytest.mark.parametrize(
    ("said", "reason"),
    [
        (
            ["refund ORD-001", "The headphones stopped charging after a week"],
            "The headphones stopped charging after a week",
        ),
        # The problem told first, the refund asked next.
        (
            ["My headphones stopped charging", "I want a refund for ORD-001"],
            "My headphones stopped charging",
        ),
        # An earlier question is no reason.
        (["Hi, where is my order ORD-001?", "refund it please"], ""),
        # Only the latest refund request counts.
        (["refund ORD-005, the speaker crackles badly", "thanks", "refund ORD-001"], ""),
    ],
)
def test_the_refund_reason_is_the_current_requests(said: list[str], reason: str) -> None:
    assert refund_reason_in(said) == reason


def test_reading_the_dialogue_drops_an_order_the_shop_could_not_find() -> None:
    messages = [
        HumanMessage("I want my money back for order ord-002"),
        AIMessage("I couldn't find order ORD-002 on your account. Could you double-check it?"),
        HumanMessage("what is your return policy?"),
    ]
    dialogue = read_dialogue(messages)
    assert dialogue.current_order == ""
    assert dialogue.last_reply.startswith("I couldn't find order ORD-002")
    # Written again after that, it is the customer's to ask about again.
    again = read_dialogue(
        [*messages, AIMessage("Here's how refunds work"), HumanMessage("ORD-002")]
    )
    assert again.current_order == "ORD-002"


def test_reading_the_dialogue_takes_the_shops_spelling_once_looked_up() -> None:
    dialogue = read_dialogue(
        [
            HumanMessage("ord 5"),
            AIMessage("Here's what I found for **ORD-005**:"),
            HumanMessage("ok"),
        ]
    )
    assert dialogue.current_order == "ORD-005"


def test_reading_the_dialogue_knows_what_became_of_a_refund_request() -> None:
    messages = [
        HumanMessage("refund ORD-004, dead pixels all over"),
        AIMessage(ESCALATED_OVER_LIMIT.format(order_id="ORD-004")),
        HumanMessage("ord 6 has sticky keys, refund it please"),
        AIMessage(REFUND_DECLINED),  # a person's decision names no order: the current one
        HumanMessage("any news?"),
    ]
    outcomes = read_dialogue(messages).refund_outcomes
    assert outcomes == {"ORD-004": "escalated", "ORD-006": "declined"}


def test_customer_words_quoted_in_markdown_read_as_typed() -> None:
    typed = (
        "**Call 555-0100 now** see [portal](http://evil.example/login) `code` <b>x</b> &amp; _y_"
    )
    html = MarkdownIt().render(f"You said: “{markdown_literal(typed)}”")
    for markup in ("<strong>", "<em>", "<a ", "<code>", "<b>"):
        assert markup not in html, html
    # Rendered, the quote is the customer's text exactly, every character of it.
    assert "**Call 555-0100 now** see [portal](http://evil.example/login) `code`" in html
    assert "&lt;b&gt;x&lt;/b&gt; &amp;amp; _y_" in html
    # On one line, and what starts nothing mid-line stays as typed (a reply read as written).
    assert markdown_literal("broken (again)! #1\n# not a heading") == (
        "broken (again)! #1 # not a heading"
    )


def test_the_policy_takes_its_numbers_from_the_gates() -> None:
    policy = refund_policy()
    assert f"${AUTO_REFUND_LIMIT:.2f}" in policy
    assert REFUNDABLE_STATUS.lower() in policy
