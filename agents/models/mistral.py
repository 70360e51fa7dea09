"""`ChatMistralAI` whose streamed replies are merged as they arrive (see `streaming.py`), and
whose replies count only when they are whole.

Imported only when a key is set: langchain-mistralai is not needed for the offline demo.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from httpx_sse import SSEError
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_mistralai import ChatMistralAI

from agents.errors import IncompleteReply, UnreadableReply
from agents.models.streaming import generate_streamed, wants_stream

# Mistral's `finish_reason` for a generation that broke off midway: what came is not a reply.
_FAILED_MIDWAY = "error"


def _unfinished(finish_reason: object) -> str | None:
    """Why a reply with this `finish_reason` is not whole (None when it is)."""
    if finish_reason is None:
        return "the reply ended without a finish_reason"
    if finish_reason == _FAILED_MIDWAY:
        return "the provider reported finish_reason 'error'"
    return None


def _cut_short(exc: json.JSONDecodeError) -> bool:
    """Whether the body is JSON that ends before its value does (cut short), not another
    kind of answer: the parser ran out of text, inside a string or between tokens."""
    started_as_json = exc.doc.lstrip().startswith(("{", "["))
    ran_out = exc.pos >= len(exc.doc.rstrip()) or exc.msg.startswith("Unterminated string")
    return started_as_json and ran_out


class StreamingChatMistral(ChatMistralAI):
    """The provider's client, unchanged but for how a streamed reply is put together, and for
    refusing a reply that stopped before its end.

    The client takes whatever came as the reply: a stream that simply ends (a provider or proxy
    giving up mid-reply, with a well-formed end of the HTTP body) with no final chunk and no
    `[DONE]` was a fragment stored and shown as the whole answer."""

    # The client's httpx timeouts, in seconds. The client declares an int and hands it to
    # httpx, which takes a float: `RetryBudget.silence_timeout` as the budget says it.
    timeout: float = 120.0  # type: ignore[assignment]

    @property
    def lc_secrets(self) -> dict[str, str]:
        # The endpoint is MISTRAL_BASE_URL, a proxy's password and all: serialized (a traced
        # model's settings, `dumpd`) as a reference to the variable, like the key.
        return {**super().lc_secrets, "endpoint": "MISTRAL_BASE_URL"}

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        stream: bool | None = None,  # as in ChatMistralAI._agenerate
        **kwargs: Any,
    ) -> ChatResult:
        try:
            if wants_stream(run_manager):
                return await generate_streamed(self, messages, stop, run_manager, **kwargs)
            return await super()._agenerate(messages, stop, run_manager, stream, **kwargs)
        # How the client fails on an answer that is not Mistral's: a body that is not JSON
        # (or JSON cut short), an event stream that is not one (SSEError: the wrong content
        # type, retried as "cannot be reached").
        except json.JSONDecodeError as exc:
            if _cut_short(exc):
                raise IncompleteReply(f"the body was cut short ({exc})") from exc
            raise UnreadableReply(f"{type(exc).__name__}: {exc}") from exc
        except SSEError as exc:
            raise UnreadableReply(f"{type(exc).__name__}: {exc}") from exc

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        # Every streamed reply comes through here: ours (`generate_streamed`) and LangChain's
        # own (`astream`, or `ainvoke` under a streaming callback). Mistral ends a reply with
        # a chunk holding its `finish_reason` (the client copies it into the chunk's
        # response_metadata); a stream that ends without one stopped midway.
        finish_reason: object = None
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            finish_reason = chunk.message.response_metadata.get("finish_reason", finish_reason)
            yield chunk
        if (problem := _unfinished(finish_reason)) is not None:
            raise IncompleteReply(problem)

    def _create_chat_result(self, response: dict[str, Any]) -> ChatResult:
        # JSON without `choices` or `message` (an error object sent with HTTP 200, another
        # API's shape) fails here with a KeyError or TypeError: the answer's fault, not ours.
        try:
            result = super()._create_chat_result(response)
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise UnreadableReply(
                f"not a chat completion ({type(exc).__name__}: {exc}): {str(response)[:200]}"
            ) from exc
        for generation in result.generations:
            info = generation.generation_info or {}
            if (problem := _unfinished(info.get("finish_reason"))) is not None:
                raise IncompleteReply(problem)
        return result
