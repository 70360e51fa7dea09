"""Order id gates: is the id well-formed, does it exist, and may this customer see it."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Container, Mapping
from typing import Any

from gates.result import GateResult, Remedy, failed, passed
from gates.rules import ORDER_ID_EXAMPLE, ORDER_ID_FORMAT, ORDER_ID_PATTERN

# "ord 001", "ORD_001", "ORD–001" (en dash) and "ORD001" all mean ORD-001. (One dash, or
# spaces: `\s*[-\s]?\s*` read a long run of spaces in quadratic time.)
_SEPARATED_ID = re.compile(r"^ORD(?:\s*[-_\u2010-\u2015]\s*|\s+)?([0-9]{3})$")
# An id as customers write one: "ORD-009", "ord 9"-less spellings of it, and "order #3",
# "order number 3", "order 003" (a bare "order 2" is not one: "my order 2 weeks ago").
# Not \b before it: in "订单ORD-001" a CJK letter is a word character, and no boundary is.
_MENTIONED_ID = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"ORD(?:\s*[-_\u2010-\u2015]\s*|\s+)?(?P<id>[0-9]{3})"
    r"|ORDER\s*(?:\#|NO\.?|NR\.?|NUMBER)\s*(?P<num>[0-9]{1,3})"
    r"|ORDER\s+(?P<three>[0-9]{3})"
    r")(?![A-Za-z0-9])",
    re.IGNORECASE,
)
# A customer correcting themselves settles on the id written last: "not ORD-002, ORD-004",
# "ORD-001, sorry, I meant ORD-004". "Not" just before the first id, or one of these words
# between the first id and the last ("sorry to bother you" before them is politeness, and
# "actually arrived broken" after them describes the orders).
_NEGATED = re.compile(r"\b(?:not|no)\W*$", re.IGNORECASE)
_CORRECTING = re.compile(
    r"\b(i mean|meant|sorry|oops|actually|instead|rather|correction|typo|wrong|"
    r"should (?:be|have been|read)|make that|scratch that)\b",
    re.IGNORECASE,
)
QUERY_TYPES = ("status", "delivery_date", "product", "general")
# What a customer may have meant as an id but did not write as one: "ORD-12", "ORD-1234",
# "ORD-0O1", "ord 99x" (ORD, then letters and digits with at least one digit).
_ID_LIKE = re.compile(
    r"(?<![A-Za-z0-9])ORD(?:\s*[-_\u2010-\u2015]\s*|\s+)?[0-9A-Z]*[0-9][0-9A-Z]*(?![A-Za-z0-9])",
    re.IGNORECASE,
)
# Letters a reader (or a scan) takes for digits: an id with these a model may read right.
_DIGIT_LOOKALIKES = str.maketrans({"O": "0", "Q": "0", "I": "1", "L": "1"})
_ID_PREFIX = re.compile(r"^ORD(?:\s*[-_\u2010-\u2015]\s*|\s+)?")


def normalise_order_id(raw: object) -> str:
    """Canonical spelling of what the model extracted: trimmed, upper-case, `ORD-` + digits.

    Only spelling is normalised; a misread character (`ORD-0O1`) is left for the gate to reject.
    """
    if not isinstance(raw, str):
        return ""
    text = unicodedata.normalize("NFKC", raw).strip().upper()
    match = _SEPARATED_ID.match(text)
    return f"ORD-{match.group(1)}" if match else text


def order_ids_in(text: str) -> set[str]:
    """The order ids a customer wrote, spelled canonically (`ord 009`, `order #9` ->
    `ORD-009`)."""
    return set(order_ids_as_written(text))


def order_ids_as_written(text: str) -> list[str]:
    """`order_ids_in`, in the order the customer wrote them, each once."""
    found = _MENTIONED_ID.finditer(unicodedata.normalize("NFKC", text))
    return list(dict.fromkeys(map(_canonical, found)))


def order_ids_meant(text: str) -> list[str]:
    """The ids a customer means, in the order written, each once: to name back to them, so
    only what reads as an id for sure (a bare "order 120" only with a leading zero, "order
    003": "that order 120 dollars ago" names none), and only the last of a message that
    corrects itself ("ORD-001, sorry, I meant ORD-004")."""
    text = unicodedata.normalize("NFKC", text)
    found = [m for m in _MENTIONED_ID.finditer(text) if not m["three"] or m["three"][0] == "0"]
    if len(found) > 1 and corrects_itself(
        text[: found[0].start()], text[found[0].end() : found[-1].start()]
    ):
        found = found[-1:]
    return list(dict.fromkeys(map(_canonical, found)))


def corrects_itself(before_first: str, between: str) -> bool:
    """Whether a message naming several ids corrects itself, from the text `before_first`
    of them and `between` its first and its last."""
    return bool(_NEGATED.search(before_first) or _CORRECTING.search(between))


def _canonical(match: re.Match[str]) -> str:
    return f"ORD-{int(match['id'] or match['num'] or match['three']):03d}"


def customer_gave_unknown_text(order_id: str) -> str:
    """An id the customer wrote themselves, not found: only they can correct it."""
    return (
        f"Order ID '{order_id}', as the customer wrote it, was not found for this customer. "
        "Tell the customer no order with that number was found on their account and ask them "
        "to check it; do not guess or invent another id."
    )


def read_unknown_text(order_id: str, written: str) -> str:
    """An id read from one the customer wrote malformed, not found: only they can say."""
    return (
        f"Order ID '{order_id}', read from the customer's '{written}', was not found for this "
        "customer. Tell the customer no order with that number was found on their account and "
        "ask them to check it; do not guess or invent another id."
    )


def customer_wrote_malformed_text(order_id: str) -> str:
    """An id the customer wrote that no reading makes an order number: theirs to correct."""
    return (
        f"Order ID '{order_id}', as the customer wrote it, was not found for this customer: "
        f"order numbers are {ORDER_ID_FORMAT}, three digits (example: {ORDER_ID_EXAMPLE}). "
        "Tell the customer and ask them to check it; do not guess or invent an id."
    )


def _malformed_ids_in(text: str) -> list[str]:
    """What the customer wrote like an order id that is not one ("ORD-12", "ORD-0O1"),
    spelled `ORD-` + what followed."""
    found = _ID_LIKE.finditer(unicodedata.normalize("NFKC", text))
    ids = (_spelled(match[0]) for match in found)
    return [i for i in ids if not ORDER_ID_PATTERN.match(i)]


def _spelled(malformed: str) -> str:
    return _ID_PREFIX.sub("ORD-", unicodedata.normalize("NFKC", malformed).strip().upper())


def _reading(malformed: str) -> str | None:
    """The id a malformed one reads as when letters taken for digits are read as digits
    ("ORD-0O1" -> ORD-001) and a short number is padded as in "order #5" ("ord 5" ->
    ORD-005): the reading the correction loop may find. None when there is none."""
    number = _spelled(malformed).removeprefix("ORD-").translate(_DIGIT_LOOKALIKES)
    reading = f"ORD-{number.zfill(3)}"
    return reading if len(number) <= 3 and ORDER_ID_PATTERN.match(reading) else None


def _not_found(order_id: str, customer_wrote: str, code: str) -> GateResult:
    """A missing and a stranger's order read the same. Misread by the model: it extracts
    again (the correction loop). Written so by the customer, or the reading of an id they
    wrote malformed ("ORD-0O1" read as ORD-001): re-reading cannot fix it, and a colleague
    should not be called for a typo, so the customer is asked."""
    if order_id in order_ids_in(customer_wrote):
        return failed(customer_gave_unknown_text(order_id), Remedy.ASK_CUSTOMER, code)
    readings = {_reading(m): m for m in _malformed_ids_in(customer_wrote)}
    if order_id in readings:
        written = readings[order_id]
        return failed(read_unknown_text(order_id, written), Remedy.ASK_CUSTOMER, code)
    return failed(unknown_order_text(order_id), Remedy.CORRECT, code)


def unknown_order_text(order_id: str) -> str:
    """The same words for "does not exist" and "belongs to someone else": reveal nothing."""
    return (
        f"Order ID '{order_id}' was not found for this customer. It may have been misread. "
        "Re-read the customer's messages and extract the order id exactly as they wrote it; "
        "do not guess or invent an id."
    )


def validate_order_id(
    extracted: Mapping[str, Any], known_ids: Container[str], customer_wrote: str = ""
) -> GateResult:
    """Gate: the extracted `order_id` is present, well-formed and exists in `known_ids`.

    `customer_wrote` is what the customer said (their messages), to tell an id the model
    misread from one the customer mistyped."""
    order_id = normalise_order_id(extracted.get("order_id"))
    if not order_id:
        return failed(
            "No order ID was given in the conversation. Ask the customer for their order "
            f"number; it looks like {ORDER_ID_EXAMPLE} (ORD- followed by three digits).",
            Remedy.ASK_CUSTOMER,
            "order_id.missing",
        )
    if not ORDER_ID_PATTERN.match(order_id):
        as_written = _spelled(order_id) in _malformed_ids_in(customer_wrote)
        if as_written and _reading(order_id) is None:
            # Extracted right, written wrong ("ORD-12"): no reading can fix it.
            return failed(
                customer_wrote_malformed_text(order_id), Remedy.ASK_CUSTOMER, "order_id.format"
            )
        return failed(
            f"Order ID '{order_id}' does not match the required format {ORDER_ID_FORMAT} "
            f"(three digits, example: {ORDER_ID_EXAMPLE}). The value may have been extracted "
            "wrongly (a letter O for a zero, a missing digit). Re-read the customer's messages "
            "and extract the order id exactly as written.",
            Remedy.CORRECT,
            "order_id.format",
        )
    if order_id not in known_ids:
        return _not_found(order_id, customer_wrote, "order_id.unknown")
    return passed({**extracted, "order_id": order_id})


def _same_person(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def validate_ownership(
    order_id: str, order_customer: str | None, customer: str | None, customer_wrote: str = ""
) -> GateResult:
    """Gate: when the customer is known, the order must be theirs.

    `customer` comes from the session, never from the model. A stranger's order fails with
    exactly the text of a missing order, so the model (and the customer) learn nothing.
    """
    if customer is None or not customer.strip():
        return passed({"order_id": order_id})
    if order_customer is None or not _same_person(order_customer, customer):
        return _not_found(order_id, customer_wrote, "order_id.not_owned")
    return passed({"order_id": order_id})


# What a conversation with no customer named cannot do; told to the model, relayed as is.
NO_CUSTOMER_TEXT = (
    "No customer is identified in this conversation, so {action} cannot be made here: it "
    "needs the customer who owns the order, and who the customer is comes from how the "
    "conversation was started, never from what is said in it. Tell them what you can do "
    "here (look up an order's status, explain the refund policy) and that {action} needs a "
    "conversation started for the customer by name. Do not try it again."
)


def validate_customer_known(customer: str | None, action: str = "a refund") -> GateResult:
    """Gate: money moves only for a known customer (`customer` from the session, never from
    the model). Who owns an order is then checked by `validate_ownership`."""
    if customer is None or not customer.strip():
        return failed(NO_CUSTOMER_TEXT.format(action=action), Remedy.INFORM, "customer.unknown")
    return passed({"customer": customer.strip()})


def clean_query_type(value: object) -> str:
    """What the customer asks about an order; anything unrecognised is a general question."""
    text = value.strip().lower() if isinstance(value, str) else ""
    return text if text in QUERY_TYPES else "general"
