"""A stored thread's history as the chat log shows it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agents.backend import DEFAULT_AGENT
from shopbot_tui.widgets.conversation import AssistantReply, CustomerMessage, SystemNote

if TYPE_CHECKING:
    from textual.widget import Widget

    from agents.backend import ChatLine

WELCOME = "New conversation. Ask about an order (they look like ORD-001), a refund or a complaint."


def widget_for(line: ChatLine, customer: str | None) -> Widget:
    """The widget one stored transcript line is shown as."""
    if line.role == "customer":
        return CustomerMessage(line.text, customer)
    if line.role == "assistant":
        return AssistantReply(line.agent or DEFAULT_AGENT, line.text)
    return SystemNote(line.text)


def history_widgets(
    lines: Sequence[ChatLine], hidden_lines: int, customer: str | None
) -> list[Widget]:
    """`lines` (the last of the transcript, `hidden_lines` more before them), or a welcome."""
    widgets: list[Widget] = []
    if hidden_lines:
        widgets.append(SystemNote(f"… {hidden_lines} earlier lines (ctrl+s exports them all)"))
    widgets.extend(widget_for(line, customer) for line in lines)
    if not lines:
        widgets.append(SystemNote(WELCOME))
    return widgets
