"""The tools' arguments, as the model extracts them from the conversation (field names as in
the reference design): what the gates check before any tool runs, on their cleaned values."""

from __future__ import annotations

from pydantic import BaseModel, Field

# Short on purpose: every answering call carries its tools' schemas. "As written" matters:
# the gates, not the model, correct a mistyped id (and say so to the customer).
ORDER_ID = "As the customer wrote it, e.g. ORD-001; empty if not given"


class OrderExtraction(BaseModel):
    """The order a customer asks about."""

    order_id: str = Field(description=ORDER_ID)
    query_type: str = Field(description="status, delivery_date, product or general")


class OrderReference(BaseModel):
    """The order a customer asks to have checked for a refund."""

    order_id: str = Field(description=ORDER_ID)


class RefundExtraction(BaseModel):
    """The order a customer wants refunded, and why."""

    order_id: str = Field(description=ORDER_ID)
    reason: str = Field(description="Why, in the customer's words; empty if not said")


class ComplaintExtraction(BaseModel):
    """What the customer is complaining about, and how they feel."""

    issue_summary: str = Field(description="The complaint, in one sentence")
    sentiment: str = Field(description="frustrated, angry, neutral or disappointed")
