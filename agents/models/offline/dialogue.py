"""The offline demo model's reading of the conversation so far: who said what, and which
order the latest message is about.

Both of its calls read it the same way, the answering call (which tool, which order) and the
extraction call (what the gates check), so what it asks for is what the gates validate.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from agents.graph.replies import ESCALATED_AFTER_CORRECTIONS, ESCALATED_OVER_LIMIT
from agents.models.offline.answers import REFUND_DECLINED, REFUND_ESCALATED
from agents.models.offline.reading import find_order_ids, order_meant, repair_order_id

CORRECTION_MARK = "Your previous extraction contained a validation error"
# How the demo says an order is not on the customer's account (see replies in demo_model):
# that order is no longer "the order we are talking about".
NOT_FOUND_REPLY = "I couldn't find order {order_id} on your account."
_NOT_FOUND = re.compile(r"I couldn't find order (ORD-\S+?) on your account")
# The fixed reply after the corrections did not fix the extraction.
_GAVE_UP = ESCALATED_AFTER_CORRECTIONS.split("{", 1)[0]
# How the demo shows an order it looked up: the shop's own spelling of its id.
FOUND_REPLY = "Here's what I found for **{order_id}**:"
_FOUND = re.compile(r"Here's what I found for \*\*(ORD-\d+)\*\*")
# The fixed reply of a refund over the limit, which names its order.
_OVER_LIMIT = re.compile(
    r"(ORD-\d+)".join(map(re.escape, ESCALATED_OVER_LIMIT.split("{order_id}", 1)))
)


def text_of(message: BaseMessage) -> str:
    return message.text if isinstance(message.text, str) else str(message.content)


@dataclass(frozen=True)
class Dialogue:
    """The customer's messages and the assistant's replies, oldest first."""

    said: tuple[str, ...]
    # The assistant's last reply before the customer's latest message: what it asked them.
    last_reply: str
    # The order the conversation is about: the one the customer's last message naming one
    # meant (`order_meant`), unless the shop then said it is not on their account (asking
    # about it again would only fail again).
    current_order: str
    # What the conversation said became of a refund request, by order: "escalated" (over the
    # limit, or a person chose so) or "declined", the latest. A paid one is on the order.
    refund_outcomes: Mapping[str, str] = field(default_factory=dict)

    @property
    def latest(self) -> str:
        return self.said[-1] if self.said else ""

    @property
    def ids_in_latest(self) -> list[str]:
        return find_order_ids(self.latest)


def read_dialogue(messages: Sequence[BaseMessage]) -> Dialogue:
    said: list[str] = []
    replies: list[str] = []
    last_reply, current = "", ""
    outcomes: dict[str, str] = {}
    for message in messages:
        text = text_of(message)
        if isinstance(message, HumanMessage) and CORRECTION_MARK not in text:
            said.append(text)
            last_reply = replies[-1] if replies else ""
            if named := order_meant(text):
                current = named
        elif isinstance(message, AIMessage) and not message.tool_calls and text:
            replies.append(text)
            if outcome := _refund_outcome(text, current):
                outcomes[outcome[0]] = outcome[1]
            missing = _NOT_FOUND.search(text)
            if missing and repair_order_id(missing.group(1)) == repair_order_id(current):
                current = ""
            if text.startswith(_GAVE_UP):
                current = ""  # a colleague has it now: asking again would only escalate again
            # "ord 5", once looked up, is ORD-005 from then on, as a person would write it.
            found = _FOUND.search(text)
            if found and found.group(1) == repair_order_id(current):
                current = found.group(1)
    return Dialogue(tuple(said), last_reply, current, outcomes)


def _refund_outcome(reply: str, current: str) -> tuple[str, str] | None:
    """(order, what became of its refund request) if `reply` says so. The decision replies
    name no order: theirs is the one the conversation is about."""
    if over := _OVER_LIMIT.search(reply):
        return over.group(1), "escalated"
    if current and reply.startswith(REFUND_ESCALATED):
        return repair_order_id(current), "escalated"
    if current and reply.startswith(REFUND_DECLINED):
        return repair_order_id(current), "declined"
    return None
