"""What the chat screen tells the person in notifications: the words, titles and severities.

Every notification quoting a thread id, a customer or an error passes `markup=False`: those
are text, and "[b]" in a customer's name must not turn bold.
"""

from __future__ import annotations

from math import inf
from time import monotonic
from typing import TYPE_CHECKING

from agents import backend as api
from agents.backend import AGENT_TITLES, redact, visible
from shopbot_tui.toasts import withdraw_toasts

if TYPE_CHECKING:
    from textual.widget import Widget

    from agents.backend import Escalation, ThreadInfo
    from shopbot_tui.chat.messages import ChatExported, ProviderRetrying, TurnProblem

# A palette command that needs the engine, chosen before it is up (its key is off till then).
ENGINE_LOADING = "ShopBot is still loading the engine; try again in a moment."
# A message sent before the conversation can take it goes once it can.
SENT_WHEN_LOADED = "ShopBot is still loading the engine; your message goes as soon as it is up."
SENT_WHEN_OPEN = "The conversation is still opening; your message goes as soon as it is open."
# Why a message was not sent; the text stays in the box.
NO_ENGINE = "ShopBot could not start (see the conversation); your message is kept."
STILL_ANSWERING = (
    "ShopBot is still answering. Send this when the reply is done, or press esc to stop the "
    "reply; your message is kept."
)
# Said here rather than the engine's refusal, which names a `shopbot resume` command line.
# Always said in the approval dialog, which opens with it: "decide in the dialog (ctrl+r
# opens it again)" read oddly there, and its hint line names the keys.
WAITS_FOR_DECISION = "This conversation waits for this decision first; your message is kept."
# Another process (a second window, a `shopbot` command) holds the conversation's turn, or
# answered its decision already. Opened again (ctrl+t), it shows what that did.
BUSY_ELSEWHERE = (
    "This conversation is answering a message in another window or a `shopbot` command. "
    "Send this once that is done (ctrl+t opens the conversation again, with its reply); "
    "your message is kept."
)
DECIDING_ELSEWHERE = (
    "This conversation is answering in another window or a `shopbot` command (maybe this "
    "very decision); yours was not sent. Once that is done, ctrl+t opens the conversation "
    "again, and asks the decision again if it is still needed."
)
DECIDED_ELSEWHERE = (
    "This decision was already answered in another window or by `shopbot resume`; yours "
    "was not sent. The conversation is shown as stored."
)
# ... and asked another one since: the decision that waits now is shown instead.
# The app's periodic look found the decision on screen answered elsewhere (see decisions_waiting).
ANSWERED_WHILE_SHOWN = (
    "The decision this conversation waited for was answered in another window or by "
    "`shopbot resume`. The conversation is shown as it is now."
)


def decided_by_text(who: str) -> str:
    return (
        f"The decision this conversation waited for was {who}, while it was shown here. "
        "The conversation is shown as it is now."
    )


ASKED_ANEW_ELSEWHERE = (
    "That decision was answered in another window or by `shopbot`, and another one was "
    "asked since; yours was not sent. This is the decision that waits now."
)
# Why esc stopped nothing while the thread was still busy.
STILL_PAYING = (
    "The approved refund is being paid and recorded; that cannot be stopped, and the reply "
    "follows once it is done."
)
NOTHING_LEFT_TO_STOP = (
    "ShopBot is only saving what is done (a whole reply, or a question for you); there is "
    "nothing left to stop."
)
RETRYING_TITLE = "Model provider failed, retrying"
ESCALATED_TITLE = "Escalated to a person"
# An escalation's reason in its notification, at most this many characters: one short line.
ESCALATION_REASON_WIDTH = 60
# Several escalations in one notice: up to this many named; with more, one fewer and a count.
NAMED_AT_MOST = 3


