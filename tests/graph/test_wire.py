"""The events the graph streams are JSON objects with a `type`: what a LangGraph server sends
its clients, read back by the in-process runner into the same events."""

from __future__ import annotations

import json

import pytest

from agents.events import (
    WIRE_TYPES,
    AgentChanged,
    ApprovalDecided,
    DecisionRefused,
    EngineEvent,
    Escalated,
    GateChecked,
    HandedOff,
    LimitReached,
    MessageRefused,
    RefundNotCarriedOut,
    RefundPaid,
    ReplyDone,
    Retrying,
    StepChanged,
    TokenDelta,
    ToolCalled,
    TurnFailed,
    from_wire,
    to_wire,
)

EXAMPLES: list[EngineEvent] = [
    TokenDelta("order_agent", "Hel"),
    ReplyDone("order_agent", "Hello!"),
    StepChanged("refund_agent", "correcting", detail="1/2", attempt=1),
    AgentChanged("refund_agent", previous="order_agent"),
    GateChecked("refund_agent", "order_id", False, "not found", 1),
    HandedOff("order_agent", "refund_agent"),
    ToolCalled("order_agent", "lookup_order", {"order_id": "ORD-001"}, "executed", "ok"),
    Escalated("refund_agent", "over the limit"),
    LimitReached("order_agent", "handoff_cap", "3 hand-offs"),
    Retrying("order_agent", 1, 0.5, "HTTP 503."),
    RefundPaid("refund_agent", "ORD-005", "REF-ORD-005-ABC123", "59.50"),
    RefundNotCarriedOut("refund_agent", "ORD-005", "approve", "locked", storage=True),
    ApprovalDecided("refund_approval", "approve", by="dana (app)"),
    DecisionRefused("refund_agent", "not an option"),
    MessageRefused("refund_agent", "a decision waits"),
    TurnFailed("provider", "down"),
]


def test_every_streamed_kind_has_an_example() -> None:
    assert {type(event) for event in EXAMPLES} == set(WIRE_TYPES)


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: type(e).__name__)
def test_an_event_crosses_the_wire_as_json_and_comes_back_the_same(event: EngineEvent) -> None:
    wired = json.loads(json.dumps(to_wire(event)))
    assert wired["type"] == WIRE_TYPES[type(event)]
    assert from_wire(wired) == event


def test_a_token_and_a_whole_reply_are_told_apart_by_their_type() -> None:
    token, reply = to_wire(TokenDelta("a", "x")), to_wire(ReplyDone("a", "x"))
    assert {k: v for k, v in token.items() if k != "type"} == {
        k: v for k, v in reply.items() if k != "type"
    }
    assert (token["type"], reply["type"]) == ("token", "reply")


@pytest.mark.parametrize(
    "data",
    [
        {"type": "telemetry", "x": 1},
        {"agent": "a", "text": "no type"},
        "text",
        None,
        {"type": "token", "agent": "a"},
    ],
)
def test_what_is_not_one_of_ours_is_skipped(data: object) -> None:
    assert from_wire(data) is None
