"""Whether a run may start on a conversation: the one check both fronts make before a graph
runs, the in-process runner (agents/runner/engine.py) and a LangGraph server's run-creation
handler (agents/serving/auth.py).

The graph refuses a customer message while a decision waits by itself (decisions.py), but one
case no node can see: `Command(resume=...)` on a thread with nothing waiting runs no node at
all (LangGraph returns the old state, silently). So what a run carries is held against what
the thread waits for here, before the run exists. Pure: the caller reads the thread's state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from agents.safety.redaction import redact
from agents.safety.text import MessageRejected, clean_message, person_name, quoted

Reason = Literal[
    "decision_pending", "nothing_pending", "other_request", "busy", "bad_input", "not_authorised"
]
# What a server answers: 409 when the conversation's state forbids the run (it may pass
# later), 422 when the run itself cannot be one.
HTTP_STATUS: dict[Reason, int] = {
    "decision_pending": 409,
    "nothing_pending": 409,
    "other_request": 409,
    "busy": 409,
    "bad_input": 422,
    # A refund above the operator's limit: another operator may decide it.
    "not_authorised": 403,
}
NOT_TEXT = "A decision and the request it answers are given as text."
# The ways a server's client may run the conversation; the others cut a running turn short
# ("interrupt", "rollback"), where the in-process runner refuses a second turn instead.
MULTITASK_STRATEGIES = ("reject", "enqueue")


class RunRefused(Exception):
    """The run may not start; the message says why and what to do."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason = reason

    @property
    def status(self) -> int:
        return HTTP_STATUS[self.reason]


@dataclass(frozen=True)
class Answer:
    """A person's answer, read: the option as they wrote it, and the request it names."""

    choice: str
    request_id: str | None = None


@dataclass(frozen=True)
class Admitted:
    """What a server's run carries, checked: a customer's message (cleaned, keys redacted)
    or a decision among the waiting question's options."""

    message: str | None = None
    decision: str | None = None
    request_id: str | None = None


def waiting_in(interrupts: Iterable[object]) -> Any:
    """The question a thread waits for: the value of its pending interrupt that carries
    options (decisions.py asks them so), else None. `interrupts` are interrupt values or
    objects / dicts with a `value`."""
    for pending in interrupts:
        value = pending.get("value") if isinstance(pending, Mapping) else pending
        value = getattr(value, "value", value)
        if isinstance(value, Mapping) and "options" in value:
            return value
    return None


def answer_in(value: object) -> Answer:
    """A decision as ShopBot takes it (`"approve"`, `{"decision", "request_id"}`) or as
    LangChain's human-in-the-loop response (`{"decisions": [{"type": "approve"}]}`, `respond`
    with the option as its message); `RunRefused` when it is neither."""
    request: object = None
    if isinstance(value, Mapping) and "decisions" in value:
        decisions = value.get("decisions")
        if (
            not isinstance(decisions, list)
            or len(decisions) != 1
            or not isinstance(decisions[0], Mapping)
        ):
            raise RunRefused(
                "bad_input", "A human-in-the-loop response answers with exactly one decision."
            )
        kind = decisions[0].get("type")
        if kind in ("approve", "reject"):
            value = kind
        elif kind == "respond":
            value = decisions[0].get("message")
        else:
            raise RunRefused(
                "bad_input",
                f"A decision of type {quoted(kind)} is not taken here (approve, reject, respond).",
            )
    elif isinstance(value, Mapping):
        request = value.get("request_id")
        value = value.get("decision")
    if not isinstance(value, str) or not isinstance(request, str | None):
        raise RunRefused("bad_input", NOT_TEXT)
    return Answer(value, request.strip() if isinstance(request, str) else None)


def refused_decision(value: object, why: str, reviewer: Mapping[str, str]) -> dict[str, Any]:
    """The audit detail of a decision refused before any run (`decision_refused`): what was
    answered, as far as it reads as an answer, why it was refused, and who sent it."""
    try:
        answer: Answer | None = answer_in(value)
    except RunRefused:
        answer = None
    return {
        "decision": answer.choice[:64] if answer else None,
        "request_id": answer.request_id[:64] if answer and answer.request_id else None,
        "reason": redact(why)[:500],
        "checked": "before the run",
        **reviewer,
    }


