"""The TUI's pure parts: event translation, wording, export, ids."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime

import pytest
from markdown_it import MarkdownIt
from textual.message import Message
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from agents.backend.thread_ids import new_thread_id
from agents.errors import DecisionPending, InputError
from agents.events import (
    AgentChanged,
    ApprovalRequest,
    ApprovalRequested,
    EngineEvent,
    GateChecked,
    HandedOff,
    ReplyDone,
    StepChanged,
    TokenDelta,
    TurnFailed,
    TurnFinished,
    TurnResult,
)
from agents.store.escalations import Escalation
from agents.store.threads import ChatLine, ThreadInfo, validate_thread_id
from shopbot_tui.audit.table import fit_cell
from shopbot_tui.chat.approval_screen import headline, money
from shopbot_tui.chat.export import transcript_markdown
from shopbot_tui.chat.messages import (
    AgentSwitched,
    GateReported,
    NoteAdded,
    ReplyChunk,
    ReplyComplete,
    StepUpdate,
    TurnAccepted,
    TurnEnded,
    TurnProblem,
    TurnRefused,
)
from shopbot_tui.chat.notices import named
from shopbot_tui.chat.turn_stream import drive_turn, translate
from shopbot_tui.chat.turn_workers import TURN_GROUP, TurnWorkers
from shopbot_tui.widgets.side_panel import HANDOFF_TARGETS, step_text


@pytest.mark.parametrize(
    ("step", "detail", "attempt", "expected"),
    [
        ("correcting", "1/2", 1, "correcting 1/2"),
        ("correcting", "", 2, "correcting 2/2"),
        ("calling_tool", "lookup_order", None, "calling a tool: lookup_order"),
        ("handing_off", "refund_agent", None, "handing off → Refund agent"),
        ("checking_gate", "", None, "checking gate"),
        ("waiting_for_approval", "", None, "waiting for approval"),
    ],
)
def test_step_text(step: str, detail: str, attempt: int | None, expected: str) -> None:
    assert step_text(step, detail, attempt) == expected


def test_every_agent_may_hand_off_to_the_other_two() -> None:
    assert HANDOFF_TARGETS["order_agent"] == ("refund_agent", "complaints_agent")
    assert all(len(targets) == 2 for targets in HANDOFF_TARGETS.values())


def test_translate_events() -> None:
    assert list(translate("t", TokenDelta("order_agent", "Hi"))) == [
        ReplyChunk("t", agent="order_agent", text="Hi")
    ]
    assert list(translate("t", HandedOff("order_agent", "refund_agent"))) == [
        NoteAdded("t", text="→ handed to Refund agent")
    ]
    failed = list(translate("t", GateChecked("refund_agent", "order_id", False, "Bad id. More.")))
    assert failed == [
        NoteAdded("t", text="gate: order id rejected: Bad id"),
        GateReported("t", agent="refund_agent", gate="order_id", ok=False, detail="Bad id. More."),
    ]
    correcting = list(translate("t", StepChanged("order_agent", "correcting", "1/2", 1)))
    assert correcting == [
        NoteAdded("t", text="correcting (1/2)"),
        StepUpdate("t", agent="order_agent", step="correcting", detail="1/2", attempt=1),
    ]
    assert list(translate("t", AgentChanged("refund_agent", "order_agent"))) == [
        AgentSwitched("t", agent="refund_agent")
    ]
    assert list(translate("t", ReplyDone("order_agent", "Done."))) == [
        ReplyComplete("t", agent="order_agent", text="Done.")
    ]
    assert list(translate("t", TurnFailed("provider", "Down."))) == [
        NoteAdded("t", text="⚠ Down."),
        TurnProblem("t", kind="provider", message="Down."),
    ]


class Refused(Exception):
    pass


async def test_drive_turn_refused_posts_only_the_refusal() -> None:
    posted: list[Message] = []

    async def events() -> AsyncIterator[EngineEvent]:
        raise Refused("The message is empty.")
        yield  # pragma: no cover

    await drive_turn(posted.append, "t", events, input_error=Refused, text=" ")
    assert posted == [TurnRefused("t", text=" ", reason="The message is empty.")]


async def test_drive_turn_refused_for_a_decision_reports_that_decision() -> None:
    posted: list[Message] = []
    request = ApprovalRequest("t", "refund_approval", ("approve", "reject", "escalate"))

    async def events() -> AsyncIterator[EngineEvent]:
        raise DecisionPending("Thread t is waiting for a decision.", request)
        yield  # pragma: no cover

    await drive_turn(posted.append, "t", events, input_error=InputError, text="hi")
    [refused] = posted
    assert isinstance(refused, TurnRefused) and refused.pending == request
    assert refused.reason == "Thread t is waiting for a decision."


async def test_drive_turn_ends_after_the_stream_and_notes_a_pending_decision() -> None:
    posted: list[Message] = []
    request = ApprovalRequest("t", "refund_approval", ("approve", "reject", "escalate"))
    result = TurnResult("t", "awaiting_approval", "", "refund_agent", pending=request)
    closed = False

    async def events() -> AsyncIterator[EngineEvent]:
        nonlocal closed
        try:
            yield AgentChanged("order_agent")
            yield ApprovalRequested(request)
            yield TurnFinished(result)
        finally:
            closed = True

    await drive_turn(posted.append, "t", events, input_error=Refused, text="refund")
    assert posted == [
        TurnAccepted("t", text="refund"),
        AgentSwitched("t", agent="order_agent"),
        NoteAdded("t", text="waiting for a human decision: refund approval"),
        TurnEnded("t", result=result),
    ]
    assert closed


async def test_drive_turn_reports_an_engine_crash_and_still_ends() -> None:
    posted: list[Message] = []

    async def events() -> AsyncIterator[EngineEvent]:
        yield AgentChanged("order_agent")
        raise RuntimeError("disk full")

    await drive_turn(posted.append, "t", events, input_error=Refused, text="hi")
    assert posted[-2] == TurnProblem("t", kind="internal", message="ShopBot failed: disk full")
    assert posted[-1] == TurnEnded("t", result=None)


def test_approval_wording() -> None:
    refund = ApprovalRequest(
        "t",
        "refund_approval",
        ("approve", "reject", "escalate"),
        {"order_id": "ORD-001", "amount": "89.99", "customer": "Alex"},
    )
    assert headline(refund) == "Refund of ORD-001 for $89.99"
    assert money("1234.5") == "$1,234.50"
    assert money("n/a") == "n/a"
    paid = replace(refund, payload={**refund.payload, "already_refunded": "REF-ORD-001-ABC123"})
    assert headline(paid) == (
        "Refund of ORD-001 for $89.99: already paid (REF-ORD-001-ABC123); "
        "any decision only closes this request"
    )


def test_export_quotes_customer_text_literally() -> None:
    info = ThreadInfo(
        "t-1", "[b]Sam[/b]", "x", "2025-01-01T00:00:00Z", "", "order_agent", "idle", 1
    )
    lines = [
        ChatLine(1, "t-1", "", "customer", "# not a heading *nor bold*\nline two", None),
        ChatLine(2, "t-1", "", "note", "→ handed to Refund agent", None),
        ChatLine(3, "t-1", "", "assistant", "Here is **ORD-001**.", "refund_agent"),
    ]
    text = transcript_markdown("t-1", info, lines, exported_at=datetime(2025, 1, 2, 3, 4, 5))
    assert "- Customer: \\[b\\]Sam\\[/b\\]" in text
    assert "> \\# not a heading \\*nor bold\\*\n> line two" in text
    assert "*→ handed to Refund agent*" in text
    assert "**Refund agent:**\n\nHere is **ORD-001**." in text
    assert "- Exported: 2025-01-02T03:04:05" in text


@pytest.mark.parametrize(
    "typed",
    [
        "1. first - second &amp; &copy; &lt;b&gt;",
        "- Where is ORD-005?",
        "line one\n===",
        "line one\n---",
        "  10. tenth",
        "**bold** [link](http://x.example) `code` <img src=x> ~~gone~~ | a | b |",
    ],
)
def test_an_exported_message_renders_as_the_customer_typed_it(typed: str) -> None:
    """Read in a Markdown viewer (CommonMark), each quoted line is the text typed: no list,
    rule, heading, entity, link or emphasis of the customer's making."""
    info = ThreadInfo("t-1", "Sam", "x", "2025-01-01T00:00:00Z", "", "order_agent", "idle", 1)
    line = ChatLine(1, "t-1", "", "customer", typed, None)
    text = transcript_markdown("t-1", info, [line], exported_at=None)
    quote = text[text.index("**Sam:**") :]
    tokens = MarkdownIt().parse(quote)
    kinds = {token.type for token in tokens}
    assert kinds <= {
        "paragraph_open",
        "paragraph_close",
        "inline",
        "blockquote_open",
        "blockquote_close",
    }, kinds
    shown = [token for token in tokens if token.type == "inline"][1:]  # after "Sam:"
    assert all(
        child.type in ("text", "softbreak") for token in shown for child in token.children or []
    )
    rendered = "\n".join(
        "".join(c.content if c.type == "text" else "\n" for c in token.children or [])
        for token in shown
    )
    assert rendered == typed.strip()


