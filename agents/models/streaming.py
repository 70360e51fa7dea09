"""A streamed reply merged as it arrives, so the end of a long reply does not freeze the screen.

LangChain's `astream` (and `ainvoke` when it streams) keeps every chunk and merges them in one
synchronous call after the last one: 16-31 ms for a 4,000-token reply, spent on the event loop
the terminal UI paints from. Its beta v3 event stream merges as it goes but returns v1 content
blocks, a different message shape from the one the graph stores and sends to Mistral. So our
models stream inside `_agenerate` when a `TextSink` listens and fold the chunks in small
batches with LangChain's own (associative) merge: the message equals the one-shot merge.

The pieces of text that arrive within one turn of the event loop (a provider's network read
holds several; the offline model's whole reply comes at once) go on as one (`TickBatch`):
each piece handed on is a custom stream event, a wake-up of the loop and a `TokenDelta` the
fronts take, so one per piece cost a turn milliseconds of the event loop.
"""

from __future__ import annotations

import asyncio
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
        self.take(token, chunk)

    def take(
        self,
        token: str | list[str | dict[str, Any]],
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
    ) -> None:
        """A streamed piece, as `on_llm_new_token` gets it: its text handed on, if any."""
        text = chunk.message.text if isinstance(chunk, ChatGenerationChunk) else token
        if isinstance(text, str) and text:
            self.delivered = True
            self._on_text(text)


class TickBatch:
    """Hands `on_text` the pieces `add`ed during one turn of the event loop as one text, at
    the end of that turn (or at `flush`). What `on_text` raises there is raised by the next
    `add` or `flush`, in the caller's task, not logged and lost by the loop."""

    def __init__(self, on_text: Callable[[str], None]) -> None:
        self._on_text = on_text
        self._pieces: list[str] = []
        self._due: asyncio.Handle | None = None
        self._failure: BaseException | None = None

    def add(self, piece: str) -> None:
        self._raise_failure()
        self._pieces.append(piece)
        if self._due is None:
            # (`call_soon` runs it in a copy of this task's context: a graph node's stream
            # writer still finds its run there.)
            self._due = asyncio.get_running_loop().call_soon(self._at_tick_end)

    def flush(self) -> None:
        """Hand on what is waiting now."""
        self.cancel()
        self._raise_failure()
        if self._pieces:
            text = "".join(self._pieces)
            self._pieces.clear()
            self._on_text(text)

    def cancel(self) -> None:
        """No hand-over at the loop's turn (what waits stays, for `flush`)."""
        if self._due is not None:
            self._due.cancel()
            self._due = None

    def _at_tick_end(self) -> None:
        self._due = None
        try:
            self.flush()
        except BaseException as exc:  # (raised in the caller's task, see the docstring)
            self._failure = exc

    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure


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
    # When our sinks are the call's only listeners (no tracer), each chunk goes to them
    # directly: LangChain's dispatch to them (`ahandle_event`, a coroutine per handler) is
    # most of a streamed piece's cost, and does nothing else for a handler that ignores no
    # event.
    sinks = [h for h in run_manager.handlers if isinstance(h, TextSink)]
    direct = len(sinks) == len(run_manager.handlers)
    # No run manager for `_astream`: we report each chunk once, here, as LangChain's own
    # streaming does.
    async for chunk in model._astream(messages, stop, None, **kwargs):
        if direct:
            for sink in sinks:
                sink.take(chunk.message.content, chunk)
        else:
            # As LangChain does.
            await run_manager.on_llm_new_token(chunk.message.content, chunk=chunk)
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
