"""A conversation as a row of the conversation list, laid out for the terminal's width."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rich.text import Text
from textual.widgets import DataTable

from agents.backend import AGENT_TITLES, ThreadInfo, visible
from shopbot_tui.audit.table import fit_cell
from shopbot_tui.threads.views import DRAFT_MARK, ESCALATED_MARK, STATUS_MARKS

TITLE_WIDTH = 30
# A terminal narrower than this lays the list out for its width: the full list needs 105
# columns of it with the app's thread ids, and at 80 Agent, Turns and Updated sat behind a
# horizontal scrollbar. Narrow, the list leaves out Agent and Turns (the conversation shows
# both), keeps the end of a long thread id (what tells the app's ids apart: they begin with
# the same date and time), the date without its year, and as much of the first message as
# the width leaves beside a scrollbar and a customer's name of 10 letters: 12 cells at 70
# columns, 22 at 80.
NARROW_BELOW = 115
NARROW_THREAD_WIDTH = 14
NARROW_LEAVES_OUT = frozenset({"agent", "turns"})


def title_width(terminal_width: int) -> int:
    """The first message's column, for a terminal this wide."""
    if terminal_width >= NARROW_BELOW:
        return TITLE_WIDTH
    return max(10, min(TITLE_WIDTH, terminal_width - 58))


def theme_style(style: str, variables: Mapping[str, str]) -> str:
    """'bold $text-warning' -> 'bold #A86D1C' in the theme of `variables` (a DataTable cell is
    Rich text, which knows no theme variables)."""
    return " ".join(
        variables.get(word[1:], "") if word.startswith("$") else word for word in style.split()
    )


@dataclass(frozen=True)
class RowLayout:
    """How rows are laid out, for one terminal width."""

    narrow: bool
    title_width: int

    @classmethod
    def for_width(cls, terminal_width: int) -> RowLayout:
        return cls(terminal_width < NARROW_BELOW, title_width(terminal_width))

    def add_columns(self, table: DataTable[Text]) -> None:
        table.add_column(Text(""), key="status", width=1)
        thread_width = NARROW_THREAD_WIDTH if self.narrow else None
        table.add_column(Text("Thread"), key="thread", width=thread_width)
        table.add_column(Text("Customer"), key="customer")
        table.add_column(Text("First message"), key="title", width=self.title_width)
        if not self.narrow:
            table.add_column(Text("Agent"), key="agent")
            table.add_column(Text("Turns"), key="turns")
        table.add_column(Text("Updated (UTC)"), key="updated")

    def cells(
        self,
        info: ThreadInfo,
        *,
        current: bool,
        escalated: bool,
        escalation_first: bool,
        drafted: bool,
        variables: Mapping[str, str],
    ) -> list[Text]:
        """The row's cells: its mark (an escalation's only where the status has none, unless
        `escalation_first`), its thread (bold when `current`), and so on."""
        mark, style = STATUS_MARKS.get(info.status, ("", ""))
        if escalated and (not mark or escalation_first):
            mark, style = ESCALATED_MARK
        thread = info.thread_id
        if self.narrow:
            thread = fit_cell(thread, NARROW_THREAD_WIDTH, keep_end=True).rstrip()
        updated = info.updated_at[:16].replace("T", " ")
        # The first message, after ✎ when a draft waits in the conversation.
        title = Text(overflow="ellipsis", no_wrap=True)
        if drafted:
            title.append(f"{DRAFT_MARK[0]} ", style=DRAFT_MARK[1])
        title.append(visible(info.title))
        cells = {
            "status": Text(mark, style=theme_style(style, variables)),
            "thread": Text(thread, style="bold" if current else ""),
            "customer": Text(visible(info.customer or "")),
            "title": title,
            "agent": Text(
                AGENT_TITLES.get(info.active_agent, info.active_agent).removesuffix(" agent")
            ),
            "turns": Text(str(info.turns), justify="right"),
            "updated": Text(updated[5:] if self.narrow else updated),
        }
        return [
            cell for key, cell in cells.items() if not (self.narrow and key in NARROW_LEAVES_OUT)
        ]
