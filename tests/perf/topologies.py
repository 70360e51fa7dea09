"""The two designs ShopBot's graph is measured against, built here for the benchmarks only.

- **previous**: ShopBot's own swarm as it was before a tool's arguments were its extraction:
  a structured-output extraction call before a specialist's first domain tool call of a
  turn (the tool's argument schema, `tool_choice="any"`, over the customer's dialogue), the
  tool then run on what was extracted; a failed gate is corrected by extracting again with
  the gate's error (not by the model calling the tool again); the complaints agent's first
  call of a turn is the extraction of its complaint. So an order-status turn is 3 calls:
  the tool call, the extraction, the answer.
- **supervisor**: the reference design (seed 000): a routing call before every specialist
  and after it (START -> supervisor -> specialist -> supervisor -> ... -> FINISH -> END),
  specialists that extract with structured output, gate, then run the tool, and no hand-off
  tools. Its specialists are the previous design's, with only their own tools. Its
  `summarize_node` call (at every FINISH once the history passes 6 messages) is left out,
  which flatters it.

Both reuse ShopBot's nodes (the answering call, the act node with its gates and correction
count, escalation, the questions for a person at the parent graph), so the three differ only
in the model calls they make. `engine_for` runs any of the three in ShopBot's own engine
(same stores, checkpointer and audit log), so every figure is measured the same way.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, fields
from typing import Any, Literal
from unittest.mock import patch

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.tool import ToolCall
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, ValidationError

import agents.graph.parent as parent_graph
import agents.runner.engine as engine_module
from agents.events import StepChanged
from agents.graph.context import RetryBudget, ShopContext
from agents.graph.decisions import ASK_DECISION, AWAIT_DECISION, ask_decision, await_decision
from agents.graph.history import MALFORMED, dialogue_view
from agents.graph.parent import end_turn
from agents.graph.reporting import report
from agents.graph.specialists.answering import (
    _new_message as new_customer_message,
)
from agents.graph.specialists.answering import (
    make_respond,
)
from agents.graph.specialists.endings import make_escalate, make_stop_turn
from agents.graph.specialists.roster import SPECIALISTS
from agents.graph.specialists.spec import SpecialistSpec
from agents.graph.specialists.tool_calls import correction_text, make_act
from agents.graph.state import ShopState, SpecialistState
from agents.models.provider import call_model
from agents.names import AGENTS
from agents.runner.engine import ShopBotEngine
from agents.settings import Settings

Topology = Literal["ours", "previous", "supervisor"]
TOPOLOGIES: tuple[Topology, ...] = ("ours", "previous", "supervisor")

# The previous design's extraction prompts (one per argument schema).
EXTRACTION_PROMPTS: dict[str, str] = {
    "OrderExtraction": "Extract the order ID and the query type from the customer's messages.",
    "OrderReference": "Extract the order ID from the customer's messages.",
    "RefundExtraction": "Extract the order ID and the customer's refund reason from the messages.",
    "ComplaintExtraction": (
        "Extract the complaint summary and the customer's emotional sentiment from the "
        "conversation. Sentiment must be one of: frustrated, angry, neutral, disappointed."
    ),
}

# Seed 000's supervisor prompt, verbatim.
SUPERVISOR_SYSTEM = """You are the ShopBot Supervisor. Your only job is to read
the customer's message and decide which specialist should handle it.
Available specialists:
order_agent - handles order status, delivery date, and product questions
refund_agent - handles refund requests and return eligibility
complaints_agent - handles complaints, frustration, and negative feedback
FINISH - use this only when the conversation is fully resolved
Respond with exactly one word: the name of the specialist, or FINISH."""

_CORRECTION_START, _ = correction_text("{tool}", "|").split("|")


# --- the previous design's specialists ----------------------------------------------------


class ExtractingState(SpecialistState, total=False):
    # The call whose arguments the last extraction wrote, and what it extracted.
    extracted_call: str | None
    extraction: dict[str, Any] | None
    extraction_error: str | None


def _schema(tool: BaseTool) -> type[BaseModel]:
    schema = tool.args_schema
    assert isinstance(schema, type) and issubclass(schema, BaseModel), tool.name
    return schema


class Extractor:
    """A specialist's structured-output calls: the arguments of one of its tools."""

    def __init__(self, spec: SpecialistSpec, model: BaseChatModel) -> None:
        self.spec = spec
        self.tools = {tool.name: tool for tool in spec.domain_tools}
        # What `with_structured_output(schema)` asks Mistral: the schema as the one tool the
        # model must call.
        self.bound = {
            name: model.bind_tools([_schema(tool)], tool_choice="any")
            for name, tool in self.tools.items()
        }

    async def read(
        self,
        tool: str,
        state: ExtractingState,
        runtime: Runtime[ShopContext],
        *,
        correcting: str | None = None,
    ) -> tuple[dict[str, Any], str] | None:
        """(the extracted arguments, the reply's call id), or None when they do not fit."""
        schema = _schema(self.tools[tool])
        prompt = EXTRACTION_PROMPTS[schema.__name__]
        if summary := state.get("summary", ""):
            prompt = f"{prompt}\n\nEarlier in this conversation: {summary}"
        request: list[BaseMessage] = [SystemMessage(prompt), *dialogue_view(state["messages"])]
        if correcting is not None:
            before = json.dumps(state.get("extraction") or {}, ensure_ascii=False)
            request += [
                AIMessage(content=f"Previous extraction: {before}"),
                HumanMessage(
                    "Your previous extraction contained a validation error that must be "
                    f"corrected before we can proceed. The exact error was:\n\n{correcting}\n\n"
                    "Re-read the conversation carefully and extract again, fixing this specific "
                    "error. Do not repeat the same mistake."
                ),
            ]
        report(runtime, StepChanged(agent=self.spec.name, step="extracting"))
        reply = await call_model(self.bound[tool], request, runtime, agent=self.spec.name)
        if not isinstance(reply, AIMessage) or not reply.tool_calls:
            return None
        try:
            found = schema.model_validate(reply.tool_calls[0]["args"]).model_dump()
        except ValidationError:
            return None
        return found, reply.tool_calls[0]["id"] or ""


