"""How the offline demo model "reads" a customer: keywords and patterns, nothing clever.

Deliberately literal on a first reading (it copies an order id as typed) and a little
smarter when asked to correct itself, so the demo shows the correction loop at work.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from typing import Literal

from gates import corrects_itself

Intent = Literal[
    "policy",
    "refund",
    "complaint",
    "cancel",
    "order",
    "greeting",
    "help",
    "thanks",
    "no",
    "yes",
    "no_refund",
    "other",
]

# Anything that looks like an attempt at an order id: ORD-001, ord 1, ORD-0O1, ORD-99X, and
# "order #3" / "order number 3" / "order 003". A digit must be among the first characters,
# or "my order is late" would read as ORD-IS. Not \b: in "订单ORD-001" a CJK letter is a
# word character, so there is no word boundary before ORD.
_ID_LIKE = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"ORD[\s_#:-]*(?=[0-9OoIl]{0,3}[0-9])(?P<id>[0-9OoIl]{1,4}[A-Za-z]?)"
    r"|ORDER\s*(?:\#|no\.?|nr\.?|number)\s*(?P<num>[0-9]{1,4})"
    r"|ORDER\s+(?P<three>[0-9]{3})"
    r")(?![A-Za-z0-9])",
    re.IGNORECASE,
)
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
    r"when will|dispatch\w*|any news|an update|updates?|eta|here yet)\b",
    re.IGNORECASE,
)
# A few words of other languages, so "¿Dónde está mi pedido?" is an order question too.
_ORDER_ELSEWHERE = re.compile(
    r"\b(d[oó]nde|pedido|env[ií]o|o[uù] est|commande|livraison|wo ist|bestellung|lieferung)\b",
    re.IGNORECASE,
)
# A question about the rules themselves, not a request: answered from the shop's constants.
_POLICY = re.compile(
    r"\b(polic(?:y|ies)|terms|conditions|how (?:do|does|can) (?:i |you )?(?:get a )?"
    r"(?:refunds?|returns?|return \w+)(?: work)?|return window|how long .* to (?:refund|return))\b",
    re.IGNORECASE,
)
# Where a refund already asked for stands: "any news on my refund?" is no new request.
_REFUND_STATUS = re.compile(
    r"\b((is|was|has) (it|this|that|my order|the order|ORD\S*) (been |already )?refunded|"
    r"refund status|did (the|my) refund go through|where(?:['’]s| is) my (refund|money)|"
    r"(?:news|updates?|progress|word) (?:on|about|regarding|with|for) (?:my|the|this|that) refund|"
    r"what(?:['’]s| is) (?:happening|going on) with (?:my|the|this|that) refund|"
    r"what happened (?:to|with) (?:my|the|this|that) refund|"
    r"status of (?:my|the|this|that) refund|how(?:['’]s| is) (?:my|the) refund|"
    r"has (?:my|the) refund (?:been \w+|gone|come) ?(?:through)?|"
    r"when will i (?:get|receive|see) (?:my|the) (?:refund|money))\b",
    re.IGNORECASE,
)
_REFUND_WORD = r"(?:refunds?|money back|returns?|reimburse\w*)"
# A refund the customer does not want: "I don't want a refund", "don't refund ORD-005", "no
# refund needed", "cancel my refund request", "without a refund". The negation must be of the
# refund itself: "I don't like it, I want a refund" and "I don't want it anymore, refund
# please" ask for one.
_DECLINED_REFUND = re.compile(
    r"\b(?:"
    r"(?:(?:do|does|did|wo)n['’]?t|(?:do|does|did|will) not|no longer|not|never)\s+"
    r"(?:(?:really|even|actually|want to|need to)\s+)?"
    r"(?:want(?:ing)?|need(?:ing)?|require|expect(?:ing)?|ask(?:ing)? for|look(?:ing)? for|"
    rf"request(?:ing)?|after)\s+(?:an? |my |the |any )?{_REFUND_WORD}"
    r"|(?:do(?:n['’]?t| not)|never|no need to|(?:do(?:n['’]?t| not)|no longer) (?:want|need) to)"
    r"\s+(?:refund|return|reimburse)"
    rf"|no {_REFUND_WORD} (?:is |are )?(?:needed|necessary|required|wanted|please|thanks?|"
    r"thank you|for me)"
    rf"|no need (?:for|of) (?:an? |any )?{_REFUND_WORD}"
    rf"|{_REFUND_WORD} (?:is |are )?(?:not|no longer) (?:needed|necessary|required|wanted)"
    rf"|(?:cancel|withdraw|drop|retract|call off|forget(?: about)?) (?:my|the|this|that|a) "
    rf"{_REFUND_WORD}(?: requests?)?"
    rf"|(?:without|instead of) (?:an? |any |the )?{_REFUND_WORD}"
    rf"|changed my mind about (?:an? |my |the )?{_REFUND_WORD}"
    r")\b",
    re.IGNORECASE,
)
# A complaint about a refund already asked for (turned down, late, never paid): said of a
# refund, not asking for one.
_TURNED_DOWN = r"(?:rejected|declined|refused|denied|ignored|turned down|delayed|lost)"
_REFUND_GRIEVANCE = re.compile(
    r"\b(?:"
    rf"{_TURNED_DOWN} (?:my|the|our|this|that|a) (?:\w+ )?{_REFUND_WORD}(?: requests?)?"
    rf"|{_REFUND_WORD}(?: requests?)? (?:was|were|got|gets|has been|have been|is|keeps getting) "
    rf"(?:\w+ )?(?:{_TURNED_DOWN}|late|overdue|taking \w+)"
    r"|(?:still|never|(?:have|has|did)n['’]?t|(?:have|has|did) not) (?:\w+ )?"
    rf"(?:got|gotten|get|received?|seen|see|had) (?:my|the|a|any|our) {_REFUND_WORD}"
    rf"|wait(?:ing|ed)? (?:\w+ ){{0,3}}?(?:for|on) (?:my|the|a|our) {_REFUND_WORD}"
    r")\b",
    re.IGNORECASE,
)
_CANCEL = re.compile(
    r"\b(cancel\w*|stop (?:the|my) order|don'?t want it (?:any ?more|now))\b", re.I
)
_GREETING = re.compile(
    r"^\s*(hi|hello|hey|hiya|howdy|good (morning|afternoon|evening)|hola|bonjour|hallo)\b",
    re.IGNORECASE,
)
# What a newcomer asks first: what this is and what it can do.
# The whole message only: "what are you going to do about my broken headphones?" is a
# complaint, "what is this charge on my card" a question about an order.
_HELP = re.compile(
    r"^\W*(what can you (do|help (me )?with)|what do you do|how (does|do) (this|it|you) work|"
    r"who are you|what are you|what is this|what's this|help|i need help)\W*$",
    re.IGNORECASE,
)
_THANKS = re.compile(r"\b(thanks?|thank you|thx|ty|cheers|great|perfect)\b", re.IGNORECASE)
# Whole-message answers to a question: "no" / "no thanks" / "that's all", "yes" / "ok".
_NO = re.compile(
    r"^\W*(no|nope|nah|no,? thanks?( you)?|not now|that'?s (all|it)|nothing( else)?|all good)"
    r"\W*$",
    re.IGNORECASE,
)
_YES = re.compile(
    r"^\W*(yes|yeah|yep|yup|sure|ok|okay|alright|please|yes,? please|go ahead|fine)\W*$",
    re.IGNORECASE,
)
# A message splits into clauses here; clauses that only ask for the refund are not the reason.
_STATUS = re.compile(r"\b(status|where|deliver\w*|arriv\w*|track\w*|ship\w*)\b", re.I)
# (A dash between spaces as lookarounds: `\s+-\s+` read a long run of spaces in quadratic time.)
_CLAUSES = re.compile(r"[,.;:!?]+|(?<=\s)-(?=\s)|\b(?:because|since|as)\b", re.IGNORECASE)

_ANGRY = r"\b(furious|angry|outraged|unacceptable|disgust\w*|ridiculous|worst)\b"
_FRUSTRATED = r"\b(frustrat\w*|annoyed|fed up|again|still|nobody|no one|waiting)\b"
_DISAPPOINTED = r"\b(disappoint\w*|let down|expected better|sad|unhappy)\b"
SENTIMENT_WORDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("angry", re.compile(_ANGRY, re.IGNORECASE)),
    ("frustrated", re.compile(_FRUSTRATED, re.IGNORECASE)),
    ("disappointed", re.compile(_DISAPPOINTED, re.IGNORECASE)),
)


def _as_typed(match: re.Match[str]) -> str:
    return f"ORD-{(match['id'] or match['num'] or match['three']).upper()}"


def find_order_ids(text: str) -> list[str]:
    """Order ids as written ('ORD-0O1' stays wrong), upper-cased, in order of appearance."""
    return [_as_typed(match) for match in _ID_LIKE.finditer(text)]


def order_meant(text: str) -> str:
    """The order a message is about, as written ("" if it names none).

    The first id: a customer listing orders starts with the one on their mind (the engine
    names the others back to them). The last when they correct themselves ("not ORD-002,
    ORD-004": `gates.corrects_itself`, the rule the engine names orders back by). Read
    from the words alone, as a language model would: the shop's records are not consulted.
    """
    named = list(_ID_LIKE.finditer(text))
    # "Don't refund ORD-005. Where is ORD-002?": the order declined is not the one asked about.
    found = _not_declined(text, named) or named
    if not found:
        return ""
    first, last = found[0], found[-1]
    between = text[first.end() : last.start()]
    corrects = corrects_itself(text[: first.start()], between)
    return _as_typed(last if corrects else first)


# Where a clause ends, for the words said around an order id: punctuation that ends a clause
# (not the ":" of "ORD:5"), a dash between spaces, "but".
_CLAUSE_END = re.compile(r"[,.;:!?]+(?=\s|$)|(?<=\s)-(?=\s)|\bbut\b", re.IGNORECASE)


def _not_declined(text: str, named: list[re.Match[str]]) -> list[re.Match[str]]:
    """The ids of `named` whose clause does not decline their refund ("don't refund
    ORD-005"). Each clause is read once: a long message naming many ids stays quick."""
    if len(named) < 2 or not _DECLINED_REFUND.search(text):
        return named
    ends = list(_CLAUSE_END.finditer(text))
    starts = [0, *(end.end() for end in ends)]
    stops = [*(end.start() for end in ends), len(text)]
    clauses = (text[start:stop] for start, stop in zip(starts, stops, strict=True))
    declined = [bool(_DECLINED_REFUND.search(clause)) for clause in clauses]
    return [m for m in named if not declined[bisect_right(starts, m.start()) - 1]]


def repair_order_id(raw: str) -> str:
    """What a careful second reading makes of a sloppy id: O->0, I/l->1, padded to 3 digits."""
    match = re.fullmatch(r"ORD-([0-9OoIl]{1,3})", raw, re.IGNORECASE)
    if not match:
        return raw
    digits = match.group(1).translate(str.maketrans("OoIl", "0011"))
    return f"ORD-{digits.zfill(3)}"


def intent_of(text: str) -> Intent:
    """What a message asks for, first rule that matches; a whole-message "no" or "yes"
    before "thanks" ("no thanks" closes the conversation, it does not thank)."""
    if _POLICY.search(text) and not find_order_ids(text):
        return "policy"
    if about_refunds := _refund_intent(text):
        return about_refunds
    if _COMPLAINT.search(text) or text.count("!") >= 3:
        return "complaint"
    if _CANCEL.search(text):
        return "cancel"
    if _ORDER.search(text) or _ORDER_ELSEWHERE.search(text) or find_order_ids(text):
        return "order"
    if _GREETING.search(text):
        return "greeting"
    if _HELP.search(text):
        return "help"
    if _NO.search(text):
        return "no"
    if _THANKS.search(text):
        return "thanks"
    if _YES.search(text):
        return "yes"
    return "other"


def _refund_intent(text: str) -> Intent | None:
    """What a message speaking of refunds asks for; None if it speaks of none."""
    if asks_refund_status(text):
        return "order"  # where a refund stands is on the order: a lookup, not a new refund
    if declines_refund(text):
        return _intent_besides_declining(_DECLINED_REFUND.sub(" ", text))
    if asks_refund(text):
        return "refund"
    if complains_about_refund(text):
        return "complaint"  # "you rejected my refund!": about the service, not a new request
    return None


def _intent_besides_declining(rest: str) -> Intent:
    """What a message declining a refund asks for besides: a question ("no refund, just
    where is it?"), a complaint or a cancellation; else the decline is the message, even
    with the order named ("cancel my refund request for ORD-005, I'll keep it")."""
    intent = intent_of(rest)
    if intent in ("policy", "complaint", "cancel"):
        return intent
    if intent == "order" and (asks_status(rest) or "?" in rest):
        return intent
    return "no_refund"


def asks_status(text: str) -> bool:
    """Where an order is or when it comes, in English or a few other languages."""
    return bool(_STATUS.search(text) or _ORDER_ELSEWHERE.search(text) or asks_refund_status(text))


def asks_refund_status(text: str) -> bool:
    return bool(_REFUND_STATUS.search(text))


def is_bare_order_id(text: str) -> bool:
    """Just an order number, perhaps with a word or two ("it's ORD-001", "ORD-001 please"):
    the answer to "what's your order number?", not a new question."""
    rest = _TOKEN.findall(_ID_LIKE.sub(" ", text))
    return (
        bool(find_order_ids(text)) and len(rest) <= 3 and not _ORDER.search(_ID_LIKE.sub(" ", text))
    )


_FAULT = re.compile(
    r"\b(broken|broke|stopped (?:working|charging)|(?:doesn'?t|does not|won'?t) (?:work|turn on)|"
    r"not working|damaged|faulty|defective|dead|cracked|crackles?|dented|scratched|"
    r"wrong (?:item|size|colou?r))\b",
    re.IGNORECASE,
)


def describes_fault(text: str) -> bool:
    """Something wrong with an item, said without asking for anything yet."""
    return bool(_FAULT.search(text))


def is_foreign(text: str) -> bool:
    """Written in a language the demo does not read: letters outside ASCII (é, ж, 单)."""
    return any(c.isalpha() and not c.isascii() for c in text)


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


def refund_reason(text: str, *, at_least: int = 10) -> str:
    """The customer's reason, without the request itself; '' when they gave none (fewer than
    `at_least` characters: shorter, a word like "please" is left of a request)."""
    clauses = [c.strip() for c in _CLAUSES.split(_ID_LIKE.sub(" ", text))]
    reason = " ".join(c for c in clauses if c and not _REFUND.search(c))
    reason = " ".join(reason.split())
    return reason if len(reason) >= at_least else ""


def _without_talk_of_refunds(text: str) -> str:
    """`text` without what it says of a refund other than asking for one: a refund declined,
    or one complained about."""
    return _REFUND_GRIEVANCE.sub(" ", _DECLINED_REFUND.sub(" ", text))


def asks_refund(text: str) -> bool:
    """Asks for a refund: "I don't want a refund" does not, nor "you rejected my refund"; "you
    rejected my refund, refund ORD-006 again please" does."""
    return bool(_REFUND.search(_without_talk_of_refunds(text)))


def declines_refund(text: str) -> bool:
    return bool(_DECLINED_REFUND.search(text)) and not asks_refund(text)


def complains_about_refund(text: str) -> bool:
    return bool(_REFUND_GRIEVANCE.search(text)) and not asks_refund(text)


def refund_reason_in(said: Sequence[str]) -> str:
    """The reason for the refund being asked now: from the latest message asking for a refund
    on, newest first, else the message just before that request if it was not a question
    (the problem told first, the refund asked next). An earlier, unrelated message ("hi,
    where is my order?") is no reason to show the person approving."""
    start = next((i for i in range(len(said) - 1, -1, -1) if asks_refund(said[i])), 0)
    scoped = list(said[start:])
    before = said[start - 1] if start > 0 else ""
    if before and not before.rstrip().endswith("?") and intent_of(before) in ("complaint", "other"):
        scoped.insert(0, before)
    return next((r for r in map(refund_reason, reversed(scoped)) if r), "")


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
