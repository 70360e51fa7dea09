"""Running one tool call the way LangChain's ToolNode would (the runtime injected)."""

from __future__ import annotations

from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.messages.tool import ToolCall
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.runtime import Runtime

from agents.graph.context import ShopContext
from agents.graph.state import SpecialistState


def tool_runtime(
    state: SpecialistState, runtime: Runtime[ShopContext], call: ToolCall
) -> ToolRuntime[ShopContext, SpecialistState]:
    """What ToolNode would inject into a tool's `runtime` parameter."""
    return ToolRuntime(
        state=state,
        context=runtime.context,
        config=get_config(),
        stream_writer=runtime.stream_writer,
        tool_call_id=call["id"],
        store=runtime.store,
    )


async def invoke_tool(
    tool: BaseTool,
    call: ToolCall,
    args: dict[str, Any],
    state: SpecialistState,
    runtime: Runtime[ShopContext],
) -> ToolMessage:
    """`tool` on `args`, its answer as a ToolMessage (a sync tool runs in LangChain's
    executor: the one thread hop of a tool turn, gates and shop reads included)."""
    injected = {**args, "runtime": tool_runtime(state, runtime, call)}
    result = await tool.ainvoke(
        {"type": "tool_call", "name": tool.name, "args": injected, "id": call["id"]}
    )
    assert isinstance(result, ToolMessage)
    return result
