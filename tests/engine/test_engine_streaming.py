"""What the fronts get of a streamed reply: the text that arrives in one turn of the event
loop as one `TokenDelta` (the offline demo model streams its whole reply at once), the text
that arrives apart as it comes (the real ChatMistralAI client and the strict fake Mistral
server, sending its chunks apart). agents/models/streaming.py"""

from __future__ import annotations

from pathlib import Path

from agents.events import TokenDelta
from tests.support.engine import open_engine, say
from tests.support.fake_mistral import FakeMistralServer, text

ANSWER = "Your Wireless Headphones were delivered on 2025-06-10, to the address on the order."


async def test_a_reply_that_arrives_at_once_reaches_the_fronts_in_one_piece(
    tmp_path: Path,
) -> None:
    async with open_engine(tmp_path) as engine:
        turn = await say(engine, "s1", "Where is my order ORD-001?", "Alex")
    reply = turn.result.reply
    assert "Wireless Headphones" in reply
    # One event for the reply, and one for its last word, which the redactor holds until
    # the reply ends (word by word, that was one event for each of its words).
    head, last = reply.rsplit(" ", 1)
    assert [e.text for e in turn.of(TokenDelta)] == [head + " ", last]


async def test_a_reply_that_arrives_apart_reaches_the_fronts_as_it_comes(
    tmp_path: Path, fake_mistral: FakeMistralServer
) -> None:
    fake_mistral.script(text(ANSWER))
    fake_mistral.stream_chunk_delay = 0.005  # a provider sending as it writes
    async with open_engine(tmp_path, offline=False) as engine:
        turn = await say(engine, "s1", "Hello, when did my headphones arrive?", "Alex")
    assert turn.result.reply == ANSWER
    assert turn.streamed == ANSWER
    assert len(turn.of(TokenDelta)) >= 8
    assert fake_mistral.rejections == []
