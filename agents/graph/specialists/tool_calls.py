"""The act node: every tool call the model asked for is answered, in order, exactly once.

A tool's arguments are its extraction: the tool gates them and works on the cleaned values
(tools/domain.py). What a failed gate asks for is decided here: a model's misreading is
answered with the gate's exact error for it to call again (the correction loop, at most
MAX_CORRECTIONS a turn, then a person takes over), a detail the customer must give or a rule
that says no is answered for the model to tell them, and an over-limit refund goes to a
colleague. A refund or a complaint review that passed is asked of a person, at the parent
graph (decisions.py).

We do not use `ToolNode`: it runs calls in parallel, and a hand-off next to another call
loses that call's answer (langgraph issue 7129). Here calls run one at a time, and a hand-off
answers its sibling calls itself.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.messages.tool import ToolCall
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
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
from agents.graph.decisions import (
    ASK_DECISION,
    complaint_order,
    complaint_review_payload,
    refund_approval_payload,
)
from agents.graph.history import HANDOFF_PREFIX, MALFORMED, tool_answer, unanswered_calls
from agents.graph.reporting import report
from agents.graph.specialists.spec import (
    MAX_CORRECTIONS,
    MAX_HANDOFFS_PER_TURN,
    MAX_TOOL_ROUNDS,
    REPEAT_LIMIT,
    SpecialistSpec,
)
from agents.graph.specialists.tool_runner import invoke_tool, tool_runtime
from agents.graph.state import SpecialistState
from agents.graph.tools.domain import ORDER_BOUND_TOOLS
from agents.graph.validation import ABOUT_ORDER, GateVerdict
from agents.names import AGENT_TITLES
from agents.safety.redaction import redact
from gates import Remedy, normalise_order_id

log = logging.getLogger("shopbot.engine")


def call_signature(call: ToolCall) -> str:
    return f"{call['name']}:{json.dumps(call['args'], sort_keys=True, default=str)}"


def correction_text(name: str, error: str) -> str:
    """The answer to a call whose arguments the model misread: the gate's exact error."""
    return (
        f"Rejected by the shop's checks, not executed: {error} Call {name} again with the "
        "corrected value."
    )


