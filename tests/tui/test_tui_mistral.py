"""The app as a person runs it with a key: the real ChatMistralAI client against the strict
fake Mistral server, in what a real provider does (rate limits, outages, slow and cut streams,
a request that hangs). The `fake_mistral` fixture fails a test whose engine sent a request the
real API would reject, so each story also proves the conversation stays valid for Mistral."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from textual.message import Message

from agents.backend import TURN_STOPPED_NOTE
from agents.graph.context import RetryBudget
from agents.graph.replies import TURN_CUT_NOTE
from shopbot_tui.chat.messages import ProviderRetrying, ReplyChunk
from shopbot_tui.chat.notices import RETRYING_TITLE
from shopbot_tui.widgets.conversation import AssistantReply
from tests.support.engine import FAST_RETRY
from tests.support.fake_mistral import (
    FAKE_API_KEY,
    FakeMistralServer,
    text,
    tool_call,
)
from tests.support.tui import (
    SIZE,
    RecordingApp,
    engine_of,
    frame_text,
    instant_approval,  # noqa: F401 - autouse fixture
    iter_notices,
    mistral_app,
    notes,
    replies,
    send,
    settle,
    transcript_on_screen,
    wait_until,
)

HELLO = "Hello! How can I help you with your order today?"
# A stop must land well inside these waits: a turn that ran them out was not stopped.
LONG_WAIT = 20.0
PROMPT = 3.0


def order_status(reply: str) -> list[object]:
    return [
        tool_call("lookup_order", {"order_id": "ORD-001", "query_type": "status"}),
        text(reply),
    ]


def stored(app: RecordingApp, thread_id: str = "t-test") -> list[tuple[str, str]]:
    assert engine_of(app) is not None
    return [(line.role, line.text) for line in engine_of(app).transcript(thread_id)]


def sent_history(fake: FakeMistralServer) -> list[tuple[str, str]]:
    """(role, content) of the user and plain assistant turns the last request carried."""
    last = fake.requests[-1].messages
    return [
        (m["role"], m["content"])
        for m in last
        if m["role"] == "user" or (m["role"] == "assistant" and not m.get("tool_calls"))
    ]


async def test_a_rate_limit_is_said_and_the_reply_arrives_whole(
    tmp_path: Path, fake_mistral: FakeMistralServer
) -> None:
    fake_mistral.fail_next(429, retry_after=0.05)
    fake_mistral.script(text(HELLO))
    app = mistral_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Hi")
        # ShopBot tries again itself: the notice asks nothing of the person ("try again in
        # a moment" stood beside "Retrying in 0.1s").
        assert list(iter_notices(app, "warning")) == [
            "Model provider failed, retrying: The model provider is rate limiting us (HTTP 429). "
            "Retrying in 0.1s (attempt 1)."
        ]
        assert not list(iter_notices(app, "error"))
        assert transcript_on_screen(app)[1:] == [
            ("customer", "Hi"),
            ("note", notes(app)[1]),
            ("assistant", HELLO),
        ]
        assert notes(app)[1] == (
            "model provider failed, retrying in 0.1s: The model provider is rate limiting us"
            " (HTTP 429)"
        )
        assert stored(app) == transcript_on_screen(app)[1:]
        # The next request carries the whole exchange, once.
        fake_mistral.script(text("You are welcome."))
        await send(pilot, "Thanks")
        assert replies(app) == [HELLO, "You are welcome."]
        assert sent_history(fake_mistral) == [
            ("user", "Hi"),
            ("assistant", HELLO),
            ("user", "Thanks"),
        ]
    assert [r.status for r in fake_mistral.requests] == [429, 200, 200]


async def test_a_provider_down_for_good_is_said_and_the_thread_goes_on_once_it_is_back(
    tmp_path: Path, fake_mistral: FakeMistralServer
) -> None:
    fake_mistral.fail_next(503, times=FAST_RETRY.attempts)
    app = mistral_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is my order ORD-001?")
        errors = list(iter_notices(app, "error"))
        assert len(errors) == 1 and "HTTP 503" in errors[0], errors
        assert "The conversation is kept." in errors[0]
        assert errors[0].count("try again") == 1, errors  # "...; try again later." once
        warnings = list(iter_notices(app, "warning"))
        assert len(warnings) == FAST_RETRY.attempts - 1
        assert not any("try again" in warning for warning in warnings)
        assert not app.chat.busy and not replies(app)
        assert stored(app)[0] == ("customer", "Where is my order ORD-001?")
        assert stored(app)[-1][1].startswith("⚠ The model provider is unavailable (HTTP 503)")
        assert [r.status for r in fake_mistral.requests] == [503] * FAST_RETRY.attempts

        fake_mistral.script(*order_status("Your headphones were delivered on 2025-06-10."))
        await send(pilot, "Where is my order ORD-001?")
        assert replies(app) == ["Your headphones were delivered on 2025-06-10."]
        assert len(list(iter_notices(app, "error"))) == 1
        customer_lines = [text for role, text in transcript_on_screen(app) if role == "customer"]
        assert customer_lines == ["Where is my order ORD-001?"] * 2
    assert [m for m in sent_history(fake_mistral) if m[0] == "user"] == [
        ("user", "Where is my order ORD-001?")
    ] * 2


async def test_esc_during_a_slow_stream_stops_it_at_once_and_the_next_message_is_answered(
    tmp_path: Path, fake_mistral: FakeMistralServer
) -> None:
    fake_mistral.stream_chunk_delay = 0.05  # 4 characters every 50 ms: about 20 s of reply
    long_reply = "Hello! " + "Let me tell you everything about our shop. " * 40
    fake_mistral.script(text(long_reply))
    app = mistral_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Hi", wait=False)
        await wait_until(
            pilot,
            lambda: any(reply.source for reply in app.chat.query(AssistantReply)),
            "the reply to start streaming",
        )
        pressed = time.monotonic()
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.chat.busy, "the turn to stop")
        assert time.monotonic() - pressed < PROMPT
        await settle(pilot)
        assert not app.chat.query(AssistantReply)  # the unfinished reply goes
        assert notes(app)[-1] == TURN_STOPPED_NOTE
        assert stored(app) == [("customer", "Hi"), ("note", TURN_STOPPED_NOTE)]

        fake_mistral.stream_chunk_delay = 0.0
        fake_mistral.script(*order_status("Delivered."))
        await send(pilot, "Where is my order ORD-001?")
        assert replies(app) == ["Delivered."]
    # The stopped reply is in no later request; the message it answered is.
    assert sent_history(fake_mistral) == [("user", "Hi"), ("user", "Where is my order ORD-001?")]


async def test_esc_during_a_retry_wait_stops_the_turn_and_sends_no_retry(
    tmp_path: Path, fake_mistral: FakeMistralServer
) -> None:
    fake_mistral.fail_next(429, retry_after=LONG_WAIT)
    patient = RetryBudget(attempts=4, base_delay=0.01, max_delay=0.05, max_retry_after=60.0)
    app = mistral_app(tmp_path, retry=patient)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await send(pilot, "Hi", wait=False)
        await wait_until(
            pilot, lambda: bool(list(iter_notices(app, "warning"))), "the retry notice"
        )
        assert f"Retrying in {LONG_WAIT:.1f}s" in next(iter_notices(app, "warning"))
        await wait_until(pilot, lambda: RETRYING_TITLE in frame_text(app), "the retry toast")
        pressed = time.monotonic()
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.chat.busy, "the turn to stop")
        assert time.monotonic() - pressed < PROMPT
        await settle(pilot)
        assert notes(app)[-1] == TURN_STOPPED_NOTE
        # "Retrying in 30s" would now be untrue: its toast goes with the turn.
        assert RETRYING_TITLE not in frame_text(app)
        assert stored(app)[-1] == ("note", TURN_STOPPED_NOTE)
        assert not list(iter_notices(app, "error"))

        fake_mistral.script(text(HELLO))
        await send(pilot, "Hello?")
        assert replies(app) == [HELLO]
    # No retry went out after the stop: the 429, then the next message's request.
    assert [r.status for r in fake_mistral.requests] == [429, 200]
    assert sent_history(fake_mistral) == [("user", "Hi"), ("user", "Hello?")]


@pytest.mark.parametrize("cut", ["connection dropped", "stream ended early"])
async def test_a_stream_cut_mid_answer_shows_the_whole_answer_once(
    tmp_path: Path, fake_mistral: FakeMistralServer, cut: str
) -> None:
    # Ended early: a proper end of the body with no final chunk, taken for the whole reply.
    if cut == "connection dropped":
        fake_mistral.disconnect_next(after_chunks=3)
    else:
        fake_mistral.end_early_next(after_chunks=3)
    fake_mistral.script(text(HELLO), text(HELLO))
    told: list[Message] = []
    app = mistral_app(tmp_path)
    async with app.run_test(size=SIZE, message_hook=told.append) as pilot:
        await settle(pilot)
        await send(pilot, "Hi")
        # The screen was given the start of the reply, then told to drop it.
        # (each once: the hook sees a message again at every node it bubbles to)
        reports = list(
            {id(m): m for m in told if isinstance(m, ReplyChunk | ProviderRetrying)}.values()
        )
        retry = next(i for i, m in enumerate(reports) if isinstance(m, ProviderRetrying))
        partial = "".join(m.text for m in reports[:retry] if isinstance(m, ReplyChunk))
        assert partial and HELLO.startswith(partial) and partial != HELLO
        assert transcript_on_screen(app)[1:] == [
            ("customer", "Hi"),
            ("note", notes(app)[1]),
            ("assistant", HELLO),
        ]
        assert len(list(iter_notices(app, "warning"))) == 1
        assert frame_text(app).count(partial) == 1  # no leftover of the first attempt
        assert stored(app) == transcript_on_screen(app)[1:]
    first_kind = "disconnected" if cut == "connection dropped" else "fault"
    assert [r.kind for r in fake_mistral.requests] == [first_kind, "served"]


async def test_the_api_key_is_never_shown_told_or_exported(
    tmp_path: Path, fake_mistral: FakeMistralServer
) -> None:
    # A proxy that echoes the request's headers in its error page, and a customer who
    # pastes the key into a message.
    echo = f"upstream failed for request with Authorization: Bearer {FAKE_API_KEY}"
    fake_mistral.fail_next(502, body=echo)
    fake_mistral.fail_next(503, times=FAST_RETRY.attempts - 1, body={"error": {"message": echo}})
    fake_mistral.script(text(HELLO), text("I cannot use keys, but I can help with orders."))
    app = mistral_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Hi")
        await send(pilot, f"My shop's settings say MISTRAL_API_KEY={FAKE_API_KEY}, help")
        await send(pilot, f"the key is {FAKE_API_KEY}")
        assert len(replies(app)) == 2 and len(list(iter_notices(app, "error"))) == 1
        # The screen shows the messages as the engine took them (and as it stored them).
        customer_lines = [text for role, text in transcript_on_screen(app) if role == "customer"]
        assert customer_lines == [text for role, text in stored(app) if role == "customer"]
        assert customer_lines[2] == "the key is [REDACTED]"
        await pilot.press("ctrl+s")
        await settle(pilot)
        exported = list((tmp_path / "exports").glob("t-test-*.md"))
        assert len(exported) == 1
        export = exported[0].read_text(encoding="utf-8")
        assert "My shop's settings say" in export
        shown = [frame_text(app), app.export_screenshot(), export, repr(app.notices)]
        for where in shown:
            assert FAKE_API_KEY not in where


async def test_quitting_while_a_request_hangs_exits_at_once_and_notes_the_cut_off_turn(
    tmp_path: Path, fake_mistral: FakeMistralServer
) -> None:
    # The provider takes the request and says nothing (until the fixture stops it: no
    # answer is scripted for it, so it cannot take the next message's).
    fake_mistral.latency = LONG_WAIT
    app = mistral_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is my order ORD-001?", wait=False)
        await wait_until(pilot, lambda: fake_mistral.received == 1, "the request to hang")
        pressed = time.monotonic()
        await pilot.press("ctrl+q")
    assert time.monotonic() - pressed < PROMPT
    assert app.return_code == 0

    fake_mistral.latency = 0.0
    again = mistral_app(tmp_path)
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert transcript_on_screen(again)[:2] == [
            ("customer", "Where is my order ORD-001?"),
            ("note", TURN_CUT_NOTE),
        ]
        fake_mistral.script(*order_status("Delivered."))
        await send(pilot, "Where is my order ORD-001?")
        assert replies(again) == ["Delivered."]
    assert sent_history(fake_mistral) == [("user", "Where is my order ORD-001?")] * 2
