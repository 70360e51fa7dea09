"""The act node: every tool call the model asked for is answered, in order, exactly once.

We do not use `ToolNode`: it runs calls in parallel, and a hand-off next to another call
loses that call's answer (langgraph issue 7129). Here calls run one at a time, each checked
against the gate-validated data first, and a hand-off answers its sibling calls itself.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.messages.tool import ToolCall
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, ValidationError

from agents.events import (
    AgentChanged,
    GateChecked,
    HandedOff,
    StepChanged,
    ToolCalled,
)
from agents.graph.context import ShopContext
from agents.graph.history import HANDOFF_PREFIX, MALFORMED, tool_answer, unanswered_calls
from agents.graph.reporting import report
from agents.graph.specialists.approvals import refund_approval_payload
from agents.graph.specialists.extraction import Extractor
from agents.graph.specialists.gating import gate
from agents.graph.specialists.spec import MAX_HANDOFFS_PER_TURN, REPEAT_LIMIT, SpecialistSpec
from agents.graph.specialists.tool_runner import run_tool, tool_runtime
from agents.graph.state import SpecialistState
from agents.graph.tools.domain import ORDER_BOUND_TOOLS
from agents.graph.validation import GateCheck
from agents.names import AGENT_TITLES
from gates import GateError, normalise_order_id, validate_refund_action


def call_signature(call: ToolCall) -> str:
    return f"{call['name']}:{json.dumps(call['args'], sort_keys=True, default=str)}"


class _ActStep:
    """The answers and bookkeeping of one act step."""

    def __init__(self, spec: SpecialistSpec, state: SpecialistState, runtime: Runtime[ShopContext]):
        self.spec = spec
        self.state = state
        self.runtime = runtime
        self.answers: list[ToolMessage] = []
        self.seen: list[str] = list(state.get("seen_calls", []))
        self.approval: dict[str, Any] | None = None
        self.checks: list[dict[str, Any]] = list(state.get("gate_checks", []))
        # What the inline extraction and gate established, carried into this step's update.
        self.gated: dict[str, Any] = {}

    def refuse(self, call: ToolCall, text: str, note: str, *, kind: str = "tool_refused") -> None:
        """Answer `call` with `text` (for the model) instead of running it; `note` says it
        to the person watching: why it did not run, and what happens instead."""
        self.answers.append(tool_answer(call, text, error=True))
        args = {k: v for k, v in call["args"].items() if k != MALFORMED}
        report(
            self.runtime,
            ToolCalled(self.spec.name, call["name"], args, "refused", text, note),
            kind=kind,
            agent=self.spec.name,
            detail={"tool": call["name"], "args": args, "reason": text},
        )

    async def run(self, tool: BaseTool, call: ToolCall, args: dict[str, Any]) -> None:
        self.answers.append(
            await run_tool(self.spec.name, tool, call, args, self.state, self.runtime)
        )

    def screen(self, call: ToolCall, tools: dict[str, BaseTool]) -> BaseTool | None:
        """The tool to run for `call`, or None after refusing a malformed or unknown call."""
        name = call["name"]
        if MALFORMED in call["args"]:
            self.refuse(
                call,
                f"The arguments of your {name or 'tool'} call were not valid JSON "
                f"({call['args'][MALFORMED][:120]}). Call it again with valid arguments.",
                "its arguments were not valid JSON; the model was asked to call it again.",
            )
            return None
        tool = tools.get(name)
        if tool is None:
            self.refuse(
                call,
                f"Unknown tool '{name}'. Use only the tools you were given.",
                "the model named a tool it does not have, and was told to use its own.",
            )
            return None
        if problem := _schema_problem(tool, call):
            self.refuse(
                call, problem, "its arguments did not fit the tool; the model was asked again."
            )
            return None
        return tool

    def stage_refund(self, call: ToolCall, validated: dict[str, Any]) -> None:
        """A `process_refund` call passes the action gate, then waits for a human."""
        if self.approval is not None:
            self.refuse(
                call,
                "Not executed: one refund at a time. Wait for the result above.",
                "one refund at a time, and another one waits for a decision.",
            )
            return
        existing = self.runtime.context.shop.refund_for(validated["order_id"])
        decided = (self.state.get("refund_decisions") or {}).get(validated["order_id"])
        ok, outcome = validate_refund_action(
            call["args"], validated, existing.reference if existing else None, decided
        )
        check = GateCheck(
            "refund_action",
            ok,
            "the call names the validated order, not refunded before" if ok else str(outcome),
            outcome.codes if isinstance(outcome, GateError) else (),
        )
        self.checks.append(check.to_json())
        report(
            self.runtime,
            GateChecked(self.spec.name, check.gate, ok, check.detail),
            kind="gate_passed" if ok else "gate_failed",
            agent=self.spec.name,
            detail={**check.to_json(), "args": call["args"]},
        )
        if not ok:
            self.refuse(call, f"Refused, not executed. {outcome}", "the check above stopped it.")
            return
        self.approval = refund_approval_payload(
            call, validated, self.checks, self.runtime.context.customer
        )

    async def validate(self, extractor: Extractor) -> Command[str]:
        """Extract and gate, as the extract node would; on a pass, keep what was gated."""
        # The gate answers calls still waiting: those answered in this step are not.
        view: SpecialistState = {**self.state, "messages": [*self.state["messages"], *self.answers]}
        verdict = gate(self.spec, view, self.runtime, await extractor.first(view, self.runtime))
        gated = dict(verdict.update or {})
        answers = gated.pop("messages", [])
        self.checks = list(gated.get("gate_checks", self.checks))
        if verdict.goto == "act":
            self.gated = gated
            return verdict
        return Command(
            goto=verdict.goto,
            update={**self.update(**gated), "messages": [*self.answers, *answers]},
        )

    def update(self, **extra: Any) -> dict[str, Any]:
        return {
            **self.gated,
            "messages": self.answers,
            "seen_calls": self.seen,
            "gate_checks": self.checks,
            **extra,
        }


def _schema_problem(tool: BaseTool, call: ToolCall) -> str | None:
    """Why the call's arguments do not fit the tool's schema (the model filled them in)."""
    schema = tool.tool_call_schema
    if not isinstance(schema, type) or not issubclass(schema, BaseModel):
        return None
    try:
        schema.model_validate(call["args"])
    except ValidationError as exc:
        fields = ", ".join(".".join(map(str, e["loc"])) or "arguments" for e in exc.errors())
        return (
            f"The arguments of your {tool.name} call do not fit its schema (check: {fields}). "
            "Call it again with every required argument."
        )
    return None


def make_act(spec: SpecialistSpec, extractor: Extractor) -> Any:
    tools = {tool.name: tool for tool in spec.domain_tools}
    handoffs = {tool.name: tool for tool in spec.handoff_tools}

    async def act(state: SpecialistState, runtime: Runtime[ShopContext]) -> Command[str]:
        turn = _ActStep(spec, state, runtime)
        calls = unanswered_calls(state["messages"])
        handoff = next(
            (c for c in calls if c["name"] in handoffs and MALFORMED not in c["args"]), None
        )
        if handoff is not None:
            return await _hand_off(turn, handoffs[handoff["name"]], handoff, calls)

        validated = state.get("validated")
        extracted = bool(state.get("extraction_attempted"))
        for call in calls:
            name = call["name"]
            tool = turn.screen(call, tools)
            if tool is None:
                continue
            signature = call_signature(call)
            repeats = turn.seen.count(signature)
            if repeats >= REPEAT_LIMIT - 1:
                detail = f"{name} called {repeats + 1} times with the same arguments"
                stop = {"limit": "repeated_tool_call", "detail": detail}
                return Command(goto="stop_turn", update=turn.update(stop=stop))
            if name in ORDER_BOUND_TOOLS and validated is None and not extracted:
                # Nothing validated yet this turn: extract and gate it now. A pass carries on
                # right here; a correction, a question or an escalation leaves this node.
                extracted = True
                verdict = await turn.validate(extractor)
                if verdict.goto != "act":
                    return verdict
                validated = turn.gated["validated"]
            turn.seen.append(signature)
            if repeats:
                turn.refuse(
                    call,
                    f"You already called {name} with these arguments in this turn; its result "
                    "is above. Do not call it again.",
                    "the same call already ran this turn; its result stands.",
                )
                continue
            if name not in ORDER_BOUND_TOOLS:
                await turn.run(tool, call, dict(call["args"]))
                continue
            if validated is None:
                why = state.get("gate_error") or "The request did not pass validation."
                turn.refuse(call, f"Not executed. {why}", "the request has not passed its checks.")
                continue
            if name == "process_refund":
                turn.stage_refund(call, validated)
                continue
            asked = normalise_order_id(call["args"].get("order_id"))
            if asked != validated["order_id"]:
                turn.refuse(
                    call,
                    f"Refused, not executed: {name} was called for '{asked}', but the order "
                    f"validated in this turn is {validated['order_id']}. Use "
                    f"{validated['order_id']}, or ask the customer about any other order.",
                    f"it named '{asked}', and the order checked this turn is "
                    f"{validated['order_id']}: the model was told to use that one.",
                )
                continue
            await turn.run(tool, call, {"order_id": validated["order_id"]})
        goto = "request_approval" if turn.approval is not None else "respond"
        return Command(goto=goto, update=turn.update(approval=turn.approval))

    return act


async def _hand_off(
    turn: _ActStep, tool: BaseTool, call: ToolCall, calls: list[ToolCall]
) -> Command[str]:
    spec, state, runtime = turn.spec, turn.state, turn.runtime
    target = call["name"].removeprefix(HANDOFF_PREFIX)
    for other in calls:
        if other is not call:
            turn.refuse(
                other,
                f"Not executed: you handed the conversation to the {AGENT_TITLES[target]} in the "
                "same message. Call one tool at a time.",
                f"the model handed the conversation to the {AGENT_TITLES[target]} in the same "
                "message.",
            )
    if state.get("handoffs", 0) >= MAX_HANDOFFS_PER_TURN:
        detail = f"{MAX_HANDOFFS_PER_TURN} hand-offs already in this turn"
        return Command(
            goto="stop_turn", update=turn.update(stop={"limit": "handoff_cap", "detail": detail})
        )
    # The transfer tools take no arguments; a model that explains itself anyway is recorded.
    reason = str(call["args"].get("reason", ""))
    report(runtime, StepChanged(agent=spec.name, step="handing_off", detail=target))
    # The hand-off tool reads the messages from its runtime state: give it the answers too.
    with_answers: SpecialistState = {**state, "messages": [*state["messages"], *turn.answers]}
    injected = {"runtime": tool_runtime(with_answers, runtime, call)}
    command = await tool.ainvoke(
        {"type": "tool_call", "name": tool.name, "args": injected, "id": call["id"]}
    )
    assert isinstance(command, Command)
    report(
        runtime,
        # The model's own reason stays in the audit log: shown as a note, it would read as
        # the engine's words to the person approving (and the customer can steer it).
        HandedOff(source=spec.name, target=target),
        kind="handoff",
        agent=spec.name,
        # (No empty "reason=" on every row: the tools take none, most models give none.)
        detail={
            "from": spec.name,
            "to": target,
            **({"reason": reason} if reason else {}),
            "handoffs": state.get("handoffs", 0) + 1,
        },
    )
    report(runtime, AgentChanged(agent=target, previous=spec.name))
    return command
