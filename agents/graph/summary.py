"""Keep a long conversation bounded: fold older turns into a summary at the parent level.

Shrinking history inside a subgraph would not shrink the parent's (messages merge by id), so
the parent removes messages with `RemoveMessage`. The cut falls just before a customer
message, so no tool call is ever separated from its answer, and the structured fields
(customer, order, category) live outside the messages and are untouched.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from agents.graph.history import text_of
from agents.graph.prompts import SUMMARY_PROMPT

# Summarise when the history grows past this many messages, keeping at least the last few.
SUMMARY_TRIGGER = 40
KEEP_AT_LEAST = 8


def summary_cut(messages: Sequence[AnyMessage]) -> int:
    """Index of the first message to keep, or 0 when nothing should be summarised yet."""
    if len(messages) <= SUMMARY_TRIGGER:
        return 0
    for index in range(len(messages) - KEEP_AT_LEAST, 0, -1):
        if isinstance(messages[index], HumanMessage):
            return index
    return 0


def transcript_for_summary(messages: Sequence[AnyMessage]) -> str:
    """The part being folded away, as plain text: tool traffic becomes one line per result."""
    lines = []
    for message in messages:
        text = text_of(message).strip()
        if isinstance(message, HumanMessage):
            lines.append(f"Customer: {text}")
        elif isinstance(message, AIMessage) and text:
            lines.append(f"Assistant: {text}")
        elif isinstance(message, ToolMessage) and text:
            lines.append(f"Tool {message.name or ''}: {text[:200]}")
    return "\n".join(lines)


def summary_request(
    messages: Sequence[AnyMessage], previous: str, facts: dict[str, str]
) -> list[SystemMessage | HumanMessage]:
    known = "; ".join(f"{key}: {value}" for key, value in facts.items() if value)
    body = transcript_for_summary(messages)
    if previous:
        body = f"Existing summary: {previous}\n\n{body}"
    if known:
        body = f"Known facts: {known}\n\n{body}"
    return [SystemMessage(SUMMARY_PROMPT), HumanMessage(body)]


def removals(messages: Sequence[AnyMessage]) -> list[RemoveMessage]:
    return [RemoveMessage(id=message.id) for message in messages if message.id]