class ChatNotices:
    """The chat screen's notifications, one method for each thing it has to say."""

    def __init__(self, screen: Widget) -> None:
        self._screen = screen
        # When "still pending" was last said: its toast may still show (hidden under a
        # dialog reopened meanwhile, back with it), and a second would stack on it.
        self._pending_said_at = -inf

    def not_sent(self, reason: str) -> None:
        self._screen.notify(reason, title="Not sent", severity="warning", markup=False)

    def sending_when_ready(self, *, loading: bool) -> None:
        self._screen.notify(
            SENT_WHEN_LOADED if loading else SENT_WHEN_OPEN, title="Sending soon", markup=False
        )

    def engine_loading(self) -> None:
        self._screen.notify(ENGINE_LOADING, title="Not yet", severity="warning")

    def engine_failed(self, error: str) -> None:
        self._screen.notify(error, title="ShopBot could not start", severity="error", markup=False)

    def thread_unreadable(self, error: str) -> None:
        self._screen.notify(
            error, title="Could not open the conversation", severity="error", markup=False
        )

    def decisions_waiting(self, threads: list[ThreadInfo]) -> None:
        """`threads` (not the open one) were seen waiting for a decision for the first time."""
        if len(threads) == 1:
            (info,) = threads
            who = f" ({info.customer})" if info.customer else ""
            text = f"Conversation {info.thread_id}{who} waits for a decision: ctrl+o opens it."
        else:
            text = f"{len(threads)} conversations wait for a decision: ctrl+o opens the oldest."
        self._screen.notify(text, title="Decision waiting", severity="warning", markup=False)

    def no_decision_waiting(self, *, here: bool) -> None:
        text = "No other conversation waits for a decision."
        if here:
            text += " This one does: ctrl+r opens it."
        self._screen.notify(text)

    def escalated(self, escalations: list[Escalation], *, at_start: bool) -> None:
        """Other conversations were escalated to a person: a new one named, with the bell
        (a person may be looking elsewhere, and a customer was promised a colleague); those
        open already when the app started, said once, with no bell (nothing just happened)."""
        count = len(escalations)
        if at_start:
            which = (
                f"Conversation {visible(escalations[0].thread_id)} is"
                if count == 1
                else f"{count} conversations ({named(escalations)}) are"
            )
            text = f"{which} escalated and waiting for a person: marked ▲ in ctrl+t."
        elif count == 1:
            text = escalation_line(escalations[0])
        else:
            which = f"{count} conversations were escalated ({named(escalations)})"
            text = f"{which}: marked ▲ in ctrl+t."
        self._screen.notify(text, title=ESCALATED_TITLE, severity="warning", markup=False)
        if not at_start:
            self._screen.app.bell()

    def not_escalated(self) -> None:
        self._screen.notify("This conversation is not escalated: nothing to mark handled.")

    def escalation_closed(self, thread_id: str, *, done: bool) -> None:
        if done:
            text = f"Escalation of {thread_id} marked handled."
        else:
            text = f"The escalation of {thread_id} was already marked handled (another window?)."
        self._screen.notify(text, title="Escalation", markup=False)

    def thread_not_listed(self, thread_id: str) -> None:
        self._screen.notify(
            f"Conversation {thread_id} is not among this ShopBot's conversations; "
            "its events stay in the audit log.",
            title="Cannot open it",
            severity="warning",
            markup=False,
        )

    def thread_of_another_customer(self, thread_id: str, owner: str | None, customer: str) -> None:
        """`owner` None: the conversation began without a customer, and stays so."""
        whose = f"belongs to {owner}" if owner else "began without a customer"
        self._screen.notify(
            f"Conversation {thread_id} {whose}; start a new conversation (ctrl+n) for {customer}.",
            title="Customer",
            severity="warning",
            markup=False,
        )

    def new_conversation(self, thread_id: str, customer: str | None) -> None:
        """Said with whom it is for: ctrl+n takes the open conversation's customer."""
        if customer:
            text = f"New conversation {thread_id} for {customer}."
        else:
            text = (
                f"New conversation {thread_id}, without a customer: ctrl+t starts one for a "
                "customer."
            )
        self._screen.notify(text, markup=False)

    def provider_retrying(self, message: ProviderRetrying) -> None:
        self._screen.notify(
            api.retry_notice(message.reason, message.delay, message.attempt),
            title=RETRYING_TITLE,
            severity="warning",
            markup=False,
        )

    def turn_problem(self, message: TurnProblem, *, open_thread: str) -> None:
        where = "" if message.thread_id == open_thread else f" (conversation {message.thread_id})"
        title = "Model provider unavailable" if message.kind == "provider" else "ShopBot error"
        # A storage problem says what to do itself; "try again" would contradict it. A
        # provider's "...; try again later." already says it: "The conversation is kept; try
        # again." after it read as an echo.
        if message.kind == "storage":
            then = ""
        elif "try again" in message.message:
            then = " The conversation is kept."
        else:
            then = " The conversation is kept; try again."
        self._screen.notify(
            f"{message.message}{then}",
            title=title + where,
            severity="error",
            timeout=10,
            markup=False,
        )

    def new_reply(self, thread_id: str) -> None:
        """A conversation not on screen finished its turn with a reply (decisions_waiting
        says when: not beside its escalation, nor a decision it asked)."""
        self._screen.notify(f"Conversation {thread_id} has a new reply.", markup=False)

    def worker_failed(self, error: BaseException | None) -> None:
        self._screen.notify(
            f"Something stopped unexpectedly ({redact(str(error))}).",
            title="ShopBot error",
            severity="error",
            markup=False,
        )

    def cannot_stop(self, *, paying: bool) -> None:
        reason = STILL_PAYING if paying else NOTHING_LEFT_TO_STOP
        self._screen.notify(reason, title="Not stopped", severity="warning")

    def retry_over(self) -> None:
        """The turn ended: a "retrying in 8 s" notice still up would say something untrue."""
        withdraw_toasts(self._screen.app, RETRYING_TITLE)

    def decided_elsewhere(self, who: str | None = None) -> None:
        """`who`: the decision as the audit log names it ("approved by lee (server), ...")."""
        said = ANSWERED_WHILE_SHOWN if who is None else decided_by_text(who)
        self._screen.notify(said, severity="warning", markup=False)

    def decision_still_pending(self) -> None:
        now = monotonic()
        if now - self._pending_said_at < self._screen.app.NOTIFICATION_TIMEOUT:
            return
        self._pending_said_at = now
        self._screen.notify("The decision is still pending: ctrl+r opens it again.")

    def decision_not_sent(self, thread_id: str) -> None:
        self._screen.notify(
            f"Not sent: ShopBot is still answering in {thread_id}; if the "
            "decision is still needed when it stops, ctrl+r opens it again.",
            severity="warning",
            markup=False,
        )

    def typed_kept(self) -> None:
        self._screen.notify("What you typed as the decision opened is back in the message box.")

    def nothing_to_copy(self) -> None:
        self._screen.notify("There is no reply to copy yet.", severity="warning")

    def copied(self, characters: int) -> None:
        self._screen.notify(f"Copied the last reply ({characters} characters).")

    def exported(self, message: ChatExported) -> None:
        if message.error:
            self._screen.notify(message.error, title="Export", severity="warning", markup=False)
        else:
            self._screen.notify(f"Saved to {message.path}", title="Chat exported", markup=False)


def named(escalations: list[Escalation]) -> str:
    """'t-1, t-2 and t-3'; with more than three, 't-1, t-2 and 5 more': which ones, in one
    short line."""
    ids = [visible(escalation.thread_id) for escalation in escalations]
    if len(ids) > NAMED_AT_MOST:
        shown, rest = ids[: NAMED_AT_MOST - 1], len(ids) - (NAMED_AT_MOST - 1)
        return f"{', '.join(shown)} and {rest} more"
    return f"{', '.join(ids[:-1])} and {ids[-1]}"


def escalation_line(escalation: Escalation) -> str:
    """'Conversation t-7 escalated by the Refund agent: refund above the auto-refund limit.'"""
    agent = escalation.agent
    # Both from the registry, which another program may have written: text, never control.
    by = f" by the {visible(AGENT_TITLES.get(agent, agent))}" if agent else ""
    reason = " ".join(visible(escalation.reason).split()).rstrip(".")
    if len(reason) > ESCALATION_REASON_WIDTH:
        reason = reason[: ESCALATION_REASON_WIDTH - 1].rstrip() + "…"
    else:
        reason += "."
    return f"Conversation {escalation.thread_id} escalated{by}: {reason}"
