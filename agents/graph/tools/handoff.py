"""Hand-offs: a specialist passes the conversation to another one directly, swarm style."""

from __future__ import annotations

from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.types import Command

from agents.graph.history import HANDOFF_PREFIX
from agents.names import AGENT_TITLES, AGENTS


def handoff_tool_name(target: str) -> str:
    return f"{HANDOFF_PREFIX}{target}"


def make_handoff_tool(target: str) -> BaseTool:
    """A `transfer_to_<target>` tool returning `Command(goto=target, graph=Command.PARENT)`."""

    # No parameters and no description: every answering call carries two of these, and the
    # name says where it goes while the agent's prompt says what its colleagues handle.
    @tool(handoff_tool_name(target), description="")
    def transfer(runtime: ToolRuntime[Any, Any]) -> Command[str]:
        answer = ToolMessage(
            content=f"The conversation is now with the {AGENT_TITLES[target]}.",
            tool_call_id=runtime.tool_call_id or "",
            name=handoff_tool_name(target),
        )
        state = runtime.state
        # A Command to the parent carries only its `update`: the assistant message holding
        # this call must travel with it, or the parent keeps an unanswered tool message.
        return Command(
            goto=target,
            graph=Command.PARENT,
            update={
                "messages": [*state["messages"], answer],
                "active_agent": target,
                "handoffs": state.get("handoffs", 0) + 1,
                # (The specialist taken to starts afresh: the turn's decisions go with it.)
                "refund_decisions": state.get("refund_decisions") or {},
                "corrections": state.get("corrections", 0),
                "tool_rounds": state.get("tool_rounds", 0),
            },
        )

    return transfer


HANDOFF_TOOLS: dict[str, BaseTool] = {agent: make_handoff_tool(agent) for agent in AGENTS}


def handoffs_from(agent: str) -> list[BaseTool]:
    """The hand-off tools an agent may use: to every other specialist."""
    return [HANDOFF_TOOLS[target] for target in AGENTS if target != agent]
