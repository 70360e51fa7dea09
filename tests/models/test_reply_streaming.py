"""A streamed reply is handed over piece by piece and merged as it arrives, into exactly the
message LangChain's one-shot merge makes (agents/models/streaming.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    message_chunk_to_message,
)
from langchain_core.runnables import RunnableConfig, RunnableLambda
from pydantic import PrivateAttr

from agents.models import streaming as reply_streaming
from agents.models.factory import make_model
from agents.models.mistral import StreamingChatMistral
from agents.models.provider import _stream_reply
from agents.models.streaming import TextSink
from agents.settings import Settings
from tests.support.fake_mistral import (
    FAKE_API_KEY,
    FakeMistralServer,
    ToolCallSpec,
    text,
    tool_calls,
)
from tests.support.scripted_model import ScriptedChatModel

FOLD = reply_streaming._fold


def lookup_order(order_id: str) -> str:
    """Look up an order by its id."""
    return order_id


def make_mistral(fake: FakeMistralServer) -> StreamingChatMistral:
    return StreamingChatMistral(
        model="mistral-small-latest",
        base_url=fake.base_url,
        api_key=FAKE_API_KEY,
        max_retries=0,
        timeout=10,
    )


def without_ids(message: BaseMessage) -> dict[str, Any]:
    """A message's fields minus the run ids LangChain stamps on it."""
    return message.model_dump(exclude={"id"})


async def merged_by_langchain(model: Any, prompt: list[BaseMessage]) -> AIMessage:
    """The reference: every chunk of `astream` summed, as LangChain's own merge does it."""
    merged: AIMessageChunk | None = None
    async for chunk in model.astream(prompt):
        merged = chunk if merged is None else merged + chunk
    assert merged is not None
    message = message_chunk_to_message(merged)
    assert isinstance(message, AIMessage)
    return message


async def test_mistral_reply_streams_piece_by_piece_through_the_sink(
    fake_mistral: FakeMistralServer,
) -> None:
    answer = "Your parcel left the warehouse this morning and arrives on Thursday."
    fake_mistral.script(text(answer))
    # Chunks apart in time, as a provider sends them (at once, they would go on as one).
    fake_mistral.stream_chunk_delay = 0.005
    pieces: list[str] = []

    reply = await _stream_reply(
        make_mistral(fake_mistral), [HumanMessage("where is it?")], pieces.append
    )

    assert len(pieces) >= 5
    assert "".join(pieces) == answer
    assert isinstance(reply, AIMessage)
    assert reply.content == answer
    assert reply.response_metadata["finish_reason"] == "stop"
    request = fake_mistral.last_request
    assert request is not None and request.stream is True
    assert fake_mistral.rejections == []


async def test_mistral_streamed_reply_equals_langchains_merge(
    fake_mistral: FakeMistralServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two folds at least, with tool calls in the last chunks.
    monkeypatch.setattr(reply_streaming, "FOLD_EVERY", 2)
    script = tool_calls(
        [
            ToolCallSpec("lookup_order", '{"order_id": "ORD-001"}', id="callAAAA1"),
            ToolCallSpec("lookup_order", '{"order_id": "ORD-002"}', id="callAAAA2"),
        ]
    )
    words = text("Let me look at both orders for you, one moment please.")
    fake_mistral.script(words, words, script, script)
    model = make_mistral(fake_mistral).bind_tools([lookup_order])
    prompt: list[BaseMessage] = [HumanMessage("both orders?")]

    for _ in range(2):  # a text answer, then two tool calls
        streamed = await _stream_reply(model, prompt, lambda _piece: None)
        reference = await merged_by_langchain(model, prompt)
        assert without_ids(streamed) == without_ids(reference)

    assert [c["args"] for c in reference.tool_calls] == [
        {"order_id": "ORD-001"},
        {"order_id": "ORD-002"},
    ]
    assert fake_mistral.rejections == []


async def test_without_a_sink_the_mistral_model_does_not_stream(
    fake_mistral: FakeMistralServer,
) -> None:
    fake_mistral.script(text("A plain answer."))

    reply = await make_mistral(fake_mistral).ainvoke([HumanMessage("hi")])

    assert reply.content == "A plain answer."
    request = fake_mistral.last_request
    assert request is not None and request.stream is False


class WatchedModel(ScriptedChatModel):
    """Waits for the next turn of the event loop before each piece, as a provider's stream
    waits for the network, and checks that every earlier piece already reached the sink."""

    seen: Callable[[], int]

    async def _pace(self, index: int) -> None:
        await asyncio.sleep(0)
        assert self.seen() == index, "a piece was held back until the end of the stream"


async def test_pieces_reach_the_sink_while_the_model_still_streams() -> None:
    pieces: list[str] = []
    model = WatchedModel(seen=lambda: len(pieces))
    model.script(AIMessage(content="one two three four five six seven eight nine ten"))

    reply = await _stream_reply(model, [HumanMessage("count")], pieces.append)

    assert len(pieces) == 10
    assert reply.content == "one two three four five six seven eight nine ten"


async def test_the_pieces_of_one_turn_of_the_event_loop_go_on_as_one_text() -> None:
    pieces: list[str] = []
    # The scripted model streams word by word without waiting: one turn of the loop.
    model = ScriptedChatModel()
    model.script(AIMessage(content="one two three four five six seven eight nine ten"))

    reply = await _stream_reply(model, [HumanMessage("count")], pieces.append)

    # (The last word waits for the reply's end: the redactor shows no word before it ends.)
    assert pieces == ["one two three four five six seven eight nine ", "ten"]
    assert reply.content == "".join(pieces)


async def test_a_tick_batch_raises_what_its_receiver_raised_in_the_callers_task() -> None:
    def refuse(_text: str) -> None:
        raise RuntimeError("the stream is closed")

    batch = reply_streaming.TickBatch(refuse)
    batch.add("a")
    await asyncio.sleep(0)  # handed on at the end of that turn of the loop, and refused

    with pytest.raises(RuntimeError, match="the stream is closed"):
        batch.add("b")


class CountedIdsModel(ScriptedChatModel):
    """Tool-call ids from a counter: two instances answer with the same ids."""

    _count: int = PrivateAttr(default=0)

    def new_call_id(self) -> str:
        self._count += 1
        return f"call{self._count:05d}"


words = st.text(alphabet="abc *#\n-", min_size=1, max_size=6)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    pieces=st.lists(words, min_size=0, max_size=30),
    calls=st.lists(st.sampled_from(["ORD-001", "ORD-002", "ORD-003"]), max_size=2),
    fold_every=st.integers(min_value=1, max_value=5),
)
def test_folding_in_steps_gives_the_one_shot_message(
    pieces: list[str], calls: list[str], fold_every: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reply_streaming, "FOLD_EVERY", fold_every)
    # Merged while it streams, never more than a step's worth of chunks at a time.
    steps: list[int] = []

    def counted(merged: Any, pending: list[Any]) -> Any:
        steps.append(len(pending))
        return FOLD(merged, pending)

    monkeypatch.setattr(reply_streaming, "_fold", counted)
    content = "".join(pieces)
    if not content and not calls:
        content = "ok"

    answer = AIMessage(
        content=content,
        tool_calls=[
            {"name": "lookup_order", "args": {"order_id": order_id}, "id": "x"}
            for order_id in calls
        ],
    )

    def bound() -> Any:
        return CountedIdsModel().script(answer).bind_tools([lookup_order])

    async def both() -> tuple[BaseMessage, AIMessage]:
        prompt: list[BaseMessage] = [HumanMessage("?")]
        streamed = await _stream_reply(bound(), prompt, lambda _piece: None)
        return streamed, await merged_by_langchain(bound(), prompt)

    steps.clear()
    streamed, reference = asyncio.run(both())
    assert without_ids(streamed) == without_ids(reference)
    assert streamed.text == content
    assert steps and max(steps) <= fold_every


