"""The parent graph: no supervisor, no routing call. Each customer message goes to the active
specialist, which answers or hands off with `Command(graph=Command.PARENT)`."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from agents.context import ShopContext
from agents.events import AGENTS, DEFAULT_AGENT, StepChanged
from agents.history import text_of
from agents.provider import call_model
from agents.reporting import report
from agents.specialists.build import build_specialist
from agents.specialists.extraction import NO_STREAM
from agents.specialists.roster import SPECIALISTS
from agents.state import ShopState
from agents.summary import removals, summary_cut, summary_request


def make_begin_turn(model: BaseChatModel) -> Any:
    async def begin_turn(state: ShopState, runtime: Runtime[ShopContext]) -> dict[str, Any]:
        update: dict[str, Any] = {
            "handoffs": 0,
            "turn": state.get("turn", 0) + 1,
            "active_agent": state.get("active_agent") or DEFAULT_AGENT,
        }
        messages = state["messages"]
        cut = summary_cut(messages)
        if cut:
            agent = update["active_agent"]
            report(runtime, StepChanged(agent=agent, step="summarising"))
            facts = {
                "customer": runtime.context.customer or "",
                "order": state.get("order_id", ""),
                "category": state.get("ticket_category", ""),
            }
            request = summary_request(messages[:cut], state.get("summary", ""), facts)
            reply = await call_model(model, request, runtime, agent=agent, config=NO_STREAM)
            summary = text_of(reply).strip()
            update["summary"] = summary
            update["messages"] = removals(messages[:cut])
            report(
                runtime,
                kind="summarised",
                agent=agent,
                detail={
                    "removed_messages": cut,
                    "kept_messages": len(messages) - cut,
                    "summary": summary,
                },
            )
        return update

    return begin_turn


def route_to_active(state: ShopState) -> str:
    agent = state.get("active_agent") or DEFAULT_AGENT
    return agent if agent in AGENTS else DEFAULT_AGENT


async def end_turn(state: ShopState) -> dict[str, Any]:
    """Never routed to: `update_state(as_node="end_turn")` closes a turn that was cut short."""
    return {}


def build_graph(model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any] | None) -> Any:
    graph = StateGraph(ShopState, context_schema=ShopContext)
    graph.add_node("begin_turn", make_begin_turn(model))
    for spec in SPECIALISTS:
        others = tuple(agent for agent in AGENTS if agent != spec.name)
        graph.add_node(spec.name, build_specialist(spec, model), destinations=others)
    graph.add_node("end_turn", end_turn)
    graph.add_edge(START, "begin_turn")
    graph.add_conditional_edges("begin_turn", route_to_active, list(AGENTS))
    graph.add_edge("end_turn", END)
    return graph.compile(checkpointer=checkpointer, name="shopbot")
