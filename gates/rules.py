"""The shop's business constants, in one place an auditor can read."""

from __future__ import annotations

import re
from decimal import Decimal

# Refunds above this need a senior colleague's sign-off: never auto-refunded.
AUTO_REFUND_LIMIT = Decimal("500.00")
# A refund reason shorter than this is not a reason ("broken" is not enough).
MIN_REASON_LENGTH = 10
# A complaint summary shorter than this cannot be routed to the right team.
MIN_SUMMARY_LENGTH = 20
SENTIMENTS = ("frustrated", "angry", "neutral", "disappointed")
# Sentiments that pause the conversation for a human to review the complaint.
REVIEW_SENTIMENTS = ("frustrated", "angry")
# Only delivered orders can be refunded.
REFUNDABLE_STATUS = "Delivered"

ORDER_ID_FORMAT = "ORD-XXX"
ORDER_ID_EXAMPLE = "ORD-001"
# [0-9], not \d: \d also matches Arabic-Indic and other Unicode digits.
ORDER_ID_PATTERN = re.compile(r"^ORD-[0-9]{3}$")
