"""The offline demo model: answers like a careful support agent, by rules, with no network.

It drives the very same graph as Mistral (tools, hand-offs, gates, interrupts), so every
flow can be tried without a key and tests and benchmarks get a zero-latency model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from agents.graph.prompts import CUSTOMER_INTRO, FACTS_INTRO
from agents.models.offline.answers import (
    ANYTHING_ELSE,
    ASK_COMPLAINT_DETAILS,
    ASK_ORDER_ID,
    ASK_REASON,
    CANNOT_CANCEL,
    CLOSING,
    ENGLISH_ONLY,
    HELP,
    MORE_REASON,
    NEED_ORDER_ID,
    NO_COMPLAINT,
    NO_CUSTOMER_REFUND,
    NO_REFUND,
    REFUND_DECLINED,
    REFUND_ESCALATED,
    SORRY_WHICH_HELP,
    cannot_cancel,
    markdown_literal,
    no_refund_for,
    refund_policy,
)
from agents.models.offline.dialogue import (
    FOUND_REPLY,
    NOT_FOUND_REPLY,
    Dialogue,
    read_dialogue,
    text_of,
)
from agents.models.offline.local_model import LocalChatModel
from agents.models.offline.reading import (
    Intent,
    asks_refund_status,
    asks_status,
    complaint_summary,
    describes_fault,
    find_order_ids,
    intent_of,
    is_bare_order_id,
    is_foreign,
    order_meant,
    query_type_of,
    refund_reason,
    refund_reason_in,
    repair_order_id,
    sentiment_of,
)

# How the act node ends its answer to a call the gates say was misread (tool_calls.py).
CORRECTED_CALL_ENDS = "again with the corrected value."
_FACTS = re.compile(re.escape(FACTS_INTRO) + r"(\{.*?\})\. Use exactly")
# The customer line may be the prompt's last: "$" as well as a following part.
_CUSTOMER = re.compile(re.escape(CUSTOMER_INTRO) + r"(.+?)\.(?:\n|$)")
_LOOKUP = re.compile(
    r"Order (?P<id>ORD-\d+): (?P<product>.+?) \| Status: (?P<status>.+?) \| "
    r"Amount: (?P<amount>\$[\d.,]+) \| Delivery: (?P<delivery>[^|]+)(?:\| Refunded: (?P<ref>\S+))?"
)
# The action gates name the order that passed them: the demo calls again with exactly that.
_VALIDATED_INSTEAD = re.compile(
    r"(?:the order validated in this turn is|call process_refund with order_id) (ORD-\d{3})"
)
_ASKS_ELIGIBILITY = re.compile(
    r"\b(eligible|can i (return|get a refund)|could i (return|get a refund)|is it refundable)\b",
    re.IGNORECASE,
)
# Where a refund request not paid stands, as far as the conversation tells (`Dialogue`).
_REFUND_SO_FAR = {
    "": "",
    "escalated": (
        " yet; your request is with a senior colleague, who will contact you within 1 business day"
    ),
    "declined": "; our team reviewed the request and couldn't approve it",
}
# Replies after which the customer's next words are their refund reason.
_ASKED_FOR_REASON = (
    "why you'd like to return it",
    "reply here and we'll take another look",
    "say a little more about what went wrong",
)


def _reason_given(dialogue: Dialogue) -> str:
    """The refund reason, as a language model would take it. An answer to "why?" is the
    customer's reason however short ("it broke"): the refund gate judges it, and the reply
    asks for more. Only an answer: "refund ORD-001 please" asks again, it gives no reason."""
    reason = refund_reason_in(dialogue.said)
    answers = any(asked in dialogue.last_reply for asked in _ASKED_FOR_REASON)
    if not reason and answers and intent_of(dialogue.latest) == "other":
        reason = refund_reason(dialogue.latest, at_least=1)
    return reason


def _system_text(messages: Sequence[BaseMessage]) -> str:
    return text_of(messages[0]) if messages and isinstance(messages[0], SystemMessage) else ""


def _facts(system: str) -> dict[str, Any]:
    match = _FACTS.search(system)
    return json.loads(match.group(1)) if match else {}


def _args_of(result: ToolMessage, messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """The arguments of the call `result` answers."""
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call["id"] == result.tool_call_id:
                    return dict(call["args"])
    return {}


def _read_again(args: dict[str, Any], dialogue: Dialogue) -> dict[str, Any]:
    """A call's arguments read again after the shop's checks refused them: an order id
    repaired where a letter stands for a digit, a sentiment taken from the words again."""
    again = dict(args)
    if "order_id" in again:
        again["order_id"] = repair_order_id(str(again["order_id"]))
    if "sentiment" in again:
        again["sentiment"] = sentiment_of(" ".join(list(dialogue.said)[-2:]))
    return again


def _order_in_question(dialogue: Dialogue) -> str:
    """The order the latest message means (see `order_meant`), else the one the conversation
    is about. The answering and the extraction call both read it here: what the demo looks up
    is what the gates validate."""
    return order_meant(dialogue.latest) or dialogue.current_order


class OfflineDemoModel(LocalChatModel):
    """Deterministic rules in place of a language model, labelled "offline demo" everywhere."""

    @property
    def _llm_type(self) -> str:
        return "shopbot-offline-demo"

    def answer(
        self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]], tool_choice: Any
    ) -> AIMessage:
        names = [tool["function"]["name"] for tool in tools]
        if not names:
            return AIMessage(content=self._summarise(messages))
        return self._converse(messages, set(names), must_call=tool_choice == "any")

    # --- conversation ------------------------------------------------------------------

    def _converse(
        self, messages: Sequence[BaseMessage], tools: set[str], *, must_call: bool
    ) -> AIMessage:
        agent = (
            "order_agent"
            if "lookup_order" in tools
            else "refund_agent"
            if "process_refund" in tools
            else "complaints_agent"
        )
        last = messages[-1]
        if isinstance(last, ToolMessage) and not (last.name or "").startswith("transfer_to_"):
            return self._after_tool(last, messages)
        dialogue = read_dialogue(messages)
        if agent == "complaints_agent" and must_call:
            return self._file_or_pass_on(dialogue)
        return self._on_customer(agent, dialogue, _system_text(messages))

    def _file_or_pass_on(self, dialogue: Dialogue) -> AIMessage:
        """The complaints agent's first call of a turn: the complaint filed, with what the
        customer said and how they feel, or the customer passed to who can help."""
        intent = intent_of(dialogue.latest)
        if intent in ("no", "thanks", "greeting", "yes") and not describes_fault(dialogue.latest):
            return self._transfer("order_agent", "Nothing to complain about.")
        asked_details = dialogue.last_reply == ASK_COMPLAINT_DETAILS
        if asked_details and intent in ("complaint", "order", "other"):
            return self._file(dialogue)  # the details they were asked for
        if intent in ("refund", "policy", "no_refund"):
            return self._transfer("refund_agent", "A question about refunds.")
        if intent in ("order", "cancel") and (
            asks_status(dialogue.latest) or dialogue.ids_in_latest
        ):
            return self._transfer("order_agent", "The customer asks about an order.")
        return self._file(dialogue)

    def _file(self, dialogue: Dialogue) -> AIMessage:
        recent = " ".join(list(dialogue.said)[-2:])
        return self._call(
            "file_complaint",
            issue_summary=complaint_summary(dialogue.latest),
            sentiment=sentiment_of(recent),
        )

    def _transfer(self, target: str, reason: str) -> AIMessage:
        del reason  # the transfer tools take no arguments; the reason documents the rule
        return AIMessage(content="", tool_calls=[self.tool_call(f"transfer_to_{target}", {})])

    def _call(self, name: str, **args: Any) -> AIMessage:
        return AIMessage(content="", tool_calls=[self.tool_call(name, args)])

    def _lookup(self, order_id: str, dialogue: Dialogue) -> AIMessage:
        return self._call(
            "lookup_order", order_id=order_id, query_type=query_type_of(dialogue.latest)
        )

    def _on_customer(self, agent: str, dialogue: Dialogue, system: str) -> AIMessage:
        intent = intent_of(dialogue.latest)
        if intent == "refund" and agent != "refund_agent":
            return self._transfer("refund_agent", "The customer asks for a refund.")
        if intent == "complaint" and agent != "complaints_agent":
            return self._transfer("complaints_agent", "The customer has a complaint.")
        if intent == "cancel" and agent != "order_agent":
            return self._transfer("order_agent", "Only the order agent sees an order's status.")
        if intent == "no_refund" and agent != "order_agent" and _order_in_question(dialogue):
            return self._transfer("order_agent", "Whether it was refunded is on the order.")
        # (The complaints agent files first, `_file_or_pass_on`: its turns never get here.)
        step: AIMessage | None = None
        if agent == "refund_agent":
            step = self._refund_step(intent, dialogue)
        else:
            step = self._order_step(intent, dialogue)
        return step or AIMessage(content=self._small_talk(intent, dialogue, system))

    def _order_step(self, intent: Intent, dialogue: Dialogue) -> AIMessage | None:
        """What the order agent does with the latest message, if it needs a tool or an id."""
        order_id = _order_in_question(dialogue)
        if intent == "cancel" and not order_id:
            return AIMessage(
                content=f"{CANNOT_CANCEL} Tell me the order number and I'll check where it stands."
            )
        if intent == "no_refund" and order_id:
            # Looked up: a refund paid already cannot be "cancelled", and is on the order.
            return self._lookup(order_id, dialogue)
        if intent in ("order", "cancel"):
            # A cancellation is answered after the lookup: no cancel tool, but the status helps.
            if order_id:
                return self._lookup(order_id, dialogue)
            return AIMessage(content=ASK_ORDER_ID)
        return None

    def _refund_step(self, intent: Intent, dialogue: Dialogue) -> AIMessage | None:
        """What the refund agent does with the latest message, if it is its job."""
        latest, order_id = dialogue.latest, _order_in_question(dialogue)
        if intent == "order" and asks_status(latest):
            return self._transfer("order_agent", "The customer asks about an order's status.")
        if intent == "order" and not (
            is_bare_order_id(latest) or "order number" in dialogue.last_reply
        ):
            return self._transfer("order_agent", "Another question about an order.")
        gives_reason = intent == "other" and any(
            asked in dialogue.last_reply for asked in _ASKED_FOR_REASON
        )
        if order_id and (intent in ("refund", "order") or gives_reason):
            if _ASKS_ELIGIBILITY.search(latest):
                return self._call("check_refund_eligibility", order_id=order_id)
            # As the prompt says: ask for the refund; the shop checks it, a human approves.
            reason = _reason_given(dialogue)
            return self._call("process_refund", order_id=order_id, reason=reason)
        if intent == "refund":
            return AIMessage(content=f"I can help with that refund. {ASK_ORDER_ID}")
        return None

    @staticmethod
    def _small_talk(intent: Intent, dialogue: Dialogue, system: str) -> str:
        """Answers no tool is needed for, the same from every agent."""
        if intent == "policy":
            return refund_policy()
        if intent == "greeting":
            name = _CUSTOMER.search(system)
            hello = f"Hello {markdown_literal(name.group(1))}!" if name else "Hello!"
            if len(dialogue.said) > 1:  # introduced already
                return f"{hello} What else can I help you with?"
            return f"{hello} I'm ShopBot, running as an offline demo. {HELP}"
        if intent == "help":
            return f"I'm ShopBot, running as an offline demo. {HELP}"
        if intent == "thanks":
            return f"You're welcome! {ANYTHING_ELSE}"
        if intent == "no":
            # "No" to the question about a complaint's details: nothing is filed.
            return NO_COMPLAINT if dialogue.last_reply == ASK_COMPLAINT_DETAILS else CLOSING
        if intent == "no_refund":
            return f"{NO_REFUND} {ANYTHING_ELSE}"
        asked = dialogue.last_reply
        if "order number" in asked and intent in ("yes", "other"):
            return NEED_ORDER_ID
        if intent == "yes":
            # "Yes" answers the question just asked; "ok" after an answer closes it.
            if any(reason in asked for reason in _ASKED_FOR_REASON):
                return ASK_REASON
            return f"Sure! {HELP}" if asked.rstrip().endswith("?") else f"Good. {ANYTHING_ELSE}"
        if is_foreign(dialogue.latest):
            return f"{ENGLISH_ONLY} {HELP}"
        if describes_fault(dialogue.latest):
            return SORRY_WHICH_HELP
        return HELP

    @staticmethod
    def _empathy(system: str) -> str:
        summary = _facts(system).get("issue_summary", "")
        sorry = (
            f"I'm really sorry about what you've told us: “{markdown_literal(summary)}”."
            if summary
            else "I'm really sorry you've had this experience."
        )
        return (
            f"{sorry} I've recorded your complaint and our customer care team will look into "
            "it and get back to you within 2 business days."
        )

    # --- after a tool answered ----------------------------------------------------------

    def _after_tool(self, result: ToolMessage, messages: Sequence[BaseMessage]) -> AIMessage:
        content = text_of(result)
        name = result.name or ""
        dialogue = read_dialogue(messages)
        if validated := _VALIDATED_INSTEAD.search(content):
            # Told which order passed the gates: call again with exactly that one.
            if name == "process_refund":
                reason = refund_reason_in(dialogue.said)
                return self._call(name, order_id=validated.group(1), reason=reason)
            if name == "lookup_order":
                return self._lookup(validated.group(1), dialogue)
            return self._call(name, order_id=validated.group(1))
        if content.endswith(CORRECTED_CALL_ENDS):
            # The shop's checks say the arguments were misread: read them again.
            return self._call(name, **_read_again(_args_of(result, messages), dialogue))
        if content.startswith(("Not executed", "Refused")):
            return AIMessage(content=self._relay_refusal(content))
        if " failed (" in content:
            return AIMessage(
                content="I'm sorry, something went wrong on our side while checking that. "
                "A colleague will follow up with you shortly."
            )
        if name == "lookup_order":
            return AIMessage(content=self._order_details(content, dialogue))
        if name == "check_refund_eligibility":
            if "IS eligible" in content:
                facts = _facts(_system_text(messages))
                reason = facts.get("reason") or refund_reason_in(dialogue.said)
                order_id = facts.get("order_id") or _order_in_question(dialogue)
                return self._call("process_refund", order_id=order_id, reason=reason)
            if status := re.search(r"(ORD-\d+) is NOT eligible\. Status: (.+?)\.$", content):
                return AIMessage(content=self._not_delivered(status.group(1), status.group(2)))
            return AIMessage(content=f"I've checked: {content} {ANYTHING_ELSE}")
        if name == "process_refund":
            return AIMessage(content=self._refund_outcome(content))
        if name == "file_complaint":
            return AIMessage(content=self._empathy(_system_text(messages)))
        return AIMessage(content=content)

    @staticmethod
    def _not_delivered(order_id: str, status: str) -> str:
        if status.lower().startswith("cancel"):
            # Never to be delivered: "not yet" would promise a refund later.
            return (
                f"I'm sorry, {order_id} can't be refunded: it was cancelled, so it will not be "
                "delivered, and only delivered orders can be refunded."
            )
        return (
            f"I'm sorry, {order_id} can't be refunded yet: its status is {status}. Refunds are "
            "possible once an order has been delivered."
        )

    @classmethod
    def _relay_refusal(cls, content: str) -> str:
        if "No order ID was given" in content:
            return ASK_ORDER_ID
        if "Complaint summary is too vague" in content:
            return ASK_COMPLAINT_DETAILS
        if "No customer is identified" in content:
            return NO_CUSTOMER_REFUND
        # Not delivered first: a reason would not make it refundable.
        if status := re.search(r"Order (ORD-\d+) has status '([^']+)'", content):
            return cls._not_delivered(status.group(1), status.group(2))
        if short := re.search(r"Refund reason '([^']*)' is too short", content):
            return MORE_REASON if short.group(1).strip() else ASK_REASON
        if ref := re.search(r"already been refunded \(reference (\S+?)\)", content):
            return f"That order has already been refunded. Your reference is **{ref.group(1)}**."
        if "was not found for this customer" in content:
            # The id as the customer wrote it, and only that: a stranger's order and a missing
            # one read the same.
            asked = re.search(r"Order ID '(ORD-[^']+)'", content)
            if asked:
                order_id = markdown_literal(asked.group(1))
                return f"{NOT_FOUND_REPLY.format(order_id=order_id)} Could you double-check it?"
            return (
                "I couldn't find an order with that number on your account. "
                "Could you double-check it?"
            )
        return "I'm sorry, I couldn't complete that. A colleague will follow up with you shortly."

    @staticmethod
    def _order_details(content: str, dialogue: Dialogue) -> str:
        match = _LOOKUP.search(content)
        if not match:
            return "I couldn't find that order. Could you double-check the order number?"
        lines = [
            FOUND_REPLY.format(order_id=match["id"]),
            "",
            f"- Product: {match['product']}",
            f"- Status: **{match['status']}**",
            f"- Delivery: {match['delivery'].strip()}",
            f"- Amount: {match['amount']}",
        ]
        outcome = dialogue.refund_outcomes.get(match["id"], "")
        if intent_of(dialogue.latest) == "no_refund":
            escalated = outcome == "escalated"
            answer = no_refund_for(match["id"], paid=match["ref"] or "", escalated=escalated)
            return f"{answer} {ANYTHING_ELSE}"
        if match["ref"]:
            lines.append(f"- Refunded: {match['ref']}")
        elif asks_refund_status(dialogue.latest):
            lines.append(f"- Refunded: no refund has been paid for it{_REFUND_SO_FAR[outcome]}")
        if intent_of(dialogue.latest) == "cancel":
            # There is no cancel tool: say so plainly, then what the customer can do instead.
            lines = [CANNOT_CANCEL, "", *lines, "", cannot_cancel(match["status"])]
        # Other orders the customer named are named back by the engine, for every model.
        return "\n".join(lines)

    @staticmethod
    def _refund_outcome(content: str) -> str:
        if paid := re.search(r"already been refunded \(reference (\S+?)\)", content):
            return (
                f"Good news: this order has already been refunded (reference "
                f"**{paid.group(1)}**); nothing more is needed from you."
            )
        if ref := re.search(r"Reference: (\S+?)\.", content):
            amount = re.search(r"(\$[\d.,]+) will be returned", content)
            back = f" {amount.group(1)} will be back" if amount else " The money will be back"
            return (
                f"Good news: your refund has been approved and processed. Reference: "
                f"**{ref.group(1)}**.{back} on your original payment method within 3 to 5 "
                "business days."
            )
        if "declined" in content:
            return REFUND_DECLINED
        if "escalated" in content:
            return REFUND_ESCALATED
        return content

    # --- summaries ----------------------------------------------------------------------

    @staticmethod
    def _summarise(messages: Sequence[BaseMessage]) -> str:
        body = text_of(messages[-1]) if messages else ""
        facts = re.search(r"Known facts: (.+)", body)
        ids = sorted(set(find_order_ids(body)))
        asks = [line[10:] for line in body.splitlines() if line.startswith("Customer: ")]
        parts = []
        if facts:
            parts.append(facts.group(1).strip().rstrip(".") + ".")
        if ids:
            parts.append(f"Orders mentioned: {', '.join(ids)}.")
        if asks:
            parts.append(f"Most recently the customer wrote: “{asks[-1][:120]}”.")
        return " ".join(parts) or "Earlier conversation about the customer's orders."
