"""The sentence naming back the orders a turn did not handle, and which orders those are."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agents.graph.history import latest_customer_words
from agents.graph.other_orders import orders_not_answered, other_orders_sentence
from gates import order_ids_as_written, order_ids_meant

ONE = (
    "You also mentioned ORD-004: I handle one order at a time, so ask me about it next and "
    "I'll look into it."
)


def test_one_order_is_named_in_the_singular() -> None:
    assert other_orders_sentence(["ORD-004"]) == ONE


def test_several_are_named_in_the_order_given() -> None:
    assert other_orders_sentence(["ORD-007", "ORD-002", "ORD-004"]) == (
        "You also mentioned ORD-007, ORD-002 and ORD-004: I handle one order at a time, so "
        "ask me about them next, one by one, and I'll look into each."
    )


def test_ids_are_spelled_as_the_gates_spell_them_and_named_once() -> None:
    assert other_orders_sentence([" ord-004 ", "ORD004", "ORD_004"]) == ONE
    assert other_orders_sentence(["ord 2", "ORD-004", "ord-004"]).startswith(
        "You also mentioned ORD 2 and ORD-004:"  # only spelling is normalised, as the gates do
    )


@pytest.mark.parametrize("ids", [[], [""], ["  "]])
def test_nothing_to_name_is_no_sentence(ids: list[str]) -> None:
    assert other_orders_sentence(ids) == ""


@pytest.mark.parametrize(
    ("said", "handled", "reply", "left"),
    [
        ("Where are ORD-001 and ORD-002?", "ORD-001", "Delivered.", ["ORD-002"]),
        ("Where are ORD-001 and ORD-002?", " ord-001 ", "Delivered.", ["ORD-002"]),
        ("Where is ORD-001?", "ORD-001", "Delivered.", []),
        # One order named: the reply is about it, even one that does not spell it out.
        ("Where is ORD-001?", "", "It's on its way.", []),
        # One the gates cannot read as written, another they can: that other is left.
        ("Where are ORD-0O1 and ORD-004?", "ORD-001", "Delivered.", ["ORD-004"]),
        # The reply names the other one itself, however spelled: not twice.
        ("ORD-001 and ORD-004?", "ORD-001", "Ask about **ord 004** next.", []),
        # Nothing handled (the model asked a question): all of them, as written, each once.
        ("order #4, ORD-001 and ORD-004", "", "Which one first?", ["ORD-004", "ORD-001"]),
        ("Where is my order?", "", "Which order?", []),
        # Corrected away: the customer means only the last.
        ("Where is ORD-001? sorry, I meant ORD-004", "ORD-004", "Delivered.", []),
        ("not ORD-002, ORD-004 - where is it?", "ORD-004", "Delivered.", []),
        # "Sorry" before the ids is politeness: both are meant.
        ("Sorry to bother you: ORD-001 and ORD-004?", "ORD-001", "Delivered.", ["ORD-004"]),
        # A bare "order 120" is an amount here, never named back as an order of theirs.
        ("Where is ORD-001? I paid for that order 120 dollars ago", "ORD-001", "x", []),
        ("ORD-001, and another order 150 days ago", "ORD-001", "x", []),
    ],
)
def test_the_orders_not_answered(said: str, handled: str, reply: str, left: list[str]) -> None:
    assert orders_not_answered(said, handled, reply) == left


def test_ids_as_written_keep_the_customers_order() -> None:
    assert order_ids_as_written("ord 009, ORD-002 and order #9") == ["ORD-009", "ORD-002"]


@pytest.mark.parametrize(
    ("said", "meant"),
    [
        ("order 003 and order #12", ["ORD-003", "ORD-012"]),  # a leading zero: an id for sure
        ("that order 120 dollars ago", []),
        ("ORD-120 and ORD-004", ["ORD-120", "ORD-004"]),
        ("ORD-001, oops, ORD-004", ["ORD-004"]),
        ("ORD-001 should be ORD-004", ["ORD-004"]),
        ("ORD-001 and ORD-004 actually arrived broken", ["ORD-001", "ORD-004"]),
    ],
)
def test_the_ids_a_customer_means(said: str, meant: list[str]) -> None:
    assert order_ids_meant(said) == meant


def test_the_latest_customer_words_skip_the_tool_traffic_after_them() -> None:
    messages = [
        HumanMessage("Where is ORD-001?"),
        AIMessage("Delivered."),
        HumanMessage("And ORD-004 and ORD-007?"),
        AIMessage("", tool_calls=[{"name": "lookup_order", "args": {}, "id": "c1"}]),
        ToolMessage("Order ORD-004: 4K Monitor", tool_call_id="c1"),
    ]
    assert latest_customer_words(messages) == "And ORD-004 and ORD-007?"
    assert latest_customer_words([]) == ""