def check_decision(thread_id: str, value: object, waiting: Mapping[str, Any] | None) -> Answer:
    """The decision `value` answers the question waiting, as one of its options (lower case);
    else `RunRefused`: nothing waits, another request waits, or it is no option."""
    answer = answer_in(value)
    if waiting is None:
        raise RunRefused(
            "nothing_pending", f"Thread {thread_id} has no decision pending; nothing to resume."
        )
    if answer.request_id is not None and answer.request_id != waiting.get("request_id"):
        # Answered and asked anew meanwhile (another window, another client): "approve" was
        # said of another refund, perhaps of another order.
        raise RunRefused(
            "other_request",
            f"Thread {thread_id} now waits for another decision than the one answered; "
            "nothing was decided.",
        )
    choice = answer.choice.strip().lower()
    options = [str(option) for option in waiting.get("options", ())]
    if choice not in options:
        what = str(waiting.get("kind", "decision")).replace("_", " ")
        raise RunRefused(
            "bad_input",
            f"{quoted(redact(answer.choice.strip()))} is not an option for this {what}; "
            f"choose one of: {', '.join(options)}.",
        )
    return Answer(choice, str(waiting.get("request_id") or "") or None)


def check_message_text(text: object) -> str:
    """A customer's message ready for the conversation (a pasted key redacted), or
    `RunRefused` saying what is wrong with it (empty, too long, unreadable)."""
    if not isinstance(text, str):
        raise RunRefused("bad_input", "A customer's message is text.")
    try:
        return redact(clean_message(text))
    except MessageRejected as exc:
        raise RunRefused("bad_input", str(exc)) from exc


def check_no_decision_waits(thread_id: str, waiting: Mapping[str, Any] | None) -> None:
    """A customer message may start a turn only while no decision waits (it would pass the
    question by: the graph asks it again, decisions.py, but the message is not sent)."""
    if waiting is None:
        return
    what = str(waiting.get("kind", "decision")).replace("_", " ")
    options = [str(option) for option in waiting.get("options", ())]
    first = options[0] if options else "approve"
    raise RunRefused(
        "decision_pending",
        f"Thread {thread_id} is waiting for a decision ({what}: {', '.join(options)}). "
        f"Answer it first, e.g. `shopbot resume {thread_id} {first}`; nothing was sent.",
    )


def check_run(
    thread_id: str,
    *,
    run_input: object,
    command: object,
    context: object,
    waiting: Mapping[str, Any] | None,
    state_known: bool = True,
) -> Admitted:
    """A server's run, as its client sent it: `{"messages": [one user message]}` as input,
    or a command that only resumes; a context naming at most the customer. Without the
    thread's state (`state_known` False) only the run itself is checked: the graph refuses
    what does not fit the question waiting (decisions.py)."""
    _check_context(context)
    if command is not None and run_input is not None:
        raise RunRefused("bad_input", "A run carries a customer message or a decision, not both.")
    if command is not None:
        if not isinstance(command, Mapping) or set(command) - {"resume"} or "resume" not in command:
            # `update` and `goto` would write the conversation's state past every check.
            raise RunRefused("bad_input", "A command only answers a decision: {'resume': ...}.")
        if not state_known:
            answer = answer_in(command["resume"])
            return Admitted(decision=answer.choice.strip().lower(), request_id=answer.request_id)
        answer = check_decision(thread_id, command["resume"], waiting)
        return Admitted(decision=answer.choice, request_id=answer.request_id)
    text = _message_in(run_input)
    cleaned = check_message_text(text)
    if state_known:
        check_no_decision_waits(thread_id, waiting)
    return Admitted(message=cleaned)


def _message_in(run_input: object) -> object:
    """The text of the one customer message an input may carry (nothing else: the graph
    keeps its own counters and questions, and a client must not set them)."""
    if run_input is None:
        raise RunRefused("bad_input", "A run carries a customer message or a decision.")
    if not isinstance(run_input, Mapping) or set(run_input) != {"messages"}:
        raise RunRefused(
            "bad_input",
            "A run's input is {'messages': [{'role': 'user', 'content': ...}]} and nothing else.",
        )
    messages = run_input["messages"]
    if isinstance(messages, Mapping):
        messages = [messages]
    if not isinstance(messages, list) or len(messages) != 1:
        raise RunRefused("bad_input", "A run carries exactly one customer message.")
    message = messages[0]
    if isinstance(message, str):
        return message
    role = message.get("role", message.get("type")) if isinstance(message, Mapping) else None
    if role not in ("user", "human"):
        raise RunRefused("bad_input", "A run's message is the customer's (role 'user').")
    assert isinstance(message, Mapping)
    return message.get("content")


def _check_context(context: object) -> None:
    if context is None or context == {}:
        return
    if not isinstance(context, Mapping) or set(context) - {"customer"}:
        raise RunRefused("bad_input", "A run's context names the customer and nothing else.")
    customer = context.get("customer")
    if customer is not None and not isinstance(customer, str):
        raise RunRefused("bad_input", "The customer is named as text.")
    try:
        person_name(customer)
    except MessageRejected as exc:
        raise RunRefused("bad_input", str(exc)) from exc


__all__ = [
    "MULTITASK_STRATEGIES",
    "Admitted",
    "Answer",
    "RunRefused",
    "answer_in",
    "check_decision",
    "check_message_text",
    "check_no_decision_waits",
    "check_run",
    "waiting_in",
]
