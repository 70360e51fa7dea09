"""Small pieces of the engine on their own: retry decisions, history views and repairs."""

from __future__ import annotations

import email.utils
import sqlite3
import time
from pathlib import Path

import httpx
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agents.errors import IncompleteReply, UnreadableReply
from agents.events import ToolCalled, note_for
from agents.graph.context import RetryBudget
from agents.graph.history import (
    MALFORMED,
    dialogue_view,
    repair_tail,
    storable_reply,
    unanswered_calls,
)
from agents.graph.summary import KEEP_AT_LEAST, SUMMARY_TRIGGER, summary_cut
from agents.models.provider import describe_failure, retry_delay
from agents.runner.turn_closing import turn_failure_text
from agents.safety.text import MAX_MESSAGE_CHARS, MessageRejected, clean_message, visible

BUDGET = RetryBudget(attempts=4, base_delay=0.5, max_delay=8.0, max_retry_after=30.0)


def status_error(status: int, headers: dict[str, str] | None = None) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(status, headers=headers or {}, request=request)
    return httpx.HTTPStatusError("error", request=request, response=response)


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_transient_statuses_are_retried_with_growing_backoff(status: int) -> None:
    delays = [retry_delay(status_error(status), attempt, BUDGET) for attempt in (1, 2, 3)]
    assert all(d is not None for d in delays)
    assert 0.4 <= delays[0] <= 0.6  # type: ignore[operator]
    assert 0.8 <= delays[1] <= 1.2  # type: ignore[operator]
    assert 1.6 <= delays[2] <= 2.4  # type: ignore[operator]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_request_errors_are_not_retried(status: int) -> None:
    assert retry_delay(status_error(status), 1, BUDGET) is None


def test_retry_after_seconds_and_http_date_are_honoured() -> None:
    assert retry_delay(status_error(429, {"Retry-After": "2"}), 1, BUDGET) == 2.0
    later = email.utils.formatdate(time.time() + 5, usegmt=True)
    delay = retry_delay(status_error(503, {"Retry-After": later}), 1, BUDGET)
    assert delay is not None and 3.0 <= delay <= 5.5
    # A provider asking for more patience than we have: fail the turn instead of hanging.
    assert retry_delay(status_error(429, {"Retry-After": "3600"}), 1, BUDGET) is None


def test_transport_errors_are_retried_other_errors_are_not() -> None:
    assert retry_delay(httpx.ConnectError("refused"), 1, BUDGET) is not None
    assert retry_delay(httpx.ReadTimeout("slow"), 1, BUDGET) is not None
    assert retry_delay(ValueError("bug"), 1, BUDGET) is None
    # A refused connection is tried 4 times; a request that timed out twice is not tried a
    # third time (each waits the client's whole timeout), a connect timeout no more than a read;
    # a first timeout after a refusal (attempt 2) is tried again.
    assert retry_delay(httpx.ConnectError("refused"), 3, BUDGET) is not None
    assert retry_delay(httpx.ReadTimeout("slow"), 2, BUDGET, timeouts=2) is None
    assert retry_delay(httpx.ConnectTimeout("slow"), 3, BUDGET, timeouts=2) is None
    assert retry_delay(httpx.ReadTimeout("slow"), 2, BUDGET, timeouts=1) is not None
    # An answer that is not a reply (a proxy's page) is the provider's, retried like a cut;
    # so is the start of a reply that never reached its end.
    assert retry_delay(UnreadableReply("<html>"), 1, BUDGET) is not None
    assert retry_delay(IncompleteReply("no finish_reason"), 1, BUDGET) is not None
    assert retry_delay(IncompleteReply("no finish_reason"), 3, BUDGET) is not None


def test_failures_are_described_in_one_safe_line() -> None:
    assert "MISTRAL_API_KEY" in describe_failure(status_error(401))
    assert "rate limiting" in describe_failure(status_error(429))
    assert "HTTP 503" in describe_failure(status_error(503))
    assert "cannot be reached" in describe_failure(httpx.ConnectError("refused"))
    # Reached, then cut off mid-stream: it read "cannot be reached; check MISTRAL_BASE_URL".
    cut = httpx.RemoteProtocolError("peer closed connection without sending complete message")
    assert "closed the connection before its answer was complete" in describe_failure(cut)
    assert "\n" not in describe_failure(status_error(500))
    assert "could not be read" in describe_failure(UnreadableReply("<html>"))
    assert describe_failure(IncompleteReply("no finish_reason")) == (
        "The model provider ended its answer before it was complete; try again later."
    )


def test_a_timeout_says_the_silence_it_waited_out() -> None:
    assert describe_failure(httpx.ReadTimeout(""), silence=15.0) == (
        "The model provider sent nothing for 15 s; try again later."
    )
    assert describe_failure(httpx.ConnectTimeout(""), silence=15.0) == (
        "The model provider cannot be reached (no connection within 15 s); "
        "check the network or MISTRAL_BASE_URL."
    )
    assert describe_failure(TimeoutError(), deadline=120.0, silence=15.0) == (
        "The model provider did not finish its answer within 120 s; try again later."
    )


