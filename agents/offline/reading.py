"""How the offline demo model "reads" a customer: keywords and patterns, nothing clever.

Deliberately literal on a first reading (it copies an order id as typed) and a little
smarter when asked to correct itself, so the demo shows the correction loop at work.
"""

from __future__ import annotations

import re
from typing import Literal

Intent = Literal["refund", "complaint", "order", "greeting", "thanks", "other"]

# Anything that looks like an attempt at an order id: ORD-001, ord 1, ORD-0O1, ORD-99X.
_ID_LIKE = re.compile(r"\bORD(?:ER)?[\s_#:-]*([0-9OoIl]{1,4}[A-Za-z]?)\b", re.IGNORECASE)
_REFUND = re.compile(
    r"\b(refunds?|refunded|return(?:ing)?|money back|reimburse\w*|send it back|chargeback)\b",
    re.IGNORECASE,
)
_COMPLAINT = re.compile(
    r"\b(complain\w*|angry|furious|outraged|terrible|awful|unacceptable|worst|frustrat\w*|"
    r"disappoint\w*|ridiculous|disgust\w*|upset|annoyed|fed up|rude|never again|useless)\b",
    re.IGNORECASE,
)
_ORDER = re.compile(
    r"\b(orders?|status|where|deliver\w*|arriv\w*|ship\w*|track\w*|package|parcel|"
    r"when will|dispatch\w*)\b",
    re.IGNORECASE,
)
_GREETING = re.compile(r"^\s*(hi|hello|hey|good (morning|afternoon|evening))\b", re.IGNORECASE)
_THANKS = re.compile(r"\b(thanks?|thank you|cheers|great|perfect)\b", re.IGNORECASE)
# A message splits into clauses here; clauses that only ask for the refund are not the reason.
_CLAUSES = re.compile(r"[,.;:!?]+|\s+-\s+|\b(?:because|since|as)\b", re.IGNORECASE)

_ANGRY = r"\b(furious|angry|outraged|unacceptable|disgust\w*|ridiculous|worst)\b"
_FRUSTRATED = r"\b(frustrat\w*|annoyed|fed up|again|still|nobody|no one|waiting)\b"
_DISAPPOINTED = r"\b(disappoint\w*|let down|expected better|sad|unhappy)\b"
SENTIMENT_WORDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("angry", re.compile(_ANGRY, re.IGNORECASE)),
    ("frustrated", re.compile(_FRUSTRATED, re.IGNORECASE)),
    ("disappointed", re.compile(_DISAPPOINTED, re.IGNORECASE)),
)


def find_order_ids(text: str) -> list[str]:
    """Order ids as written ('ORD-0O1' stays wrong), upper-cased, in order of appearance."""
    return [f"ORD-{match.group(1).upper()}" for match in _ID_LIKE.finditer(text)]


def repair_order_id(raw: str) -> str:
    """What a careful second reading makes of a sloppy id: O->0, I/l->1, padded to 3 digits."""
    match = re.fullmatch(r"ORD-([0-9OoIl]{1,3})", raw, re.IGNORECASE)
    if not match:
        return raw
    digits = match.group(1).translate(str.maketrans("OoIl", "0011"))
    return f"ORD-{digits.zfill(3)}"


def intent_of(text: str) -> Intent:
    if _REFUND.search(text):
        return "refund"
    if _COMPLAINT.search(text) or text.count("!") >= 3:
        return "complaint"
    if _ORDER.search(text) or find_order_ids(text):
        return "order"
    if _GREETING.search(text):
        return "greeting"
    if _THANKS.search(text):
        return "thanks"
    return "other"


# A word as a person writes it, with its digits and inner hyphens: `ORD-005` is one token.
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[-_#][A-Za-z0-9]+)*")


def is_shouted(token: str) -> bool:
    """An all-caps word of 3 letters or more; an order id or a code (it has a digit) is not
    shouting, however it is written."""
    letters = sum(c.isalpha() for c in token)
    return letters >= 3 and token.isupper() and not any(c.isdigit() for c in token)


def sentiment_of(text: str) -> str:
    words = _TOKEN.findall(_ID_LIKE.sub(" ", text))  # `ORD 5` too: an id, not a word
    shouting = sum(1 for word in words if is_shouted(word)) >= 2
    if shouting or text.count("!") >= 3:
        return "angry"
    for sentiment, pattern in SENTIMENT_WORDS:
        if pattern.search(text):
            return sentiment
    return "neutral"


def refund_reason(text: str) -> str:
    """The customer's reason, without the request itself; '' when they gave none."""
    clauses = [c.strip() for c in _CLAUSES.split(_ID_LIKE.sub(" ", text))]
    reason = " ".join(c for c in clauses if c and not _REFUND.search(c))
    reason = " ".join(reason.split())
    return reason if len(reason) >= 10 else ""


def query_type_of(text: str) -> str:
    lowered = text.lower()
    if any(word in lowered for word in ("when", "arriv", "deliver")):
        return "delivery_date"
    if any(word in lowered for word in ("what did i", "product", "item")):
        return "product"
    if any(word in lowered for word in ("status", "where", "track")):
        return "status"
    return "general"


def complaint_summary(text: str) -> str:
    return " ".join(text.split())[:200]
