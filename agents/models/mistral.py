"""`ChatMistralAI` whose streamed replies are merged as they arrive (see `reply_streaming`).

Imported only when a key is set: langchain-mistralai is not needed for the offline demo.
"""

from __future__ import annotations

import json
from typing import Any

from httpx_sse import SSEError
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_mistralai import ChatMistralAI

from agents.errors import UnreadableReply
from agents.models.streaming import generate_streamed, wants_stream

# How the client fails on an answer that is not Mistral's: a body that is not JSON, an event
# stream that is not one (SSEError: the wrong content type, retried as "cannot be reached").
_UNREADABLE = (json.JSONDecodeError, SSEError)


class StreamingChatMistral(ChatMistralAI):
    """The provider's client, unchanged but for how a streamed reply is put together."""

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
        except _UNREADABLE as exc:
            raise UnreadableReply(f"{type(exc).__name__}: {exc}") from exc

    def _create_chat_result(self, response: dict[str, Any]) -> ChatResult:
        # JSON without `choices` or `message` (an error object sent with HTTP 200, another
        # API's shape) fails here with a KeyError or TypeError: the answer's fault, not ours.
        try:
            return super()._create_chat_result(response)
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise UnreadableReply(
                f"not a chat completion ({type(exc).__name__}: {exc}): {str(response)[:200]}"
            ) from exc
