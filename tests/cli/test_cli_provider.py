"""`shopbot chat` against a provider that fails mid-answer: a reply cut off before its end, a
provider that hangs, one that trickles. In-process through `main(argv)`, the real
ChatMistralAI client talking to the strict fake Mistral server.

The time limits are the engine's own `RetryBudget`, built here with smaller values (the
engine builds its budget with `RetryBudget()`; these tests hand it one made the same way
with other numbers), so the mechanism measured is the one `shopbot` runs.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.graph.context import RetryBudget
from shopbot_tui.cli.main import main
from tests.cli.conftest import use_budget
from tests.support.engine import files_holding
from tests.support.fake_mistral import (
    FakeMistralServer,
    RecordedRequest,
    text,
    tool_call,
)

ANSWER = "Hello! How can I help you with your order today?"
CUT_SHORT = "The model provider ended its answer before it was complete; try again later."


@pytest.fixture
def home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_mistral: FakeMistralServer
) -> Iterator[Path]:
    """A fresh ShopBot home, talking to the fake (the fixture set MISTRAL_BASE_URL and
    MISTRAL_API_KEY), with quick retries."""
    for name in os.environ:
        if name.startswith("SHOPBOT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SHOPBOT_HOME", str(tmp_path))
    use_budget(monkeypatch, base_delay=0.01, max_delay=0.05)
    root = logging.getLogger()
    before = list(root.handlers)
    yield tmp_path
    # main() points the root logger at the home's log file: take that back.
    for handler in [h for h in root.handlers if h not in before]:
        root.removeHandler(handler)
        handler.close()


def chat(capsys: pytest.CaptureFixture[str], thread: str, message: str) -> tuple[int, Any, str]:
    """`shopbot chat THREAD MESSAGE --json`: exit code, the object printed, stderr."""
    code = main(["chat", thread, message, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def show(capsys: pytest.CaptureFixture[str], thread: str) -> list[dict[str, Any]]:
    assert main(["show", thread, "--json"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def audit(capsys: pytest.CaptureFixture[str], thread: str, kind: str) -> list[dict[str, Any]]:
    assert main(["audit", "--thread", thread, "--kind", kind, "--json"]) == 0
    return [json.loads(line)["detail"] for line in capsys.readouterr().out.splitlines()]


def dialogue(request: RecordedRequest) -> list[tuple[str, Any]]:
    """The conversation a request carried, without its system prompt."""
    return [(m["role"], m.get("content")) for m in request.messages if m["role"] != "system"]


# --------------------------------------------------------------------------- cut replies


def test_a_reply_that_stops_before_its_end_is_retried_and_only_the_whole_one_kept(
    home: Path, fake_mistral: FakeMistralServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # A few tokens, then a stream that simply ends: no finish_reason, no [DONE]. It was the
    # reply ("Hello! How c"), stored and shown as if whole.
    fake_mistral.end_early_next(after_chunks=4)
    fake_mistral.script(text(ANSWER), text(ANSWER))
    code, result, err = chat(capsys, "c1", "Hi")
    assert code == 0, err
    assert (result["status"], result["reply"]) == ("done", ANSWER)
    assert [r.kind for r in fake_mistral.requests] == ["fault", "served"]
    said = [(line["role"], line["text"]) for line in show(capsys, "c1")]
    assert [line for role, line in said if role != "note"] == ["Hi", ANSWER]


def test_a_reply_that_never_reaches_its_end_fails_the_turn_and_keeps_the_conversation(
    home: Path, fake_mistral: FakeMistralServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_mistral.end_early_next(times=4, after_chunks=4)
    fake_mistral.script(*[text(ANSWER)] * 4)
    code, result, err = chat(capsys, "c2", "Hi")
    assert code == 1
    assert (result["status"], result["reply"]) == ("error", None)
    assert err == f"shopbot: {CUT_SHORT}\n"
    assert [r.kind for r in fake_mistral.requests] == ["fault"] * 4  # retried like a 5xx
    (failure,) = audit(capsys, "c2", "provider_error")
    assert failure["attempts"] == 4 and failure["message"] == CUT_SHORT
    sent = fake_mistral.requests[0].response[:4]
    fragment = "".join(c["choices"][0]["delta"].get("content") or "" for c in sent)
    assert fragment and ANSWER.startswith(fragment)
    said = [(line["role"], line["text"]) for line in show(capsys, "c2")]
    assert said[0] == ("customer", "Hi") and {role for role, _ in said[1:]} == {"note"}
    assert not files_holding(home, fragment)  # not the transcript, not the checkpoints

    # The next message works, and the model is sent no trace of the fragment.
    fake_mistral.script(text("Hello again."))
    code, result, err = chat(capsys, "c2", "Hello?")
    assert code == 0, err
    assert result["reply"] == "Hello again."
    assert dialogue(fake_mistral.requests[-1]) == [("user", "Hi"), ("user", "Hello?")]


def test_a_tool_call_whose_stream_stops_before_its_end_is_not_run(
    home: Path, fake_mistral: FakeMistralServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # The call arrives whole in its chunk; the chunk that says the reply is finished never
    # does. A cut-off reply is no reply, tool calls included.
    lookup = tool_call("lookup_order", {"order_id": "ORD-001", "query_type": "status"})
    fake_mistral.end_early_next(times=4, after_chunks=2)  # the role chunk, then the call
    fake_mistral.script(*[lookup] * 4)
    code, result, err = chat(capsys, "c3", "Where is ORD-001?")
    assert (code, result["status"]) == (1, "error")
    assert err == f"shopbot: {CUT_SHORT}\n"
    # Only the answering call, four times: the cut call went no further (no tool ran).
    assert [(r.stream, r.kind) for r in fake_mistral.requests] == [(True, "fault")] * 4
    assert audit(capsys, "c3", "tool_called") == []


def test_an_answer_after_a_tool_cut_short_is_retried_and_then_fails_as_the_provider(
    home: Path, fake_mistral: FakeMistralServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # The answer that reads the tool's result: its stream ends before its end, every time.
    def answer(body: dict[str, Any]) -> Any:
        fake_mistral.end_early_next(times=4)  # every attempt of the answer that follows
        fake_mistral.respond_with(lambda body: text("Delivered."))
        return tool_call("lookup_order", {"order_id": "ORD-001", "query_type": "status"})

    fake_mistral.respond_with(answer)
    code, result, err = chat(capsys, "x1", "Where is ORD-001?")
    assert code == 1 and result["status"] == "error"
    assert err == f"shopbot: {CUT_SHORT}\n"
    kinds = [(r.stream, r.kind) for r in fake_mistral.requests]
    assert kinds == [(True, "served")] + [(True, "fault")] * 4
    # The tool ran once (its result stays in the conversation); nothing was said of it.
    assert len(audit(capsys, "x1", "tool_called")) == 1


# --------------------------------------------------------------------------- time limits

# Small enough for a quick test, large enough that one attempt more or less (1.5 s) stands
# out of what a loaded machine adds.
SILENCE = 1.5
DEADLINE = 3.5
BACKOFF = 0.05
LATE = 1.0  # what the command may take past the limit: closing, a loaded machine
START_UP = LATE + 2.0  # and before its first request: opening the stores, the graph
TRICKLE = 0.25  # a token this often: never silent for long, never done either


def quick_limits(monkeypatch: pytest.MonkeyPatch, **limits: float) -> RetryBudget:
    quick = {
        "silence_timeout": SILENCE,
        "reply_deadline": DEADLINE,
        "base_delay": BACKOFF,
        "max_delay": BACKOFF,
    }
    return use_budget(monkeypatch, **{**quick, **limits})


def timed_chat(
    capsys: pytest.CaptureFixture[str], fake: FakeMistralServer
) -> tuple[float, float, str]:
    """A `chat` that fails: seconds from the command's start, and from the first request to
    the provider, until it returned; and its stderr."""
    started = time.monotonic()
    code = main(["chat", "t1", "Hi"])
    ended = time.monotonic()
    err = capsys.readouterr().err
    assert code == 1, err
    assert fake.received_times(), err
    first = fake.received_times()[0]
    return ended - started, ended - first, err


def test_a_provider_that_never_answers_is_given_up_on_after_the_silence_limit_twice(
    home: Path,
    fake_mistral: FakeMistralServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    budget = quick_limits(monkeypatch, reply_deadline=10 * DEADLINE)  # only silence counts
    fake_mistral.hang_next(times=5)
    total, since_request, err = timed_chat(capsys, fake_mistral)
    limit = budget.timeout_attempts * budget.silence_timeout + BACKOFF
    assert limit - 0.1 <= since_request <= limit + LATE, since_request
    assert total <= limit + START_UP, total
    assert fake_mistral.received == budget.timeout_attempts
    assert err == f"shopbot: The model provider sent nothing for {SILENCE:g} s; try again later.\n"


def test_a_provider_that_trickles_fails_at_the_answer_deadline(
    home: Path,
    fake_mistral: FakeMistralServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    budget = quick_limits(monkeypatch)
    fake_mistral.stream_chunk_delay = TRICKLE
    fake_mistral.script(text("word " * 200))  # 250 chunks: a minute at this pace
    total, since_request, err = timed_chat(capsys, fake_mistral)
    assert budget.reply_deadline - 0.1 <= since_request <= budget.reply_deadline + LATE
    assert total <= budget.reply_deadline + START_UP
    assert fake_mistral.received == 1
    assert err == (
        f"shopbot: The model provider did not finish its answer within {DEADLINE:g} s; "
        "try again later.\n"
    )


def test_the_answer_deadline_counts_from_the_first_request_retries_included(
    home: Path,
    fake_mistral: FakeMistralServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first attempt hears nothing, the second trickles: the answer still has its deadline
    # from the first request, not a fresh one (it had 124 s of the README's 120).
    budget = quick_limits(monkeypatch)
    fake_mistral.hang_next()
    fake_mistral.stream_chunk_delay = TRICKLE
    fake_mistral.script(text("word " * 200))
    total, since_request, err = timed_chat(capsys, fake_mistral)
    assert budget.reply_deadline - 0.1 <= since_request <= budget.reply_deadline + LATE
    assert total <= budget.reply_deadline + START_UP
    first, second = fake_mistral.received_times()
    assert SILENCE <= second - first <= SILENCE + LATE
    assert err.startswith("shopbot: The model provider did not finish its answer within")
