"""Section 1: model calls and prompt tokens per scenario: ShopBot's graph ("ours") beside the
design it replaced ("previous") and the reference supervisor design (see topologies.py).

All three run in ShopBot's engine against the *same scripted answers*. The answers come from
a `Responder` played through `ScriptedChatModel` (which records every request with its
prompt-token estimate), keyed by who asks and what for, so the same question gets the same
answer whichever topology asks:

- a specialist's answering call gets the next scripted answer *for that agent* (the agent is
  told by the tools it was given), an extraction the next scripted extraction *for that
  schema*, the supervisor's routing call (seed 000's prompt) the next scripted route;
- a topology is asked only some questions: hand-offs (`transfer_to_*`) only in the swarms
  (the supervisor routes instead); extractions only in the extracting designs; and two
  answers only in ours (`ours_only`): the corrected tool call after a gate's error (the
  extracting designs extract again instead) and the complaint's filing call (there the
  extraction files it).

Counts and tokens are deterministic: one run of each is exact.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, SystemMessage

from agents.audit.log import AuditLog, AuditQuery
from agents.models.offline.local_model import estimate_tokens
from agents.settings import Settings
from tests.perf.common import Progress, Row, median, temp_home
from tests.perf.topologies import TOPOLOGIES, Topology, engine_for
from tests.support.scripted_model import Request, ScriptedChatModel, call, extract, say

SECTION = "calls"

# Which specialist is answering, told by the tools it was given (prompts change wording;
# each specialist's own tools do not).
_TOOL_MARKS = (
    ("lookup_order", "order_agent"),
    ("process_refund", "refund_agent"),
    ("file_complaint", "complaints_agent"),
)
REASON = "the left earcup stopped working"
COMPLAINT = "Parcel two weeks late and no answer to e-mails"
# The issue's figure for the previous design's whole suite (six scenarios), before the change.
PREVIOUS_SUITE_TOKENS = 7048
CALL_RATIO_TARGET = 0.6
ORDER_STATUS_MAX_CALLS = 2
GREETING_MAX_CALLS = 1


@dataclass(frozen=True)
class OursOnly:
    """An answer only ShopBot's graph asks for (see the module's docstring)."""

    message: AIMessage


Answer = AIMessage | OursOnly


def ours_only(message: AIMessage) -> OursOnly:
    return OursOnly(message)


@dataclass(frozen=True)
class Scenario:
    name: str
    label: str
    customer: str
    # ("say", text) or ("decide", option), in order.
    turns: tuple[tuple[str, str], ...]
    answers: dict[str, list[Answer]]
    extractions: dict[str, list[AIMessage]]
    routes: tuple[str, ...]
    # Tools every topology must have run (a check that they did the same work).
    tools: tuple[str, ...]
    # In the suite's totals (the issue's suite is the first six; the greeting is extra).
    in_suite: bool = True


def _transfer(target: str) -> AIMessage:
    return call(f"transfer_to_{target}")


def scenarios() -> list[Scenario]:
    lookup_001 = call("lookup_order", order_id="ORD-001", query_type="status")
    refund_001 = call("process_refund", order_id="ORD-001", reason=REASON)
    refund_extraction = extract("RefundExtraction", order_id="ORD-001", reason=REASON)
    return [
        Scenario(
            name="order_status",
            label="order status",
            customer="Alex",
            turns=(("say", "Where is my order ORD-001?"),),
            answers={
                "order_agent": [
                    lookup_001,
                    say("Your Wireless Headphones were delivered on 2025-06-10."),
                ]
            },
            extractions={
                "OrderExtraction": [
                    extract("OrderExtraction", order_id="ORD-001", query_type="status")
                ]
            },
            routes=("order_agent", "FINISH"),
            tools=("lookup_order",),
        ),
        Scenario(
            name="refund_approved",
            label="refund approved",
            customer="Alex",
            turns=(("say", f"I want a refund for ORD-001, {REASON}"), ("decide", "approve")),
            answers={
                "order_agent": [_transfer("refund_agent")],
                "refund_agent": [refund_001, say("Your refund was approved and processed.")],
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
                "order_agent": [_transfer("refund_agent")],
                "refund_agent": [refund_001, say("I'm sorry, the refund was not approved.")],
            },
            extractions={"RefundExtraction": [refund_extraction]},
            routes=("refund_agent", "FINISH"),
            tools=(),
        ),
        Scenario(
            name="hallucinated_id",
            label="misread id corrected",
            customer="Alex",
            turns=(("say", "Status of ORD-001 please"),),
            answers={
                "order_agent": [
                    # A zero misread as the letter O: the gate's error is the tool's answer.
                    call("lookup_order", order_id="ORD-0O1", query_type="status"),
                    ours_only(lookup_001),
                    say("Delivered."),
                ]
            },
            extractions={
                "OrderExtraction": [
                    extract("OrderExtraction", order_id="ORD-0O1", query_type="status"),
                    extract("OrderExtraction", order_id="ORD-001", query_type="status"),
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
                    _transfer("refund_agent"),
                    call("lookup_order", order_id="ORD-002", query_type="status"),
                    say("ORD-002 is in transit, expected on 2025-06-18."),
                ],
                "refund_agent": [
                    call("check_refund_eligibility", order_id="ORD-002"),
                    say("ORD-002 is not delivered yet, so it cannot be refunded yet."),
                    _transfer("order_agent"),
                ],
            },
            extractions={
                "OrderReference": [extract("OrderReference", order_id="ORD-002")],
                "OrderExtraction": [
                    extract("OrderExtraction", order_id="ORD-002", query_type="status")
                ],
            },
            routes=("refund_agent", "FINISH", "order_agent", "FINISH"),
            tools=("check_refund_eligibility", "lookup_order"),
        ),
        Scenario(
            name="angry_complaint",
            label="angry complaint",
            customer="Alex",
            turns=(
                ("say", "Two weeks late and NOBODY answers my e-mails. Unacceptable!"),
                ("decide", "escalate_to_senior"),
            ),
            answers={
                "order_agent": [_transfer("complaints_agent")],
                "complaints_agent": [
                    ours_only(call("file_complaint", issue_summary=COMPLAINT, sentiment="angry"))
                ],
            },
            extractions={
                "ComplaintExtraction": [
                    extract("ComplaintExtraction", issue_summary=COMPLAINT, sentiment="angry")
                ]
            },
            routes=("complaints_agent", "FINISH"),
            tools=(),
        ),
        Scenario(
            name="greeting",
            label="greeting (not in the suite's totals)",
            customer="Alex",
            turns=(("say", "Hi there!"),),
            answers={"order_agent": [say("Hello Alex! How can I help you today?")]},
            extractions={},
            routes=("order_agent", "FINISH"),
            tools=(),
            in_suite=False,
        ),
    ]


def _is_transfer(message: AIMessage) -> bool:
    return any(c["name"].startswith("transfer_to_") for c in message.tool_calls)


def _asked_in(answer: Answer, topology: Topology) -> AIMessage | None:
    """The answer, if `topology` is asked for it (see the module's docstring)."""
    if isinstance(answer, OursOnly):
        return answer.message if topology == "ours" else None
    if _is_transfer(answer) and topology == "supervisor":
        return None
    return answer


class Responder:
    """Answers each request from the scenario's script, by who asks and what for."""

    def __init__(self, scenario: Scenario, topology: Topology) -> None:
        self.topology = topology
        self.queues: dict[str, list[AIMessage]] = {}
        for agent, script in scenario.answers.items():
            kept = [m for a in script if (m := _asked_in(a, topology)) is not None]
            self.queues[f"answer:{agent}"] = kept
        if topology != "ours":
            for schema, extractions in scenario.extractions.items():
                self.queues[f"extract:{schema}"] = list(extractions)
        self.routes = list(scenario.routes) if topology == "supervisor" else []
        # Per request: who asked ("supervisor", "answer:<agent>" or "extract:<schema>").
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


def scripted_model(responder: Responder, steps: int = 64) -> ScriptedChatModel:
    return ScriptedChatModel().script(*([responder] * steps))


# --- running a scenario -------------------------------------------------------------------


@dataclass
class ScenarioRun:
    topology: Topology
    scenario: str
    calls_per_turn: list[int] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)
    # Per request, the share of its prompt tokens that is tool schemas, and system prompt.
    schema_tokens: list[int] = field(default_factory=list)
    system_tokens: list[int] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return sum(self.calls_per_turn)


