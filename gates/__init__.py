"""ShopBot's business rules: pure Python, deterministic, readable without knowing any AI library.

Each gate takes plain data and returns `(True, cleaned_data)` or `(False, error_text)`.
"""

from gates.authority import authority_problem, needs_senior
from gates.complaint import needs_review, validate_complaint
from gates.order_id import (
    clean_query_type,
    corrects_itself,
    normalise_order_id,
    order_ids_as_written,
    order_ids_meant,
    unknown_order_text,
    validate_customer_known,
    validate_order_id,
    validate_ownership,
)
from gates.refund import validate_refund_action, validate_refund_request
from gates.result import GateError, GateResult, Remedy
from gates.rules import (
    AUTO_REFUND_LIMIT,
    MIN_REASON_LENGTH,
    MIN_SUMMARY_LENGTH,
    ORDER_ID_PATTERN,
    REFUNDABLE_STATUS,
    REVIEW_SENTIMENTS,
    SENTIMENTS,
)

__all__ = [
    "AUTO_REFUND_LIMIT",
    "MIN_REASON_LENGTH",
    "MIN_SUMMARY_LENGTH",
    "ORDER_ID_PATTERN",
    "REFUNDABLE_STATUS",
    "REVIEW_SENTIMENTS",
    "SENTIMENTS",
    "GateError",
    "GateResult",
    "Remedy",
    "authority_problem",
    "clean_query_type",
    "corrects_itself",
    "needs_review",
    "needs_senior",
    "normalise_order_id",
    "order_ids_as_written",
    "order_ids_meant",
    "unknown_order_text",
    "validate_complaint",
    "validate_customer_known",
    "validate_order_id",
    "validate_ownership",
    "validate_refund_action",
    "validate_refund_request",
]
