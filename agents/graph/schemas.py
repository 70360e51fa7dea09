"""The tools' arguments, as the model extracts them from the conversation (field names as in
the reference design): what the gates check before any tool runs, on their cleaned values."""

from __future__ import annotations

from pydantic import BaseModel, Field


class OrderExtraction(BaseModel):
    """The order a customer asks about."""

    order_id: str = Field(
        description="The order ID in the format ORD-XXX, e.g. ORD-001, exactly as the customer "
        "wrote it. Empty string if the customer has not given one."
    )
    query_type: str = Field(
        description="What the customer wants to know: 'status', 'delivery_date', 'product', "
        "or 'general'"
    )


class OrderReference(BaseModel):
    """The order a customer asks to have checked for a refund."""

    order_id: str = Field(
        description="The order ID in the format ORD-XXX, exactly as the customer wrote it. "
        "Empty string if the customer has not given one."
    )


class RefundExtraction(BaseModel):
    """The order a customer wants refunded, and why."""

    order_id: str = Field(
        description="The order ID in the format ORD-XXX, exactly as the customer wrote it. "
        "Empty string if the customer has not given one."
    )
    reason: str = Field(
        description="The customer's stated reason for wanting a refund, in their own words. "
        "Empty string if they have not said why."
    )


class ComplaintExtraction(BaseModel):
    """What the customer is complaining about, and how they feel."""

    issue_summary: str = Field(description="A one-sentence summary of the customer's complaint")
    sentiment: str = Field(
        description="The customer's emotional state: 'frustrated', 'angry', 'neutral', "
        "or 'disappointed'"
    )
