"""Assemble one specialist's subgraph from the shared nodes.

START -> respond -> act -> respond -> END          a tool turn: the call, then the answer
act -> respond                                    a failed gate's answer: the model corrects
                                                  (at most 2 a turn), or tells the customer
act -> escalate                                   over the limit, or still wrong after 2
act -> stop_turn                                  a brake
act -> the parent graph                           a hand-off, or a question for a person
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph

from agents.graph.context import ShopContext
from agents.graph.specialists.answering import make_respond
from agents.graph.specialists.endings import make_escalate, make_stop_turn
from agents.graph.specialists.spec import SpecialistSpec
from agents.graph.specialists.tool_calls import make_act
from agents.graph.state import ShopState, SpecialistState


def build_specialist(spec: SpecialistSpec, model: BaseChatModel) -> Any:
    graph = StateGraph(
        SpecialistState, context_schema=ShopContext, input_schema=ShopState, output_schema=ShopState
    )
    graph.add_node("respond", make_respond(spec, model), destinations=("act", END))
    graph.add_node("act", make_act(spec), destinations=("respond", "escalate", "stop_turn"))
    graph.add_node("escalate", make_escalate(spec))
    graph.add_node("stop_turn", make_stop_turn(spec))
    graph.add_edge(START, "respond")
    graph.add_edge("escalate", END)
    graph.add_edge("stop_turn", END)
    return graph.compile(name=spec.name)