def _with_args(message: AIMessage, call_id: str, args: Mapping[str, Any]) -> AIMessage:
    """`message` with the arguments of call `call_id` replaced (same message id: replaced in
    the state, not appended)."""
    calls = [
        ToolCall(name=c["name"], args=dict(args), id=c["id"]) if c["id"] == call_id else c
        for c in message.tool_calls
    ]
    return message.model_copy(update={"tool_calls": calls})


def _last_ai(state: ExtractingState) -> AIMessage | None:
    last = state["messages"][-1] if state.get("messages") else None
    return last if isinstance(last, AIMessage) else None


def make_extract(spec: SpecialistSpec, extractor: Extractor) -> Any:
    """Before the first domain tool call of a turn runs: its arguments extracted."""

    async def extract(state: ExtractingState, runtime: Runtime[ShopContext]) -> dict[str, Any]:
        last = _last_ai(state)
        if state.get("validated") or last is None:
            return {}
        call = next(
            (
                c
                for c in last.tool_calls
                if c["name"] in extractor.tools and MALFORMED not in c["args"]
            ),
            None,
        )
        if call is None:
            return {}
        found = await extractor.read(call["name"], state, runtime)
        if found is None:
            return {}
        args, _ = found
        return {
            "messages": [_with_args(last, call["id"] or "", args)],
            "extracted_call": call["id"],
            "extraction": args,
        }

    return extract


def make_file(spec: SpecialistSpec, extractor: Extractor) -> Any:
    """The complaints agent's first call of a turn: the complaint extracted, then filed."""
    (tool,) = extractor.tools

    async def file(state: ExtractingState, runtime: Runtime[ShopContext]) -> Command[str]:
        found = await extractor.read(tool, state, runtime)
        if found is None:
            return Command(goto="respond")
        args, call_id = found
        filing = AIMessage(content="", tool_calls=[ToolCall(name=tool, args=args, id=call_id)])
        return Command(
            goto="act",
            update={"messages": [filing], "extracted_call": call_id, "extraction": args},
        )

    return file


