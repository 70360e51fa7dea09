"""The side panel: who is answering, what they are doing, which checks ran, and the session."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from agents.backend import AGENT_TITLES, AGENTS, STEP_LABELS, visible
from shopbot_tui.widgets.one_layout import VIRTUAL_SIZE_NO_RELAYOUT

if TYPE_CHECKING:
    from agents.backend import Escalation

# The swarm has no router: every specialist carries `transfer_to_<agent>` tools for the
# other two (design.md), so "may hand off to" is everyone else.
HANDOFF_TARGETS: dict[str, tuple[str, ...]] = {
    agent: tuple(other for other in AGENTS if other != agent) for agent in AGENTS
}
GATE_DETAIL_WIDTH = 60
ACTIVE_BADGE = " Active "


# The conversation's labels (Model, ID, Customer) take this many columns: the values line up.
LABEL_WIDTH = 9


def _label(name: str) -> str:
    return f"{name:<{LABEL_WIDTH}}"


# The step the panel shows when the engine could not start (the conversation says why).
ENGINE_NOT_RUNNING = "not running"


def short_title(agent: str) -> str:
    """'Refund agent' -> 'Refund'."""
    return AGENT_TITLES.get(agent, agent).removesuffix(" agent")


def step_text(step: str, detail: str = "", attempt: int | None = None) -> str:
    """How a step reads in the panel: 'correcting 1/2', 'calling a tool: lookup_order'."""
    label = STEP_LABELS.get(step, step.replace("_", " "))
    if step == "correcting":
        return f"{label} {detail or f'{attempt or 1}/2'}"
    if step == "calling_tool" and detail:
        return f"{label}: {detail}"
    if step == "handing_off" and detail:
        return f"{label} → {AGENT_TITLES.get(detail, detail)}"
    return label


class PanelLine(Static):
    """A line of the side panel (a title, the gates, the model...)."""

    virtual_size = VIRTUAL_SIZE_NO_RELAYOUT


class AgentCard(Static):
    """One specialist: its name, whom it may hand off to, and, while it is the active one,
    an "Active" badge and its current step. One widget drawing its lines (each cut to the
    card's width): as a row of labels in containers it was six widgets a card, a fifth of the
    chat screen's widgets to build and style before the first frame. Colours come from the
    component classes in chat.tcss, so they follow the theme as the labels' did."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "agent-card--badge",
        "agent-card--handoffs",
        "agent-card--step",
    }
    virtual_size = VIRTUAL_SIZE_NO_RELAYOUT

    def __init__(self, agent: str, *, active: bool = False, step: str = "") -> None:
        # Made active, not made and then restyled as the active one.
        classes = "agent-card -active" if active else "agent-card"
        super().__init__(id=f"agent-{agent}", classes=classes)
        self.agent = agent
        self.active = active
        self.step = step if active else ""  # an idle card draws no step
        self._title = Content.styled(AGENT_TITLES.get(agent, agent), "bold")
        targets = ", ".join(short_title(target) for target in HANDOFF_TARGETS[agent])
        self._handoffs = f"→ {targets}"

    def render(self) -> Content:
        width = max(self.content_region.width, 1)
        handoffs = self._line(self._handoffs, "agent-card--handoffs", width)
        if not self.active:
            return Content("\n").join([self._title.truncate(width, ellipsis=True), handoffs])
        # The badge sits at the right edge, as it did beside a name one fraction wide.
        title = self._title.truncate(max(width - len(ACTIVE_BADGE) - 1, 1), ellipsis=True)
        room = max(width - title.cell_length - len(ACTIVE_BADGE), 1)
        badge = self._line(ACTIVE_BADGE, "agent-card--badge", len(ACTIVE_BADGE))
        head = Content.assemble(title, " " * room, badge)
        step = self._line(f"▸ {self.step}", "agent-card--step", width)
        return Content("\n").join([head, handoffs, step])

    def _line(self, text: str, component: str, width: int) -> Content:
        style = self.get_visual_style(component)
        return Content.styled(text, style).truncate(width, ellipsis=True)

    def show(self, *, active: bool, step: str) -> None:
        shown = (active, step if active else "")  # an idle card draws no step
        if (self.active, self.step) == shown:
            return  # steps arrive often; a relayout each time is not free
        was_active = self.active
        self.active, self.step = shown
        if active == was_active:
            self.refresh()  # another step: the same lines
            return
        self.set_class(active, "-active")
        self.refresh(layout=True)  # two lines or three


