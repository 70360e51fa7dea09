"""The floor for ShopBot's per-turn overhead: a bare LangGraph graph of the same shape.

A parent graph with one specialist subgraph (START -> respond -> tools -> respond -> END),
LangGraph's own `ToolNode` running a `lookup_order` that answers from a constant, a plain
`model.ainvoke` per call, the same saver ShopBot opens (`open_checkpoints`: the same
`AsyncSqliteSaver` subclass, connection and pragmas), checkpointing when the run ends
(`durability="exit"`, as the engine does), and the same model (the offline demo model) given
the order agent's prompt, so it makes the same two calls for "Where is my order ORD-001?":
the lookup, then the answer. What it leaves out is what ShopBot adds: the engine's turn
bookkeeping (conversation store, turn guard), the audit log, the gates, redaction, streaming
to the screen, summaries and pruning.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from typing_extensions import TypedDict

from agents.graph.prompts import specialist_prompt
from agents.graph.schemas import OrderExtraction
from agents.store.checkpoints import open_checkpoints
from tests.perf.common import TimedDemoModel

LOOKUP_ANSWER = (
    "Order ORD-001: Wireless Headphones | Status: Delivered | Amount: $89.99 | Delivery: 2025-06-10"
)


class BareState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


@tool("lookup_order", args_schema=OrderExtraction)
def lookup_order(order_id: str, query_type: str) -> str:
    """Look up a customer's order by order ID: product, status, amount and delivery date."""
    return LOOKUP_ANSWER


def build_bare_graph(model: BaseChatModel, checkpointer: Any) -> Any:
    prompt = specialist_prompt("order_agent", customer="Alex", summary="", validated=None)
    bound = model.bind_tools([lookup_order], parallel_tool_calls=False)

    async def respond(state: BareState) -> dict[str, Any]:
        reply = await bound.ainvoke([SystemMessage(prompt), *state["messages"]])
        return {"messages": [reply]}

    async def route(state: BareState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    specialist = StateGraph(BareState)
    specialist.add_node("respond", respond)
    specialist.add_node("tools", ToolNode([lookup_order]))
    specialist.add_edge(START, "respond")
    specialist.add_conditional_edges("respond", route, ["tools", END])
    specialist.add_edge("tools", "respond")
    graph = StateGraph(BareState)
    graph.add_node("order_agent", specialist.compile(name="order_agent"))
    graph.add_edge(START, "order_agent")
    graph.add_edge("order_agent", END)
    return graph.compile(checkpointer=checkpointer, name="bare")


class BareRunner:
    """The bare graph on its own database; `turn` times one message as the engine's is."""

    def __init__(self, graph: Any, model: TimedDemoModel) -> None:
        self.graph = graph
        self.model = model

    async def turn(self, thread: str, text: str) -> tuple[float, float, int]:
        """(wall seconds, seconds inside the model, model calls) for one message."""
        self.model.clock.reset()
        start = time.perf_counter()
        state = await self.graph.ainvoke(
            {"messages": [HumanMessage(content=text)]},
            {"configurable": {"thread_id": thread}},
            durability="exit",
        )
        wall = time.perf_counter() - start
        if not isinstance(state["messages"][-1], AIMessage) or not state["messages"][-1].text:
            raise AssertionError("the bare graph ended without an answer")
        return wall, self.model.clock.inside, self.model.clock.calls


@asynccontextmanager
async def bare_runner(home: Path) -> AsyncIterator[BareRunner]:
    model = TimedDemoModel()
    connection, saver = await open_checkpoints(home / "bare.sqlite")
    try:
        yield BareRunner(build_bare_graph(model, saver), model)
    finally:
        await connection.close()