def test_a_retried_failure_says_what_failed_and_asks_nothing_of_the_person() -> None:
    # Shown beside "Retrying in 0.5s": "try again later" read as the person's job.
    assert describe_failure(status_error(429)) == (
        "The model provider is rate limiting us (HTTP 429); try again in a moment."
    )
    assert describe_failure(status_error(429), retrying=True) == (
        "The model provider is rate limiting us (HTTP 429)."
    )
    cut = httpx.RemoteProtocolError("peer closed connection without sending complete message")
    for exc in (
        status_error(503),
        cut,
        UnreadableReply("<html>"),
        IncompleteReply("no finish_reason"),
        httpx.ReadTimeout("slow"),
    ):
        said = describe_failure(exc, retrying=True)
        assert said.endswith(".") and ";" not in said and "try again" not in said


def test_a_provider_asking_to_wait_longer_than_we_wait_is_told_how_long() -> None:
    # Retry-After: 3600 is not waited for (the turn fails at once), but the line read "try
    # again in a moment", which sends the person straight back into the same refusal.
    hour = status_error(429, {"Retry-After": "3600"})
    assert retry_delay(hour, 1, BUDGET) is None
    assert describe_failure(hour, patience=BUDGET.max_retry_after) == (
        "The model provider is rate limiting us (HTTP 429) and asks to wait 60 min, "
        "longer than ShopBot waits (30 s); try again in 60 min."
    )
    tomorrow = email.utils.formatdate(time.time() + 26 * 3600, usegmt=True)
    said = describe_failure(status_error(503, {"Retry-After": tomorrow}), patience=30.0)
    assert "HTTP 503) and asks to wait 26 h," in said and said.endswith("try again in 26 h.")
    # The last of the attempts asked for a short wait: that wait is the advice.
    assert describe_failure(status_error(429, {"Retry-After": "2"}), patience=30.0) == (
        "The model provider is rate limiting us (HTTP 429); try again in 2 s."
    )
    # Nothing usable asked: the general advice, as before; while retrying, no advice at all.
    for garbage in ("soon", "nan", "inf", "-5", ""):
        assert describe_failure(status_error(429, {"Retry-After": garbage})) == (
            "The model provider is rate limiting us (HTTP 429); try again in a moment."
        )
    assert describe_failure(hour, retrying=True) == (
        "The model provider is rate limiting us (HTTP 429)."
    )


def test_retry_after_that_is_not_a_number_of_seconds_falls_back_to_backoff() -> None:
    for garbage in ("nan", "inf", "soon"):
        delay = retry_delay(status_error(429, {"Retry-After": garbage}), 1, BUDGET)
        assert delay is not None and 0.4 <= delay <= 0.6, garbage


def test_dialogue_view_drops_tool_traffic_and_ends_on_the_customer() -> None:
    messages = [
        AIMessage(content="Welcome!"),
        HumanMessage(content="Where is ORD-001?", id="h1"),
        AIMessage(content="", tool_calls=[{"name": "lookup_order", "args": {}, "id": "a"}]),
        ToolMessage(content="Order ORD-001: ...", tool_call_id="a"),
        AIMessage(content="It was delivered."),
        HumanMessage(content="And ORD-003?"),
        AIMessage(content="", tool_calls=[{"name": "lookup_order", "args": {}, "id": "b"}]),
    ]
    view = dialogue_view(messages)
    assert [m.type for m in view] == ["human", "ai", "human"]
    assert view[-1].content == "And ORD-003?"


def test_repair_answers_dangling_calls_and_closes_with_a_reply() -> None:
    messages = [
        HumanMessage(content="hi"),
        AIMessage(
            content="",
            tool_calls=[
                {"name": "lookup_order", "args": {}, "id": "a"},
                {"name": "lookup_order", "args": {}, "id": "b"},
            ],
        ),
        ToolMessage(content="done", tool_call_id="a"),
    ]
    repair = repair_tail(messages, "sorry")
    assert [type(m).__name__ for m in repair] == ["ToolMessage", "AIMessage"]
    assert isinstance(repair[0], ToolMessage) and repair[0].tool_call_id == "b"
    assert repair_tail([HumanMessage(content="hi")], "sorry") == []


def test_malformed_calls_are_stored_as_valid_calls_remembered_as_malformed() -> None:
    reply = AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "name": "lookup_order",
                "args": '{"order_id": ORD',
                "id": "abc123XYZ",
                "error": "bad JSON",
                "type": "invalid_tool_call",
            }
        ],
    )
    stored = storable_reply(reply)
    assert stored.invalid_tool_calls == []
    assert stored.tool_calls[0]["args"] == {}
    pending = unanswered_calls([HumanMessage(content="x"), stored])
    assert pending[0]["args"] == {MALFORMED: "bad JSON"}


