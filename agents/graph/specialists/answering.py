"""The answering call: the specialist talks to the customer or asks for a tool."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_chunk_to_message,
)
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command, StreamWriter

from agents.events import ReplyDone, StepChanged, TokenDelta, to_wire
from agents.graph.context import ShopContext
from agents.graph.history import HANDOFF_PREFIX, storable_reply, text_of, without_handoffs
from agents.graph.other_orders import other_orders_in_turn
from agents.graph.prompts import specialist_prompt
from agents.graph.reporting import close_turn, report
from agents.graph.specialists.endings import close_complaint, fail_turn
from agents.graph.specialists.spec import SpecialistSpec
from agents.graph.state import SpecialistState
from agents.models.provider import ProviderUnavailable, call_model

# What we say when a model returns neither text nor a tool call: Mistral would reject an
# empty assistant message in the next request, and the customer deserves an answer.
EMPTY_REPLY_FALLBACK = "I'm sorry, I didn't quite catch that. Could you tell me a bit more?"


def tool_schemas(tools: Sequence[BaseTool]) -> list[dict[str, Any]]:
    """The tools as a request carries them. A description left empty (the hand-offs') is left
    out, as Mistral's API allows, rather than sent as "" in every answering call."""
    schemas = [convert_to_openai_tool(tool) for tool in tools]
    for schema in schemas:
        if not schema["function"].get("description"):
            schema["function"].pop("description", None)
    return schemas


def make_respond(spec: SpecialistSpec, model: BaseChatModel, *, tool_step: str = "act") -> Any:
    """The answering node; a reply with tool calls goes on to `tool_step`, any other ends the
    specialist's run. It says where itself (a `Command`): a router after it cost a copy of
    every channel of the state, which LangGraph makes to show a router the node's writes."""
    schemas = tool_schemas(spec.tools)
    answering_model = model.bind_tools(schemas, parallel_tool_calls=False)
    # The complaints agent files the complaint (or hands the customer on) before it says
    # anything: whether a person reviews it depends on the sentiment it files.
    filing_model = (
        model.bind_tools(schemas, tool_choice="any", parallel_tool_calls=False)
        if spec.review == "complaint"
        else answering_model
    )

    async def respond(state: SpecialistState, runtime: Runtime[ShopContext]) -> Command[str]:
        report(runtime, StepChanged(agent=spec.name, step="answering"))
        validated = state.get("validated")
        system = specialist_prompt(
            spec.name,
            customer=runtime.context.customer,
            summary=state.get("summary", ""),
            validated=validated,
        )
        # Streamed through the custom stream (not LangGraph's "messages" mode, which hooks
        # every runnable of the graph to find the few tokens a customer should see).
        try:
            streamed = await call_model(
                answering_model if validated or not _new_message(state) else filing_model,
                [SystemMessage(system), *without_handoffs(state["messages"])],
                runtime,
                agent=spec.name,
                on_text=lambda piece: runtime.stream_writer(to_wire(TokenDelta(spec.name, piece))),
            )
        except ProviderUnavailable as exc:
            return Command(goto=END, update=fail_turn(runtime, spec.name, state["messages"], exc))
        reply = message_chunk_to_message(streamed)
        assert isinstance(reply, AIMessage)
        # (Redacted: a key the model repeats reaches no store, nor the text the screen keeps.)
        reply = storable_reply(reply)
        if reply.tool_calls:
            return Command(goto=tool_step, update={"messages": [reply]})
        if not text_of(reply).strip():
            reply = AIMessage(content=EMPTY_REPLY_FALLBACK, id=reply.id)
        if spec.works_on_orders:
            reply = naming_other_orders(reply, state, runtime.stream_writer, spec.name)
        report(runtime, ReplyDone(agent=spec.name, text=text_of(reply)))
        if spec.review == "complaint" and validated:
            handed_back = close_complaint(runtime, spec.name)
            close_turn(runtime, agent=handed_back["active_agent"], status="done")
            return Command(goto=END, update={"messages": [reply], **handed_back})
        close_turn(runtime, agent=spec.name, status="done")
        return Command(goto=END, update={"messages": [reply]})

    return respond


def _new_message(state: SpecialistState) -> bool:
    """Whether the customer's latest message has had no tool answered since (hand-offs
    aside): the complaints agent files it (or hands it on) before it says anything."""
    for message in reversed(state.get("messages") or []):
        if isinstance(message, HumanMessage):
            return True
        if isinstance(message, ToolMessage) and not (message.name or "").startswith(HANDOFF_PREFIX):
            return False
    return False


def naming_other_orders(
    reply: AIMessage, state: SpecialistState, write: StreamWriter, agent: str
) -> AIMessage:
    """`reply` (a final one) ending with the sentence that names the orders the customer's
    latest message named and this turn did not answer (see other_orders.py). The sentence is
    streamed like the model's words, so the screen, the stored reply and `ReplyDone` agree."""
    text = text_of(reply)
    sentence = other_orders_in_turn(state, text)
    if not sentence:
        return reply
    addition = f"\n\n{sentence}"
    write(to_wire(TokenDelta(agent, addition)))
    return reply.model_copy(update={"content": text + addition})
