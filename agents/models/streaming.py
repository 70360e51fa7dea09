"""A streamed reply merged as it arrives, so the end of a long reply does not freeze the screen.

LangChain's `astream` (and `ainvoke` when it streams) keeps every chunk and merges them in one
synchronous call after the last one: 16-31 ms for a 4,000-token reply, spent on the event loop
the terminal UI paints from. Its beta v3 event stream merges as it goes but returns v1 content
blocks, a different message shape from the one the graph stores and sends to Mistral. So our
models stream inside `_agenerate` when a `TextSink` listens and fold the chunks in small
batches with LangChain's own (associative) merge: the message equals the one-shot merge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeGuard
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler, AsyncCallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, message_chunk_to_message
from langchain_core.outputs import (
    ChatGeneration,
    ChatGenerationChunk,
    ChatResult,
    GenerationChunk,
)
from langchain_core.outputs.chat_generation import merge_chat_generation_chunks

from agents.errors import UnreadableReply

# Chunks merged per step: each step costs well under a millisecond.
FOLD_EVERY = 64


class TextSink(AsyncCallbackHandler):
    """Hands each streamed piece of reply text to `on_text`; its presence asks for a stream."""

    # Called in line, not gathered into a task per token; and what `on_text` raises (a
    # graph interrupt, a closed stream) propagates instead of being logged and dropped.
    run_inline = True
    raise_error = True

    def __init__(self, on_text: Callable[[str], None]) -> None:
        self._on_text = on_text
        self.delivered = False

    async def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        text = chunk.message.text if isinstance(chunk, ChatGenerationChunk) else token
        if isinstance(text, str) and text:
            self.delivered = True
            self._on_text(text)


def wants_stream(
    run_manager: AsyncCallbackManagerForLLMRun | None,
) -> TypeGuard[AsyncCallbackManagerForLLMRun]:
    """Whether a `TextSink` listens to this call (our `_stream_reply` asked for a stream)."""
    return run_manager is not None and any(isinstance(h, TextSink) for h in run_manager.handlers)


def _fold(
    merged: ChatGenerationChunk | None, pending: list[ChatGenerationChunk]
) -> ChatGenerationChunk | None:
    if not pending:
        return merged
    if merged is None:
        return merge_chat_generation_chunks(pending)
    return merged + pending


async def generate_streamed(
    model: BaseChatModel,
    messages: list[BaseMessage],
    stop: list[str] | None,
    run_manager: AsyncCallbackManagerForLLMRun,
    **kwargs: Any,
) -> ChatResult:
    """`model._astream` reported chunk by chunk and merged in steps of `FOLD_EVERY`."""
    merged: ChatGenerationChunk | None = None
    pending: list[ChatGenerationChunk] = []
    # No run manager for `_astream`: we report each chunk once, here, as LangChain's own
    # streaming does.
    async for chunk in model._astream(messages, stop, None, **kwargs):
        await run_manager.on_llm_new_token(chunk.message.content, chunk=chunk)  # as LangChain does
        pending.append(chunk)
        if len(pending) >= FOLD_EVERY:
            merged = _fold(merged, pending)
            pending = []
    merged = _fold(merged, pending)
    if merged is None:
        raise UnreadableReply("the model streamed no reply at all")
    return ChatResult(
        generations=[
            ChatGeneration(
                message=message_chunk_to_message(merged.message),
                generation_info=merged.generation_info,
            )
        ]
    )
