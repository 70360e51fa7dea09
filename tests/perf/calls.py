"""Section 1: model calls and prompt tokens per scenario, our swarm beside the reference supervisor.

Both topologies run the *same specialist subgraphs* (`build_specialist` over `SPECIALISTS`)
against the *same scripted answers*. The answers come from a `Responder` played through
`ScriptedChatModel` (which records every request with its prompt-token estimate):

- a specialist's answering call gets the next scripted answer *for that agent* (the agent
  is read from its system prompt), an extraction gets the next scripted extraction *for that
  schema*; so whichever topology asks, the same question gets the same answer;
- the supervisor's routing call (seed 000's prompt) gets the next scripted route name;
- hand-off answers (`transfer_to_*`) are asked for only in the swarm; the supervisor
  topology routes instead, and its specialists carry only their own domain tools, as in the
  reference (so its specialist prompts are smaller than ours: the comparison is conservative).

The reference topology is built here, not in the engine: START -> supervisor ->
{order,refund,complaints}_agent -> supervisor -> ... -> FINISH -> END. The reference's extra
`summarize_node` call (every FINISH once the history has more than 6 messages) is left out,
which flatters the supervisor: its real cost is higher than what this table shows.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command

from agents.audit.log import AuditLog, AuditQuery
from agents.facade import ShopBotEngine
from agents.graph.context import RetryBudget, ShopContext
from agents.graph.services import SERVICES_KEY, Services
from agents.graph.specialists.build import build_specialist
from agents.graph.specialists.roster import SPECIALISTS
from agents.graph.specialists.spec import RECURSION_LIMIT, SpecialistSpec
from agents.graph.state import ShopState
from agents.names import AGENTS
from agents.settings import Settings
from agents.store.shop import ShopData
from tests.perf.common import Progress, Row, median, temp_home
from tests.support.scripted_model import Request, ScriptedChatModel, call, extract, say

SECTION = "calls"

# Seed 000's supervisor prompt, verbatim.
SUPERVISOR_SYSTEM = """You are the ShopBot Supervisor. Your only job is to read
the customer's message and decide which specialist should handle it.
Available specialists:
order_agent - handles order status, delivery date, and product questions
refund_agent - handles refund requests and return eligibility
complaints_agent - handles complaints, frustration, and negative feedback
FINISH - use this only when the conversation is fully resolved
Respond with exactly one word: the name of the specialist, or FINISH."""

# Which specialist is answering, told by the tools it was given (prompts change wording;
# each specialist's own tools do not).
_TOOL_MARKS = (("lookup_order", "order_agent"), ("process_refund", "refund_agent"))

Topology = Literal["swarm", "supervisor"]
REASON = "the left earcup stopped working"


@dataclass(frozen=True)
class Scenario:
    name: str
    label: str
    customer: str
    # ("say", text) or ("decide", option), in order.
    turns: tuple[tuple[str, str], ...]
    answers: dict[str, list[AIMessage]]
    extractions: dict[str, list[AIMessage]]
    routes: tuple[str, ...]
    # Tool executions both topologies must perform (a check that they did the same work).
    tools: tuple[str, ...]
    plain_order_status: bool = False


def _transfer(target: str, reason: str) -> AIMessage:
    return call(f"transfer_to_{target}", reason=reason)


def scenarios() -> list[Scenario]:
    order_extraction = extract("OrderExtraction", order_id="ORD-001", query_type="status")
    refund_extraction = extract("RefundExtraction", order_id="ORD-001", reason=REASON)
    # As the refund agent's prompt asks: process_refund directly (the gates check it).
    refund_answers = [call("process_refund", order_id="ORD-001", reason=REASON)]
    return [
        Scenario(
            name="order_status",
            label="order status",
            customer="Alex",
            turns=(("say", "Where is my order ORD-001?"),),
            answers={
                "order_agent": [
                    call("lookup_order", order_id="ORD-001"),
                    say("Your Wireless Headphones were delivered on 2025-06-10."),
                ]
            },
            extractions={"OrderExtraction": [order_extraction]},
            routes=("order_agent", "FINISH"),
            tools=("lookup_order",),
            plain_order_status=True,
        ),
        Scenario(
            name="refund_approved",
            label="refund approved",
            customer="Alex",
            turns=(("say", f"I want a refund for ORD-001, {REASON}"), ("decide", "approve")),
            answers={
                "order_agent": [_transfer("refund_agent", "refund request")],
                "refund_agent": [*refund_answers, say("Your refund was approved and processed.")],
            },
            extractions={"RefundExtraction": [refund_extraction]},
            routes=("refund_agent", "FINISH"),
            tools=("process_refund",),
        ),
        Scenario(
            name="refund_rejected",
            label="refund rejected",
            customer="Alex",
            turns=(("say", f"I want a refund for ORD-001, {REASON}"), ("decide", "reject")),
            answers={
                "order_agent": [_transfer("refund_agent", "refund request")],
                "refund_agent": [*refund_answers, say("I'm sorry, the refund was not approved.")],
            },
            extractions={"RefundExtraction": [refund_extraction]},
            routes=("refund_agent", "FINISH"),
            tools=(),
        ),
        Scenario(
            name="hallucinated_id",
            label="hallucinated id corrected",
            customer="Alex",
            turns=(("say", "Status of ORD-001 please"),),
            answers={"order_agent": [call("lookup_order", order_id="ORD-001"), say("Delivered.")]},
            extractions={
                "OrderExtraction": [
                    extract("OrderExtraction", order_id="ORD-0O1", query_type="status"),
                    order_extraction,
                ]
            },
            routes=("order_agent", "FINISH"),
            tools=("lookup_order",),
        ),
        Scenario(
            name="handoff_refund_to_orders",
            label="hand-off refunds→orders",
            customer="Sam",
            turns=(
                ("say", "I'd like a refund for ORD-002, it is the wrong colour"),
                ("say", "Oh, it is not delivered yet? Where is ORD-002 now?"),
            ),
            answers={
                "order_agent": [
                    _transfer("refund_agent", "refund request"),
                    call("lookup_order", order_id="ORD-002"),
                    say("ORD-002 is in transit, expected on 2025-06-18."),
                ],
                "refund_agent": [
                    call("check_refund_eligibility", order_id="ORD-002"),
                    say("ORD-002 is not delivered yet, so it cannot be refunded yet."),
                    _transfer("order_agent", "order status question"),
                ],
            },
            extractions={
                "RefundExtraction": [
                    extract("RefundExtraction", order_id="ORD-002", reason="it is the wrong colour")
                ],
                "OrderExtraction": [
                    extract("OrderExtraction", order_id="ORD-002", query_type="status")
                ],
            },
            routes=("refund_agent", "FINISH", "order_agent", "FINISH"),
            tools=("lookup_order",),
        ),
        Scenario(
            name="angry_complaint",
            label="angry complaint",
            customer="Alex",
            turns=(
                ("say", "Two weeks late and NOBODY answers my e-mails. Unacceptable!"),
                ("decide", "escalate_to_senior"),
            ),
            answers={"order_agent": [_transfer("complaints_agent", "complaint")]},
            extractions={
                "ComplaintExtraction": [
                    extract(
                        "ComplaintExtraction",
                        issue_summary="Parcel two weeks late and no answer to e-mails",
                        sentiment="angry",
                    )
                ]
            },
            routes=("complaints_agent", "FINISH"),
            tools=(),
        ),
    ]


class Responder:
    """Answers each request from the scenario's script, by who asks and what for."""

    def __init__(self, scenario: Scenario, topology: Topology) -> None:
        self.topology = topology
        answers = {
            agent: [m for m in script if topology == "swarm" or not _is_transfer(m)]
            for agent, script in scenario.answers.items()
        }
        self.queues: dict[str, list[AIMessage]] = {
            **{f"answer:{agent}": list(script) for agent, script in answers.items()},
            **{
                f"extract:{schema}": list(script) for schema, script in scenario.extractions.items()
            },
        }
        self.routes = list(scenario.routes) if topology == "supervisor" else []
        # Per request: who asked ("supervisor", an agent, or "extract:<schema>").
        self.asked: list[str] = []

    def __call__(self, request: Request) -> AIMessage:
        system = request.messages[0].content if request.messages else ""
        if isinstance(system, str) and system.startswith("You are the ShopBot Supervisor"):
            self.asked.append("supervisor")
            if not self.routes:
                raise AssertionError("the supervisor was consulted more often than scripted")
            return AIMessage(content=self.routes.pop(0))
        if request.is_extraction:
            key = f"extract:{request.tool_names[0]}"
        else:
            agent = next(
                (a for tool, a in _TOOL_MARKS if tool in request.tool_names), "complaints_agent"
            )
            key = f"answer:{agent}"
        self.asked.append(key)
        queue = self.queues.get(key)
        if not queue:
            raise AssertionError(f"{self.topology}: no scripted answer left for {key}")
        return queue.pop(0)

    def leftovers(self) -> dict[str, int]:
        left = {key: len(queue) for key, queue in self.queues.items() if queue}
        if self.routes:
            left["routes"] = len(self.routes)
        return left


