"""Running one tool call the way LangChain's ToolNode would, with failures as guidance."""

from __future__ import annotations

from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.messages.tool import ToolCall
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime

from agents.events import StepChanged, ToolCalled
from agents.graph.context import ShopContext
from agents.graph.history import tool_answer
from agents.graph.reporting import report
from agents.graph.state import SpecialistState
from agents.safety.redaction import redact


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


async def run_tool(
    agent: str,
    tool: BaseTool,
    call: ToolCall,
    args: dict[str, Any],
    state: SpecialistState,
    runtime: Runtime[ShopContext],
    *,
    strict: bool = False,
) -> ToolMessage:
    """Run `tool` on `args` (the validated ones). An exception becomes short guidance for the
    model and a `tool_failed` audit event; a hand-off or an interrupt passes through.
    `strict`: the exception is raised after its audit event instead (a payment that failed
    is the caller's to handle, never a suggestion to the model)."""
    report(runtime, StepChanged(agent=agent, step="calling_tool", detail=tool.name))
    injected = {**args, "runtime": tool_runtime(state, runtime, call)}
    try:
        result = await tool.ainvoke(
            {"type": "tool_call", "name": tool.name, "args": injected, "id": call["id"]}
        )
    except GraphBubbleUp:
        raise
    except Exception as exc:
        guidance = (
            f"{tool.name} failed ({type(exc).__name__}). Try it once more; if it fails again, "
            "apologise and tell the customer a colleague will follow up."
        )
        report(
            runtime,
            # (Strict: the caller tells the person what failed; no guidance to show.)
            None
            if strict
            else ToolCalled(
                agent,
                tool.name,
                args,
                "failed",
                guidance,
                f"{type(exc).__name__}; the model was told to try it once more.",
            ),
            kind="tool_failed",
            agent=agent,
            detail={
                "tool": tool.name,
                "args": args,
                "error": f"{type(exc).__name__}: {redact(str(exc))}"[:500],
            },
        )
        if strict:
            raise
        return tool_answer(call, guidance, error=True)
    assert isinstance(result, ToolMessage)
    report(
        runtime,
        ToolCalled(agent, tool.name, args, "executed", str(result.content)),
        kind="tool_called",
        agent=agent,
        detail={"tool": tool.name, "args": args, "result": str(result.content)[:500]},
    )
    return result
