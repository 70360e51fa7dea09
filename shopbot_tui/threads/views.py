"""The conversation list's views: every conversation, or only those that need a person (a
decision, an escalation, a draft), each counted over the whole registry.

The list loads only the most recent conversations; a support person working a queue needs
the one escalated last month as much as today's, so each view holds its threads read from
the whole registry (there are few: they wait for someone) and the text filter narrows them
here.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass
from typing import Literal

from textual.content import Content

from agents.backend import ThreadInfo, quoted

# Theme colours ($name): plain yellow was 1.2:1 on the light theme's grey (theme_style).
STATUS_MARKS: dict[str, tuple[str, str]] = {
    "answering": ("…", "italic"),
    "awaiting_approval": ("●", "bold $text-warning"),
    "error": ("✗", "bold $text-error"),
    # Its process was killed mid-turn: nobody answers it (the next message carries on).
    "cut_off": ("✗", "bold $text-error"),
    "idle": ("", ""),
}
# An idle conversation escalated to a person that no one has marked handled yet.
ESCALATED_MARK = ("▲", "bold $text-error")
# Before the first message of a conversation with a draft.
DRAFT_MARK = ("✎", "bold")

ViewName = Literal["all", "waiting", "escalated", "drafts"]
# A terminal narrower than this names the views by their marks alone (all four fit in 40).
MARKS_ONLY_BELOW = 60


@dataclass(frozen=True)
class ThreadView:
    name: ViewName
    label: str
    # In a narrow terminal (`NARROW_BELOW` of the list).
    short_label: str
    mark: tuple[str, str]
    # The empty list, said: with nothing in the view; with nothing matching {needle}.
    none: str
    none_matching: str

    @property
    def tab_id(self) -> str:
        return f"view-{self.name}"


VIEWS: tuple[ThreadView, ...] = (
    ThreadView(
        "all",
        "All",
        "All",
        ("", ""),
        "No conversations yet: start one below.",
        "No conversation matches {needle}.",
    ),
    ThreadView(
        "waiting",
        "Waiting for a decision",
        "Waiting",
        STATUS_MARKS["awaiting_approval"],
        "No conversation is waiting for a decision.",
        "No conversation waiting for a decision matches {needle}.",
    ),
    ThreadView(
        "escalated",
        "Escalated",
        "Escalated",
        ESCALATED_MARK,
        "No conversation is escalated.",
        "No escalated conversation matches {needle}.",
    ),
    ThreadView(
        "drafts",
        "Drafts",
        "Drafts",
        DRAFT_MARK,
        "No conversation has a draft.",
        "No conversation with a draft matches {needle}.",
    ),
)
VIEW_NAMED: dict[ViewName, ThreadView] = {view.name: view for view in VIEWS}
VIEW_OF_TAB: dict[str, ThreadView] = {view.tab_id: view for view in VIEWS}


def tab_label(view: ThreadView, count: int | None, *, narrow: bool, width: int) -> Content:
    """'● Waiting for a decision 3'; shorter in a narrow terminal; no count until read."""
    mark, style = view.mark
    words = view.short_label if narrow else view.label
    if mark and width < MARKS_ONLY_BELOW:
        words = ""
    parts: list[str | tuple[str, str]] = []
    if mark:
        parts.append((mark, style))
    if words:
        parts.append(words)
    if count is not None:
        parts.append((f"{count:,}", "bold"))
    return Content(" ").join(Content.assemble(part) for part in parts)


def empty_text(view: ThreadView, needle: str) -> Content:
    """Why the list is empty (plain text: the needle is whatever was typed)."""
    if needle:
        return Content(view.none_matching.format(needle=quoted(needle)))
    return Content(view.none)


@dataclass(frozen=True)
class ThreadQueues:
    """The threads that need a person, by view, and how many threads there are in all: all
    read from the whole registry, the most recent first."""

    total: int
    waiting: list[ThreadInfo]
    escalated: list[ThreadInfo]
    drafted: list[ThreadInfo]

    @classmethod
    def sorted_out(
        cls,
        total: int,
        waiting: list[ThreadInfo],
        marked: list[ThreadInfo],
        *,
        escalated: Set[str],
        drafted: Set[str],
    ) -> ThreadQueues:
        """From `marked`, the threads escalated or with a draft (read together)."""
        return cls(
            total,
            waiting,
            [info for info in marked if info.thread_id in escalated],
            [info for info in marked if info.thread_id in drafted],
        )

    def threads(self, view: ViewName) -> list[ThreadInfo]:
        """The threads of a view that needs a person ("all" is the list's own: empty here)."""
        if view == "waiting":
            return self.waiting
        if view == "escalated":
            return self.escalated
        if view == "drafts":
            return self.drafted
        return []

    def count(self, view: ViewName) -> int:
        return self.total if view == "all" else len(self.threads(view))
