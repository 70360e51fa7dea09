"""What the offline demo model says when no tool is needed: fixed texts, and the shop's
rules in words, their numbers taken from the gates so they cannot drift apart."""

from __future__ import annotations

import re

from gates import AUTO_REFUND_LIMIT, REFUNDABLE_STATUS

ASK_ORDER_ID = "Could you tell me your order number? It looks like ORD-001."
HELP = (
    "I can check an order's status, start a refund or take a complaint. Tell me what you need, "
    "with your order number if you have one (it looks like ORD-001)."
)
NEED_ORDER_ID = "I need the order number to look an order up: ORD- and three digits, like ORD-001."
ASK_REASON = (
    "Could you tell me in a sentence why you'd like to return it? That helps us process the refund."
)
# The reason given is too short for the refund gate: asking the same question again read as
# if the answer had not been heard.
MORE_REASON = (
    "Could you say a little more about what went wrong? A short sentence is enough, like "
    '"it stopped charging after a week".'
)
ASK_COMPLAINT_DETAILS = (
    "I'm sorry to hear that. Could you tell me a little more about what went wrong "
    "(which order, and what happened), so I can file this properly?"
)
ANYTHING_ELSE = "Is there anything else I can help with?"
CLOSING = "All right. If anything else comes up, just write here: I'm happy to help."
NO_COMPLAINT = (
    "All right, I won't file anything. If you change your mind, just tell me what went wrong."
)
SORRY_WHICH_HELP = (
    "I'm sorry to hear that. I can start a refund if the order has been delivered, or take a "
    "complaint for our team: which would you prefer? Please include the order number (it "
    "looks like ORD-001)."
)
ENGLISH_ONLY = "I'm sorry, this offline demo only reads English."
# The gate's "no customer is identified" (gates/order_id.py), as the demo model says it.
NO_CUSTOMER_REFUND = (
    "I can't make a refund in this conversation: it isn't linked to a customer, and a refund "
    "needs the customer who owns the order. Here I can look up an order's status and explain "
    "the refund policy. For a refund, start a conversation for the customer by name (in the "
    "app: ctrl+t, type their name, then New; on the command line: --customer NAME)."
)
CANNOT_CANCEL = (
    "I'm sorry, I can't cancel orders: there is no way for me to cancel one from this chat."
)
# The paths a customer has instead of a cancellation, by what the order's status allows.
AFTER_CANCEL_DELIVERED = (
    "It has already been delivered, so I can start a refund instead: tell me in a sentence "
    "why you'd like to return it. Or, if something went wrong, I can take a complaint."
)
AFTER_CANCEL_NOT_DELIVERED = (
    f"Once it is {REFUNDABLE_STATUS.lower()}, I can start a refund if you don't want it. Or, "
    "if something has gone wrong, I can take a complaint for our team."
)


def refund_policy() -> str:
    """The refund rules the gates enforce, as a customer would want to hear them."""
    return (
        "Here's how refunds work:\n\n"
        f"- Orders that have been **{REFUNDABLE_STATUS.lower()}** can be refunded; tell me the "
        "order number and, in a sentence, why you'd like to return it.\n"
        f"- Refunds up to **${AUTO_REFUND_LIMIT:.2f}** are paid back once a member of our team "
        "approves them.\n"
        f"- Above ${AUTO_REFUND_LIMIT:.2f}, a senior colleague reviews the request and "
        "contacts you.\n\n"
        "Would you like to start a refund? Just tell me the order number."
    )


AFTER_CANCEL_CANCELLED = "It has already been cancelled: there is nothing left to cancel."


def cannot_cancel(status: str) -> str:
    """What to say after looking up an order a customer wanted to cancel."""
    if status == REFUNDABLE_STATUS:
        return AFTER_CANCEL_DELIVERED
    if status.casefold() == "cancelled":
        return AFTER_CANCEL_CANCELLED
    return AFTER_CANCEL_NOT_DELIVERED


# What the demo says when a person decided on a refund; read back by `dialogue` to know
# where a refund request stands.
REFUND_DECLINED = (
    "I'm sorry: our team reviewed your refund request and couldn't approve it. If you have "
    "more details (photos, a description of the fault), reply here and we'll take another look."
)
REFUND_ESCALATED = (
    "Our team has passed your refund request to a senior colleague, who will contact you "
    "within 1 business day."
)
NO_REFUND = "All right, I won't start a refund: nothing will be refunded."


def no_refund_for(order_id: str, *, paid: str, escalated: bool) -> str:
    """The answer to "cancel my refund" / "don't refund it": where its refund stands (a
    pending decision blocks new messages, so none can be waiting for a person)."""
    if paid:
        return (
            f"{order_id} has already been refunded (reference **{paid}**), so there is no "
            "refund request left to cancel, and I can't reverse a payment from this chat."
        )
    if escalated:
        return (
            f"Your refund request for {order_id} is with a senior colleague. Nothing has been "
            "paid; I can't withdraw it from this chat, so please tell them you'd like to keep "
            "the order when they contact you."
        )
    return (
        f"All right: there is no refund in progress for {order_id}, so there is nothing to "
        "cancel and nothing will be refunded."
    )


# What starts formatting inside a line: emphasis, code, a link or image (its brackets), HTML,
# an entity, a table cell, strikethrough. `#`, `+`, `(` or `!` start nothing mid-line, and
# escaped they read "broken\!" where the reply is shown as written (`shopbot chat` in a pipe).
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]<>|~&])")


def markdown_literal(text: str) -> str:
    """Customer words to quote inside a line of a reply, which is Markdown: on one line (a
    line break could start a heading or a list) and backslash-escaped, so `**x**` or
    `[link](url)` reads as typed instead of in bold or as a link in the bot's voice."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", " ".join(text.split()))
