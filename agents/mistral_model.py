"""`ChatMistralAI` whose streamed replies are merged as they arrive (see `reply_streaming`).

Imported only when a key is set: langchain-mistralai is not needed for the offline demo.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_mistralai import ChatMistralAI

from agents.reply_streaming import generate_streamed, wants_stream


class StreamingChatMistral(ChatMistralAI):
    """The provider's client, unchanged but for how a streamed reply is put together."""

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        stream: bool | None = None,  # as in ChatMistralAI._agenerate
        **kwargs: Any,
    ) -> ChatResult:
        if wants_stream(run_manager):
            return await generate_streamed(self, messages, stop, run_manager, **kwargs)
        return await super()._agenerate(messages, stop, run_manager, stream, **kwargs)