def test_new_thread_ids_are_valid_and_distinct() -> None:
    ids = {new_thread_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(validate_thread_id(thread_id) for thread_id in ids)


async def test_tokens_are_batched_and_flushed_before_the_next_event() -> None:
    posted: list[Message] = []
    result = TurnResult("t", "done", "Hello there.", "order_agent")

    async def events() -> AsyncIterator[EngineEvent]:
        yield AgentChanged("order_agent")
        for piece in ("Hello ", "there", "."):
            yield TokenDelta("order_agent", piece)
        yield ReplyDone("order_agent", "Hello there.")
        yield TurnFinished(result)

    await drive_turn(posted.append, "t", events, input_error=Refused, text="hi")
    assert posted[2:] == [
        ReplyChunk("t", agent="order_agent", text="Hello there."),
        ReplyComplete("t", agent="order_agent", text="Hello there."),
        TurnEnded("t", result=result),
    ]


async def test_a_token_batch_is_flushed_by_time_when_the_model_pauses() -> None:
    posted: list[Message] = []
    paused = asyncio.Event()
    go_on = asyncio.Event()

    async def events() -> AsyncIterator[EngineEvent]:
        yield AgentChanged("order_agent")
        yield TokenDelta("order_agent", "Thinking")
        paused.set()
        await go_on.wait()
        yield TurnFinished(TurnResult("t", "done", "", "order_agent"))

    turn = asyncio.create_task(
        drive_turn(posted.append, "t", events, input_error=Refused, text="hi")
    )
    await paused.wait()
    for _ in range(100):  # the batch timer is a frame long
        if ReplyChunk("t", agent="order_agent", text="Thinking") in posted:
            break
        await asyncio.sleep(0.01)
    assert ReplyChunk("t", agent="order_agent", text="Thinking") in posted
    go_on.set()
    await turn


def test_audit_cells_are_cut_to_width_a_thread_id_keeping_its_end() -> None:
    thread = "20261130-064215-21b739"
    assert fit_cell(thread, 16, keep_end=True) == "…0-064215-21b739"
    assert fit_cell(thread, 16) == "20261130-064215…"
    assert fit_cell("T-alex", 8, keep_end=True) == "T-alex  "
    assert fit_cell("注文の詳細", 7) == "注文の…"  # wide characters count twice


@pytest.mark.parametrize("state", [WorkerState.ERROR, WorkerState.CANCELLED])
def test_only_a_turn_worker_ending_frees_its_thread(state: WorkerState) -> None:
    turns = TurnWorkers(Widget())
    turns.busy |= {"export", "thread-load", "t1"}

    def ended(group: str) -> Worker.StateChanged:
        worker = Worker(Widget(), lambda: None, group=group)
        return Worker.StateChanged(worker, state)

    # Exporting and loading workers fail too; threads may be named like their groups.
    turns.worker_changed(ended("export"))
    turns.worker_changed(ended("thread-load"))
    assert turns.busy == {"export", "thread-load", "t1"}
    turns.worker_changed(ended(f"{TURN_GROUP}t1"))
    assert turns.busy == {"export", "thread-load"}


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (["t-a", "t-b"], "t-a and t-b"),
        (["t-a", "t-b", "t-c"], "t-a, t-b and t-c"),
        (["t-a", "t-b", "t-c", "t-d", "t-e"], "t-a, t-b and 3 more"),
        # Written by another program into the registry: shown as text, never as control.
        (["t-\x1b[2Jx", "t-b"], "t-\u241b[2Jx and t-b"),
    ],
)
def test_several_escalations_are_named_in_one_short_line(ids: list[str], expected: str) -> None:
    since = "2026-12-01T09:30:00.000Z"
    assert named([Escalation(i, since, None, "reason") for i in ids]) == expected
