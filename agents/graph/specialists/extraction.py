"""Structured extraction, and its correction after a failed gate (the reference's loop).

The `extract` and `correct` nodes gate what they extracted before deciding where to go
(gating.py); `act` extracts inline on the common path, when a tool first needs validated data.
"""

from __future__ import annotations

from typing import Any

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers.openai_tools import PydanticToolsParser
from langchain_core.outputs import Generation
from langchain_core.runnables import Runnable
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, ValidationError

from agents.events import StepChanged
from agents.graph.context import ShopContext
from agents.graph.history import dialogue_view
from agents.graph.prompts import correction_request, extraction_prompt
from agents.graph.reporting import report
from agents.graph.specialists.gating import gate
from agents.graph.specialists.spec import MAX_CORRECTIONS, SpecialistSpec
from agents.graph.state import SpecialistState
from agents.models.provider import call_model
from agents.safety.redaction import redact, redact_data


def structured_output(model: BaseChatModel, schema: type[BaseModel]) -> Runnable[Any, Any]:
    """What `with_structured_output(schema)` builds for Mistral (method "function_calling"):
    the schema as the one tool the model must call, parsed into `schema`. Built here without
    the LangSmith tracing hint, which re-derives the JSON schema on every call (~1.5 ms)."""
    bound = model.bind_tools([schema], tool_choice="any")
    return bound | _ParseInPlace(tools=[schema], first_tool_only=True)


class _ParseInPlace(PydanticToolsParser):
    """Parses on the event loop: validating one small tool call takes microseconds, and
    LangChain's default `aparse_result` hands every parse to a worker thread (a hop that
    costs more than the parse on a busy machine)."""

    async def aparse_result(self, result: list[Generation], *, partial: bool = False) -> Any:
        return self.parse_result(result, partial=partial)


class Extractor:
    """One specialist's extraction calls: the first reading, and a corrected one."""

    def __init__(self, spec: SpecialistSpec, model: BaseChatModel) -> None:
        self.spec = spec
        self._structured = structured_output(model, spec.schema)

    def _request(self, state: SpecialistState) -> list[BaseMessage]:
        prompt = extraction_prompt(self.spec.schema.__name__, summary=state.get("summary", ""))
        return [SystemMessage(prompt), *dialogue_view(state["messages"])]

    async def first(self, state: SpecialistState, runtime: Runtime[ShopContext]) -> dict[str, Any]:
        report(runtime, StepChanged(agent=self.spec.name, step="extracting"))
        found = await self._call(self._request(state), runtime)
        # (Not "corrections": 0: the count is the turn's, a hand-off gives no fresh tries.)
        return {**found, "extraction_attempted": True}

    async def again(self, state: SpecialistState, runtime: Runtime[ShopContext]) -> dict[str, Any]:
        agent = self.spec.name
        attempt = state.get("corrections", 0) + 1
        error = state.get("gate_error") or "The extraction could not be read."
        report(
            runtime,
            StepChanged(
                agent, "correcting", detail=f"{attempt}/{MAX_CORRECTIONS}", attempt=attempt
            ),
            kind="correction",
            agent=agent,
            detail={"attempt": attempt, "of": MAX_CORRECTIONS, "error": error},
        )
        before, instruction = correction_request(error, state.get("extraction"))
        # The correction lives only in this request, never in the customer's conversation.
        request = [*self._request(state), AIMessage(content=before), HumanMessage(instruction)]
        return {**await self._call(request, runtime), "corrections": attempt}

    async def _call(
        self, messages: list[BaseMessage], runtime: Runtime[ShopContext]
    ) -> dict[str, Any]:
        try:
            result = await call_model(self._structured, messages, runtime, agent=self.spec.name)
        except (OutputParserException, ValidationError) as exc:
            # The model's output did not fit the schema: a model mistake the gate reports.
            text = str(exc).strip()
            first_line = text.splitlines()[0] if text else type(exc).__name__
            return {"extraction": None, "extraction_error": redact(first_line[:300])}
        if not isinstance(result, BaseModel):
            return {"extraction": None, "extraction_error": "the model returned no structured data"}
        # Kept in the state, quoted by the gates and shown to a reviewer: no key the model
        # repeats (a proxy that leaked it) may be in it.
        return {"extraction": redact_data(result.model_dump()), "extraction_error": None}


def make_extract(spec: SpecialistSpec, extractor: Extractor) -> Any:
    async def extract(state: SpecialistState, runtime: Runtime[ShopContext]) -> Command[str]:
        return gate(spec, state, runtime, await extractor.first(state, runtime))

    return extract


def make_correct(spec: SpecialistSpec, extractor: Extractor) -> Any:
    async def correct(state: SpecialistState, runtime: Runtime[ShopContext]) -> Command[str]:
        return gate(spec, state, runtime, await extractor.again(state, runtime))

    return correct
