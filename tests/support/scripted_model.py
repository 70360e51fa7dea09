"""A chat model that plays back a script and records what it was asked: for engine tests and
benchmarks that need exact model behaviour, including misbehaviour, with zero latency."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from pydantic import PrivateAttr

from agents.models.offline.local_model import LocalChatModel, estimate_tokens, request_tokens


@dataclass(frozen=True)
class Request:
    """One model call as the engine made it."""

    messages: list[BaseMessage]
    tool_names: list[str]
    tool_choice: Any
    prompt_tokens: int
    # The share of `prompt_tokens` that is tool schemas (the same chars/4 estimate).
    schema_tokens: int = 0

    @property
    def is_extraction(self) -> bool:
        return self.tool_choice == "any" and len(self.tool_names) == 1


Step = AIMessage | Callable[[Request], AIMessage] | BaseException


class ScriptedChatModel(LocalChatModel):
    """Answers with the next scripted step; a step may be an exception to raise."""

    _script: list[Step] = PrivateAttr(default_factory=list)
    _requests: list[Request] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def script(self, *steps: Step) -> ScriptedChatModel:
        self._script.extend(steps)
        return self

    def clear_script(self) -> None:
        self._script.clear()

    @property
    def requests(self) -> list[Request]:
        return self._requests

    @property
    def remaining(self) -> int:
        return len(self._script)

    def answer(
        self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]], tool_choice: Any
    ) -> AIMessage:
        request = Request(
            list(messages),
            [tool["function"]["name"] for tool in tools],
            tool_choice,
            request_tokens(messages, tools),
            estimate_tokens(json.dumps(list(tools))) if tools else 0,
        )
        self._requests.append(request)
        if not self._script:
            raise AssertionError(
                f"script exhausted at call {len(self._requests)}: {request.tool_names}"
            )
        step = self._script.pop(0)
        if isinstance(step, BaseException):
            raise step
        message = step(request) if callable(step) else step
        # Fresh ids per call, as a provider would send.
        return AIMessage(
            content=message.content,
            tool_calls=[self.tool_call(c["name"], c["args"]) for c in message.tool_calls],
            invalid_tool_calls=[
                {**c, "id": self.new_call_id()} for c in message.invalid_tool_calls
            ],
        )


def say(text: str) -> AIMessage:
    return AIMessage(content=text)


def call(name: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": "x"}])


def calls(*pairs: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": n, "args": a, "id": f"x{i}"} for i, (n, a) in enumerate(pairs)],
    )


def extract(schema: str, **fields: Any) -> AIMessage:
    return call(schema, **fields)


def malformed(name: str, raw_arguments: str) -> AIMessage:
    return AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "name": name,
                "args": raw_arguments,
                "id": "x",
                "error": "invalid JSON",
                "type": "invalid_tool_call",
            }
        ],
    )


def dumps(message: AIMessage) -> str:
    return json.dumps({"content": message.content, "tool_calls": message.tool_calls})