class _ActStep:
    """The answers and bookkeeping of one act step."""

    def __init__(self, spec: SpecialistSpec, state: SpecialistState, runtime: Runtime[ShopContext]):
        self.spec = spec
        self.state = state
        self.runtime = runtime
        self.answers: list[ToolMessage] = []
        self.seen: list[str] = list(state.get("seen_calls", []))
        self.corrected: list[str] = list(state.get("corrected_calls", []))
        self.checks: list[dict[str, Any]] = list(state.get("gate_checks", []))
        self.validated: dict[str, Any] | None = state.get("validated")
        self.corrections: int = state.get("corrections", 0)
        # The question for a person this step staged (a refund, a complaint review).
        self.asking: dict[str, Any] | None = None
        # The customer's own order a call was about whose later gate failed (a refund of an
        # order not delivered): what the conversation is on now, for its summary and a
        # complaint's reviewer. Nothing acts on it: only `validated` lets a tool run.
        self.about_order: str | None = None

    # --- refusals before anything runs -----------------------------------------------

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

    def another_order(self, call: ToolCall) -> bool:
        """One order a turn: a call about another than the one validated is refused."""
        if call["name"] not in ORDER_BOUND_TOOLS or not self.validated:
            return False
        asked = normalise_order_id(call["args"].get("order_id"))
        expected = self.validated.get("order_id")
        if not expected or asked == expected:
            return False
        self.refuse(
            call,
            f"Refused, not executed: {call['name']} was called for '{asked}', but the order "
            f"validated in this turn is {expected}. Use {expected}, or ask the customer about "
            "any other order.",
            f"it named '{asked}', and the order checked this turn is {expected}: the model "
            "was told to use that one.",
        )
        return True

    # --- running a tool and acting on its gates --------------------------------------

    async def run(self, tool: BaseTool, call: ToolCall) -> Command[str] | None:
        """Run the call; a Command when the step must end here (a correction that is one too
        many, an escalation), else None with the call answered or its question staged."""
        report(
            self.runtime, StepChanged(agent=self.spec.name, step="calling_tool", detail=tool.name)
        )
        # The tool reads the turn's validated order from its state.
        view: SpecialistState = {**self.state, "validated": self.validated}
        try:
            result = await invoke_tool(tool, call, dict(call["args"]), view, self.runtime)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            self._failed(tool, call, exc)
            return None
        artifact = result.artifact if isinstance(result.artifact, dict) else {}
        verdict = GateVerdict.from_json(artifact.get("verdict") or {})
        self._report_checks(call, verdict)
        if verdict.error is not None:
            self.about_order = verdict.facts.get(ABOUT_ORDER) or self.about_order
            return self._gate_failed(call, verdict)
        cleaned = {**(verdict.cleaned or {}), **verdict.facts}
        self.validated = self.validated or cleaned
        if artifact.get("staged"):
            self.asking = refund_approval_payload(
                call, cleaned, self.checks, self.runtime.context.customer
            )
        elif artifact.get("review"):
            self.validated = cleaned
            self.asking = complaint_review_payload(
                call,
                cleaned,
                self.checks,
                self.runtime.context.customer,
                complaint_order(self.state, artifact.get("named")),
            )
        else:
            self.answers.append(tool_answer(call, str(result.content)))
            report(
                self.runtime,
                ToolCalled(
                    self.spec.name,
                    tool.name,
                    verdict.cleaned or {},
                    "executed",
                    str(result.content),
                ),
                kind="tool_called",
                agent=self.spec.name,
                # The values it ran on: the gates' cleaned ones, never the model's.
                detail={
                    "tool": tool.name,
                    "args": verdict.cleaned,
                    "result": str(result.content)[:500],
                },
            )
        return None

    def _failed(self, tool: BaseTool, call: ToolCall, exc: Exception) -> None:
        """A tool that raised (a store that failed): short guidance for the model."""
        log.exception("%s failed", tool.name)
        guidance = (
            f"{tool.name} failed ({type(exc).__name__}). Try it once more; if it fails again, "
            "apologise and tell the customer a colleague will follow up."
        )
        self.answers.append(tool_answer(call, guidance, error=True))
        report(
            self.runtime,
            ToolCalled(
                self.spec.name,
                tool.name,
                dict(call["args"]),
                "failed",
                guidance,
                f"{type(exc).__name__}; the model was told to try it once more.",
            ),
            kind="tool_failed",
            agent=self.spec.name,
            detail={
                "tool": tool.name,
                "args": call["args"],
                "error": f"{type(exc).__name__}: {redact(str(exc))}"[:500],
            },
        )

    def _report_checks(self, call: ToolCall, verdict: GateVerdict) -> None:
        attempt = self.corrections
        for check in verdict.checks:
            self.checks.append(check.to_json())
            report(
                self.runtime,
                GateChecked(self.spec.name, check.gate, check.ok, check.detail, attempt),
                kind="gate_passed" if check.ok else "gate_failed",
                agent=self.spec.name,
                detail={**check.to_json(), "attempt": attempt, "extracted": call["args"]},
            )

    def _gate_failed(self, call: ToolCall, verdict: GateVerdict) -> Command[str] | None:
        error = verdict.error
        assert error is not None
        if error.remedy is Remedy.ESCALATE:
            escalating = normalise_order_id(call["args"].get("order_id"))
            return self.leave("escalate", error, escalating=escalating)
        if error.remedy is Remedy.CORRECT:
            if self.corrections >= MAX_CORRECTIONS:
                return self.leave("escalate", error)
            self.corrections += 1
            attempt = self.corrections
            report(
                self.runtime,
                StepChanged(
                    self.spec.name,
                    "correcting",
                    detail=f"{attempt}/{MAX_CORRECTIONS}",
                    attempt=attempt,
                ),
                kind="correction",
                agent=self.spec.name,
                detail={"attempt": attempt, "of": MAX_CORRECTIONS, "error": str(error)},
            )
            self.answers.append(tool_answer(call, correction_text(call["name"], error), error=True))
            self.corrected.append(call_signature(call))
            return None
        # The customer must supply something, or a rule says no: the model tells them.
        self.answers.append(tool_answer(call, f"Not executed. {error}", error=True))
        return None

    # --- how the step ends -------------------------------------------------------------

    def update(self, **extra: Any) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if self.about_order:
            found["order_id"] = self.about_order
        if self.validated:
            found["validated"] = self.validated
            if order_id := self.validated.get("order_id"):
                found["order_id"] = order_id
            found["ticket_category"] = self.spec.ticket_category
        return {
            **found,
            "messages": self.answers,
            "seen_calls": self.seen,
            "corrected_calls": self.corrected,
            "gate_checks": self.checks,
            "corrections": self.corrections,
            "tool_rounds": self.state.get("tool_rounds", 0) + 1,
            **extra,
        }

    def leave(self, goto: str, error: object, **extra: Any) -> Command[str]:
        """To a colleague (`escalate`) or a brake, the calls still waiting answered there."""
        codes = list(getattr(error, "codes", ()))
        return Command(
            goto=goto,
            update=self.update(gate_error=str(error), gate_codes=codes, **extra),
        )

    def ask_person(self, calls: list[ToolCall]) -> Command[str]:
        """The staged question goes to the parent, where it waits (and where a message
        arriving meanwhile finds it). The assistant message with the call, and the answers
        to its other calls, travel with it (a Command to the parent carries only its
        update)."""
        assert self.asking is not None
        asked = self.asking["tool_call_id"]
        for call in calls:
            if call["id"] != asked and call["id"] not in {a.tool_call_id for a in self.answers}:
                self.answers.append(
                    tool_answer(
                        call, "Not executed: a person decides the request above first.", error=True
                    )
                )
        update = self.update(awaiting=self.asking)
        update["messages"] = [*self.state["messages"], *self.answers]
        for scratch in ("validated", "seen_calls", "corrected_calls", "gate_checks"):
            update.pop(scratch, None)
        return Command(graph=Command.PARENT, goto=ASK_DECISION, update=update)


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


