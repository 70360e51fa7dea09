"""Orders the customer named that this turn did not handle, named back to them.

The order and refund agents work on one gate-validated order a turn (tools run on that one
only). A customer who names several must not see the others vanish without a word, whatever
the model writes, so the engine, not the model, ends the reply with one fixed sentence naming
them. It repeats the ids as the customer wrote them (spelled canonically) and nothing the
shop knows about them: a missing order and a stranger's read exactly like the customer's own.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, HumanMessage

from agents.graph.history import latest_customer_words
from agents.graph.state import SpecialistState
from gates import normalise_order_id, order_ids_as_written, order_ids_meant


def orders_not_answered(said: str, handled: str, reply: str) -> list[str]:
    """The order ids `said` means (the customer's latest message: `order_ids_meant`), in the
    order written, less the order the turn `handled` and any the `reply` already names."""
    named = order_ids_meant(said)
    if not handled.strip() and len(named) < 2:
        return []  # one order named, none worked on: the reply is about it, spelled out or not
    answered = {normalise_order_id(handled), *order_ids_as_written(reply)}
    return [order_id for order_id in named if order_id not in answered]


def other_orders_sentence(order_ids: Sequence[str]) -> str:
    """The sentence naming `order_ids` back to the customer ("" for none): each normalised
    and named once, in the order given."""
    ids = list(dict.fromkeys(filter(None, map(normalise_order_id, order_ids))))
    if not ids:
        return ""
    if len(ids) == 1:
        return (
            f"You also mentioned {ids[0]}: I handle one order at a time, so ask me about it "
            "next and I'll look into it."
        )
    named = f"{', '.join(ids[:-1])} and {ids[-1]}"
    return (
        f"You also mentioned {named}: I handle one order at a time, so ask me about them "
        "next, one by one, and I'll look into each."
    )


def other_orders_in_turn(state: SpecialistState, reply: str) -> str:
    """The sentence to end this turn's final `reply` with ("" when nothing is left out)."""
    said = latest_customer_words(state["messages"])
    return other_orders_sentence(orders_not_answered(said, order_handled(state), reply))


def order_handled(state: SpecialistState) -> str:
    """The order this turn worked on: the one that passed the gates, else the one its latest
    tool call named (the gate verdict the reply relays, "not found", "no reason given", is
    about that one)."""
    validated = state.get("validated") or {}
    if order_id := validated.get("order_id"):
        return str(order_id)
    for message in reversed(state.get("messages") or []):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, AIMessage):
            for call in reversed(message.tool_calls):
                if named := call["args"].get("order_id"):
                    return normalise_order_id(named)
    return ""
