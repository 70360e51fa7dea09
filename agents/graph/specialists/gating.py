"""Gating: run the specialist's gates on what was just extracted and choose what happens next.

Called inline where something was just extracted (act, extract, correct): one graph step
fewer per attempt than a separate gate node, with the same decisions. A pass goes on to
the tools (or to the complaint review), a model mistake to the correction loop, a missing
detail or a business "no" back to the model, and the rest to a human.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Command

from agents.events import GateChecked, StepChanged
from agents.graph.context import ShopContext
from agents.graph.history import customer_words, refuse_pending
from agents.graph.reporting import report
from agents.graph.services import turn
from agents.graph.specialists.spec import MAX_CORRECTIONS, SpecialistSpec
from agents.graph.state import SpecialistState
from agents.graph.validation import GateCheck, GateVerdict
from gates import GateError, Remedy, needs_review


def _unreadable(spec: SpecialistSpec, problem: str) -> GateVerdict:
    error = GateError(
        f"Your extraction could not be read ({problem}). Return every field of "
        f"{spec.schema.__name__} as plain text.",
        Remedy.CORRECT,
        ("schema.invalid",),
    )
    return GateVerdict((GateCheck("schema", False, str(error), error.codes),), error=error)


def _after_pass(spec: SpecialistSpec, verdict: GateVerdict) -> str:
    if spec.review == "complaint":
        assert verdict.cleaned is not None
        return "request_review" if needs_review(verdict.cleaned["sentiment"]) else "respond"
    return "act"


def gate(
    spec: SpecialistSpec,
    state: SpecialistState,
    runtime: Runtime[ShopContext],
    found: dict[str, Any],
) -> Command[str]:
    """Gate the extraction in `found` (what the extract or correct node just produced); the
    returned Command carries `found` and the verdict into the state."""
    attempt = found.get("corrections", state.get("corrections", 0))
    report(runtime, StepChanged(agent=spec.name, step="checking_gate", attempt=attempt or None))
    extraction = found.get("extraction")
    if extraction is None:
        verdict = _unreadable(spec, found.get("extraction_error") or "no data")
    else:
        verdict = spec.gates(extraction, turn(runtime.context), customer_words(state["messages"]))
    for check in verdict.checks:
        report(
            runtime,
            GateChecked(spec.name, check.gate, check.ok, check.detail, attempt),
            kind="gate_passed" if check.ok else "gate_failed",
            agent=spec.name,
            detail={**check.to_json(), "attempt": attempt, "extracted": extraction},
        )
    update: dict[str, Any] = {
        **found,
        "gate_checks": [check.to_json() for check in verdict.checks],
        "ticket_category": spec.ticket_category,
    }
    if verdict.ok:
        cleaned = verdict.cleaned or {}
        update |= {"validated": {**cleaned, **verdict.facts}, "gate_error": None}
        if "order_id" in cleaned:
            update["order_id"] = cleaned["order_id"]
        return Command(goto=_after_pass(spec, verdict), update=update)

    error = verdict.error
    assert error is not None
    update |= {
        "gate_error": str(error),
        "gate_codes": list(error.codes),
    }
    if error.remedy is Remedy.ESCALATE:
        return Command(goto="escalate", update=update)
    if error.remedy is Remedy.CORRECT:
        return Command(goto="correct" if attempt < MAX_CORRECTIONS else "escalate", update=update)
    # The customer must supply something, or a rule says no: the model tells them.
    answers = refuse_pending(state["messages"], f"Not executed. {error}")
    return Command(goto="respond", update={**update, "messages": answers})
