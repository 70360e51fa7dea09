"""The approval modal: what the graph asks a human to decide, the checks that led here, and
one button (with a single-key shortcut) per option. Its result resumes the graph."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.geometry import Size
from textual.message import Message
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button, Footer, Static

from agents.backend import ApprovalRequest, Reviewer, earlier_decision, visible
from shopbot_tui.breakpoints import apply_breakpoints
from shopbot_tui.widgets.message_box import one_line

log = logging.getLogger("shopbot.tui")

# One key per option, shown on its button. Refund: approve / reject / escalate.
# Complaint review: escalate_to_senior / provide_compensation / close_ticket.
OPTION_KEYS: dict[str, str] = {
    "approve": "a",
    "reject": "r",
    "escalate": "e",
    "escalate_to_senior": "s",
    "provide_compensation": "c",
    "close_ticket": "t",
}
OPTION_VARIANTS: dict[str, str] = {
    "approve": "success",
    "reject": "error",
    "escalate": "warning",
    "escalate_to_senior": "warning",
    "provide_compensation": "primary",
    "close_ticket": "default",
}
KIND_TITLES: dict[str, str] = {
    "refund_approval": "Refund approval needed",
    "complaint_review": "Complaint review needed",
}


# Shorter than the option's name: "[c] Provide compensation" was cut on its button at any
# terminal width (a button has about 20 columns), and the footer lost "esc" at 70 columns.
OPTION_TITLES: dict[str, str] = {
    "escalate_to_senior": "Senior review",
    "provide_compensation": "Compensate",
}


def option_title(option: str) -> str:
    """'provide_compensation' -> 'Compensate', 'close_ticket' -> 'Close ticket'."""
    return OPTION_TITLES.get(option) or option.replace("_", " ").capitalize()


def money(value: object) -> str:
    """'59.50' -> '$59.50' (the shop's data is in dollars); anything else as it is."""
    try:
        return f"${float(str(value)):,.2f}"
    except ValueError:
        return str(value)


def headline(request: ApprovalRequest) -> str:
    """What is asked, in one line: 'Refund of ORD-001 for $89.99'."""
    payload = request.payload
    if request.kind == "refund_approval":
        asked = f"Refund of {payload.get('order_id', '?')} for {money(payload.get('amount', '?'))}"
        if paid := payload.get("already_refunded"):
            # Paid by a run that stopped before it was saved: any answer only closes this.
            return f"{asked}: already paid ({paid}); any decision only closes this request"
        return asked
    return str(payload.get("message") or "A complaint needs a human review")


def _facts(request: ApprovalRequest) -> list[tuple[str, str]]:
    payload = request.payload
    if request.kind == "refund_approval":
        keys = [
            ("Order", "order_id"),
            ("Amount", "amount"),
            ("Customer", "customer"),
            ("Product", "product"),
            ("Reason", "reason"),
        ]
    else:
        keys = [
            ("Order", "order_id"),
            ("Customer", "customer"),
            ("Sentiment", "sentiment"),
            ("Summary", "issue_summary"),
        ]
    facts = []
    for label, key in keys:
        value: Any = payload.get(key)
        if value in (None, ""):
            value = "not given"
        elif key == "amount":
            value = money(value)
        facts.append((label, str(value)))
    # Above the auto-refund limit: only a reviewer whose refund limit covers it decides.
    if needed := payload.get("needs_limit"):
        facts.append(("Authority", f"a refund limit of at least {money(needed)}"))
    # A decision that could not be carried out (the ledger was locked) is asked again.
    if failed := payload.get("failed_before"):
        facts.append(("Not done", str(failed)))
    # A refund turned down before and asked for again says so (agents/audit/decisions.py).
    for number, earlier in enumerate(payload.get("decided_before") or []):
        facts.append(("Before" if number == 0 else "", earlier_decision(earlier)))
    return facts


LABEL_WIDTH = 10

# What each answer to a complaint does, for the person choosing (the words the customer then
# reads are the graph's, agents/graph/replies.py): "Compensate" said nothing of what it gives.
COMPLAINT_EFFECTS: dict[str, str] = {
    "escalate_to_senior": (
        "a senior agent is to contact the customer within 2 business hours; the "
        "conversation stays escalated until someone marks it handled"
    ),
    "provide_compensation": (
        "the customer is told the team will be in touch within 24 hours with a resolution "
        "that includes compensation; ShopBot pays nothing itself, and the conversation "
        "stays escalated until someone marks the promise kept"
    ),
    "close_ticket": "the customer is thanked, the feedback is recorded, and the complaint closed",
}


def effects(request: ApprovalRequest) -> list[tuple[str, str]]:
    """(option's title, what choosing it does) for the options that need saying."""
    if request.kind != "complaint_review":
        return []
    return [
        (option_title(option), COMPLAINT_EFFECTS[option])
        for option in request.options
        if option in COMPLAINT_EFFECTS
    ]


class Facts(Static):
    """What is asked, a label and a value a line; a long value (a complaint's summary) wraps
    under its value, not under the labels."""

    def __init__(
        self,
        facts: list[tuple[str, str]],
        *,
        id: str,
        label_width: int = LABEL_WIDTH,
        value_style: str = "bold",
    ) -> None:
        super().__init__(id=id, markup=False)
        self._facts = facts
        self._label_width = label_width
        self._value_style = value_style

    def show(self, facts: list[tuple[str, str]]) -> None:
        self._facts = facts
        self.refresh(layout=True)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines(width))

    def render(self) -> Content:
        return Content("\n").join(self._lines(self.content_region.width or 70))

    def _lines(self, width: int) -> list[Content]:
        label_width = self._label_width
        wrap_at = max(width - label_width, 10)
        lines: list[Content] = []
        for label, value in self._facts:
            wrapped = Content.styled(visible(value), self._value_style).wrap(wrap_at)
            wrapped = wrapped or [Content("")]
            lines.append(Content.assemble((f"{label:<{label_width}}", "dim"), wrapped[0]))
            lines.extend(Content.assemble(" " * label_width, line) for line in wrapped[1:])
        return lines