def tools_run(audit: AuditLog, thread: str) -> list[str]:
    events = reversed(audit.page(AuditQuery(thread_id=thread, kinds=("tool_called",)), limit=100))
    return [str(event.detail["tool"]) for event in events]


async def run_scenario(scenario: Scenario, topology: Topology, home: Path) -> ScenarioRun:
    responder = Responder(scenario, topology)
    model = scripted_model(responder)
    run = ScenarioRun(topology, scenario.name)
    settings = Settings(home=home, force_offline=True)
    async with engine_for(topology, settings, model) as engine:
        for kind, text in scenario.turns:
            before = len(model.requests)
            if kind == "say":
                result = await engine.send(scenario.name, text, customer=scenario.customer)
            else:
                result = await engine.decide(scenario.name, text)
            if result.status == "error":
                raise AssertionError(f"{topology} {scenario.name}: {result.error}")
            run.calls_per_turn.append(len(model.requests) - before)
            run.replies.append(result.reply)
        run.tools = tools_run(engine.audit, scenario.name)
    run.prompt_tokens = [r.prompt_tokens for r in model.requests]
    run.schema_tokens = [r.schema_tokens for r in model.requests]
    run.system_tokens = [
        estimate_tokens(str(r.messages[0].content))
        if r.messages and isinstance(r.messages[0], SystemMessage)
        else 0
        for r in model.requests
    ]
    run.asked = responder.asked
    if left := responder.leftovers():
        raise AssertionError(f"{topology} {scenario.name}: script not used up: {left}")
    if tuple(run.tools) != scenario.tools:
        raise AssertionError(
            f"{topology} {scenario.name}: ran tools {run.tools}, expected {scenario.tools}"
        )
    return run


