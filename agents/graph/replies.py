"""Fixed customer-facing texts for outcomes that must not depend on the model."""

from __future__ import annotations

from gates import AUTO_REFUND_LIMIT

ESCALATED_AFTER_CORRECTIONS = (
    "I was unable to process your request correctly after {attempts} attempts. I'm escalating "
    "this to a senior support agent who will contact you directly. I apologise for the "
    "inconvenience."
)
ESCALATED_OVER_LIMIT = (
    f"Refunds above ${AUTO_REFUND_LIMIT:.2f} need a senior colleague's approval, so I can't "
    "process this one automatically. I've passed your request for {order_id} to our team; a "
    "senior support agent will contact you within 1 business day."
)
LIMIT_REACHED = (
    "I'm sorry, I wasn't able to sort this out automatically. I've flagged our conversation "
    "for a human colleague, who will pick it up shortly. You can keep writing here in the "
    "meantime."
)
TURN_FAILED_NOTE = (
    "(This reply could not be completed because the assistant was interrupted. Your message "
    "is saved; please send it again.)"
)
COMPLAINT_DECISIONS: dict[str, str] = {
    "escalate_to_senior": (
        "I completely understand your frustration, and I want to make sure you receive the "
        "best possible support. I am escalating your case to a senior support agent who will "
        "contact you within 2 business hours. Your ticket has been flagged as priority."
    ),
    "provide_compensation": (
        "I sincerely apologise for the experience you have had. As a gesture of goodwill, our "
        "team will be in touch within 24 hours with a resolution that includes appropriate "
        "compensation for the inconvenience caused."
    ),
    "close_ticket": (
        "Thank you for bringing this to our attention. Your feedback has been recorded and "
        "will help us improve our service."
    ),
}
# The note under a complaint's decision, as it goes back to first contact.
COMPLAINT_HANDED_BACK: dict[str, str] = {
    "escalate_to_senior": "complaint passed to a senior colleague",
    "provide_compensation": "complaint reviewed, compensation to follow",
    "close_ticket": "complaint handled",
}
REFUND_DECISIONS: dict[str, str] = {
    "reject": (
        "The support team reviewed this refund request and declined it. Tell the customer "
        "politely that the refund was not approved and that they may reply with more details."
    ),
    "escalate": (
        "The support team escalated this refund request to a senior colleague, who will "
        "contact the customer within 1 business day. Tell the customer."
    ),
}

TURN_CUT_NOTE = (
    "The reply was cut off: ShopBot was closed while answering. If it still needs an answer, "
    "send your message again."
)
# Also after a decision (a stopped resume): what was decided stands, so no "send again".
TURN_STOPPED_NOTE = "The reply was stopped before it was finished. Send a message to carry on."
