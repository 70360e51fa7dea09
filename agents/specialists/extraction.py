"""Structured extraction, and its correction after a failed gate (the reference's loop).
Both nodes gate what they extracted before deciding where to go (see gating.py)."""

from __future__ import annotations

from typing import Any

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, ValidationError

from agents.context import ShopContext
from agents.events import StepChanged
from agents.history import dialogue_view
from agents.prompts import correction_request, extraction_prompt
from agents.provider import call_model
from agents.reporting import report
from agents.specialists.gating import gate
from agents.specialists.spec import MAX_CORRECTIONS, SpecialistSpec
from agents.state import SpecialistState

# Extraction output is data, not a reply: its tokens never stream to the customer's screen.
NO_STREAM: RunnableConfig = {"tags": ["nostream"]}


async def _extract(
    spec: SpecialistSpec,
    model: Any,
    messages: list[BaseMessage],
    runtime: Runtime[ShopContext],
) -> dict[str, Any]:
    try:
        result = await call_model(model, messages, runtime, agent=spec.name, config=NO_STREAM)
    except (OutputParserException, ValidationError) as exc:
        # The model's output did not fit the schema: a model mistake the gate reports.
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return {"extraction": None, "extraction_error": first_line[:300]}
    if not isinstance(result, BaseModel):
        return {"extraction": None, "extraction_error": "the model returned no structured data"}
    return {"extraction": result.model_dump(), "extraction_error": None}


def make_extract(spec: SpecialistSpec, model: BaseChatModel) -> Any:
    structured = model.with_structured_output(spec.schema)

    async def extract(state: SpecialistState, runtime: Runtime[ShopContext]) -> Command[str]:
        report(runtime, StepChanged(agent=spec.name, step="extracting"))
        messages: list[BaseMessage] = [
            SystemMessage(
                extraction_prompt(spec.schema.__name__, summary=state.get("summary", ""))
            ),
            *dialogue_view(state["messages"]),
        ]
        found = await _extract(spec, structured, messages, runtime)
        return gate(spec, state, runtime, {**found, "extraction_attempted": True, "corrections": 0})

    return extract


def make_correct(spec: SpecialistSpec, model: BaseChatModel) -> Any:
    structured = model.with_structured_output(spec.schema)

    async def correct(state: SpecialistState, runtime: Runtime[ShopContext]) -> Command[str]:
        attempt = state.get("corrections", 0) + 1
        error = state.get("gate_error") or "The extraction could not be read."
        report(
            runtime,
            StepChanged(
                agent=spec.name,
                step="correcting",
                detail=f"{attempt}/{MAX_CORRECTIONS}",
                attempt=attempt,
            ),
            kind="correction",
            agent=spec.name,
            detail={"attempt": attempt, "of": MAX_CORRECTIONS, "error": error},
        )
        before, instruction = correction_request(error, state.get("extraction"))
        # The correction lives only in this request, never in the customer's conversation.
        messages: list[BaseMessage] = [
            SystemMessage(
                extraction_prompt(spec.schema.__name__, summary=state.get("summary", ""))
            ),
            *dialogue_view(state["messages"]),
            AIMessage(content=before),
            HumanMessage(content=instruction),
        ]
        found = await _extract(spec, structured, messages, runtime)
        return gate(spec, state, runtime, {**found, "corrections": attempt})

    return correct