# --- the rows -----------------------------------------------------------------------------

Runs = dict[str, dict[Topology, ScenarioRun]]


async def measure(quick: bool, progress: Progress) -> tuple[list[Row], dict[str, Any]]:
    """Every scenario in the three topologies."""
    del quick  # counts are exact; there is nothing to shorten
    runs: Runs = defaultdict(dict)
    for scenario in scenarios():
        progress(f"calls: {scenario.name}")
        for topology in TOPOLOGIES:
            with temp_home(f"calls-{topology}") as home:
                runs[scenario.name][topology] = await run_scenario(scenario, topology, home)
    rows = scenario_rows(runs) + suite_rows(runs)
    detail = {
        name: {topology: _run_json(run) for topology, run in by_topology.items()}
        for name, by_topology in runs.items()
    }
    return rows, detail


def _calls_note(by: dict[Topology, ScenarioRun]) -> str:
    ours, previous, sup = by["ours"], by["previous"], by["supervisor"]
    return (
        f"previous {previous.calls}, supervisor {sup.calls}; per turn {ours.calls_per_turn} / "
        f"{previous.calls_per_turn} / {sup.calls_per_turn}; tokens "
        f"{sum(ours.prompt_tokens):,} / {sum(previous.prompt_tokens):,} / "
        f"{sum(sup.prompt_tokens):,}"
    )


def scenario_rows(runs: Runs) -> list[Row]:
    rows: list[Row] = []
    for scenario in scenarios():
        by = runs[scenario.name]
        rows.append(
            Row(
                SECTION,
                f"calls.{scenario.name}",
                f"model calls: {scenario.label} (ours)",
                float(by["ours"].calls),
                "calls",
                note=_calls_note(by),
                extra={topology: _run_json(run) for topology, run in by.items()},
            )
        )
    for name, label, limit in (
        ("order_status", "an order-status turn", ORDER_STATUS_MAX_CALLS),
        ("greeting", "a greeting", GREETING_MAX_CALLS),
    ):
        by = runs[name]
        rows.append(
            Row(
                SECTION,
                f"calls.{name}_sequential",
                f"sequential model calls, {label} (ours)",
                float(by["ours"].calls_per_turn[0]),
                "calls",
                target=limit,
                note=(
                    f"previous {by['previous'].calls_per_turn[0]}, "
                    f"supervisor {by['supervisor'].calls_per_turn[0]}"
                ),
                extra={t: by[t].calls_per_turn[0] for t in TOPOLOGIES},
            )
        )
    return rows