def make_act(spec: SpecialistSpec) -> Any:
    tools = {tool.name: tool for tool in spec.domain_tools}
    handoffs = {tool.name: tool for tool in spec.handoff_tools}

    async def act(state: SpecialistState, runtime: Runtime[ShopContext]) -> Command[str]:
        step = _ActStep(spec, state, runtime)
        calls = unanswered_calls(state["messages"])
        handoff = next(
            (c for c in calls if c["name"] in handoffs and MALFORMED not in c["args"]), None
        )
        if handoff is not None:
            return await _hand_off(step, handoffs[handoff["name"]], handoff, calls)
        if state.get("tool_rounds", 0) >= MAX_TOOL_ROUNDS:
            detail = f"{MAX_TOOL_ROUNDS} rounds of tool calls already in this turn"
            stop = {"limit": "tool_rounds", "detail": detail}
            return Command(goto="stop_turn", update=step.update(stop=stop))
        for call in calls:
            name = call["name"]
            tool = step.screen(call, tools)
            if tool is None:
                continue
            signature = call_signature(call)
            # A call the gates sent back, made again as it was: the model stays wrong, and
            # its gates count it (a correction more, then a person), not the repeat brake.
            repeats = 0 if signature in step.corrected else step.seen.count(signature)
            if repeats >= REPEAT_LIMIT - 1:
                detail = f"{name} called {repeats + 1} times with the same arguments"
                stop = {"limit": "repeated_tool_call", "detail": detail}
                return Command(goto="stop_turn", update=step.update(stop=stop))
            step.seen.append(signature)
            if repeats:
                step.refuse(
                    call,
                    f"You already called {name} with these arguments in this turn; its result "
                    "is above. Do not call it again.",
                    "the same call already ran this turn; its result stands.",
                )
                continue
            if step.asking is not None:
                step.refuse(
                    call,
                    "Not executed: one request to a person at a time. Wait for the result above.",
                    "one request to a person at a time, and another one waits for a decision.",
                )
                continue
            if step.another_order(call):
                continue
            if (leaving := await step.run(tool, call)) is not None:
                return leaving
        if step.asking is not None:
            return step.ask_person(calls)
        return Command(goto="respond", update=step.update())

    return act


async def _hand_off(
    step: _ActStep, tool: BaseTool, call: ToolCall, calls: list[ToolCall]
) -> Command[str]:
    spec, state, runtime = step.spec, step.state, step.runtime
    target = call["name"].removeprefix(HANDOFF_PREFIX)
    for other in calls:
        if other is not call:
            step.refuse(
                other,
                f"Not executed: you handed the conversation to the {AGENT_TITLES[target]} in the "
                "same message. Call one tool at a time.",
                f"the model handed the conversation to the {AGENT_TITLES[target]} in the same "
                "message.",
            )
    if state.get("handoffs", 0) >= MAX_HANDOFFS_PER_TURN:
        detail = f"{MAX_HANDOFFS_PER_TURN} hand-offs already in this turn"
        return Command(
            goto="stop_turn", update=step.update(stop={"limit": "handoff_cap", "detail": detail})
        )
    # The transfer tools take no arguments; a model that explains itself anyway is recorded.
    reason = str(call["args"].get("reason", ""))
    report(runtime, StepChanged(agent=spec.name, step="handing_off", detail=target))
    # The hand-off tool reads the messages from its runtime state: give it the answers too.
    with_answers: SpecialistState = {
        **state,
        "messages": [*state["messages"], *step.answers],
        "corrections": step.corrections,
    }
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
