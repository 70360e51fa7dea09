"""The offline demo model: answers like a careful support agent, by rules, with no network.

It drives the very same graph as Mistral (tools, hand-offs, gates, interrupts), so every
flow can be tried without a key and tests and benchmarks get a zero-latency model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from agents.offline.local_model import LocalChatModel
from agents.offline.reading import (
    complaint_summary,
    find_order_ids,
    intent_of,
    query_type_of,
    refund_reason,
    repair_order_id,
    sentiment_of,
)

CORRECTION_MARK = "Your previous extraction contained a validation error"
_FACTS = re.compile(r"Validated by the shop's rules this turn: (\{.*?\})\. Use exactly")
_CUSTOMER = re.compile(r"Customer \(verified by the session\): (.+?)\.\n")
_LOOKUP = re.compile(
    r"Order (?P<id>ORD-\d+): (?P<product>.+?) \| Status: (?P<status>.+?) \| "
    r"Amount: (?P<amount>\$[\d.,]+) \| Delivery: (?P<delivery>[^|]+)(?:\| Refunded: (?P<ref>\S+))?"
)
_VALIDATED_INSTEAD = re.compile(r"the order validated in this turn is (ORD-\d{3})")
_ASKS_ELIGIBILITY = re.compile(
    r"\b(eligible|can i (return|get a refund)|could i (return|get a refund)|is it refundable)\b",
    re.IGNORECASE,
)
_STATUS_WORDS = re.compile(r"\b(status|where|deliver\w*|arriv\w*|track\w*|ship\w*)\b", re.I)

ASK_ORDER_ID = "Could you tell me your order number? It looks like ORD-001."
HELP = (
    "I can check an order's status, start a refund or take a complaint. Tell me what you need, "
    "with your order number if you have one (it looks like ORD-001)."
)


def _text(message: BaseMessage) -> str:
    return message.text if isinstance(message.text, str) else str(message.content)


def _customer_messages(messages: Sequence[BaseMessage]) -> list[str]:
    return [
        _text(m)
        for m in messages
        if isinstance(m, HumanMessage) and CORRECTION_MARK not in _text(m)
    ]


def _latest_order_id(texts: Sequence[str]) -> str:
    for text in reversed(texts):
        if ids := find_order_ids(text):
            return ids[-1]
    return ""


def _system_text(messages: Sequence[BaseMessage]) -> str:
    return _text(messages[0]) if messages and isinstance(messages[0], SystemMessage) else ""


def _facts(system: str) -> dict[str, Any]:
    match = _FACTS.search(system)
    return json.loads(match.group(1)) if match else {}


class OfflineDemoModel(LocalChatModel):
    """Deterministic rules in place of a language model, labelled "offline demo" everywhere."""

    @property
    def _llm_type(self) -> str:
        return "shopbot-offline-demo"

    def answer(
        self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]], tool_choice: Any
    ) -> AIMessage:
        names = [tool["function"]["name"] for tool in tools]
        if tool_choice == "any" and len(names) == 1 and names[0].endswith("Extraction"):
            return self._extract(names[0], messages)
        if not names:
            return AIMessage(content=self._summarise(messages))
        return self._converse(messages, set(names))

    # --- structured extraction ---------------------------------------------------------

    def _extract(self, schema: str, messages: Sequence[BaseMessage]) -> AIMessage:
        said = _customer_messages(messages)
        latest = said[-1] if said else ""
        correcting = any(
            CORRECTION_MARK in _text(m) for m in messages if isinstance(m, HumanMessage)
        )
        order_id = _latest_order_id(said)
        if correcting:
            order_id = repair_order_id(order_id)
        if schema == "OrderExtraction":
            fields = {"order_id": order_id, "query_type": query_type_of(latest)}
        elif schema == "RefundExtraction":
            reason = next((r for r in map(refund_reason, reversed(said)) if r), "")
            fields = {"order_id": order_id, "reason": reason}
        else:
            recent = " ".join(said[-2:])
            fields = {"issue_summary": complaint_summary(latest), "sentiment": sentiment_of(recent)}
        return AIMessage(content="", tool_calls=[self.tool_call(schema, fields)])

    # --- conversation ------------------------------------------------------------------

    def _converse(self, messages: Sequence[BaseMessage], tools: set[str]) -> AIMessage:
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
        said = _customer_messages(messages)
        return self._on_customer(agent, said, _system_text(messages))

    def _transfer(self, target: str, reason: str) -> AIMessage:
        del reason  # the transfer tools take no arguments; the reason documents the rule
        return AIMessage(content="", tool_calls=[self.tool_call(f"transfer_to_{target}", {})])

    def _call(self, name: str, **args: Any) -> AIMessage:
        return AIMessage(content="", tool_calls=[self.tool_call(name, args)])

    def _on_customer(self, agent: str, said: list[str], system: str) -> AIMessage:
        latest = said[-1] if said else ""
        intent = intent_of(latest)
        order_id = _latest_order_id(said)
        if intent == "refund" and agent != "refund_agent":
            return self._transfer("refund_agent", "The customer asks for a refund.")
        if intent == "complaint" and agent != "complaints_agent":
            return self._transfer("complaints_agent", "The customer has a complaint.")
        wants_status = intent == "order" and bool(_STATUS_WORDS.search(latest))
        if agent == "refund_agent" and (step := self._refund_step(intent, said, wants_status)):
            return step
        if agent == "complaints_agent":
            if intent == "order" and wants_status:
                return self._transfer("order_agent", "The customer asks about an order.")
            if intent in ("complaint", "other", "order"):
                return AIMessage(content=self._empathy(system))
        if (
            agent == "order_agent"
            and intent in ("order", "other")
            and (order_id or intent == "order")
        ):
            return (
                self._call("lookup_order", order_id=order_id)
                if order_id
                else AIMessage(content=ASK_ORDER_ID)
            )
        if intent == "greeting":
            name = _CUSTOMER.search(system)
            hello = f"Hello {name.group(1)}!" if name else "Hello!"
            return AIMessage(content=f"{hello} I'm ShopBot, running as an offline demo. {HELP}")
        if intent == "thanks":
            return AIMessage(content="You're welcome! Is there anything else I can help with?")
        return AIMessage(content=HELP)

    def _refund_step(self, intent: str, said: list[str], wants_status: bool) -> AIMessage | None:
        """What the refund agent does with the customer's latest message, if it is its job."""
        latest, order_id = said[-1] if said else "", _latest_order_id(said)
        if wants_status:
            return self._transfer("order_agent", "The customer asks about an order's status.")
        if intent in ("refund", "order", "other") and order_id:
            if _ASKS_ELIGIBILITY.search(latest):
                return self._call("check_refund_eligibility", order_id=order_id)
            # As the prompt says: ask for the refund; the shop checks it, a human approves.
            reason = next((r for r in map(refund_reason, reversed(said)) if r), "")
            return self._call("process_refund", order_id=order_id, reason=reason)
        if intent in ("refund", "other"):
            return AIMessage(content=f"I can help with that refund. {ASK_ORDER_ID}")
        return None

    def _empathy(self, system: str) -> str:
        if "Note from the shop's rules:" in system:
            return (
                "I'm sorry to hear that. Could you tell me a little more about what went wrong "
                "(which order, and what happened), so I can file this properly?"
            )
        summary = _facts(system).get("issue_summary", "")
        about = f" about this: “{summary}”" if summary else ""
        return (
            f"I'm really sorry you've had this experience{about}. I've recorded your complaint "
            "and our customer care team will look into it and get back to you within 2 "
            "business days."
        )

    # --- after a tool answered ----------------------------------------------------------

    def _after_tool(self, result: ToolMessage, messages: Sequence[BaseMessage]) -> AIMessage:
        content = _text(result)
        name = result.name or ""
        if validated := _VALIDATED_INSTEAD.search(content):
            # Told which order passed the gates: call again with exactly that one.
            return self._call(name, order_id=validated.group(1))
        if content.startswith(("Not executed", "Refused")):
            return AIMessage(content=self._relay_refusal(content))
        if " failed (" in content:
            return AIMessage(
                content="I'm sorry, something went wrong on our side while checking that. "
                "A colleague will follow up with you shortly."
            )
        if name == "lookup_order":
            return AIMessage(content=self._order_details(content))
        if name == "check_refund_eligibility":
            if "IS eligible" in content:
                facts = _facts(_system_text(messages))
                said = _customer_messages(messages)
                reason = facts.get("reason") or next(
                    (r for r in map(refund_reason, reversed(said)) if r), ""
                )
                order_id = facts.get("order_id") or _latest_order_id(said)
                return self._call("process_refund", order_id=order_id, reason=reason)
            return AIMessage(
                content=f"I've checked: {content} Is there anything else I can help with?"
            )
        if name == "process_refund":
            return AIMessage(content=self._refund_outcome(content))
        return AIMessage(content=content)

    @staticmethod
    def _relay_refusal(content: str) -> str:
        if "No order ID was given" in content:
            return ASK_ORDER_ID
        if "is too short" in content and "reason" in content.lower():
            return (
                "Could you tell me in a sentence why you'd like to return it? "
                "That helps us process the refund."
            )
        if status := re.search(r"Order (ORD-\d+) has status '([^']+)'", content):
            return (
                f"I'm sorry, {status.group(1)} can't be refunded yet: its status is "
                f"{status.group(2)}. Refunds are possible once an order has been delivered."
            )
        if ref := re.search(r"already been refunded \(reference (\S+?)\)", content):
            return f"That order has already been refunded. Your reference is **{ref.group(1)}**."
        if "was not found for this customer" in content:
            return (
                "I couldn't find an order with that number on your account. "
                "Could you double-check it?"
            )
        return "I'm sorry, I couldn't complete that. A colleague will follow up with you shortly."

    @staticmethod
    def _order_details(content: str) -> str:
        match = _LOOKUP.search(content)
        if not match:
            return "I couldn't find that order. Could you double-check the order number?"
        lines = [
            f"Here's what I found for **{match['id']}**:",
            "",
            f"- Product: {match['product']}",
            f"- Status: **{match['status']}**",
            f"- Delivery: {match['delivery'].strip()}",
            f"- Amount: {match['amount']}",
        ]
        if match["ref"]:
            lines.append(f"- Refunded: {match['ref']}")
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
            return (
                "I'm sorry: our team reviewed your refund request and couldn't approve it. "
                "If you have more details (photos, a description of the fault), reply here and "
                "we'll take another look."
            )
        if "escalated" in content:
            return (
                "Our team has passed your refund request to a senior colleague, who will "
                "contact you within 1 business day."
            )
        return content

    # --- summaries ----------------------------------------------------------------------

    @staticmethod
    def _summarise(messages: Sequence[BaseMessage]) -> str:
        body = _text(messages[-1]) if messages else ""
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