# "Senior review" and a space: the effects' labels are the buttons' titles.
EFFECT_LABEL_WIDTH = 15

# Notifications said at once in the dialog, at most; and their severities, mildest first.
NOTICES_SHOWN = 2
SEVERITIES = ("information", "warning", "error")


# Below this many columns the options' buttons are stacked (approval.tcss): side by side,
# the longest label ("[s] Senior review", 17 columns) was cut at 64 columns and less.
NARROW_BELOW = 70
# Below this many rows the dialog drops its blank rows and margins (approval.tcss): roomy,
# a refund's four checks need 24 rows of a 27-row dialog, and at 80x24 only the first one
# showed above the options.
SHORT_BELOW = 30
# Below this many rows the options' buttons are one row tall as well (approval.tcss): at
# 70x20 the last two of a refund's four checks were below the fold, in a scrolled pane.
TINY_BELOW = 24


@dataclass
class RequestReread(Message):
    """The request as it stands now (the ledger and the audit log read again)."""

    request: ApprovalRequest


Reread = Callable[[ApprovalRequest], Awaitable[ApprovalRequest]]


class ApprovalScreen(ModalScreen[str | None]):
    """Dismissed with the chosen option, or None when the person decides later. `reread`
    (called off the event loop) gives the request as it stands when the dialog opens: asked
    a while ago, its order may have been refunded or decided on elsewhere since."""

    CSS_PATH = "approval.tcss"
    # (Not annotated ClassVar: see ThreadsScreen.)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_BELOW, "-wide")]  # noqa: RUF012
    VERTICAL_BREAKPOINTS = [(0, "-tiny"), (TINY_BELOW, "-short"), (SHORT_BELOW, "-tall")]  # noqa: RUF012
    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(
                key,
                f"choose('{option}')",
                option_title(option),
                tooltip=option.replace("_", " ").capitalize(),
                id=f"approval.{option}",
            )
            for option, key in OPTION_KEYS.items()
        ),
        Binding("escape", "later", "Later", tooltip="Decide later", id="approval.later"),
    ]

    # The modal opens when a reply ends, often while the person is still typing: a stray
    # "a" must not approve a refund. Keys and buttons wake up once no key has been pressed
    # for this many seconds, and a letter that is no option's key puts them back to sleep.
    # Even then an option's key only chooses its button: Enter (or a click) decides.
    ARM_DELAY: ClassVar[float] = 0.6
    # Enter this soon after an option's key is the end of a typed word ("… a⏎"), not a
    # decision: a person looks at the chosen button before confirming it.
    CONFIRM_GAP: ClassVar[float] = 0.25

    def __init__(
        self,
        request: ApprovalRequest,
        reviewer: Reviewer,
        *,
        reread: Reread | None = None,
        on_reread: Callable[[ApprovalRequest], None] | None = None,
        may_not_decide: str | None = None,
    ) -> None:
        super().__init__()
        self.request = request
        self.reviewer = reviewer
        # Why this reviewer cannot decide it (a refund above their limit): said, and no
        # option can be chosen; it waits for someone who can.
        self.may_not_decide = may_not_decide
        self._reread = reread
        self._on_reread = on_reread
        self.armed = False
        # What was typed while the keys slept: the chat gives it back to the message box.
        self.typed = ""
        # The option key that chose a button: typed text after all if typing goes on.
        self._chosen_with = ""
        self._chosen_at = 0.0
        self._arm_timer: Timer | None = None
        # Notifications while the dialog is up (`show_notice`), said in the dialog, newest
        # last: (number, text, severity); each goes when its time is up, as a toast would.
        self._notices: list[tuple[int, Content, str]] = []
        self._notices_said = 0

    def compose(self) -> ComposeResult:
        apply_breakpoints(self)  # (before the widgets below are styled)
        request = self.request
        # Only the details scroll, above the options, which are docked: in a short terminal
        # every option and, scrolled to, every check shows. (When the whole dialog scrolled,
        # its scrollbar ran down beside the buttons and the hint.)
        with Vertical(id="approval-dialog") as dialog:
            dialog.border_title = Content(KIND_TITLES.get(request.kind, "Decision needed"))
            # Who the audit log will say decided: the account ShopBot runs under.
            dialog.border_subtitle = Content(
                f"thread {request.thread_id} · deciding as {visible(self.reviewer.name)}"
            )
            with VerticalScroll(id="approval-body"):
                yield Static(Content(visible(headline(request))), id="approval-message")
                yield Facts(_facts(self.request), id="approval-facts")
                yield Static(Content("Checks that led here"), classes="section-title")
                yield Static(self._gates_content(), id="approval-gates")
                if answers := effects(request):
                    yield Static(Content("What each answer does"), classes="section-title")
                    yield Facts(
                        answers,
                        id="approval-effects",
                        label_width=EFFECT_LABEL_WIDTH,
                        value_style="",
                    )
            with Vertical(id="approval-footer"):
                yield Static(id="approval-notice", markup=False)
                if self.may_not_decide:
                    yield Static(
                        Content.assemble(
                            ("You cannot decide this: ", "bold"),
                            visible(self.may_not_decide),
                            " It stays in the queue for a reviewer whose limit covers it.",
                        ),
                        id="approval-authority",
                    )
                with Horizontal(id="approval-options"):
                    for option in request.options:
                        yield Button(
                            self._button_label(option),
                            name=option,
                            id=f"option-{option}",
                            variant=OPTION_VARIANTS.get(option, "default"),  # type: ignore[arg-type]
                            disabled=True,
                        )
                yield Static(
                    Content.assemble(
                        ("key", "bold"),
                        " chooses · ",
                        ("enter", "bold"),
                        " decides · ",
                        ("esc", "bold"),
                        " later · ",
                        ("ctrl+r", "bold"),
                        " reopens",
                    ),
                    id="approval-hint",
                )
        yield Footer()

    def show_notice(
        self,
        message: str | Content,
        *,
        title: str = "",
        severity: str,
        timeout: float | None = None,
    ) -> None:
        """Say a notification in the dialog, above the options, instead of in a toast: a
        toast here covers the details or the options in a small terminal, and shows again
        on the chat below through the dialog's translucent backdrop. The last two show, each
        for `timeout` seconds (the app's notification timeout by default), as toasts do: a
        "copied" must not push an error out before it is read, nor stay for ever."""
        text = message if isinstance(message, Content) else Content(message)
        if title:
            text = Content.assemble((title, "bold"), ": ", text)
        self._notices_said += 1
        number = self._notices_said
        self._notices = [*self._notices[-(NOTICES_SHOWN - 1) :], (number, text, severity)]
        self.set_timer(
            self.app.NOTIFICATION_TIMEOUT if timeout is None else timeout,
            lambda: self._expire(number),
        )
        if self.is_mounted:
            self._show_notice()

    def _expire(self, number: int) -> None:
        self._notices = [notice for notice in self._notices if notice[0] != number]
        if self.is_mounted:
            self._show_notice()

    def _show_notice(self) -> None:
        notice = self.query_one("#approval-notice", Static)
        if not self._notices:
            notice.display = False
            return
        # Styled as the gravest of what it says.
        severity = max((s for _, _, s in self._notices), key=SEVERITIES.index)
        notice.set_classes(f"-{severity}")
        notice.update(Content("\n").join(text for _, text, _ in self._notices))
        notice.display = True

    def _gates_content(self) -> Content:
        gates = self.request.payload.get("gates") or []
        if not gates:
            return Content("no gate results were recorded")
        rows = []
        for gate in gates:
            ok = bool(gate.get("ok"))
            mark = ("✓ ", "$success") if ok else ("✗ ", "$error")
            name = str(gate.get("gate", "?")).replace("_", " ")
            rows.append(
                Content.assemble(
                    mark, (name, "bold"), (" · " + visible(str(gate.get("detail", ""))), "dim")
                )
            )
        return Content("\n").join(rows)

    @staticmethod
    def _button_label(option: str) -> Content:
        key = OPTION_KEYS.get(option)
        title = option_title(option)
        if key is None:
            return Content(title)
        return Content.assemble((f"[{key}]", "bold"), " ", title)

    def on_mount(self) -> None:
        # The bell, not a toast: the dialog says what is asked, and a toast would cover it.
        self.app.bell()
        self._show_notice()
        # The details have the focus, not a button: Enter alone decides nothing.
        self.query_one("#approval-body").focus()
        self._sleep()
        if self._reread is not None:
            self._read_again(self._reread)

    @work(exit_on_error=False, group="approval-reread")
    async def _read_again(self, reread: Reread) -> None:
        """The ledger and the audit log read for this request (by the backend, off the event
        loop). A failed read leaves the request as it was asked (the decision still meets the
        ledger)."""
        try:
            now = await reread(self.request)
        except Exception:
            log.exception("reading the ledger for the approval failed")
            return
        self.post_message(RequestReread(now))

    @on(RequestReread)
    def _reread_shown(self, message: RequestReread) -> None:
        self.request = message.request
        self.query_one("#approval-message", Static).update(Content(visible(headline(self.request))))
        self.query_one("#approval-facts", Facts).show(_facts(self.request))
        self.query_one("#approval-gates", Static).update(self._gates_content())
        if self._on_reread is not None:
            self._on_reread(self.request)

    def _sleep(self) -> None:
        """Keys and buttons off until no key has come for ARM_DELAY seconds."""
        if self.ARM_DELAY <= 0:
            self.arm()
            return
        if self.armed:
            self._set_armed(False)
        if self._arm_timer is not None:
            self._arm_timer.stop()  # (`Timer.reset` cannot restart a one-shot that has fired)
        self._arm_timer = self.set_timer(self.ARM_DELAY, self.arm)

    def arm(self) -> None:
        """Let the shortcuts and buttons decide."""
        self._set_armed(True)

    def _set_armed(self, armed: bool) -> None:
        self.armed = armed
        self._chosen_with = ""
        if not armed:
            self.query_one("#approval-body").focus()  # nothing stays chosen
        for button in self.query("#approval-options Button").results(Button):
            button.disabled = not armed or bool(self.may_not_decide)
        self.refresh_bindings()

    def on_key(self, event: events.Key) -> None:
        """Typing that goes on into the modal is held back (and kept), never a decision.

        Seen here before the bindings are: the app checks them only once the key has bubbled
        past the screen."""
        if event.is_printable:
            if self.armed and (option := self._option_for(event.character)) is not None:
                # Chosen here, not by the binding: that runs once the key has bubbled up to
                # the app, after the next key of a burst may have put the keys to sleep.
                event.stop()
                event.prevent_default()
                self.action_choose(option)
                return
        elif event.key not in ("enter", "backspace") or (self.armed and not self._hasty(event)):
            return  # scrolling, tab, esc, a considered enter: never typing
        event.stop()
        event.prevent_default()
        self.typed += self._chosen_with
        if event.key == "backspace":
            self.typed = self.typed[:-1]
        elif event.is_printable and event.character:
            self.typed += event.character
        self._sleep()

    def _hasty(self, event: events.Key) -> bool:
        """Enter right after the key that chose a button: still typing."""
        return (
            event.key == "enter"
            and bool(self._chosen_with)
            and time.monotonic() - self._chosen_at < self.CONFIRM_GAP
        )

    def _option_for(self, character: str | None) -> str | None:
        return next((o for o in self.request.options if OPTION_KEYS.get(o) == character), None)

    def on_paste(self, event: events.Paste) -> None:
        """A paste into the dialog is text for the message box, like typing, never a choice."""
        event.stop()
        self.typed += self._chosen_with + one_line(event.text)
        self._chosen_with = ""
        self._sleep()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("choose", "decide"):
            if self.may_not_decide or not parameters or parameters[0] not in self.request.options:
                return False
            return True if self.armed else None
        return True

    def action_choose(self, option: str) -> None:
        """An option's key gives its button the focus; Enter on it decides."""
        if self.armed and option in self.request.options and not self.may_not_decide:
            self._chosen_with += OPTION_KEYS.get(option, "")
            self._chosen_at = time.monotonic()
            self.query_one(f"#option-{option}", Button).focus()

    def action_decide(self, option: str) -> None:
        if self.armed and option in self.request.options and not self.may_not_decide:
            self.dismiss(option)

    def action_later(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.name:
            self.action_decide(event.button.name)