def _is_transfer(message: AIMessage) -> bool:
    return any(c["name"].startswith("transfer_to_") for c in message.tool_calls)


# --- the reference supervisor topology ----------------------------------------------------


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


def _route_name(decision: str) -> str:
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


def build_supervisor_graph(model: BaseChatModel) -> Any:
    async def supervisor(state: SupervisorState, runtime: Runtime[ShopContext]) -> dict[str, Any]:
        reply = await model.ainvoke([SystemMessage(SUPERVISOR_SYSTEM), *state["messages"]])
        return {"next_agent": _route_name(str(reply.content))}

    def route(state: SupervisorState) -> str:
        agent = state.get("next_agent", "order_agent")
        return END if agent == "FINISH" else agent

    graph = StateGraph(SupervisorState, context_schema=ShopContext)
    graph.add_node("supervisor", supervisor)
    for spec in SPECIALISTS:
        graph.add_node(spec.name, build_specialist(supervised(spec), model))
        graph.add_edge(spec.name, "supervisor")
    graph.add_edge(START, "supervisor")
    graph.add_conditional_edges("supervisor", route, [*AGENTS, END])
    return graph.compile(checkpointer=InMemorySaver(), name="reference_supervisor")


# --- running a scenario -------------------------------------------------------------------


@dataclass
class ScenarioRun:
    topology: Topology
    scenario: str
    calls_per_turn: list[int] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return sum(self.calls_per_turn)