async def test_a_model_that_cannot_stream_hands_over_its_whole_text_once() -> None:
    pieces: list[str] = []

    # LangChain's own fake with no stream of its own: `_generate` only.
    whole = FakeMessagesListChatModel(responses=[AIMessage(content="All at once.")])

    reply = await _stream_reply(whole, [HumanMessage("hi")], pieces.append)

    assert pieces == ["All at once."]
    assert reply.content == "All at once."


async def test_the_sink_passes_on_text_and_skips_empty_pieces() -> None:
    pieces: list[str] = []
    sink = TextSink(pieces.append)

    for token in ["", "a", "", "b"]:
        await sink.on_llm_new_token(token, run_id=uuid4())
    assert pieces == ["a", "b"]
    assert sink.delivered
    assert not TextSink(pieces.append).delivered


class RunTree(AsyncCallbackHandler):
    """Records each chat model run's parent run and the tokens this handler saw."""

    def __init__(self) -> None:
        self.model_parents: list[UUID | None] = []
        self.tokens: list[str] = []

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self.model_parents.append(parent_run_id)

    async def on_llm_new_token(self, token: str, **kwargs: Any) -> None:  # type: ignore[override]
        self.tokens.append(token)


async def test_a_streamed_call_stays_in_its_callers_run_and_its_callbacks() -> None:
    model = ScriptedChatModel().script(AIMessage(content="Both parcels are on their way."))
    pieces: list[str] = []
    outer_runs: list[UUID] = []

    async def node(_: object, config: RunnableConfig) -> str:
        outer_runs.append(config["callbacks"].parent_run_id)
        reply = await _stream_reply(model, [HumanMessage("?")], pieces.append)
        return reply.text

    tree = RunTree()
    text = await RunnableLambda(node).ainvoke(None, {"callbacks": [tree]})

    assert text == "Both parcels are on their way."
    assert "".join(pieces) == text
    # The model's run is the caller's child, and the caller's own handler saw its tokens.
    assert tree.model_parents == outer_runs
    assert "".join(tree.tokens) == text


async def test_what_on_text_raises_reaches_the_caller() -> None:
    model = ScriptedChatModel().script(AIMessage(content="one two three"))

    def refuse(_piece: str) -> None:
        raise RuntimeError("the screen is gone")

    with pytest.raises(RuntimeError, match="the screen is gone"):
        await _stream_reply(model, [HumanMessage("?")], refuse)


@pytest.mark.parametrize("api_key", [FAKE_API_KEY, None])
async def test_the_model_the_app_builds_streams_through_the_sink(
    api_key: str | None, fake_mistral: FakeMistralServer, tmp_path: Path
) -> None:
    """Whichever model `make_model` picks, a reply reaches the sink piece by piece: a model
    that lost its streaming would hand over its whole text once, at the end."""
    fake_mistral.script(text("Hello! How can I help you with your order today?"))
    # Pieces apart in time, as a provider sends them (at once, they would go on as one).
    fake_mistral.stream_chunk_delay = 0.002
    model = make_model(Settings(home=tmp_path, api_key=api_key), offline_token_delay=0.002)
    pieces: list[str] = []

    reply = await _stream_reply(model, [HumanMessage("Hello")], pieces.append)

    assert len(pieces) > 3
    assert "".join(pieces) == reply.text
    assert fake_mistral.served == (1 if api_key else 0)  # the offline model asks nobody