class SidePanel(VerticalScroll):
    """Agents, the active agent's step, this turn's gate results, and the conversation: model,
    id and customer.

    Its lines are mounted in the frame after the first one (as Textual's `Lazy` mounts, which
    would hide the panel until then: the chat would be laid out wide, then narrow): a third
    of the first frame's work was styling, laying out and drawing them, before the screen
    said "Loading". What the screen tells it meanwhile is kept, and each line is made showing
    it: mounted, none is restyled or updated again.
    """

    can_focus = False
    virtual_size = VIRTUAL_SIZE_NO_RELAYOUT

    class Shown(Message):
        """The panel was shown or hidden by its styles (a narrow terminal, the keys panel)."""

        def __init__(self, shown: bool) -> None:
            super().__init__()
            self.shown = shown

    def __init__(self, *, model_label: str, offline: bool) -> None:
        super().__init__(id="side-panel")
        self._shown: bool | None = None
        self._model_label = model_label
        self._offline = offline
        self.agent: str = AGENTS[0]
        self.step = "idle"
        # `(gate, ok, detail)` of the gates shown under "Checks this turn".
        self.gates: list[tuple[str, bool, str]] = []
        self._waiting = 0
        self._escalations: tuple[Escalation | None, int] = (None, 0)
        self._session: tuple[str, str | None] | None = None
        self.filled = False  # its lines are mounted

    def notify_style_update(self) -> None:
        # (Textual's hook after the CSS is applied to the panel: its classes or its screen's.)
        super().notify_style_update()
        if self.is_mounted:
            self._say_shown()

    def _say_shown(self) -> None:
        if self.display != self._shown:
            self._shown = self.display
            self.post_message(self.Shown(self.display))

    def _lines(self) -> ComposeResult:
        """Its lines, each made with what it shows now: mounted, nothing is updated again."""
        waiting = PanelLine(self._waiting_line(), id="waiting")
        escalated = PanelLine(self._escalations_line(), id="escalated")
        # (Hidden by chat.tcss while they say nothing.)
        if self._waiting:
            waiting.display = True
        if self._escalations != (None, 0):
            escalated.display = True
        yield waiting
        yield escalated
        yield PanelLine(
            Content.assemble("Agents ", ("(→ may hand off to)", "not bold")),
            classes="section-title",
        )
        for agent in AGENTS:
            yield AgentCard(agent, active=agent == self.agent, step=self.step)
        yield PanelLine(Content("Checks this turn"), classes="section-title")
        yield PanelLine(self._gates_line(), id="gates")
        # "Conversation", the app's word for a thread everywhere; its id is the `--thread ID`
        # and `shopbot chat THREAD` a person types.
        yield PanelLine(Content("Conversation"), classes="section-title")
        yield PanelLine(self._model_line(), id="model")
        thread, customer = self._session_lines()
        yield PanelLine(thread, id="thread")
        yield PanelLine(customer, id="customer")

    def on_mount(self) -> None:
        # Styled first as it is made, in a narrow terminal already hidden: said from here (a
        # message posted before the panel mounts never arrives).
        self._say_shown()
        self.call_after_refresh(self._fill)

    async def _fill(self) -> None:
        await self.mount_all(self._lines())
        self.filled = True

    def _show_line(self, line_id: str, content: Content, *, shown: bool) -> None:
        """The line `line_id` shown with `content`, or hidden (setting `display`, even to what
        it is, restyles it)."""
        line = self.query_one(f"#{line_id}", Static)
        if line.display != shown:
            line.display = shown
        if shown:
            self._update(line_id, content)

    def _update(self, line_id: str, content: Content) -> None:
        """Show `content` on the line `line_id`, unless it shows it already: an update lays
        the screen out again, and the chat tells the panel the same things often (each
        opening its session, no gates, nothing waiting)."""
        line = self.query_one(f"#{line_id}", Static)
        shown = line.content
        if isinstance(shown, Content) and (shown.plain, shown.spans) == (
            content.plain,
            content.spans,
        ):
            return
        line.update(content)

    def show_agent(self, agent: str, step: str | None = None) -> None:
        """Highlight `agent`; `step` is already worded by `step_text`."""
        self.agent = agent
        if step is not None:
            self.step = step
        if not self.filled:
            return
        for card in self.query(AgentCard):
            card.show(active=card.agent == agent, step=self.step)

    def show_gates(self, results: list[tuple[str, bool, str]]) -> None:
        """`(gate, ok, detail)` of the gates that ran this turn, in order."""
        self.gates = list(results)
        if self.filled:
            self._update("gates", self._gates_line())

    def _gates_line(self) -> Content:
        if not self.gates:
            return Content("none yet")
        lines = []
        for gate, ok, detail in self.gates:
            mark = ("✓ ", "$success") if ok else ("✗ ", "$error")
            line = Content.assemble(mark, (gate.replace("_", " "), "bold"))
            if not ok:
                cut = visible(detail)
                cut = cut if len(cut) <= GATE_DETAIL_WIDTH else cut[: GATE_DETAIL_WIDTH - 1] + "…"
                line = line.append(Content(f": {cut}"))
            lines.append(line)
        return Content("\n").join(lines)

    def add_gate(self, gate: str, ok: bool, detail: str) -> None:
        """One more gate ran this turn."""
        self.show_gates([*self.gates, (gate, ok, detail)])

    def show_model(self, label: str, *, offline: bool) -> None:
        self._model_label, self._offline = label, offline
        if self.filled:
            self._update("model", self._model_line())

    def _model_line(self) -> Content:
        label = self._model_label
        if self._offline:
            # The badge's first column is its padding: it starts one column early, so its
            # words line up with the thread id's and the customer's.
            return Content.assemble(
                (_label("Model")[:-1], "dim"),
                (f" {visible(label)} ", "bold reverse $warning"),
                "\n",
                " " * LABEL_WIDTH,
                "rule-based, no network",
            )
        return Content.assemble((_label("Model"), "dim"), (visible(label), "bold"))

    def show_waiting(self, count: int) -> None:
        """`count` other conversations wait for a decision (none: the line goes)."""
        self._waiting = count
        if not self.filled:
            return
        self._show_line("waiting", self._waiting_line(), shown=count > 0)

    def _waiting_line(self) -> Content:
        count = self._waiting
        if not count:
            return Content("")
        what = "a decision" if count == 1 else f"{count} decisions"
        where = "another conversation" if count == 1 else "other conversations"
        return Content.assemble(
            (f"{what.capitalize()} waiting", "bold"),
            f" in {where} · ",
            ("ctrl+o", "bold"),
            " opens " + ("it" if count == 1 else "the oldest"),
        )

    def show_escalations(self, here: Escalation | None, *, others: int) -> None:
        """The open conversation's escalation, if a person has not handled it yet, and how
        many other conversations are escalated (nothing of either: the line goes)."""
        self._escalations = (here, others)
        if not self.filled:
            return
        self._show_line("escalated", self._escalations_line(), shown=here is not None or others > 0)

    def _escalations_line(self) -> Content:
        here, others = self._escalations
        parts: list[Content] = []
        if here is not None:
            since = here.since[11:16]  # HH:MM, UTC as the conversation list's times
            parts.append(
                Content.assemble(
                    ("Escalated to a person", "bold $text-error"),
                    f": {visible(here.reason)}, since {since} UTC · ",
                    ("ctrl+g", "bold"),
                    " once handled",
                )
            )
        if others:
            what = "conversation" if others == 1 else "conversations"
            other = "other " if here is not None else ""
            parts.append(
                Content.assemble(
                    (f"{others} {other}{what} escalated", "bold"),
                    " · marked ▲ in ",
                    ("ctrl+t", "bold"),
                )
            )
        return Content("\n").join(parts)

    def show_session(self, thread_id: str, customer: str | None) -> None:
        self._session = (thread_id, customer)
        if not self.filled:
            return
        thread, who = self._session_lines()
        self._update("thread", thread)
        self._update("customer", who)

    def _session_lines(self) -> tuple[Content, Content]:
        """The lines of the conversation's id and its customer."""
        if self._session is None:
            return Content(""), Content("")
        thread_id, customer = self._session
        who = (visible(customer), "bold") if customer else ("not given", "dim italic")
        return (
            Content.assemble((_label("ID"), "dim"), (visible(thread_id), "bold")),
            Content.assemble((_label("Customer"), "dim"), who),
        )