def test_lenient_streaming_parse_is_caught_by_the_raw_arguments() -> None:
    streamed = AIMessage(
        content="",
        tool_calls=[{"name": "lookup_order", "args": {}, "id": "abc123XYZ"}],
        additional_kwargs={
            "tool_calls": [
                {"id": "abc123XYZ", "function": {"name": "lookup_order", "arguments": "{oops"}}
            ]
        },
    )
    stored = storable_reply(streamed)
    assert "abc123XYZ" in stored.response_metadata["malformed_calls"]


# Key-shaped (32 random alphanumerics): redacted without being registered.
LEAKED_KEY = "q7Rk2ZpX9vLm4TnB8wYc3HdJ6fGs1Ua5"


def test_a_key_in_a_tool_calling_reply_is_not_kept_even_in_malformed_arguments() -> None:
    raw = f'{{"order_id": "{LEAKED_KEY}"'
    streamed = AIMessage(
        content=f"Using {LEAKED_KEY}",
        tool_calls=[{"name": "lookup_order", "args": {}, "id": "abc123XYZ"}],
        additional_kwargs={
            "tool_calls": [
                {"id": "abc123XYZ", "function": {"name": "lookup_order", "arguments": raw}}
            ]
        },
    )
    stored = storable_reply(streamed)
    assert "abc123XYZ" in stored.response_metadata["malformed_calls"]
    assert LEAKED_KEY not in repr(stored)
    # The refusal quotes the malformed arguments: to the model, the audit log and the screen.
    (pending,) = unanswered_calls([HumanMessage(content="x"), stored])
    assert LEAKED_KEY not in pending["args"][MALFORMED]
    well_formed = AIMessage(
        content="",
        tool_calls=[{"name": "lookup_order", "args": {"order_id": LEAKED_KEY}, "id": "abc123XYZ"}],
    )
    assert LEAKED_KEY not in repr(storable_reply(well_formed))


def test_summary_cut_keeps_recent_turns_whole() -> None:
    short = [HumanMessage(content=str(n)) for n in range(SUMMARY_TRIGGER)]
    assert summary_cut(short) == 0
    turn = [
        HumanMessage(content="q"),
        AIMessage(content="", tool_calls=[{"name": "lookup_order", "args": {}, "id": "a"}]),
        ToolMessage(content="r", tool_call_id="a"),
        AIMessage(content="answer"),
    ]
    long = [m.model_copy() for _ in range(12) for m in turn]
    cut = summary_cut(long)
    assert cut > 0
    assert isinstance(long[cut], HumanMessage)  # never between a call and its answer
    assert len(long) - cut >= KEEP_AT_LEAST


def test_visible_turns_control_characters_into_signs() -> None:
    assert visible("a\x1b[31mb\x07c\x9bd\r\ne\tf") == "a␛[31mb␇c\\x9bd\ne\tf"
    assert clean_message("  hi  ") == "hi"
    with pytest.raises(MessageRejected, match="empty"):
        clean_message(" \n\t ")
    with pytest.raises(MessageRejected, match="too long"):
        clean_message("x" * (MAX_MESSAGE_CHARS + 1))


def test_handoffs_are_left_out_of_what_the_next_model_reads() -> None:
    from agents.graph.history import without_handoffs

    messages = [
        HumanMessage(content="refund ORD-001 please"),
        AIMessage(
            content="", tool_calls=[{"name": "transfer_to_refund_agent", "args": {}, "id": "h"}]
        ),
        ToolMessage(content="The conversation is now with the Refund agent.", tool_call_id="h"),
        AIMessage(
            content="",
            tool_calls=[
                {"name": "lookup_order", "args": {}, "id": "a"},
                {"name": "transfer_to_order_agent", "args": {}, "id": "b"},
            ],
        ),
        ToolMessage(content="Not executed", tool_call_id="a"),
        ToolMessage(content="moved", tool_call_id="b"),
    ]
    view = without_handoffs(messages)
    # The pure hand-off goes; a mixed message stays whole with all its answers.
    assert [type(m).__name__ for m in view] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
    ]
    assert view[1].tool_calls[1]["name"] == "transfer_to_order_agent"


def test_a_turn_failing_on_a_database_says_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    other = sqlite3.connect(path, timeout=0)
    try:
        with pytest.raises(sqlite3.OperationalError) as locked:
            other.execute("INSERT INTO t VALUES (1)")
        text = turn_failure_text(locked.value)
        assert "is locked by another program" in text and "your message is saved" in text
        assert "(ValueError)" in turn_failure_text(ValueError("boom"))
        assert "boom" not in turn_failure_text(ValueError("boom"))  # internals stay in the log
    finally:
        other.close()
        holder.close()


def test_a_note_is_one_line_whatever_its_detail_held() -> None:
    event = ToolCalled(
        "order_agent", "lookup_order", {}, "refused", "not\nthis   order. Ask again."
    )
    assert note_for(event) == "lookup_order refused: not this order"
