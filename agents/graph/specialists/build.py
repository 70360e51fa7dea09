"""Assemble one specialist's subgraph from the shared nodes.

order / refund:  START -> respond -> act (extract + gate inline) -> respond -> END
                 act -> correct* -> act          (the correction loop, at most 2)
                 act -> request_approval -> await_approval -> respond     (refunds)
complaints:      START -> extract (+ gate) -> correct* -> request_review -> await_review
                                            \\-> respond -> act (hand-offs only)
gate verdicts:   on to the tools, back to the model (ask the customer / a rule says no),
                 correct, or escalate (over the limit, or still wrong after 2 corrections)
act:             -> stop_turn (a brake) | the parent graph (a hand-off)
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph

from agents.graph.context import ShopContext
from agents.graph.specialists.answering import make_respond, route_after_respond
from agents.graph.specialists.approvals import (
    make_await_approval,
    make_await_review,
    make_request_approval,
    make_request_review,
)
from agents.graph.specialists.endings import make_escalate, make_stop_turn
from agents.graph.specialists.extraction import Extractor, make_correct, make_extract
from agents.graph.specialists.spec import SpecialistSpec
from agents.graph.specialists.tool_calls import make_act
from agents.graph.state import ShopState, SpecialistState


def build_specialist(spec: SpecialistSpec, model: BaseChatModel) -> Any:
    graph = StateGraph(
        SpecialistState, context_schema=ShopContext, input_schema=ShopState, output_schema=ShopState
    )
    extractor = Extractor(spec, model)
    # Where a gate verdict leads (see gating.py): on, to the model, to a correction, to a human.
    verdicts = ("respond", "correct", "escalate")
    graph.add_node("respond", make_respond(spec, model))
    passed = "request_review" if spec.extract_first else "act"
    graph.add_node("correct", make_correct(spec, extractor), destinations=(passed, *verdicts))
    graph.add_node("escalate", make_escalate(spec))
    graph.add_node("stop_turn", make_stop_turn(spec))
    if spec.extract_first:
        # Complaints: the review decision needs the sentiment before anything is said.
        graph.add_node(
            "extract",
            make_extract(spec, extractor),
            destinations=(passed, *verdicts),
        )
        graph.add_edge(START, "extract")
    else:
        # Orders and refunds: `act` extracts and gates inline when a tool first needs it.
        graph.add_edge(START, "respond")
    act_goes_to = ("stop_turn", *verdicts, *(() if spec.review else ("request_approval",)))
    graph.add_node("act", make_act(spec, extractor), destinations=act_goes_to)
    graph.add_conditional_edges("respond", route_after_respond, ["act", END])
    graph.add_edge("escalate", END)
    graph.add_edge("stop_turn", END)
    if spec.review == "complaint":
        graph.add_node("request_review", make_request_review(spec))
        graph.add_node("await_review", make_await_review(spec))
        graph.add_edge("request_review", "await_review")
        graph.add_edge("await_review", END)
    else:
        graph.add_node("request_approval", make_request_approval(spec))
        graph.add_node("await_approval", make_await_approval(spec))
        graph.add_edge("request_approval", "await_approval")
        graph.add_edge("await_approval", "respond")
    return graph.compile(name=spec.name)