def _model(responder: Responder, steps: int = 64) -> ScriptedChatModel:
    return ScriptedChatModel().script(*([responder] * steps))


def _tools_run(audit: AuditLog, thread: str) -> list[str]:
    events = reversed(audit.page(AuditQuery(thread_id=thread, kinds=("tool_called",)), limit=100))
    return [str(event.detail["tool"]) for event in events]


async def run_swarm(scenario: Scenario, home: Path) -> ScenarioRun:
    responder = Responder(scenario, "swarm")
    model = _model(responder)
    run = ScenarioRun("swarm", scenario.name)
    settings = Settings(home=home, force_offline=True)
    async with ShopBotEngine(settings, model=model, retry=RetryBudget(attempts=1)) as engine:
        for kind, text in scenario.turns:
            before = len(model.requests)
            if kind == "say":
                result = await engine.send(scenario.name, text, customer=scenario.customer)
            else:
                result = await engine.decide(scenario.name, text)
            if result.status == "error":
                raise AssertionError(f"swarm {scenario.name}: {result.error}")
            run.calls_per_turn.append(len(model.requests) - before)
            run.replies.append(result.reply)
        run.tools = _tools_run(engine.audit, scenario.name)
    run.prompt_tokens = [r.prompt_tokens for r in model.requests]
    run.asked = responder.asked
    _check_complete(responder, scenario, run)
    return run


