"""A chat model that answers in-process: tool binding, streaming and ids the way Mistral does.

The offline demo model and the tests' scripted models build on it, so both drive the real
graph through the same `bind_tools` / `with_structured_output` paths as `ChatMistralAI`.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

from agents.models.streaming import generate_streamed, wants_stream

_WORDS = re.compile(r"\S+\s*|\s+")
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def estimate_tokens(text: str) -> int:
    """About four characters per token: enough to compare prompts, not to bill them."""
    return max(1, len(text) // 4) if text else 0


def request_tokens(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> int:
    text = "".join(str(m.content) for m in messages)
    text += "".join(json.dumps(m.tool_calls) for m in messages if isinstance(m, AIMessage))
    return estimate_tokens(text + json.dumps(list(tools)))


class LocalChatModel(BaseChatModel):
    """Subclasses implement `answer(messages, tools, tool_choice) -> AIMessage`."""

    token_delay: float = 0.0
    _ids: Iterator[int] = PrivateAttr(default_factory=itertools.count)

    def answer(
        self,
        messages: Sequence[BaseMessage],
        tools: Sequence[dict[str, Any]],
        tool_choice: Any,
    ) -> AIMessage:
        raise NotImplementedError

    def new_call_id(self) -> str:
        """Nine characters of [a-zA-Z0-9], the only tool-call id shape Mistral accepts."""
        digest = int.from_bytes(hashlib.sha256(f"{id(self)}:{next(self._ids)}".encode()).digest())
        return "".join(_ALPHABET[(digest >> (6 * i)) % 62] for i in range(9))

    def tool_call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "args": args, "id": self.new_call_id(), "type": "tool_call"}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _reply(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        tools = kwargs.get("tools") or []
        message = self.answer(messages, tools, kwargs.get("tool_choice"))
        prompt = request_tokens(messages, tools)
        completion = estimate_tokens(str(message.content) + json.dumps(message.tool_calls))
        message.usage_metadata = {
            "input_tokens": prompt,
            "output_tokens": completion,
            "total_tokens": prompt + completion,
        }
        return message

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, kwargs))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if wants_stream(run_manager):
            return await generate_streamed(self, messages, stop, run_manager, **kwargs)
        # In-process: no executor thread, unlike BaseChatModel's default.
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, kwargs))])

    async def _pace(self, index: int) -> None:
        """Wait before streamed piece `index`; subclasses pace a stream differently."""
        del index
        if self.token_delay:
            await asyncio.sleep(self.token_delay)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        message = self._reply(messages, kwargs)
        text = message.text if isinstance(message.text, str) else ""
        for index, piece in enumerate(_WORDS.findall(text)):
            await self._pace(index)
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                await run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
        raw_calls = [
            *((c["id"], c["name"], json.dumps(c["args"])) for c in message.tool_calls),
            *((c["id"], c["name"], c["args"]) for c in message.invalid_tool_calls),
        ]
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                # As ChatMistralAI does: the provider's raw calls ride along in additional_kwargs.
                additional_kwargs={
                    "tool_calls": [
                        {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                        for i, n, a in raw_calls
                    ]
                }
                if raw_calls
                else {},
                tool_call_chunks=[
                    {"name": name, "args": args, "id": call_id, "index": index}
                    for index, (call_id, name, args) in enumerate(raw_calls)
                ],
                usage_metadata=message.usage_metadata,
                chunk_position="last",
            )
        )