def make_checked_act(spec: SpecialistSpec) -> Any:
    """ShopBot's act node, except that a misread in extracted arguments is corrected by
    extracting again (`correct`), not answered for the model to call the tool again."""
    act = make_act(spec)

    async def checked_act(state: ExtractingState, runtime: Runtime[ShopContext]) -> Command[str]:
        command: Command[str] = await act(state, runtime)
        extracted = state.get("extracted_call")
        if command.graph is not None or command.goto != "respond" or not extracted:
            return command
        update = dict(command.update or {})
        answers = list(update.get("messages", []))
        sent_back = next(
            (
                m
                for m in answers
                if isinstance(m, ToolMessage)
                and m.tool_call_id == extracted
                and str(m.content).startswith(_CORRECTION_START)
            ),
            None,
        )
        if sent_back is None:
            return command
        error = str(sent_back.content).removeprefix(_CORRECTION_START)
        error = error.removesuffix(f" Call {sent_back.name} again with the corrected value.")
        update["messages"] = [m for m in answers if m is not sent_back]
        return Command(goto="correct", update={**update, "extraction_error": error})

    return checked_act


def make_correct(spec: SpecialistSpec, extractor: Extractor) -> Any:
    async def correct(state: ExtractingState, runtime: Runtime[ShopContext]) -> dict[str, Any]:
        call_id = state.get("extracted_call") or ""
        last = next(
            m
            for m in reversed(state["messages"])
            if isinstance(m, AIMessage) and any(c["id"] == call_id for c in m.tool_calls)
        )
        call = next(c for c in last.tool_calls if c["id"] == call_id)
        found = await extractor.read(
            call["name"], state, runtime, correcting=state.get("extraction_error") or ""
        )
        args = found[0] if found is not None else {}
        return {"messages": [_with_args(last, call_id, args)], "extraction": args}

    return correct


async def _route_start(state: ExtractingState) -> str:
    return "file" if new_customer_message(state) else "respond"


def build_extracting_specialist(spec: SpecialistSpec, model: BaseChatModel) -> Any:
    """START -> respond -> extract -> act -> respond -> END (orders and refunds);
    START -> file -> act -> ... (complaints, on a new message); act -> correct -> act."""
    graph = StateGraph(
        ExtractingState,
        context_schema=ShopContext,
        input_schema=ShopState,
        output_schema=ShopState,
    )
    extractor = Extractor(spec, model)
    graph.add_node(
        "respond", make_respond(spec, model, tool_step="extract"), destinations=("extract", END)
    )
    graph.add_node("extract", make_extract(spec, extractor))
    graph.add_node(
        "act", make_checked_act(spec), destinations=("respond", "correct", "escalate", "stop_turn")
    )
    graph.add_node("correct", make_correct(spec, extractor))
    graph.add_node("escalate", make_escalate(spec))
    graph.add_node("stop_turn", make_stop_turn(spec))
    if spec.review == "complaint":
        graph.add_node("file", make_file(spec, extractor), destinations=("act", "respond"))
        graph.add_conditional_edges(START, _route_start, ["file", "respond"])
    else:
        graph.add_edge(START, "respond")
    graph.add_edge("extract", "act")
    graph.add_edge("correct", "act")
    graph.add_edge("escalate", END)
    graph.add_edge("stop_turn", END)
    return graph.compile(name=spec.name)


def build_previous_graph(
    model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any] | None
) -> Any:
    """ShopBot's parent graph (hand-offs, summaries, questions for a person) over the
    extracting specialists."""
    with patch.object(parent_graph, "build_specialist", build_extracting_specialist):
        return parent_graph.build_graph(model, checkpointer)


# --- the reference supervisor -------------------------------------------------------------


@dataclass(frozen=True)
class SupervisedSpec(SpecialistSpec):
    """A specialist of the reference design: its own tools only, no hand-off tools."""

    @property
    def handoff_tools(self) -> list[BaseTool]:
        return []