async def run_supervisor(scenario: Scenario, home: Path) -> ScenarioRun:
    responder = Responder(scenario, "supervisor")
    model = _model(responder)
    run = ScenarioRun("supervisor", scenario.name)
    graph = build_supervisor_graph(model)
    settings = Settings(home=home, force_offline=True)
    shop = ShopData(settings.database_path)
    audit = AuditLog(settings.database_path)
    context = ShopContext(customer=scenario.customer)
    services = Services(shop, audit, RetryBudget(attempts=1))
    config: dict[str, Any] = {
        "configurable": {"thread_id": scenario.name, SERVICES_KEY: services},
        "recursion_limit": RECURSION_LIMIT,
    }
    try:
        for kind, text in scenario.turns:
            before = len(model.requests)
            graph_input: Any = (
                {"messages": [HumanMessage(content=text)]}
                if kind == "say"
                else Command(resume=text)
            )
            state = await graph.ainvoke(graph_input, config, context=context)
            run.calls_per_turn.append(len(model.requests) - before)
            last = state["messages"][-1] if state.get("messages") else None
            run.replies.append(str(last.content) if isinstance(last, AIMessage) else "")
        run.tools = _tools_run(audit, scenario.name)
    finally:
        shop.close()
        audit.close()
    run.prompt_tokens = [r.prompt_tokens for r in model.requests]
    run.asked = responder.asked
    _check_complete(responder, scenario, run)
    return run


def _check_complete(responder: Responder, scenario: Scenario, run: ScenarioRun) -> None:
    if left := responder.leftovers():
        raise AssertionError(f"{run.topology} {scenario.name}: script not used up: {left}")
    if tuple(run.tools) != scenario.tools:
        raise AssertionError(
            f"{run.topology} {scenario.name}: ran tools {run.tools}, expected {scenario.tools}"
        )


# --- the rows -----------------------------------------------------------------------------

CALL_RATIO_TARGET = 0.8
ORDER_STATUS_MAX_CALLS = 3


async def measure(quick: bool, progress: Progress) -> tuple[list[Row], dict[str, Any]]:
    """Every scenario in both topologies (deterministic: one run each is exact)."""
    del quick  # counts are exact; there is nothing to shorten
    runs: dict[str, dict[Topology, ScenarioRun]] = defaultdict(dict)
    for scenario in scenarios():
        progress(f"calls: {scenario.name}")
        with temp_home("calls-swarm") as home:
            runs[scenario.name]["swarm"] = await run_swarm(scenario, home)
        with temp_home("calls-sup") as home:
            runs[scenario.name]["supervisor"] = await run_supervisor(scenario, home)

    rows: list[Row] = []
    for scenario in scenarios():
        ours, ref = runs[scenario.name]["swarm"], runs[scenario.name]["supervisor"]
        rows.append(
            Row(
                SECTION,
                f"calls.{scenario.name}",
                f"calls: {scenario.label} (ours / supervisor)",
                ours.calls / ref.calls,
                "x",
                target=CALL_RATIO_TARGET,
                note=(
                    f"{ours.calls} vs {ref.calls} calls; per turn {ours.calls_per_turn} vs "
                    f"{ref.calls_per_turn}; tokens {sum(ours.prompt_tokens):,} vs "
                    f"{sum(ref.prompt_tokens):,}"
                ),
                extra={
                    "ours": _run_json(ours),
                    "supervisor": _run_json(ref),
                    "per_scenario_target_informational": True,
                },
            )
        )
    ours_all = [runs[s.name]["swarm"] for s in scenarios()]
    ref_all = [runs[s.name]["supervisor"] for s in scenarios()]
    ours_calls = sum(r.calls for r in ours_all)
    ref_calls = sum(r.calls for r in ref_all)
    rows.append(
        Row(
            SECTION,
            "calls.suite_ratio",
            "calls: whole suite (ours / supervisor)",
            ours_calls / ref_calls,
            "x",
            target=CALL_RATIO_TARGET,
            note=f"{ours_calls} vs {ref_calls} model calls",
        )
    )
    plain = next(s for s in scenarios() if s.plain_order_status)
    rows.append(
        Row(
            SECTION,
            "calls.order_status_sequential",
            "sequential calls: plain order-status turn",
            float(runs[plain.name]["swarm"].calls_per_turn[0]),
            "calls",
            target=ORDER_STATUS_MAX_CALLS,
            note=f"supervisor: {runs[plain.name]['supervisor'].calls_per_turn[0]}",
        )
    )
    ours_tokens = [t for r in ours_all for t in r.prompt_tokens]
    ref_tokens = [t for r in ref_all for t in r.prompt_tokens]
    ref_median = median(ref_tokens)
    rows.append(
        Row(
            SECTION,
            "tokens.per_call_median",
            "prompt tokens per call, median (suite)",
            median(ours_tokens),
            "tokens",
            target=ref_median,
            note=f"supervisor topology: {ref_median:,.0f}",
            extra={"ours_all": ours_tokens, "supervisor_all": ref_tokens},
        )
    )
    # Like for like: the calls a specialist makes (answering, extraction, correction), in
    # both topologies; the supervisor's routing calls are left out of its side.
    ref_specialist = [
        t
        for r in ref_all
        for t, who in zip(r.prompt_tokens, r.asked, strict=True)
        if who != "supervisor"
    ]
    rows.append(
        Row(
            SECTION,
            "tokens.per_specialist_call_median",
            "prompt tokens per specialist call, median",
            median(ours_tokens),
            "tokens",
            target=median(ref_specialist),
            note=(
                f"supervisor topology's specialists: {median(ref_specialist):,.0f} "
                "(their own tools only, no hand-off tools)"
            ),
        )
    )
    answering = [
        t
        for r in ours_all
        for t, who in zip(r.prompt_tokens, r.asked, strict=True)
        if who.startswith("answer:")
    ]
    handoff_schema = handoff_schema_tokens()
    rows.append(
        Row(
            SECTION,
            "tokens.handoff_schemas",
            "hand-off tool schemas in each answering call",
            float(handoff_schema),
            "tokens",
            note=(
                f"{handoff_schema / median(answering):.0%} of a median answering call "
                f"({median(answering):,.0f} tokens; {len(answering)} answering calls in the suite)"
            ),
        )
    )
    rows.append(
        Row(
            SECTION,
            "tokens.suite_total",
            "prompt tokens, whole suite (ours)",
            float(sum(ours_tokens)),
            "tokens",
            target=float(sum(ref_tokens)),
            note=f"supervisor topology: {sum(ref_tokens):,}",
        )
    )
    detail = {
        name: {topology: _run_json(run) for topology, run in by_topology.items()}
        for name, by_topology in runs.items()
    }
    return rows, detail


