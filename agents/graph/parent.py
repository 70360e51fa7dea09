"""The parent graph: no supervisor, no routing call. Each customer message goes to the active
specialist, which answers or hands off with `Command(graph=Command.PARENT)`."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, RemoveMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command

from agents.events import StepChanged
from agents.graph.context import ShopContext
from agents.graph.decisions import (
    ASK_DECISION,
    AWAIT_DECISION,
    DECISION_WAITS,
    ask_decision,
    await_decision,
    decision_waits,
)
from agents.graph.history import text_of
from agents.graph.reporting import report
from agents.graph.specialists.build import build_specialist
from agents.graph.specialists.endings import fail_turn
from agents.graph.specialists.roster import SPECIALISTS
from agents.graph.specialists.spec import RECURSION_LIMIT
from agents.graph.state import ShopState
from agents.graph.summary import removals, summary_cut, summary_request
from agents.graph.turn_start import BEGIN_TURN, begin_turn
from agents.models.provider import ProviderUnavailable, call_model
from agents.names import AGENTS, DEFAULT_AGENT
from agents.safety.redaction import redact


def make_summarise(model: BaseChatModel) -> Any:
    async def summarise(state: ShopState, runtime: Runtime[ShopContext]) -> Command[str]:
        """Fold the older part of a long history into `summary` before the turn starts."""
        messages = state["messages"]
        cut = summary_cut(messages)
        agent = active_agent(state)
        report(runtime, StepChanged(agent=agent, step="summarising"))
        facts = {
            "customer": runtime.context.customer or "",
            "order": state.get("order_id", ""),
            "category": state.get("ticket_category", ""),
        }
        request = summary_request(messages[:cut], state.get("summary", ""), facts)
        try:
            reply = await call_model(model, request, runtime, agent=agent)
        except ProviderUnavailable as exc:
            return Command(goto=END, update=fail_turn(runtime, agent, messages, exc))
        # The summary is state, read by every later call: no key the model repeats in it.
        summary = redact(text_of(reply).strip())
        report(
            runtime,
            kind="summarised",
            agent=agent,
            detail={
                "removed": cut,
                "kept": len(messages) - cut,
                "summary": summary,
            },
        )
        return Command(
            goto=agent, update={"summary": summary, "messages": removals(messages[:cut])}
        )

    return summarise


def active_agent(state: ShopState) -> str:
    agent = state.get("active_agent") or DEFAULT_AGENT
    return agent if agent in AGENTS else DEFAULT_AGENT


async def begin(state: ShopState, runtime: Runtime[ShopContext]) -> Command[str]:
    """Where a new message goes: while a question waits for a person, it is refused
    (decisions.py); else the turn begins (`begin_turn`). Said here (a `Command`), not by
    routers before and after: a router cost a copy of every channel of the state, which
    LangGraph makes to show it the writes before it."""
    if state.get("awaiting"):
        return Command(goto=DECISION_WAITS)
    update = await begin_turn(state, runtime)
    return Command(goto=begun_to(state, update), update=update)


def begun_to(state: ShopState, update: dict[str, Any]) -> str:
    """To the active specialist, after a summary if the history is long; nowhere when the
    turn has no customer message left to answer (begin_turn refused it). Read from the
    messages as `update` leaves them: a refused message removed (a cleaned one replaces the
    customer's in its place, the same kind of message)."""
    messages = state["messages"]
    removed = {m.id for m in update.get("messages", ()) if isinstance(m, RemoveMessage)}
    if removed:
        messages = [m for m in messages if m.id not in removed]
    if not messages or not isinstance(messages[-1], HumanMessage):
        return END
    return "summarise" if summary_cut(messages) else active_agent(state)


async def end_turn(state: ShopState) -> dict[str, Any]:
    """Never routed to: `update_state(as_node="end_turn")` closes a turn that was cut short."""
    return {}


def build_graph(model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any] | None) -> Any:
    graph = StateGraph(ShopState, context_schema=ShopContext)
    graph.add_node(BEGIN_TURN, begin, destinations=(DECISION_WAITS, "summarise", *AGENTS, END))
    graph.add_node("summarise", make_summarise(model), destinations=(*AGENTS, END))
    for spec in SPECIALISTS:
        others = tuple(agent for agent in AGENTS if agent != spec.name)
        # A specialist hands off to the others, or asks a person (the question waits here).
        graph.add_node(
            spec.name, build_specialist(spec, model), destinations=(*others, ASK_DECISION)
        )
    graph.add_node(ASK_DECISION, ask_decision)
    graph.add_node(AWAIT_DECISION, await_decision, destinations=(AWAIT_DECISION, *AGENTS, END))
    graph.add_node(DECISION_WAITS, decision_waits, destinations=(AWAIT_DECISION,))
    graph.add_node("end_turn", end_turn)
    graph.add_edge(START, BEGIN_TURN)
    graph.add_edge(ASK_DECISION, AWAIT_DECISION)
    graph.add_edge("end_turn", END)
    # The hard brake behind the soft ones, part of the graph: it holds under any runtime.
    compiled = graph.compile(checkpointer=checkpointer, name="shopbot")
    return compiled.with_config(recursion_limit=RECURSION_LIMIT)