def supervised(spec: SpecialistSpec) -> SupervisedSpec:
    return SupervisedSpec(**{f.name: getattr(spec, f.name) for f in fields(spec)})


class SupervisorState(ShopState, total=False):
    next_agent: str


def route_name(decision: str) -> str:
    """The reference's normalisation of the supervisor's one-word answer."""
    decision = decision.strip().lower()
    if "refund" in decision:
        return "refund_agent"
    if "complaint" in decision or "frustrated" in decision:
        return "complaints_agent"
    if "order" in decision:
        return "order_agent"
    if "finish" in decision:
        return "FINISH"
    return "order_agent"


def build_supervisor_graph(
    model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any] | None
) -> Any:
    async def supervisor(state: SupervisorState, runtime: Runtime[ShopContext]) -> dict[str, Any]:
        reply = await model.ainvoke([SystemMessage(SUPERVISOR_SYSTEM), *state["messages"]])
        return {"next_agent": route_name(str(reply.content))}

    async def route(state: SupervisorState) -> str:
        agent = state.get("next_agent", "order_agent")
        return END if agent == "FINISH" else agent

    def back_to_supervisor(state: SupervisorState) -> str:
        # A specialist that asked a person went to ask_decision (its Command): not also here.
        return END if state.get("awaiting") else "supervisor"

    async def aback_to_supervisor(state: SupervisorState) -> str:
        return back_to_supervisor(state)

    # Both kinds: LangGraph routes a subgraph's Command to the parent synchronously, and any
    # other way it would hand a plain function to a worker thread.
    after_specialist = RunnableLambda(back_to_supervisor, afunc=aback_to_supervisor)

    async def await_then_supervisor(
        state: SupervisorState, runtime: Runtime[ShopContext]
    ) -> Command[str]:
        # After a person's decision the reference returns to the supervisor, as after any
        # specialist (ShopBot's graph ends the turn there).
        command: Command[str] = await await_decision(state, runtime)
        if command.goto == END:
            return Command(goto="supervisor", update=command.update)
        return command

    graph = StateGraph(SupervisorState, context_schema=ShopContext)
    graph.add_node("supervisor", supervisor)
    for spec in SPECIALISTS:
        graph.add_node(
            spec.name,
            build_extracting_specialist(supervised(spec), model),
            destinations=("supervisor", ASK_DECISION),
        )
        graph.add_conditional_edges(spec.name, after_specialist, ["supervisor", END])
    graph.add_node(ASK_DECISION, ask_decision)
    graph.add_node(
        AWAIT_DECISION,
        await_then_supervisor,
        destinations=(AWAIT_DECISION, "supervisor", *AGENTS),
    )
    # The engine closes a turn that was cut short "as" this node.
    graph.add_node("end_turn", end_turn)
    graph.add_edge(START, "supervisor")
    graph.add_conditional_edges("supervisor", route, [*AGENTS, END])
    graph.add_edge(ASK_DECISION, AWAIT_DECISION)
    graph.add_edge("end_turn", END)
    return graph.compile(checkpointer=checkpointer, name="reference_supervisor")


# --- running any of them in ShopBot's engine ----------------------------------------------

GraphBuilder = Callable[[BaseChatModel, BaseCheckpointSaver[Any] | None], Any]
BUILDERS: dict[Topology, GraphBuilder] = {
    "ours": parent_graph.build_graph,
    "previous": build_previous_graph,
    "supervisor": build_supervisor_graph,
}


@asynccontextmanager
async def engine_for(
    topology: Topology, settings: Settings, model: BaseChatModel
) -> AsyncIterator[ShopBotEngine]:
    """ShopBot's engine (its stores, checkpointer, audit log) running `topology`'s graph."""
    engine = ShopBotEngine(settings, model=model, retry=RetryBudget(attempts=1))
    with patch.object(engine_module, "build_graph", BUILDERS[topology]):
        await engine.start()
    try:
        yield engine
    finally:
        await engine.aclose()