def suite_rows(runs: Runs) -> list[Row]:
    suite = [s.name for s in scenarios() if s.in_suite]
    every = {t: [runs[name][t] for name in suite] for t in TOPOLOGIES}
    calls = {t: sum(r.calls for r in every[t]) for t in TOPOLOGIES}
    tokens = {t: [n for r in every[t] for n in r.prompt_tokens] for t in TOPOLOGIES}
    total = {t: sum(tokens[t]) for t in TOPOLOGIES}
    rows = [
        Row(
            SECTION,
            "calls.suite_total",
            f"model calls, whole suite ({len(suite)} scenarios, ours)",
            float(calls["ours"]),
            "calls",
            note=f"previous {calls['previous']}, supervisor {calls['supervisor']}",
            extra=calls,
        ),
        Row(
            SECTION,
            "calls.suite_ratio",
            "model calls, whole suite: ours / supervisor",
            calls["ours"] / calls["supervisor"],
            "x",
            target=CALL_RATIO_TARGET,
            note=(
                f"{calls['ours']} vs {calls['supervisor']}; the previous design "
                f"{calls['previous'] / calls['supervisor']:.2f}×"
            ),
        ),
        Row(
            SECTION,
            "calls.suite_ratio_previous",
            "model calls, whole suite: ours / previous",
            calls["ours"] / calls["previous"],
            "x",
            note=f"{calls['ours']} vs {calls['previous']}",
        ),
        Row(
            SECTION,
            "tokens.suite_total",
            "prompt tokens, whole suite (ours)",
            float(total["ours"]),
            "tokens",
            target=float(PREVIOUS_SUITE_TOKENS),
            note=(
                f"previous design in this run {total['previous']:,} (its figure before the "
                f"change {PREVIOUS_SUITE_TOKENS:,}), supervisor {total['supervisor']:,}; "
                f"ours / supervisor {total['ours'] / total['supervisor']:.2f}×"
            ),
            extra=total,
        ),
        Row(
            SECTION,
            "tokens.per_call_median",
            "prompt tokens per call, median (suite, ours)",
            median(tokens["ours"]),
            "tokens",
            note=(
                f"previous {median(tokens['previous']):,.0f}, supervisor "
                f"{median(tokens['supervisor']):,.0f} (its routing calls are short)"
            ),
        ),
    ]
    parts = {
        t: (
            sum(n for r in every[t] for n in r.system_tokens),
            sum(n for r in every[t] for n in r.schema_tokens),
        )
        for t in TOPOLOGIES
    }
    rows.append(
        Row(
            SECTION,
            "tokens.suite_parts",
            "prompt tokens, whole suite (ours): in system prompts + tool schemas",
            float(sum(parts["ours"])),
            "tokens",
            note="; ".join(
                f"{t} {system:,} + {schemas:,} of {total[t]:,}"
                for t, (system, schemas) in parts.items()
            )
            + " (the rest is the conversation)",
            extra={
                t: {"system": p[0], "schemas": p[1], "total": total[t]} for t, p in parts.items()
            },
        )
    )
    answering = [
        n
        for r in every["ours"]
        for n, who in zip(r.prompt_tokens, r.asked, strict=True)
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
    return rows


def handoff_schema_tokens() -> int:
    """What the two `transfer_to_*` tool schemas add to every answering call (chars/4)."""
    from agents.graph.specialists.answering import tool_schemas
    from agents.graph.specialists.roster import SPECIALISTS

    return estimate_tokens(json.dumps(tool_schemas(SPECIALISTS[0].handoff_tools)))


def _run_json(run: ScenarioRun) -> dict[str, Any]:
    return {
        "calls": run.calls,
        "calls_per_turn": run.calls_per_turn,
        "prompt_tokens": run.prompt_tokens,
        "prompt_tokens_total": sum(run.prompt_tokens),
        "prompt_tokens_median": median(run.prompt_tokens),
        "schema_tokens": run.schema_tokens,
        "system_tokens": run.system_tokens,
        "asked": run.asked,
        "tools": run.tools,
        "replies": run.replies,
    }


def per_scenario_table(detail: dict[str, Any]) -> list[str]:
    """A markdown table of the scenario figures (printed under the main table)."""
    lines = [
        "| scenario | calls ours / previous / supervisor | per turn | "
        "prompt tokens ours / previous / supervisor |",
        "|---|---:|---|---:|",
    ]
    labels = {s.name: s.label for s in scenarios()}
    for name, runs in detail.items():
        by = [runs[t] for t in TOPOLOGIES]
        calls = " / ".join(str(r["calls"]) for r in by)
        per_turn = " / ".join(str(r["calls_per_turn"]) for r in by)
        tokens = " / ".join(f"{r['prompt_tokens_total']:,}" for r in by)
        lines.append(f"| {labels.get(name, name)} | {calls} | {per_turn} | {tokens} |")
    return lines


def who_was_asked(detail: dict[str, Any]) -> Sequence[str]:
    return [
        f"{name} [{topology}]: {' → '.join(run['asked'])}"
        for name, runs in detail.items()
        for topology, run in runs.items()
    ]
