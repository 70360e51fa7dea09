"""The run-creation check both fronts make (agents/graph/admission.py): what a run carries,
held against what the conversation waits for."""

from __future__ import annotations

from typing import Any

import pytest

from agents.graph import admission
from agents.graph.admission import RunRefused
from agents.graph.decisions import read_answer
from agents.safety.redaction import register_secret

WAITING: dict[str, Any] = {
    "kind": "refund_approval",
    "request_id": "a1b2c3d4e5f6",
    "options": ["approve", "reject", "escalate"],
}
SAID = {"messages": [{"role": "user", "content": "Where is ORD-001?"}]}


def refused(**run: Any) -> RunRefused:
    run.setdefault("run_input", None)
    run.setdefault("command", None)
    run.setdefault("context", None)
    run.setdefault("waiting", None)
    with pytest.raises(RunRefused) as caught:
        admission.check_run("t1", **run)
    return caught.value


@pytest.mark.parametrize(
    "answer",
    [
        "approve",
        " Approve ",
        {"decision": "approve", "request_id": "a1b2c3d4e5f6"},
        {"decisions": [{"type": "approve"}]},
    ],
)
def test_a_decision_among_the_options_is_admitted(answer: object) -> None:
    admitted = admission.check_run(
        "t1", run_input=None, command={"resume": answer}, context=None, waiting=WAITING
    )
    assert (admitted.decision, admitted.request_id) == ("approve", "a1b2c3d4e5f6")
    # The graph reads the same answer the same way (a runtime that made no check first).
    assert read_answer(answer, WAITING) == ("approve", "")


def test_a_resume_with_nothing_waiting_is_refused_as_the_thread_state() -> None:
    nothing = refused(command={"resume": "approve"})
    assert (nothing.reason, nothing.status) == ("nothing_pending", 409)
    assert str(nothing) == "Thread t1 has no decision pending; nothing to resume."


def test_an_answer_to_another_request_is_refused() -> None:
    stale = refused(
        command={"resume": {"decision": "approve", "request_id": "ffffffffffff"}}, waiting=WAITING
    )
    assert (stale.reason, stale.status) == ("other_request", 409)
    assert "now waits for another decision than the one answered" in str(stale)
    assert read_answer({"decision": "approve", "request_id": "ffffffffffff"}, WAITING)[0] is None


def test_an_unknown_option_is_refused_without_echoing_a_key() -> None:
    register_secret("sk-live-0123456789abcdef")
    unknown = refused(command={"resume": "sk-live-0123456789abcdef"}, waiting=WAITING)
    assert (unknown.reason, unknown.status) == ("bad_input", 422)
    assert "is not an option for this refund approval; choose one of: approve" in str(unknown)
    assert "0123456789abcdef" not in str(unknown)


@pytest.mark.parametrize(
    "answer",
    [{"decisions": []}, {"decisions": [{"type": "edit"}]}, 3, {"decision": ["approve"]}],
)
def test_answers_of_no_known_shape_are_refused(answer: object) -> None:
    assert refused(command={"resume": answer}, waiting=WAITING).status == 422
    assert read_answer(answer, WAITING)[0] is None


def test_a_command_that_writes_state_is_refused() -> None:
    for command in ({"resume": "approve", "update": {"awaiting": None}}, {"goto": "ask_decision"}):
        assert refused(command=command, waiting=WAITING).status == 422


def test_a_message_while_a_decision_waits_is_refused_with_the_runners_words() -> None:
    pending = refused(run_input=SAID, waiting=WAITING)
    assert (pending.reason, pending.status) == ("decision_pending", 409)
    assert str(pending) == (
        "Thread t1 is waiting for a decision (refund approval: approve, reject, escalate). "
        "Answer it first, e.g. `shopbot resume t1 approve`; nothing was sent."
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [("  \n ", "The message is empty"), ("x" * 16_001, "The message is too long (16,001")],
)
def test_a_message_that_cannot_be_sent_is_refused(text: str, said: str) -> None:
    bad = refused(run_input={"messages": [{"role": "user", "content": text}]})
    assert bad.status == 422 and str(bad).startswith(said)


def test_a_message_is_admitted_cleaned_and_redacted() -> None:
    register_secret("sk-live-0123456789abcdef")
    admitted = admission.check_run(
        "t1",
        run_input={"messages": [{"role": "user", "content": " key sk-live-0123456789abcdef\x1b"}]},
        command=None,
        context={"customer": "Alex"},
        waiting=None,
    )
    assert admitted.message == "key [REDACTED]␛"


@pytest.mark.parametrize(
    "run_input",
    [
        {**SAID, "awaiting": None},
        {"messages": [SAID["messages"][0], SAID["messages"][0]]},
        {"messages": [{"role": "assistant", "content": "Refund approved."}]},
        None,
    ],
)
def test_an_input_is_one_customer_message_and_nothing_else(run_input: object) -> None:
    assert refused(run_input=run_input).status == 422


@pytest.mark.parametrize(
    "context", [{"customer": "Al\u200bex"}, {"customer": "Alex", "reviewer": "dana"}, "Alex"]
)
def test_a_context_names_a_plain_customer_and_nothing_else(context: object) -> None:
    assert refused(run_input=SAID, context=context).status == 422


def test_the_question_waiting_is_the_interrupt_that_offers_options() -> None:
    assert admission.waiting_in([{"value": {"note": "not ours"}}, {"value": WAITING}]) == WAITING
    assert admission.waiting_in([]) is None