def handoff_schema_tokens() -> int:
    """What the two `transfer_to_*` tool schemas add to every answering call (chars/4)."""
    from agents.graph.specialists.answering import tool_schemas
    from agents.models.offline.local_model import estimate_tokens

    return estimate_tokens(json.dumps(tool_schemas(SPECIALISTS[0].handoff_tools)))


def _run_json(run: ScenarioRun) -> dict[str, Any]:
    return {
        "calls": run.calls,
        "calls_per_turn": run.calls_per_turn,
        "prompt_tokens": run.prompt_tokens,
        "prompt_tokens_total": sum(run.prompt_tokens),
        "prompt_tokens_median": median(run.prompt_tokens),
        "asked": run.asked,
        "tools": run.tools,
        "replies": run.replies,
    }


def per_scenario_table(detail: dict[str, Any]) -> list[str]:
    """A markdown table of the scenario figures (printed under the main table)."""
    lines = [
        "| scenario | calls ours | calls supervisor | ratio | per turn ours | per turn sup. "
        "| tokens/call median ours | sup. | tokens total ours | sup. |",
        "|---|---:|---:|---:|---|---|---:|---:|---:|---:|",
    ]
    labels = {s.name: s.label for s in scenarios()}
    for name, runs in detail.items():
        ours, ref = runs["swarm"], runs["supervisor"]
        lines.append(
            f"| {labels.get(name, name)} | {ours['calls']} | {ref['calls']} "
            f"| {ours['calls'] / ref['calls']:.2f} | {ours['calls_per_turn']} "
            f"| {ref['calls_per_turn']} | {ours['prompt_tokens_median']:,.0f} "
            f"| {ref['prompt_tokens_median']:,.0f} | {ours['prompt_tokens_total']:,} "
            f"| {ref['prompt_tokens_total']:,} |"
        )
    return lines


def who_was_asked(detail: dict[str, Any]) -> Sequence[str]:
    return [
        f"{name} [{topology}]: {' → '.join(run['asked'])}"
        for name, runs in detail.items()
        for topology, run in runs.items()
    ]
