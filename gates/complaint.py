"""Complaint gate: enough detail to open a ticket, and a sentiment we recognise."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gates.result import GateError, GateResult, Remedy, passed
from gates.rules import MIN_SUMMARY_LENGTH, REVIEW_SENTIMENTS, SENTIMENTS


def validate_complaint(extracted: Mapping[str, Any]) -> GateResult:
    """Gate: summary of at least MIN_SUMMARY_LENGTH characters, sentiment one of SENTIMENTS."""
    raw_summary = extracted.get("issue_summary")
    summary = " ".join(raw_summary.split()) if isinstance(raw_summary, str) else ""
    raw_sentiment = extracted.get("sentiment")
    sentiment = raw_sentiment.strip().lower() if isinstance(raw_sentiment, str) else ""
    errors: list[GateError] = []
    if len(summary) < MIN_SUMMARY_LENGTH:
        errors.append(
            GateError(
                f"Complaint summary is too vague: '{summary}'. Ask the customer to describe "
                "what went wrong in more detail before the complaint is filed.",
                Remedy.ASK_CUSTOMER,
                ("complaint.summary_too_vague",),
            )
        )
    if sentiment not in SENTIMENTS:
        errors.append(
            GateError(
                f"Sentiment '{sentiment}' is not a recognised value. Valid values are: "
                f"{', '.join(SENTIMENTS)}. Re-classify the customer's sentiment.",
                Remedy.CORRECT,
                ("complaint.sentiment_invalid",),
            )
        )
    if errors:
        return False, GateError.combine(errors)
    return passed({**extracted, "issue_summary": summary, "sentiment": sentiment})


def needs_review(sentiment: str) -> bool:
    """A validated complaint this upset pauses for a human to review."""
    return sentiment in REVIEW_SENTIMENTS
